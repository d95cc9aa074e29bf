"""The typed summaries of paper 4's experiments (:mod:`attnlab.core.summaries`), one module per figure family.

* :mod:`.training` — the ideal head and single trainings (Figs. 1-6, 8);
* :mod:`.spikes` — training dynamics, loss spikes, the normalisers' curvature and the remedies (Figs. 9-13, 17, 18);
* :mod:`.sweeps` — success against sparsity, transfer and the ablation (Figs. 7, 14, 16, 19).
"""
