"""Signal propagation, rank and entropy collapse in deep post-LN transformers at initialisation (paper 1)."""
