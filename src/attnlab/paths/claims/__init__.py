"""Claims of paper 3 as checks, registered when the study loads (``attnlab check paths``), in this order:

* :mod:`.common` — checks A1-A10: the core maths, computed directly (seconds);
* :mod:`.markov` — the hidden-Markov-chain task (checks B1-B11) and the generic solver/sampler check (C);
* :mod:`.episodes` — the one-shot episodes (check D1), computed directly;
* :mod:`.oneshot` — the one-shot pipeline (checks D2-D4) and the paper's one-shot statements (Sec. 4.2, App. H).
"""
