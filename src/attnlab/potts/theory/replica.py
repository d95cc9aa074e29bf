"""Theory of paper 2: the replica-symmetric zero-temperature solution for the linear factored layer on Gaussian data
(Eqs. (8), (36)-(42) in the corrected form of docs/studies/potts.md notes 11-17).

    th = predict(alphas, lam=1e-3, nu=3.0)                    # Trajectory over α: eps_g, eps_train, q, m, rho, V
    sp = saddle(semicircle(3.0, "exact"), alpha, lam, method="bisect" | "brent" | "iterate")
    finite = spectrum_of(problem)                             # the finite-L theory of one GaussianProblem

The saddle point of f = extr[-(V q̂ - q V̂)/2 - m m̂ + Ψ_w + α Ψ_y] (docs notes 11-17; paper: l = V, l̂ = V̂, r = m,
r̂ = -m̂/ν) depends on the data only through the measure (1/L) Σ_k δ(s - s_k) of the eigenvalues s_k of S = Σ_\\i and
its teacher-weighted version (1/L) Σ_k t_k δ(s - s_k), t_k = (u_k·θ)² — a :class:`Spectrum`. For L → ∞ the
eigenvalues of S⁻¹ are ν + x, x on the semicircle, and the teacher weight is 1/ν² (the paper's isotropic J_i) or
1/(ν² + νx + 1) (the exact Gaussian conditional). The equations (docs/studies/potts.md, 'Equations'):

    V̂ = m̂ = α/(1+V),  q̂ = α(ρ+Δ+q-2m)/(1+V)²,  V = ∫μ s/(λ+V̂s),  m = m̂ ∫τ s²/(λ+V̂s),
    q = ∫[q̂ μ s² + m̂² τ s³]/(λ+V̂s)²,   ε_g = ρ + Δ + q - 2m  (Eq. (8)),   ε_train = ε_g/(1+V)².

Solvers: 'bisect' (default) brackets the one-dimensional equation G(V) = ∫μ s/(λ + αs/(1+V)) - V = 0 in log V,
vectorised over any batch of (α, λ, spectra) on any device, then q solves its linear equation; 'brent' does the same
with scipy's Brent per point; 'iterate' is the paper-style damped fixed-point iteration on (V, q, m).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.potts.data.gaussian import GaussianProblem, check_nu

Tensor = torch.Tensor
F64 = torch.float64
Weight = Literal["paper", "exact"]
Method = Literal["bisect", "brent", "iterate"]


@dataclass(frozen=True, eq=False)
class Spectrum:
    """Nodes s (..., K) with the weights μ of (1/L)Σ_k f(s_k) and τ of (1/L)Σ_k t_k f(s_k), and the noise Δ (...)."""

    s: Tensor
    mu: Tensor
    tau: Tensor
    Delta: Tensor

    @property
    def rho(self) -> Tensor:
        """ρ = (1/L) θᵀSθ = ∫τ s."""
        return (self.tau * self.s).sum(-1)

    @property
    def trace(self) -> Tensor:
        """(1/L) tr S = ∫μ s."""
        return (self.mu * self.s).sum(-1)


def g_nu(nu: float) -> float:
    """g(ν) = ∫ρ_sc(x)/(ν + x) dx = (ν - √(ν² - 4))/2 = Σ_ii as L → ∞ (docs/studies/potts.md, 'Equations')."""
    return (nu - math.sqrt(nu * nu - 4)) / 2


def semicircle(nu: float, weight: Weight = "paper", n: int = 1000, device: torch.device | str = "cpu") -> Spectrum:
    """L → ∞ spectrum by Gauss-Chebyshev quadrature of the second kind on the semicircle (docs, 'Equations'):
    x_k = 2cos(kπ/(n+1)), w_k = 2 sin²(kπ/(n+1))/(n+1), s = 1/(ν + x); Δ = 1/ν. The integrands are analytic for
    ν > 2, so the rule converges spectrally: n = 250 already agrees with n = 8000 to 1e-14 on the reference α × λ grid.

    ``weight``: 'paper' t = 1/ν² (J_i isotropic, independent of S; ρ = g/ν²) or 'exact' t = 1/(ν² + νx + 1)
    (the true Gaussian conditional, from Sherman-Morrison; ρ = g²/ν)."""
    nu = check_nu(nu)
    k = torch.arange(1, n + 1, dtype=F64, device=device)
    x = 2 * torch.cos(k * math.pi / (n + 1))
    w = 2 / (n + 1) * torch.sin(k * math.pi / (n + 1)) ** 2
    if weight == "paper":
        t = torch.full_like(x, 1 / nu**2)
    elif weight == "exact":
        t = 1 / (nu * nu + nu * x + 1)
    else:
        raise ValueError(f"weight {weight!r} is not known; allowed: paper, exact")
    return Spectrum(1 / (nu + x), w, w * t, torch.tensor(1 / nu, dtype=F64, device=device))


def spectrum_of(prob: GaussianProblem) -> Spectrum:
    """Finite-L theory of given problems: eigenpairs (s_k, u_k) of S, t_k = (u_k·θ)², weights 1/L."""
    s, u = torch.linalg.eigh(prob.S)
    t = (u.mT @ prob.theta.unsqueeze(-1))[..., 0] ** 2
    mu = torch.full_like(s, 1.0 / prob.L)
    return Spectrum(s, mu, mu * t, prob.Delta)


def _bcast(spec: Spectrum, alpha, lam) -> tuple[Tensor, Tensor, Spectrum]:
    """Broadcast α, λ (any shapes) against the spectrum's batch shape; spectra get a trailing node axis."""
    dev = spec.s.device
    alpha = torch.as_tensor(alpha, dtype=F64, device=dev)
    lam = torch.as_tensor(lam, dtype=F64, device=dev)
    if (alpha <= 0).any() or (lam < 0).any():
        raise ValueError("need alpha > 0 and lambda >= 0")
    shape = torch.broadcast_shapes(alpha.shape, lam.shape, spec.s.shape[:-1])
    K = spec.s.shape[-1]

    def nodes(t: Tensor) -> Tensor:
        return t.expand(*shape, K)

    sp = Spectrum(nodes(spec.s), nodes(spec.mu), nodes(spec.tau), spec.Delta.expand(shape))
    return alpha.expand(shape), lam.expand(shape), sp


