"""The hidden-Markov-chain classification task (paper 3, Sec. 4.1, App. G): data, experiments, figures, claims."""
