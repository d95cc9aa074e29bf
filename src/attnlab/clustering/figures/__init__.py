"""Figures of paper 4 from experiment results, one module per figure family: :mod:`.training` (Figs. 1-6, 8),
:mod:`.spikes` (Figs. 9-13, 17, 18 and the remedies) and :mod:`.sweeps` (Figs. 7, 14, 16, 19)."""
