"""Paper 0: head specialization in multi-head softmax attention (single-location model)."""
