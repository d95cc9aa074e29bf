"""Data model II, the Gaussian (mean-field) relaxation of the replica analysis, and its ridge learner (text before
Eq. (7), Eqs. (7), (10)).

    prob = make_problems(L=200, nu=3.0, n=30, generator=g)    # 30 independent GOE problems, masked site i = 0
    X, y = sample(prob, M, generator=g)                       # x = m_\\i/√L (n, M, L-1), y = m_i (n, M)
    A = ridge(X, y, lam)                                      # Eq. (7) in the Eq. (10) convention, (n, L-1)
    errors(prob, A)                                           # ε_g = Δ + (A-θ)ᵀS(A-θ)/L exactly, with q, m, ρ
    sim = simulate(L=200, nu=3.0, lam=1e-3, alphas=[...], n_real=30, generator=g)   # Trajectory over α

Magnetisations m ~ N(0, Σ), Σ = P⁻¹, P = Ω/√L + νI with Ω GOE (off-diagonal variance 1, diagonal 2); ν > 2
keeps P positive definite (semicircle on [-2, 2]). The masked spin is the exact Gaussian conditional,
y = θ·x + √Δ ξ with x = m_\\i/√L, θ = -Ω_{i,\\i}/P_ii and Δ = 1/P_ii (the paper's Eq. (16) with J_i := Ω_{i,\\i}).
Everything is batched over problems.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory

Tensor = torch.Tensor
F64 = torch.float64


def check_nu(nu: float) -> float:
    if not (isinstance(nu, int | float) and math.isfinite(nu) and nu > 2):
        raise ValueError(f"nu = {nu!r}: the precision Ω/√L + νI is positive definite only for ν > 2 "
                         "(the GOE spectrum of Ω/√L fills [-2, 2]); pick nu > 2, e.g. 3")
    return float(nu)


@dataclass(frozen=True, eq=False)
class GaussianProblem:
    """n problems of size L: Ω, P (n, L, L), chol (lower Cholesky factor of P), S = Σ_\\i (n, L-1, L-1),
    θ (n, L-1), Δ (n,), masked site ``site``."""

    L: int
    nu: float
    site: int
    Omega: Tensor
    P: Tensor
    chol: Tensor
    S: Tensor
    theta: Tensor
    Delta: Tensor

    @property
    def n(self) -> int:
        return self.P.shape[0]

    @property
    def rho(self) -> Tensor:
        """ρ = θᵀSθ/L (the signal part of Var(y))."""
        return _quad(self.S, self.theta, self.theta) / self.L


def _quad(S: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return (a.unsqueeze(-2) @ S @ b.unsqueeze(-1))[..., 0, 0]


def _rest(L: int, site: int, device) -> Tensor:
    return torch.tensor([j for j in range(L) if j != site], device=device)


def make_problems(L: int, nu: float, n: int, *, generator: torch.Generator, site: int = 0,
                  max_tries: int = 100) -> GaussianProblem:
    """Draw n GOE problems; a draw whose P is not positive definite (possible at finite L) is redrawn."""
    nu = check_nu(nu)
    if L < 2:
        raise ValueError(f"L = {L}: need L >= 2 sites")
    if not 0 <= site < L:
        raise ValueError(f"site = {site}: the masked site must lie in 0..L-1 = 0..{L - 1}")
    dev = torch.device(generator.device)
    eye = torch.eye(L, dtype=F64, device=dev)
    P = torch.empty(n, L, L, dtype=F64, device=dev)
    Omega = torch.empty_like(P)
    todo = torch.arange(n, device=dev)
    for _ in range(max_tries):
        G = torch.randn(len(todo), L, L, generator=generator, device=dev, dtype=F64)
        Om = (G + G.mT) / math.sqrt(2)
        Omega[todo], P[todo] = Om, Om / math.sqrt(L) + nu * eye
        ok = torch.linalg.eigvalsh(P[todo])[:, 0] > 0
        todo = todo[~ok]
        if len(todo) == 0:
            break
    else:
        raise ValueError(f"could not draw a positive-definite precision at L = {L}, nu = {nu}; increase nu")
    chol = torch.linalg.cholesky(P)
    Sigma = torch.cholesky_inverse(chol)
    rest = _rest(L, site, dev)
    S = Sigma[:, rest][:, :, rest]
    Pii = P[:, site, site]
    theta = -Omega[:, site, rest] / Pii[:, None]
    return GaussianProblem(L, nu, site, Omega, P, chol, S, theta, 1.0 / Pii)


def sample(prob: GaussianProblem, M: int, *, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """M sequences per problem, m = R⁻ᵀz with P = RRᵀ (so Cov m = P⁻¹): x = m_\\i/√L (n, M, L-1), y = m_i (n, M)."""
    z = torch.randn(prob.n, prob.L, M, generator=generator, device=prob.P.device, dtype=F64)
    m = torch.linalg.solve_triangular(prob.chol.mT, z, upper=True)  # (n, L, M)
    rest = _rest(prob.L, prob.site, m.device)
    return m[:, rest].mT / math.sqrt(prob.L), m[:, prob.site]


def ridge(X: Tensor, y: Tensor, lam: float) -> Tensor:
    """argmin_A ½ Σ_μ (y_μ - A·x_μ)² + (λ/2)||A||², batched; the M×M dual form when M < L-1; λ = 0: pinv(X) y."""
    _, M, D = X.shape
    if lam == 0:
        return (torch.linalg.pinv(X) @ y.unsqueeze(-1))[..., 0]
    if M >= D:
        G = X.mT @ X + lam * torch.eye(D, dtype=X.dtype, device=X.device)
        return torch.cholesky_solve((X.mT @ y.unsqueeze(-1)), torch.linalg.cholesky(G))[..., 0]
    K = X @ X.mT + lam * torch.eye(M, dtype=X.dtype, device=X.device)
    return (X.mT @ torch.cholesky_solve(y.unsqueeze(-1), torch.linalg.cholesky(K)))[..., 0]


def errors(prob: GaussianProblem, A: Tensor) -> dict[str, Tensor]:
    """Exact generalisation error of A, Eq. (8): ε_g = Δ + (A-θ)ᵀS(A-θ)/L = ρ + Δ + q - 2m (Eq. (10))."""
    L = prob.L
    q = _quad(prob.S, A, A) / L
    m = _quad(prob.S, prob.theta, A) / L
    rho = prob.rho
    return {"eps_g": rho + prob.Delta + q - 2 * m, "q": q, "m": m, "rho": rho, "Delta": prob.Delta}


def train_error(X: Tensor, y: Tensor, A: Tensor) -> Tensor:
    """Mean squared training residual (without the penalty), (n,)."""
    return ((y - (X @ A.unsqueeze(-1))[..., 0]) ** 2).mean(-1)


OBSERVABLES = ("eps_g", "eps_train", "q", "m", "rho", "Delta")


def simulate(
    L: int,
    nu: float,
    lam: float,
    alphas: Sequence[float],
    n_real: int,
    *,
    generator: torch.Generator,
    problem: GaussianProblem | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Trajectory:
    """Ridge fits averaged over ``n_real`` realisations per α (M = round(αL)) as a Trajectory over α.

    Each realisation draws a fresh Ω and a fresh training set (Fig. 3-left); with ``problem`` (one problem, n = 1)
    only the training set is redrawn (the fixed-problem check against the finite-L theory). Observables: the
    means over realisations (T,), their standard errors ``<name>_sem`` and every realisation ``<name>_all`` (T, n).
    """
    out: dict[str, list] = {k: [] for k in OBSERVABLES}
    for k, alpha in enumerate(alphas):
        M = max(1, round(alpha * L))
        if problem is None:
            prob = make_problems(L, nu, n_real, generator=generator)
        else:
            prob = _repeat(problem, n_real)
        X, y = sample(prob, M, generator=generator)
        A = ridge(X, y, lam)
        e = errors(prob, A)
        e["eps_train"] = train_error(X, y, A)
        for name in OBSERVABLES:
            out[name].append(e[name])
        if progress is not None:
            progress(k + 1, len(alphas))
    obs: dict[str, Tensor] = {}
    for name, rows in out.items():
        allr = torch.stack(rows).cpu()  # (T, n)
        obs[name] = allr.mean(-1)
        obs[f"{name}_sem"] = allr.std(-1) / math.sqrt(allr.shape[-1]) if allr.shape[-1] > 1 else torch.zeros(len(rows))
        obs[f"{name}_all"] = allr
    return Trajectory(np.asarray(alphas, float), obs, time_name="alpha", source="simulation",
                      meta={"L": L, "nu": nu, "lam": lam, "n_real": n_real})


def _repeat(prob: GaussianProblem, n: int) -> GaussianProblem:
    if prob.n != 1:
        raise ValueError(f"a fixed problem must hold one problem (n = 1), got n = {prob.n}")

    def rep(t: Tensor) -> Tensor:
        return t.expand(n, *t.shape[1:])

    return GaussianProblem(prob.L, prob.nu, prob.site, rep(prob.Omega), rep(prob.P), rep(prob.chol), rep(prob.S),
                           rep(prob.theta), rep(prob.Delta))
