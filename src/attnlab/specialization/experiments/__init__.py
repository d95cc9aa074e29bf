"""Experiments of paper 0, one per figure (config in, tables and arrays out, no plotting), each declared whole as
a constant beside its run function and listed, in the paper's order, by :mod:`attnlab.specialization.study`.

* :mod:`.sim_vs_theory` — Figs. 1, 9, 10: SGD at finite D against the flow (12);
* :mod:`.trajectories` — Figs. 2-4, 12-19: the heads' trajectories; Fig. 8: fixed vs resampled MC samples;
* :mod:`.trained` — Figs. 5, 6, 7, 11: final errors, attention maps, pruning, cosine similarity;
* :mod:`.phases` — Props. III.3, III.4: the unspecialised phase, the escape time vs D, τ^s of Fig. 1;
* :mod:`.analysis` — measurements on trajectories and trained parameters.
"""
