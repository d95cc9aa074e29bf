"""The reduced population loss (10)-(11) of paper 0 on fixed Monte-Carlo samples, and its gradient.

χ = m χ* + r ξ (Eq. (11)); Ẽ_σ(m, r, b, v) = E Σ_ℓ (δ_ℓε − s_ℓ)² (Eq. (10)). Everything is vectorised over a
leading batch axis S of independent (m, r, b, v): m (S,H,F), r (S,H,H), b (S,H), v (S,).
:func:`reduced_loss` is the autodiff reference, :func:`loss_and_grad` the hand-derived gradient (fast).
"""

from __future__ import annotations

import torch

from attnlab.specialization.model.activations import TRAINABLE, get_activation

Tensor = torch.Tensor

# ----------------------------------------------------------------------------------------------
# Reduced loss (10)-(11): autodiff reference and hand-derived gradient


def _batch(m, r, b, v):
    """Add the leading batch axis S; b = 0, v = 1 by default."""
    S, H = m.shape[0], m.shape[1]
    b = m.new_zeros(S, H) if b is None else torch.as_tensor(b, dtype=m.dtype, device=m.device).expand(S, H)
    v = m.new_ones(S) if v is None else torch.as_tensor(v, dtype=m.dtype, device=m.device).expand(S)
    return m, r, b, v


def scores(m: Tensor, r: Tensor, prep: dict) -> Tensor:
    """χ = m χ* + r ξ (Eq. (11)) for a batch: (S, H, N, L)."""
    Z = prep["Z"]
    S, H = m.shape[:2]
    N, L = Z.shape[1], Z.shape[2]
    W = torch.cat([m, r], -1)  # (S, H, F+H')
    chi = (W @ Z.reshape(Z.shape[0], N * L)).reshape(S, H, N, L)
    chi0 = chi[..., 0] + m @ prep["d"]
    return torch.cat([chi0[..., None], chi[..., 1:]], -1)


def reduced_loss(m: Tensor, r: Tensor, b, v, prep: dict, activation: str, per_sample: bool = False) -> Tensor:
    """Ẽ_σ(m, r, b, v), Eq. (10), MC estimate on ``prep`` (from :meth:`MCSamples.prepare`); autodiff-able.

    Batched inputs m (S,H,F), r (S,H,H), b (S,H), v (S,) -> (S,); unbatched m (H,F) -> scalar.
    ``per_sample``: return the (S, N) per-sample losses Σ_ℓ (δ_ℓ0 - s_ℓ)² instead (unweighted).
    """
    single = m.dim() == 2
    if single:
        m, r = m[None], r[None]
        b = None if b is None else torch.as_tensor(b, dtype=m.dtype)[None]
        v = None if v is None else torch.as_tensor(v, dtype=m.dtype).reshape(1)
    m, r, b, v = _batch(m, r, b, v)
    chi = scores(m, r, prep).transpose(1, 2)  # (S, N, H, L)
    s = get_activation(activation)(chi, b[:, None, :], v[:, None]).mean(-2)  # (S, N, L)
    per = (s * s).sum(-1) - 2 * s[..., 0] + 1
    if per_sample:
        return per[0] if single else per
    out = per @ prep["w"]
    return out[0] if single else out


def loss_and_grad(m: Tensor, r: Tensor, b: Tensor, v: Tensor, prep: dict, activation: str):
    """Batched Ẽ and its hand-derived gradient (no autograd): returns loss (S,), (gm, gr, gb, gv).

    Back-propagation through σ in closed form (cf. (A4), (A8)); gradients of frozen parameters are 0.
    """
    S, H = m.shape[:2]
    w = prep["w"]
    chi = scores(m, r, prep)  # (S, H, N, L)
    gb = torch.zeros_like(b)
    gv = torch.zeros_like(v)
    if activation == "softmax":
        a = torch.softmax(chi, -1)
        s = a.mean(1)
    elif activation == "softmax1":
        bb = b[:, :, None, None]
        big = torch.maximum(chi.amax(-1, keepdim=True), bb)
        e = torch.exp(chi - big)
        den = torch.exp(bb - big) + e.sum(-1, keepdim=True)
        u = e / den
        a = v[:, None, None, None] * u
        s = a.mean(1)
    elif activation == "bsoftmax":
        zz = chi + b[:, :, None, None]
        lse = torch.logsumexp(zz.transpose(1, 2).reshape(S, -1, H * chi.shape[-1]), -1)  # (S, N)
        a = torch.exp(zz - lse[:, None, :, None])  # = σ / H
        s = a.sum(1)
    else:
        get_activation(activation)  # raises ValueError naming the allowed ones
    per = (s * s).sum(-1) - 2 * s[..., 0] + 1
    loss = per @ w
    gs = 2 * w[:, None] * s
    gs[..., 0] -= 2 * w
    gs = gs[:, None]  # (S, 1, N, L): dẼ/ds_ℓ
    if activation == "softmax":
        gchi = a * (gs - (a * gs).sum(-1, keepdim=True)) / H
    elif activation == "softmax1":
        t = (u * gs).sum(-1, keepdim=True) / H  # (S,H,N,1)
        gchi = a * (gs / H - t)
        gb = -(v[:, None] * ((1 - u.sum(-1, keepdim=True)) * t).sum((2, 3)))
        gv = t.sum((1, 2, 3))
    else:
        gchi = a * (gs - (a * gs).sum((1, 3), keepdim=True))
        gb = gchi.sum((2, 3))
    Z = prep["Z"]
    N, L = Z.shape[1], Z.shape[2]
    gW = gchi.reshape(S, H, N * L) @ Z.reshape(Z.shape[0], N * L).T
    F = prep["F"]
    gm = gW[..., :F] + gchi[..., 0] @ prep["d"].mT
    return loss, (gm, gW[..., F:], gb, gv)


def autograd_loss_and_grad(m, r, b, v, prep, activation):
    """Reference: Ẽ and ∇Ẽ by torch.autograd of :func:`reduced_loss` (the paper's algorithm)."""
    with torch.enable_grad():
        ps = [x.detach().requires_grad_(True) for x in (m, r, b, v)]
        loss = reduced_loss(*ps, prep, activation)
        grads = torch.autograd.grad(loss.sum(), ps, allow_unused=True)
    grads = tuple(torch.zeros_like(p) if g is None else g for p, g in zip(ps, grads, strict=True))
    return loss.detach(), grads


def masked_grads(grads, activation):
    keep = TRAINABLE[activation]
    gm, gr, gb, gv = grads
    return gm, gr, gb if "b" in keep else torch.zeros_like(gb), gv if "v" in keep else torch.zeros_like(gv)
