"""Mean-field kernels of the two-layer MLP (paper Sec. 3.4, App. B.8; Eqs. (17)-(18) = B.20–B.21, B.22).

An LN'd token (q⁰ = 1) with cosine ρ passes W_1 (variance σ_w1²/d), φ, W_2 (variance σ_w2²/d_ff) and biases
σ_b²: after W_1, q¹ = σ_w1² + σ_b², p¹ = σ_w1² ρ + σ_b², c¹ = p¹/q¹; after φ and W_2,
q² = σ_w2² E φ(u)² + σ_b², p² = σ_w2² E φ(u_1)φ(u_2) + σ_b² with (u_1, u_2) of variance q¹ and correlation c¹.

ReLU has the arc-cosine closed form f(c) (Cho & Saul; B.22); any other φ (tanh, GELU) uses probabilists'
composite Gauss–Legendre quadrature against the Gaussian density (1-D for Eq. (17), 2-D for Eq. (18)), and
:func:`mlp_moments` switches to
a tabulated, linearly interpolated kernel for large batches (diagrams).
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import torch

from attnlab.signal.arch import ACTIVATIONS, phi

F64 = torch.float64


def dphi(name: str, u: torch.Tensor) -> torch.Tensor:
    """φ'(u), for the stability of ρ = 1 (F'(1) of Eq. (19), Fig. 5)."""
    if name == "relu":
        return (u > 0).to(u.dtype)
    if name == "tanh":
        return 1 - torch.tanh(u) ** 2
    if name == "gelu":
        return 0.5 * (1 + torch.erf(u / math.sqrt(2))) + u * torch.exp(-u * u / 2) / math.sqrt(2 * math.pi)
    if name == "linear":
        return torch.ones_like(u)
    raise ValueError(f"activation {name!r} is not allowed; allowed: {', '.join(ACTIVATIONS)}")


def relu_f(c) -> torch.Tensor:
    """Normalised arc-cosine kernel f(c) = [√(1−c²) + c(π − arccos c)]/π (B.22): f(0)=1/π, f(1)=1, f(−1)=0."""
    c = torch.as_tensor(c, dtype=F64).clamp(-1.0, 1.0)
    return (torch.sqrt(1 - c * c) + c * (math.pi - torch.arccos(c))) / math.pi


@cache
def _rule(panels: int = 40, order: int = 6, half_width: float = 8.0) -> tuple[torch.Tensor, torch.Tensor, float]:
    """Composite Gauss–Legendre nodes and weights on [−w, w] (0 is a panel boundary), and the panel width.

    Used instead of Gauss–Hermite: a Hermite rule converges only like 1/n across the kink of ReLU (80 nodes:
    1.5e-3 off B.22) and misses the steep tanh(√q z) of large σ_w² (E φ'² at σ_w² = 32 is off by half).
    240 nodes (40 panels of 6) reproduce B.22 to 1e-7."""
    x, w = np.polynomial.legendre.leggauss(order)
    h = 2 * half_width / panels
    left = -half_width + h * np.arange(panels)
    z = (left[:, None] + h * (x[None, :] + 1) / 2).reshape(-1)
    return torch.tensor(z, dtype=F64), torch.tensor(np.tile(w * h / 2, panels), dtype=F64), h


def _pdf(z: torch.Tensor) -> torch.Tensor:
    return torch.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def gauss_moment(name: str, q: float, fn=None) -> float:
    """E φ(√q z)² (Eq. (17)'s integral); ``fn`` replaces φ² by another function of u."""
    z, w, _ = _rule()
    u = math.sqrt(q) * z
    vals = phi(name, u) ** 2 if fn is None else fn(u)
    return float((w * _pdf(z) * vals).sum())


def gauss_cross(name: str, q: float, c) -> torch.Tensor:
    """E φ(u_1) φ(u_2), u_1 = √q z_1, u_2 = √q (c z_1 + √(1−c²) z_2) (Eq. (18)).

    Tensor-product composite rule; for each z_1 node the z_2 panels are shifted (by less than a panel) so
    that the kink of φ(u_2) at c z_1 + √(1−c²) z_2 = 0 falls on a panel boundary: ReLU then matches the
    closed form B.22 to ~1e-9, and smooth φ converge fast."""
    z, w, h = _rule()
    c = torch.as_tensor(c, dtype=F64).clamp(-1.0, 1.0)
    flat = c.reshape(-1, 1, 1)
    s = torch.sqrt(1 - flat**2)
    kink = torch.where(s > 1e-12, -flat * z[None, :, None] / s.clamp(min=1e-12), torch.zeros_like(flat))
    shift = kink - h * torch.round(kink / h)                                   # (N, n1, 1)
    z2 = z[None, None, :] + shift                                              # (N, n1, n2)
    sq = math.sqrt(q)
    inner = (w[None, None, :] * _pdf(z2) * phi(name, sq * (flat * z[None, :, None] + s * z2))).sum(-1)
    return ((w * _pdf(z) * phi(name, sq * z))[None, :] * inner).sum(-1).reshape(c.shape)


def gauss_dphi2(name: str, q: float) -> float:
    """E φ'(√q z)², the slope of the kernel at c = 1 (Eq. (18); Sec. 3.4)."""
    return gauss_moment(name, q, fn=lambda u: dphi(name, u) ** 2)


@cache
def _table(name: str, q1: float, points: int) -> tuple[torch.Tensor, torch.Tensor]:
    cs = torch.linspace(-1.0, 1.0, points, dtype=F64)
    vals = torch.cat([gauss_cross(name, q1, cs[i:i + 16]) for i in range(0, points, 16)])
    return cs, vals


def _interp(xs: torch.Tensor, ys: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    x = x.clamp(xs[0], xs[-1])
    i = torch.searchsorted(xs, x.contiguous()).clamp(1, len(xs) - 1)
    t = (x - xs[i - 1]) / (xs[i] - xs[i - 1])
    return ys[i - 1] + t * (ys[i] - ys[i - 1])


def mlp_moments(rho, activation: str = "relu", sigma_w2: float = 0.2, sigma_b2: float = 4e-4,
                sigma_w2_out: float | None = None, table_above: int = 16):
    """(q², p², c¹) of the MLP output for LN'd inputs with cosine ρ (Eqs. (17)-(18); B.22 for ReLU).

    ``sigma_w2_out`` is the second layer's variance (default σ_w², as in the paper). Non-ReLU kernels use
    the 2-D quadrature of :func:`gauss_cross`, through a 513-point table (linear interpolation, relative
    error ≲ 1e-5) when more than ``table_above`` cosines are asked for at once.
    """
    rho = torch.as_tensor(rho, dtype=F64)
    s2 = sigma_w2 if sigma_w2_out is None else sigma_w2_out
    q1 = sigma_w2 + sigma_b2
    if q1 <= 0:
        zero = torch.zeros_like(rho)
        q2 = s2 * float(phi(activation, torch.zeros((), dtype=F64)) ** 2) + sigma_b2
        return zero + q2, zero + q2, torch.ones_like(rho)
    c1 = (sigma_w2 * rho + sigma_b2) / q1
    if activation == "relu":
        q2 = torch.full_like(rho, s2 * q1 / 2 + sigma_b2)
        p2 = s2 * q1 / 2 * relu_f(c1) + sigma_b2
        return q2, p2, c1
    if activation == "linear":
        return torch.full_like(rho, s2 * q1 + sigma_b2), s2 * q1 * c1 + sigma_b2, c1
    q2 = torch.full_like(rho, s2 * gauss_moment(activation, q1) + sigma_b2)
    if rho.numel() > table_above:
        cs, vals = _table(activation, float(q1), 513)
        cross = _interp(cs, vals, c1)
    else:
        cross = gauss_cross(activation, q1, c1)
    return q2, s2 * cross + sigma_b2, c1
