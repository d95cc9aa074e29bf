"""Head scores from the order parameter (Sec. 4.2 "Application", App. H.2.3) and the pruning order.

The score of head h at layer ℓ sums |U_ππ'| over the paths through it, Π_h^(ℓ) = {π : h_ℓ = h}:

* ``both`` (the paper's text): s^(ℓ)h = Σ_{π, π' ∈ Π_h^(ℓ)} |U_ππ'|;
* ``either`` (the public code's "all rows and columns involving that head"): pairs with π or π' in Π_h^(ℓ).

Scores are normalised by the largest over all heads of all layers (Fig. 3e). Heads are pruned in increasing
score order, never the last head of a layer.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def path_heads(Hs: Sequence[int]) -> np.ndarray:
    """(n, L) array: the head h_ℓ of every path (h_1 most significant, the order of U)."""
    return np.stack(np.unravel_index(np.arange(int(np.prod(Hs))), tuple(Hs)), axis=1)


def head_scores(U: np.ndarray, Hs: Sequence[int], mode: str = "both") -> list[np.ndarray]:
    """Normalised head scores, one array of H_ℓ values per layer (max over all heads = 1)."""
    if mode not in ("both", "either"):
        raise ValueError(f"key 'score_mode' = {mode!r}: allowed: both, either")
    U = np.abs(np.asarray(U, dtype=float))
    n = int(np.prod(Hs))
    if U.shape != (n, n):
        raise ValueError(f"U has shape {U.shape}; expected ({n}, {n}) for Hs = {list(Hs)}")
    heads = path_heads(Hs)
    raw = []
    for ell, H in enumerate(Hs):
        s = np.empty(H)
        for h in range(H):
            inside = heads[:, ell] == h
            pair = np.logical_and.outer(inside, inside) if mode == "both" else np.logical_or.outer(inside, inside)
            s[h] = U[pair].sum()
        raw.append(s)
    top = max(float(s.max()) for s in raw)
    return [s / top for s in raw]


def pruning_order(scores: Sequence[np.ndarray]) -> list[tuple[int, int]]:
    """(layer, head) pairs from the lowest to the highest score (ties: lower layer, then lower head first),
    leaving out each layer's last remaining head: Σ_ℓ (H_ℓ − 1) heads can be pruned in all."""
    flat = sorted((float(s), ell, h) for ell, layer in enumerate(scores) for h, s in enumerate(layer))
    left = [len(layer) for layer in scores]
    order = []
    for _, ell, h in flat:
        if left[ell] > 1:
            order.append((ell, h))
            left[ell] -= 1
    return order
