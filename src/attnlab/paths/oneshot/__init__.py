"""The one-shot in-context image task (paper 3, Sec. 4.2, App. H): image sets (``data``), episodes, the
gradient-descent model (``train``), head pruning, the pipeline to the theory, experiments, figures, claims."""
