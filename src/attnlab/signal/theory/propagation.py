"""Signal propagation through a full transformer block and its iteration over depth (paper Secs. 3.3–3.4, Eq. (19)).

One block (post-LN, Secs. 3.2–3.4): Eq. (13) → (q_SA, p_SA) (Eq. (8)) → residual and LN, Eq. (16) → MLP kernel,
Eqs. (17)-(18)/(B.22) → residual and LN, Eq. (19). Every function broadcasts over tensors of ρ, β and α_SA, so a
200 × 200 trainability diagram is one tensor computation per layer. The pre-LN extension (not in the paper)
tracks (q, p) instead of ρ alone.

``predict(arch, rho0)`` is the theory side of the paired API: a :class:`Trajectory` over layers l = 0..L with
the same observables as ``train.simulate`` (``rho``, ``rho_mid``, ``q``, ``ipr``, ``entropy``,
``q_attn_out``, ``q_mlp_out``; block observables are NaN at l = 0). ``finite_T=True`` replaces Eq. (13) by the
finite-T Monte Carlo of the score field (App. B.7), tabulated once (:class:`rem.OverlapTable`).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.signal.arch import Architecture
from attnlab.signal.theory import rem
from attnlab.signal.theory.kernels import gauss_dphi2, mlp_moments

F64 = torch.float64
OBSERVABLES = ("rho", "rho_mid", "q", "ipr", "entropy", "q_attn_out", "q_mlp_out")


def _t(x) -> torch.Tensor:
    return torch.as_tensor(x, dtype=F64)


def theory_beta(arch: Architecture, beta=None) -> torch.Tensor:
    """The REM β of Eq. (13) for ``beta`` given in ``arch``'s convention (default ``arch.beta``)."""
    if beta is None:
        return _t(arch.beta_theory)
    return _t(beta) * (arch.beta_theory / arch.beta)


def _attention(arch, beta, rho, table):
    """(q_sa, p_sa, S/log T) at the block's input cosine: Eq. (13) and p_sa = 0, or the finite-T table."""
    if table is not None:
        return table(beta, rho)
    q = rem.q_sa(beta, rho)
    return q, torch.zeros_like(q), rem.entropy_norm(beta, rho)


def block(rho, arch: Architecture, beta=None, alpha_sa=None, table: rem.OverlapTable | None = None,
          q=None) -> dict[str, torch.Tensor]:
    """One transformer block at initialisation: input cosine ρ (and norm q for pre-LN) → every observable.

    ``beta`` (in ``arch``'s convention) and ``alpha_sa`` override the architecture's values and may be
    tensors that broadcast with ρ (diagrams, configuration axes of the simulation).
    """
    beta = theory_beta(arch, beta)
    a_sa = _t(arch.alpha_sa if alpha_sa is None else alpha_sa)
    a_mlp, sv2, sb2 = arch.alpha_mlp, arch.sigma_v2, arch.sigma_b2
    rho = _t(rho).clamp(0.0, 1.0)
    rho, beta, a_sa = torch.broadcast_tensors(rho, beta, a_sa)
    qsa, psa, ent = _attention(arch, beta, rho, table)
    q_attn = sv2 * (rho + (1 - rho) * qsa) + sb2                                  # Eq. (8)
    p_attn = sv2 * (rho + (1 - rho) * psa) + sb2
    if arch.ln_position == "post":
        rho_mid = rem.sa_cosine(beta, rho, qsa, psa, sv2, sb2, a_sa)               # Eq. (16)
        q2, p2, _ = mlp_moments(rho_mid, arch.activation, arch.sigma_w2, sb2, arch.sw2_out)      # Eqs. (17)-(18)/(B.22)
        den = q2 + a_mlp**2
        out = torch.where(den > 0, (p2 + a_mlp**2 * rho_mid) / den.clamp(min=1e-300), torch.ones_like(den))
        out = torch.where(rho >= 1, torch.ones_like(out), out.clamp(0.0, 1.0))      # Eq. (19)
        q_out = torch.ones_like(out)
    else:  # pre-LN (an extension): the residual stream keeps its norm; attention and MLP see LN(x)
        q = torch.ones_like(rho) if q is None else _t(q)
        p = rho * q
        q_mid, p_mid = a_sa**2 * q + q_attn, a_sa**2 * p + p_attn
        rho_mid = (p_mid / q_mid).clamp(0.0, 1.0)
        q2, p2, _ = mlp_moments(rho_mid, arch.activation, arch.sigma_w2, sb2, arch.sw2_out)
        q_out, p_out = a_mlp**2 * q_mid + q2, a_mlp**2 * p_mid + p2
        out = (p_out / q_out).clamp(0.0, 1.0)
    return {"rho": out, "rho_mid": rho_mid, "q": q_out, "ipr": qsa, "p_sa": psa, "entropy": ent,
            "q_attn_out": q_attn, "q_mlp_out": q2}


