"""Experiments of paper 4 by figure family (config in, tables and arrays out, no plotting); ``study.py`` lists them.

* :mod:`.ideal_head` — the explicit clustering head (Sec. 3, Prop. 1): Fig. 1;
* :mod:`.training` — single trainings and their circuits (Secs. 4.1-4.2): Figs. 2-6, 8 and the sandbox's run;
  :mod:`.circuits` holds their per-model measurements;
* :mod:`.spikes` — training dynamics and loss spikes (Secs. 4.3-4.4): Figs. 9, 11-13, 17, 18 and the remedies;
* :mod:`.curvature` — the normalisers' curvature near the origin (App. B): Fig. 10;
* :mod:`.sweeps` — statistics over seeds, sparsity, d and p (App. A.1-A.4): Figs. 7, 14, 16, 19.
"""
