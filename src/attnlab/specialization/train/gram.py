"""The loss head of Eq. (6) written on the Gram matrices: from the attention scores χ and G = X Xᵀ of each sequence,
the loss aᵀGa/D and its gradients in χ, b and v (autograd through σ only). The SGD step (:mod:`.sgd`) and the fused
kernels (:mod:`.fused`, :mod:`.fused_philox`) both end in it."""

from __future__ import annotations

import torch
from torch import Tensor

from attnlab.specialization.model import get_activation


def gram_head(scores: Tensor, G: Tensor, eps: Tensor, b: Tensor, v: Tensor, activation: str, D: int):
    """The small part of :func:`_chunk_sums_gram`: from the scores χ (S, n, H, L) and the Gram matrices
    G (S, n, L, L), the loss sum (S,), ∂/∂χ (S, n, H, L) and the b, v gradients (autograd through σ only)."""
    sigma = get_activation(activation)
    L = G.shape[-1]
    with torch.enable_grad():
        sc = scores.detach().requires_grad_()
        bb, vv = b.detach().requires_grad_(), v.detach().requires_grad_()
        s = sigma(sc, bb.unsqueeze(-2), vv.unsqueeze(-1)).mean(dim=-2)  # (S, n, L)
        a = s.detach() - torch.nn.functional.one_hot(eps, L).to(s.dtype)
        Ga = (G @ a.unsqueeze(-1)).squeeze(-1)
        g_sc, gb, gv = torch.autograd.grad(s, (sc, bb, vv), Ga * (2.0 / D), allow_unused=True)
    return (a * Ga).sum(dim=(-2, -1)) / D, g_sc, gb, gv