def iterate(rho0, arch: Architecture, L: int | None = None, beta=None, alpha_sa=None,
            table: rem.OverlapTable | None = None) -> dict[str, torch.Tensor]:
    """Eq. (19) iterated L times from ρ_0: each observable as a tensor (L+1, *shape); block observables NaN at 0."""
    L = arch.L if L is None else L
    rho = _t(rho0).clamp(0.0, 1.0)
    shape = torch.broadcast_shapes(rho.shape, theory_beta(arch, beta).shape, _t(arch.alpha_sa if alpha_sa is None
                                                                               else alpha_sa).shape)
    rho = rho.expand(shape).clone()
    q = torch.ones_like(rho)
    nan = torch.full_like(rho, math.nan)
    rows = {k: [nan] for k in OBSERVABLES}
    rows["rho"], rows["q"] = [rho], [q]
    for _ in range(L):
        out = block(rho, arch, beta, alpha_sa, table, q=q)
        rho, q = out["rho"], out["q"]
        for k in OBSERVABLES:
            rows[k].append(out[k].expand(shape))
    return {k: torch.stack(v) for k, v in rows.items()}


def predict(arch: Architecture, rho0, L: int | None = None, *, beta=None, alpha_sa=None, finite_T: bool = False,
            n_rep: int = 4, seed: int = 0, table: rem.OverlapTable | None = None) -> Trajectory:
    """The theory side of the paired API: observables over layers 0..L (axis 1: configurations, if any)."""
    if finite_T and table is None:
        table = rem.OverlapTable(arch.T, n_rep=n_rep, seed=seed)
    out = iterate(rho0, arch, L, beta, alpha_sa, table)
    L = out["rho"].shape[0] - 1
    return Trajectory(np.arange(L + 1), {k: v.numpy() for k, v in out.items()}, time_name="layer",
                      source="theory", meta={"finite_T": bool(table is not None), "T": arch.T})


# -- fixed points and depth behaviour (Sec. 3.4, Fig. 5) ----------------------------------------------------------


def slope_at_one(arch: Architecture, sigma_w2=None, alpha_sa=None) -> float:
    """F'(1) of the post-LN block map (low-variance phase; Eq. (19), Fig. 5):
    [α_SA²/(σ_v² + σ_b² + α_SA²)] · [(σ_w⁴ E φ'(√q¹ z)² + α_MLP²)/(q² + α_MLP²)]."""
    sw2 = arch.sigma_w2 if sigma_w2 is None else sigma_w2
    a = arch.alpha_sa if alpha_sa is None else alpha_sa
    q1 = sw2 + arch.sigma_b2
    s2 = sw2 if arch.sigma_w2_out is None else arch.sigma_w2_out
    q2, _, _ = mlp_moments(torch.ones(()), arch.activation, sw2, arch.sigma_b2, s2)
    chi = s2 * sw2 * (gauss_dphi2(arch.activation, q1) if arch.activation != "relu" else 0.5)
    sa = a**2 / (arch.sigma_v2 + arch.sigma_b2 + a**2) if (arch.sigma_v2 + arch.sigma_b2 + a**2) > 0 else 1.0
    return float(sa * (chi + arch.alpha_mlp**2) / (float(q2) + arch.alpha_mlp**2))


def critical_sigma_w2(arch: Architecture, lo: float = 0.1, hi: float = 200.0, tol: float = 1e-6) -> float:
    """σ_w,c²: where F'(1) crosses 1 (tanh: ρ* < 1 exists above it); NaN if F'(1) < 1 on [lo, hi]."""
    f = lambda s: slope_at_one(arch, sigma_w2=s) - 1.0  # noqa: E731
    if f(hi) < 0 or f(lo) > 0:
        return math.nan
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def fixed_points(arch: Architecture, beta=None, alpha_sa=None, n: int = 2001, tol: float = 1e-12) -> list[float]:
    """Fixed points ρ* ∈ (0, 1) of the block map (ρ = 1 is always one): sign changes of F(ρ) − ρ, bisected."""
    grid = torch.linspace(0.0, 1.0, n, dtype=F64)[1:-1]
    g = block(grid, arch, beta, alpha_sa)["rho"] - grid
    roots = []
    for i in torch.nonzero(torch.sign(g[:-1]) * torch.sign(g[1:]) < 0).flatten().tolist():
        lo, hi = float(grid[i]), float(grid[i + 1])
        glo = float(g[i])
        while hi - lo > tol:
            mid = 0.5 * (lo + hi)
            gm = float(block(torch.tensor(mid, dtype=F64), arch, beta, alpha_sa)["rho"]) - mid
            lo, hi, glo = (mid, hi, gm) if np.sign(gm) == np.sign(glo) else (lo, mid, glo)
        roots.append(0.5 * (lo + hi))
    return roots
