"""Claims of paper 2 as checks (checks 1-21 of docs/studies/potts.md), one module per figure family: ``gaussian``
(the replica theory and Fig. 3-left), ``training`` (the identities, the sampler, Fig. 2, consistency), ``fig3right``."""
