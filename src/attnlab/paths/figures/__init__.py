"""Figures of paper 3 from experiment results: :mod:`.markov` (Figs. 2c-e, 5b-c), :mod:`.oneshot` (Figs. 3, 6, 7),
and what they share (:mod:`.common`: colours, GP line styles, path names, the U entries drawn)."""
