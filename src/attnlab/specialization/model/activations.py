"""Attention activations σ of paper 0, Eqs. (3)-(4) and (17).

Stable API (imported by :mod:`.attention` and the theory)::

    sigma = get_activation(name)          # name in ACTIVATIONS: 'softmax', 'softmax1', 'bsoftmax'
    att = sigma(chi, b, v)                # chi (..., H, L) scores; returns σ(χ, b, v; h)_ℓ, shape (..., H, L)
    s = head_average(att)                 # (..., L): s_ℓ = (1/H) Σ_h σ_hℓ, so ŷ = Σ_ℓ s_ℓ X_ℓ

Arguments of every activation ``sigma(chi, b=None, v=None)``:

* ``chi``: scores χ_hℓ = X_ℓᵀ k_h, shape ``(..., H, L)`` (heads on axis -2, tokens on axis -1).
* ``b``: per-head biases, shape broadcastable to ``chi.shape[:-1]`` i.e. ``(..., H)``; ``None`` = 0.
* ``v``: global scale, a float or a tensor broadcastable to ``chi.shape[:-2]``; ``None`` = 1.

Activations (all differentiable, permutation-equivariant in ℓ):

* ``softmax``  : σ_hℓ = e^{χ_hℓ} / Σ_ℓ' e^{χ_hℓ'}            (ignores b, v; rows sum to 1)
* ``softmax1`` : σ_hℓ = v e^{χ_hℓ} / (e^{b_h} + Σ_ℓ' e^{χ_hℓ'}) (sink e^{b_h}; stable for huge scores)
* ``bsoftmax`` : σ_hℓ = e^{χ_hℓ+b_h} / ((1/H) Σ_h'ℓ' e^{χ_h'ℓ'+b_h'})   Eq. (4); ignores v;
  Σ_hℓ σ = H and it is invariant under b -> b + c.

``TRAINABLE[name]`` lists which of ('b', 'v') the activation depends on (the others have identically
zero gradient and are kept frozen). ``softmax1_fixed`` (b = 0, v = 1 frozen, Kaul et al.) is provided as
a function but is not in the registry (not used in the paper's figures).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Tensor = torch.Tensor


def _as_v(v, chi: Tensor) -> Tensor:
    """Global scale v as a tensor broadcastable against (..., H, L)."""
    v = torch.as_tensor(1.0 if v is None else v, dtype=chi.dtype, device=chi.device)
    return v[..., None, None]


def _as_b(b, chi: Tensor) -> Tensor:
    """Per-head biases as a tensor broadcastable against (..., H, 1)."""
    if b is None:
        return chi.new_zeros(chi.shape[-2])[:, None]
    return torch.as_tensor(b, dtype=chi.dtype, device=chi.device)[..., None]


def softmax(chi: Tensor, b=None, v=None) -> Tensor:
    """Softmax over tokens, per head; b and v are ignored (Eq. (3) with σ = softmax)."""
    return torch.softmax(chi, dim=-1)


def softmax1(chi: Tensor, b=None, v=None) -> Tensor:
    """Softmax-1 with head-wise sink e^{b_h} and global scale v (Eq. (3), Sec. II).

    Stable at large scores: with M_h = max(b_h, max_ℓ χ_hℓ),
    σ_hℓ = v e^{χ_hℓ-M_h} / (e^{b_h-M_h} + Σ_ℓ' e^{χ_hℓ'-M_h}).
    """
    b = _as_b(b, chi)
    big = torch.maximum(chi.amax(dim=-1, keepdim=True), b).detach()
    num = torch.exp(chi - big)
    den = torch.exp(b - big) + num.sum(dim=-1, keepdim=True)
    return _as_v(v, chi) * num / den


def softmax1_fixed(chi: Tensor, b=None, v=None) -> Tensor:
    """Original softmax-1 of Kaul et al.: sink 1 (b = 0) and v = 1, whatever b, v are passed."""
    return softmax1(chi, None, None)


def bsoftmax(chi: Tensor, b=None, v=None) -> Tensor:
    """Bayes-softmax, Eq. (4): H * softmax over the flattened (head, token) entries of χ + b; ignores v."""
    z = chi + _as_b(b, chi)
    H, L = z.shape[-2], z.shape[-1]
    flat = torch.softmax(z.reshape(*z.shape[:-2], H * L), dim=-1)
    return H * flat.reshape(z.shape)


def head_average(att: Tensor) -> Tensor:
    """s_ℓ = (1/H) Σ_h σ_hℓ, shape (..., L): the weight of token ℓ in ŷ = Σ_ℓ s_ℓ X_ℓ."""
    return att.mean(dim=-2)


ACTIVATIONS: dict[str, Callable[..., Tensor]] = {
    "softmax": softmax,
    "softmax1": softmax1,
    "bsoftmax": bsoftmax,
}

TRAINABLE: dict[str, tuple[str, ...]] = {
    "softmax": (),
    "softmax1": ("b", "v"),
    "bsoftmax": ("b",),
}


def get_activation(name: str) -> Callable[..., Tensor]:
    """The activation registered under ``name`` (one of ``ACTIVATIONS``)."""
    try:
        return ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown activation {name!r}; allowed: {', '.join(ACTIVATIONS)}") from None
