"""Trainability diagrams (Fig. 1c, App. A.1): entropy collapse / rank collapse / trainable over (β, α_SA).

A point is *entropy-collapsed* (red, 2) when β ≥ β_c(ρ_0) — the first layer already condenses on orthogonal-ish
tokens; otherwise Eq. (19) is iterated L times and the point is *rank-collapsed* (yellow, 1) if ρ_L ≥ 1 − ε,
else *trainable* (blue, 0). The whole grid is one broadcast tensor computation per layer, and α_c(L) (the
smallest α_SA with ρ_L < 1 − ε) is found by a vectorised bisection over every (L, ε) pair at once.
"""

from __future__ import annotations

import math

import torch

from attnlab.signal.arch import Architecture
from attnlab.signal.theory import propagation as theory
from attnlab.signal.theory import rem

TRAINABLE, RANK_COLLAPSE, ENTROPY_COLLAPSE = 0, 1, 2
PHASES = ("trainable", "rank collapse", "entropy collapse")
F64 = torch.float64


def classify(beta_theory, rho_L, rho0: float, eps: float) -> torch.Tensor:
    """Phase codes from the REM β (theory units) and the final cosine ρ_L."""
    red = beta_theory >= rem.beta_c(rho0)
    yellow = rho_L >= 1 - eps
    return torch.where(red, ENTROPY_COLLAPSE, torch.where(yellow, RANK_COLLAPSE, TRAINABLE))


def trainability(arch: Architecture, betas, alphas, *, L: int | None = None, rho0: float = 0.0, eps: float = 1e-2,
                 table: rem.OverlapTable | None = None) -> dict[str, torch.Tensor]:
    """The Fig. 1c diagram on a grid: ``phase`` (len(alphas), len(betas)), ``rho_L``, the first layer's
    q_sa and normalised entropy (for a continuous colouring), with β in ``arch``'s convention."""
    b = torch.as_tensor(betas, dtype=F64)[None, :]
    a = torch.as_tensor(alphas, dtype=F64)[:, None]
    L = arch.L if L is None else L
    rho = torch.full(torch.broadcast_shapes(b.shape, a.shape), float(rho0), dtype=F64)
    q = torch.ones_like(rho)
    first = None
    for _ in range(L):
        out = theory.block(rho, arch, b, a, table, q=q)
        rho, q = out["rho"], out["q"]
        first = first or {"ipr": out["ipr"], "entropy": out["entropy"]}
    bt = theory.theory_beta(arch, b).expand_as(rho)
    return {"phase": classify(bt, rho, rho0, eps), "rho_L": rho, "ipr_1": first["ipr"],
            "entropy_1": first["entropy"], "beta_c": rem.beta_c(rho0) * arch.beta / arch.beta_theory}


def rho_L(arch: Architecture, alphas, Ls, *, beta: float | None = None, rho0: float = 0.0,
          table: rem.OverlapTable | None = None) -> torch.Tensor:
    """ρ_L for every α_SA (any shape) at each depth in ``Ls``: tensor (len(Ls), *alphas.shape)."""
    Ls = [int(x) for x in Ls]
    a = torch.as_tensor(alphas, dtype=F64)
    rho, q = torch.full_like(a, float(rho0)), torch.ones_like(a)
    keep = {}
    for layer in range(1, max(Ls) + 1):
        o = theory.block(rho, arch, beta, a, table, q=q)
        rho, q = o["rho"], o["q"]
        if layer in Ls:
            keep[layer] = rho
    return torch.stack([keep[L] for L in Ls])


def alpha_c(arch: Architecture, Ls, eps, *, beta: float | None = None, rho0: float = 0.0, alpha_max: float = 1e4,
            points: int = 256, passes: int = 3, table: rem.OverlapTable | None = None) -> torch.Tensor:
    """α_c(L, ε) = inf{α_SA : ρ_L(α_SA) < 1 − ε} for every L in ``Ls`` × ε in ``eps`` (tensor (nL, nε)).

    ρ_L decreases with α_SA (checked in the tests), so the threshold is bracketed by grid refinement, all
    (L, ε) at once: a geometric grid of ``points`` values on [1e-6, α_max], then ``passes − 1`` linear grids
    inside the bracket (relative precision ~1e-6 after three passes). One pass iterates the block map once over
    max(Ls) layers. +inf where even α_max keeps ρ_L ≥ 1 − ε (the MLP alone collapses the signal), 0 where
    α_SA = 0 already propagates.
    """
    Ls = [int(x) for x in Ls]
    target = 1 - torch.as_tensor(eps, dtype=F64).reshape(1, -1, 1)
    nL, ne = len(Ls), target.shape[1]
    own = torch.arange(nL)

    def final(alpha: torch.Tensor) -> torch.Tensor:  # ρ at each row's own depth: alpha (nL, nε, K)
        return rho_L(arch, alpha, Ls, beta=beta, rho0=rho0, table=table)[own, own]

    ends = torch.tensor([0.0, alpha_max], dtype=F64).expand(nL, ne, 2)
    r_ends = final(ends)
    zero, never = r_ends[..., 0] < target[..., 0], r_ends[..., 1] >= target[..., 0]
    grid = torch.logspace(-6, math.log10(alpha_max), points, dtype=F64)
    grid = torch.cat([torch.zeros(1, dtype=F64), grid]).expand(nL, ne, points + 1)
    for _ in range(passes):
        ok = final(grid) < target
        k = torch.where(ok.any(-1), ok.to(torch.int8).argmax(-1), torch.full(ok.shape[:-1], grid.shape[-1] - 1))
        hi = grid.gather(-1, k[..., None])
        lo = grid.gather(-1, (k - 1).clamp(min=0)[..., None])
        grid = lo + (hi - lo) * torch.linspace(0.0, 1.0, points, dtype=F64)
    out = hi[..., 0]
    out = torch.where(zero, torch.zeros_like(out), out)
    return torch.where(never, torch.full_like(out, math.inf), out)
