"""The experiments of paper 1, one per figure (config in, tables and arrays out), in three families: one attention
layer (``attention``: Figs. 3, B.1, B.2, C.1 and the universality of β_c), signal propagation over depth
(``depth``: Figs. 1c, 1d, 1e, 5, C.3 and α_c(L)) and MLM training (``training``: Figs. 1a/b, 1f, 4, C.2).
Each module declares its experiments whole; ``attnlab.signal.study`` lists them."""
