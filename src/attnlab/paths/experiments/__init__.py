"""Experiments of paper 3 by figure family (config in, tables and arrays out, no plotting); ``study.py`` lists them.

* :mod:`.markov` — the hidden-Markov-chain task (Sec. 4.1, App. G): Figs. 2c-e, 5b-c and the generic check C;
* :mod:`.sample` — ``paths.sample``: more posterior samples of a stored run;
* :mod:`.oneshot` — the one-shot image task (Sec. 4.2, App. H): Figs. 3b-d and 6;
* :mod:`.pruning` — head pruning by the theory's scores: Figs. 3e-f and 7;
* :mod:`.common`, :mod:`.images` — the plumbing they share: solver options, sampler runs and agreement measures;
  the one-shot pipeline from images to the theory.
"""
