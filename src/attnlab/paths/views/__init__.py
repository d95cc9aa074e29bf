"""The paths study's sandbox views (paper 3): ``markov`` (Figs. 2c, 2e, 5c), ``oneshot`` (Figs. 3b-d, 6),
``pruning`` (Figs. 3e-f, 7), drawn with ``draw``; ``plugin`` registers them."""
