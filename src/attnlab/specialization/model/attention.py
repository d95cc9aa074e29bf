"""The multi-head single-location attention estimator of paper 0, Eq. (3), its init (Sec. II) and order
parameters (8)-(9).

    model = SingleLocationAttention(H, D, "softmax1", generator=g)  # init: k_h ~ N(0, η² I/D)
    y_hat = model(X)                                                # X (n, L, D) -> (n, D)
    y_hat, cache = model.run_with_cache(X)                          # scores, attention, weights, output
    small = prune_heads(model, keep=[0, 2])                         # new model, ŷ averaged over kept heads
    op = order_parameters(K, K_star)                                # m, q, p, rr = r rᵀ, r (float64)

The functional core :func:`attend` works on stacked parameters with any leading batch dims (seeds),
which is what the SGD (:mod:`attnlab.specialization.train`) uses.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn

from attnlab.specialization.data.laws import symsqrt
from attnlab.specialization.model.activations import get_activation

Tensor = torch.Tensor


def init_keys(
    H: int,
    D: int,
    *,
    generator: torch.Generator,
    eta: float = 1.0,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    """K(0) ∈ R^{H×D}, rows k_h ~ N(0, η² I_D / D) iid (Sec. II, before Eq. (5)); drawn in float64, then cast."""
    k = torch.randn(H, D, generator=generator, device=torch.device(generator.device), dtype=torch.float64)
    return (eta / math.sqrt(D) * k).to(device=device or k.device, dtype=dtype)


def attend(X: Tensor, K: Tensor, b: Tensor, v: Tensor, activation: str) -> dict[str, Tensor]:
    """Eq. (3) for stacked parameters: X (*B, n, L, D), K (*B, H, D), b (*B, H), v (*B,); *B may be empty.

    Returns ``scores`` χ (*B, n, H, L), ``attention`` σ(χ, b, v) (*B, n, H, L), ``weights``
    s_ℓ = (1/H) Σ_h σ_hℓ (*B, n, L) and ``output`` ŷ = Σ_ℓ s_ℓ X_ℓ (*B, n, D).
    """
    sigma = get_activation(activation)
    *lead, n, L, D = X.shape
    scores = (X.reshape(*lead, n * L, D) @ K.mT).reshape(*lead, n, L, K.shape[-2]).mT  # (*B, n, H, L)
    att = sigma(scores, b.unsqueeze(-2), v.unsqueeze(-1))
    s = att.mean(dim=-2)
    out = (s.unsqueeze(-2) @ X).squeeze(-2)
    return {"scores": scores, "attention": att, "weights": s, "output": out}


class SingleLocationAttention(nn.Module):
    """ŷ(X) = (1/H) Σ_h σ(XKᵀ, b, v; h)ᵀ X, Eq. (3): H keys K (H, D), biases b (H,), scale v ().

    Parameters ``K``, ``b``, ``v`` are nn.Parameters; pass ``K`` (and optionally ``b``, ``v``) to build
    from given values, otherwise K is drawn by :func:`init_keys` from ``generator`` and b = 0, v = 1.
    """

    def __init__(
        self,
        H: int,
        D: int,
        activation: str = "softmax",
        *,
        K: Tensor | None = None,
        b: Tensor | None = None,
        v: Tensor | float | None = None,
        eta: float = 1.0,
        generator: torch.Generator | None = None,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        get_activation(activation)  # validates the name
        self.activation = activation
        if K is None:
            if generator is None:
                raise ValueError("SingleLocationAttention: give either K or a generator to draw it from")
            K = init_keys(H, D, generator=generator, eta=eta, device=device, dtype=dtype)
        K = torch.as_tensor(K).to(device=device or K.device, dtype=dtype)
        if K.shape != (H, D):
            raise ValueError(
                f"SingleLocationAttention: K has shape {tuple(K.shape)}, expected (H, D) = {(H, D)}"
            )
        b = torch.zeros(H) if b is None else torch.as_tensor(b)
        v = torch.tensor(1.0) if v is None else torch.as_tensor(v)
        if b.shape != (H,) or v.ndim != 0:
            raise ValueError(
                f"SingleLocationAttention: b must be ({H},) and v a scalar, "
                f"got {tuple(b.shape)}, {tuple(v.shape)}"
            )
        self.K = nn.Parameter(K.clone())
        self.b = nn.Parameter(b.to(K).clone())
        self.v = nn.Parameter(v.to(K).clone())

    @property
    def H(self) -> int:
        return self.K.shape[0]

    @property
    def D(self) -> int:
        return self.K.shape[1]

    def run_with_cache(self, X: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """(ŷ, cache) for X (n, L, D) or (L, D); cache = {'scores', 'attention', 'weights', 'output'}
        with the shapes of :func:`attend` (no n axis for a single sequence)."""
        if X.ndim == 2:
            out, cache = self.run_with_cache(X.unsqueeze(0))
            return out[0], {k: c[0] for k, c in cache.items()}
        cache = attend(X, self.K, self.b, self.v, self.activation)
        return cache["output"], cache

    def forward(self, X: Tensor) -> Tensor:
        """ŷ (n, D) for X (n, L, D), or (D,) for one sequence X (L, D)."""
        return self.run_with_cache(X)[0]

    def loss(self, X: Tensor, y: Tensor) -> Tensor:
        """Empirical loss (6): mean over sequences of ||y − ŷ(X)||² / D."""
        return ((y - self(X)) ** 2).sum(-1).mean() / self.D

    def order_parameters(self, K_star: Tensor) -> OrderParameters:
        return order_parameters(self.K.detach(), K_star)

    def extra_repr(self) -> str:
        return f"H={self.H}, D={self.D}, activation={self.activation!r}"


def prune_heads(model: SingleLocationAttention, keep: Sequence[int]) -> SingleLocationAttention:
    """A new model made of the heads ``keep`` only (Fig. 7).

    Fig. 7's rescaling rule (docs/studies/specialization.md, Notes on the paper) is the model itself on fewer heads:
    ŷ = (1/|keep|) Σ_{h∈keep} σ_hᵀX; for B-softmax both head sums of Eq. (4) run over kept heads; softmax-1 keeps
    its trained b_h and v.
    """
    keep = list(keep)
    if not keep or len(set(keep)) != len(keep) or not all(0 <= h < model.H for h in keep):
        raise ValueError(f"prune_heads: keep={keep} must be distinct head indices in [0, {model.H})")
    idx = torch.tensor(keep, device=model.K.device)
    with torch.no_grad():
        return SingleLocationAttention(
            len(keep),
            model.D,
            model.activation,
            K=model.K[idx],
            b=model.b[idx],
            v=model.v,
            dtype=model.K.dtype,
        )


# ---------------------------------------------------------------------------------------------
# order parameters, Eqs. (8)-(9)
# ---------------------------------------------------------------------------------------------
class OrderParameters(NamedTuple):
    """m = K K*ᵀ (*B, H, F), q = K Kᵀ (*B, H, H), p = K* K*ᵀ (*B, F, F), rr = q − m p⁻¹ mᵀ (*B, H, H)
    and r = symmetric PSD square root of rr (*B, H, H); all float64."""

    m: Tensor
    q: Tensor
    p: Tensor
    rr: Tensor
    r: Tensor


def order_parameters(K: Tensor, K_star: Tensor) -> OrderParameters:
    """Order parameters (8)-(9) from keys K (*B, H, D) and spikes K* (*B, F, D), computed in float64."""
    K, K_star = K.detach().double(), K_star.detach().double()
    m = K @ K_star.mT
    q = K @ K.mT
    p = K_star @ K_star.mT
    rr = q - m @ torch.linalg.solve(p, m.mT)
    rr = (rr + rr.mT) / 2
    return OrderParameters(m, q, p, rr, symsqrt(rr))