def _G(V: Tensor, alpha: Tensor, lam: Tensor, sp: Spectrum) -> Tensor:
    Vhat = alpha / (1 + V)
    return (sp.mu * sp.s / (lam[..., None] + Vhat[..., None] * sp.s)).sum(-1) - V


def _solve_V_bisect(alpha: Tensor, lam: Tensor, sp: Spectrum, iters: int = 64) -> Tensor:
    """64 halvings of a log-bracket at most ~60 wide: V to machine precision."""
    lo = torch.full_like(alpha, math.log(1e-14))
    hi = torch.log(sp.trace / lam.clamp_min(1e-300) + 1.0).clamp_max(700.0)
    for _ in range(iters):
        mid = (lo + hi) / 2
        above = _G(mid.exp(), alpha, lam, sp) > 0  # G > 0: the root lies above
        lo, hi = torch.where(above, mid, lo), torch.where(above, hi, mid)
    return ((lo + hi) / 2).exp()


def _solve_V_brent(alpha: Tensor, lam: Tensor, sp: Spectrum) -> Tensor:
    from scipy.optimize import brentq

    a, l_ = alpha.cpu().numpy().ravel(), lam.cpu().numpy().ravel()
    s, mu = sp.s.cpu().numpy().reshape(a.size, -1), sp.mu.cpu().numpy().reshape(a.size, -1)
    out = np.empty(a.size)
    for k in range(a.size):
        def G(V, k=k):
            return float((mu[k] * s[k] / (l_[k] + a[k] / (1 + V) * s[k])).sum() - V)

        upper = float((mu[k] * s[k]).sum()) / max(l_[k], 1e-300) + 1.0
        out[k] = brentq(G, 1e-14, upper, xtol=1e-15, rtol=4 * np.finfo(float).eps, maxiter=500)
    return torch.tensor(out, dtype=F64, device=alpha.device).reshape(alpha.shape)


def _close(V: Tensor, alpha: Tensor, lam: Tensor, sp: Spectrum) -> dict[str, Tensor]:
    """Given V: V̂ = m̂, m explicit, q from its linear equation, then q̂, ε_g, ε_train (docs, 'Equations')."""
    Vhat = alpha / (1 + V)
    den = lam[..., None] + Vhat[..., None] * sp.s
    m = Vhat * (sp.tau * sp.s**2 / den).sum(-1)
    I2 = (sp.mu * sp.s**2 / den**2).sum(-1)
    I3 = (sp.tau * sp.s**3 / den**2).sum(-1)
    rho, Delta = sp.rho, sp.Delta
    b = alpha * I2 / (1 + V) ** 2
    q = (alpha * (rho + Delta - 2 * m) * I2 / (1 + V) ** 2 + Vhat**2 * I3) / (1 - b)
    eps_g = rho + Delta + q - 2 * m
    return {"V": V, "Vhat": Vhat, "mhat": Vhat, "qhat": alpha * eps_g / (1 + V) ** 2, "m": m, "q": q, "rho": rho,
            "Delta": Delta, "eps_g": eps_g, "eps_train": eps_g / (1 + V) ** 2}


