"""Data of paper 3: the two tasks' inputs and the fixed heads the theory reads.

* :mod:`.markov` — the hidden-Markov-chain classification task and its hand-built heads (Sec. 4.1, App. G);
* :mod:`.heads` — what one head of the Markov network is and how a config's ``heads`` list is read (App. G.2);
* :mod:`.public` — the public code's Markov run (its settings, random streams and seeded heads);
* :mod:`.files` — external tokens and heads of the Markov task from files;
* :mod:`.images` — the one-shot task's image sets (Sec. 4.2, App. H): on-disk, packaged and synthetic;
* :mod:`.episodes` — one-shot in-context episodes and their ViT-style tokenisation (Sec. 4.2, App. H).
"""
