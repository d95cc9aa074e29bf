"""Claims of paper 4 as checks, registered when the study loads (``attnlab check clustering``), in this order:

* :mod:`.training` — the ideal head, the circuits and the theory (Figs. 1-6, 8; Prop. 1);
* :mod:`.spikes` — training dynamics and loss spikes, Prop. 4 and the remedies (Figs. 9-13, 17, 18);
* :mod:`.sweeps` — the statistics over seeds, sparsity, d and p (Figs. 7, 14, 16, 19).
"""