def _iterate(alpha: Tensor, lam: Tensor, sp: Spectrum, damping: float, tol: float, max_iter: int) -> dict[str, Tensor]:
    V = torch.ones_like(alpha)
    q = torch.full_like(alpha, 0.1)
    m = torch.zeros_like(alpha)
    rho, Delta = sp.rho, sp.Delta
    iterations = 0
    for _ in range(max_iter):
        iterations += 1
        Vhat = alpha / (1 + V)
        qhat = alpha * (rho + Delta + q - 2 * m) / (1 + V) ** 2
        den = lam[..., None] + Vhat[..., None] * sp.s
        V_new = (sp.mu * sp.s / den).sum(-1)
        m_new = Vhat * (sp.tau * sp.s**2 / den).sum(-1)
        q_new = ((qhat[..., None] * sp.mu * sp.s**2 + Vhat[..., None] ** 2 * sp.tau * sp.s**3) / den**2).sum(-1)
        step = ((V_new - V).abs() + (q_new - q).abs() + (m_new - m).abs()) / (1 + V.abs() + q.abs() + m.abs())
        V = damping * V + (1 - damping) * V_new
        q = damping * q + (1 - damping) * q_new
        m = damping * m + (1 - damping) * m_new
        if bool((step < tol).all()):
            break
    else:
        raise RuntimeError(f"damped iteration did not converge in {max_iter} steps (max step {float(step.max()):.3g});"
                           " raise damping or use method='bisect'")
    out = _close(V, alpha, lam, sp)
    out.update({"q": q, "m": m, "eps_g": rho + Delta + q - 2 * m, "iterations": torch.tensor(iterations)})
    out["eps_train"] = out["eps_g"] / (1 + V) ** 2
    return out


def saddle(spec: Spectrum, alpha, lam, method: Method = "bisect", *, damping: float = 0.5, tol: float = 1e-12,
           max_iter: int = 1_000_000) -> dict[str, Tensor]:
    """Order parameters (V, q, m and conjugates) and ε_g, ε_train at every (α, λ, spectrum) of the broadcast batch.

    'iterate' stops when the relative step |ΔV| + |Δq| + |Δm| over 1 + |V| + |q| + |m| is below ``tol`` everywhere."""
    alpha, lam, sp = _bcast(spec, alpha, lam)
    if method == "iterate":
        return _iterate(alpha, lam, sp, damping, tol, max_iter)
    if method == "bisect":
        V = _solve_V_bisect(alpha, lam, sp)
    elif method == "brent":
        V = _solve_V_brent(alpha, lam, sp)
    else:
        raise ValueError(f"method {method!r} is not known; allowed: bisect, brent, iterate")
    return _close(V, alpha, lam, sp)


OBSERVABLES = ("eps_g", "eps_train", "q", "m", "rho", "Delta", "V")


def predict(alphas: Sequence[float], lam: float, nu: float = 3.0, *, weight: Weight = "paper",
            spectrum: Spectrum | None = None, method: Method = "bisect", n_nodes: int = 1000,
            device: torch.device | str = "cpu") -> Trajectory:
    """ε_g(α) and the order parameters as a Trajectory over α (the same names as ``gaussian.simulate``).

    Default: the L → ∞ theory for ``nu`` and ``weight``; pass ``spectrum`` (e.g. ``spectrum_of(problem)``, one
    problem) for the finite-L theory."""
    sp = spectrum if spectrum is not None else semicircle(nu, weight, n_nodes, device)
    a = torch.as_tensor(np.asarray(alphas, float), dtype=F64, device=sp.s.device)
    shape = sp.s.shape[:-1]
    res = saddle(sp, a.reshape(-1, *([1] * len(shape))), lam, method)
    obs = {k: res[k].cpu().reshape(len(a), -1).squeeze(-1) for k in OBSERVABLES}
    return Trajectory(a.cpu().numpy(), obs, time_name="alpha", source="theory",
                      meta={"lam": lam, "nu": nu, "weight": weight if spectrum is None else "finite_L"})


def excess_slope(alphas: Sequence[float], eps_g: Sequence[float], Delta: float) -> float:
    """Log-log slope of ε_g - Δ between the first and last α (check 14: -1, not the paper's -1/2)."""
    a, e = np.asarray(alphas, float), np.asarray(eps_g, float) - Delta
    return float(np.polyfit(np.log(a), np.log(e), 1)[0])
