"""Replica theory (App. 'Replica analysis') against its closed-form limits, its three solvers, and ridge
simulations; the Gaussian data model of the text before Eq. (7)."""

import math

import numpy as np
import pytest
import torch

from attnlab.potts.data import gaussian
from attnlab.potts.theory import replica as theory
from attnlab.potts.theory.replica import g_nu, saddle, semicircle

F64 = torch.float64
GRID_A = torch.tensor([0.1, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0, 8.0, 16.0], dtype=F64)[:, None]
GRID_L = torch.tensor([1e-4, 1e-3, 1e-2, 1e-1], dtype=F64)


def test_rho_closed_forms():
    """Check 14: ρ_paper = g/ν², ρ_exact = g²/ν (ν = 3: 0.0424407, 0.0486327), ρ_exact + 1/ν = g."""
    assert abs(float(semicircle(3.0, "paper").rho) - 0.0424407) < 1e-6
    assert abs(float(semicircle(3.0, "exact").rho) - 0.0486327) < 1e-6
    assert abs(float(semicircle(3.0, "exact").rho) + 1 / 3 - g_nu(3.0)) < 1e-9
    assert abs(float(semicircle(5.0, "paper").trace) - g_nu(5.0)) < 1e-9


@pytest.mark.parametrize("weight", ["paper", "exact"])
def test_limits(weight):
    """Check 14: λ → 0, α > 1: ε_g = Δα/(α-1) (2/3, 4/9 at ν = 3); α → 0: ε_g → ρ + Δ."""
    sp = semicircle(3.0, weight)
    e = saddle(sp, torch.tensor([2.0, 4.0], dtype=F64), 1e-8)["eps_g"]
    assert abs(float(e[0]) - 2 / 3) < 1e-5 and abs(float(e[1]) - 4 / 9) < 1e-5
    small = float(saddle(sp, 1e-4, 1e-3)["eps_g"])
    assert abs(small - float(sp.rho + sp.Delta)) < 1e-3


def test_solvers_agree_on_the_reference_grid():
    """Check 13: bisection, Brent and the damped iteration agree to 1e-6 on the reference α × λ grid."""
    sp = semicircle(3.0, n=1000)
    b = saddle(sp, GRID_A, GRID_L, "bisect")
    r = saddle(sp, GRID_A, GRID_L, "brent")
    assert (b["eps_g"] - r["eps_g"]).abs().max() < 1e-9
    sub = GRID_L[1:]  # the damped iteration is slow at λ = 1e-4 near α = 1; the claim runs the full grid
    it = saddle(sp, GRID_A, sub, "iterate", tol=1e-11)
    assert (it["eps_g"] - r["eps_g"][:, 1:]).abs().max() < 1e-6


def test_peak_slope_and_monotonicity():
    """checks 15-16 and 19 (theory part)."""
    sp = semicircle(3.0, n=1000)
    a = torch.arange(0.5, 2.0, 0.005, dtype=F64)
    e = saddle(sp, a, 1e-3)["eps_g"]
    assert 0.99 <= float(a[e.argmax()]) <= 1.01
    e = saddle(sp, a, 0.1)["eps_g"]
    assert 1.1 <= float(a[e.argmax()]) <= 1.25
    big = saddle(sp, torch.tensor([16.0, 64.0], dtype=F64), 1e-3)["eps_g"]
    assert -1.1 <= theory.excess_slope([16, 64], big, 1 / 3) <= -0.95
    e = saddle(sp, torch.tensor([1e-3, 0.1, 0.25, 0.5, 0.9], dtype=F64), 1e-2)["eps_g"]
    assert (e.diff() > 0).all() and float(e[2]) > float(sp.rho + sp.Delta)  # no initial descent


def test_predict_is_a_trajectory_with_the_simulation_vocabulary():
    th = theory.predict([0.5, 2.0], 1e-3, 3.0)
    assert th.time_name == "alpha" and set(gaussian.OBSERVABLES) <= set(th.names)
    assert th["eps_g"].shape == (2,)
    with pytest.raises(ValueError, match="nu > 2"):
        theory.predict([1.0], 1e-3, 2.0)


def test_gaussian_problem_is_the_exact_conditional():
    """y = θ·x + √Δ ξ: regressing y on x with many samples recovers θ, and the residual variance is Δ."""
    g = torch.Generator().manual_seed(0)
    prob = gaussian.make_problems(30, 3.0, 2, generator=g)
    X, y = gaussian.sample(prob, 40_000, generator=g)
    A = gaussian.ridge(X, y, 1e-8)
    assert (A - prob.theta).abs().max() < 0.15
    assert (gaussian.train_error(X, y, A) - prob.Delta).abs().max() < 0.01
    cov = X.mT @ X / X.shape[1]
    assert (cov - prob.S / 30).abs().max() < 3e-3  # Cov(x) = S/L
    err = gaussian.errors(prob, A)
    Xt, yt = gaussian.sample(prob, 40_000, generator=g)
    mc = ((yt - (Xt @ A.unsqueeze(-1))[..., 0]) ** 2).mean(-1)
    assert (err["eps_g"] - mc).abs().max() < 0.01  # eq. (8) is the test error


def test_ridge_primal_dual_and_pinv():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(2, 7, 10, generator=g, dtype=F64)
    y = torch.randn(2, 7, generator=g, dtype=F64)
    dual = gaussian.ridge(X, y, 0.3)
    primal = torch.linalg.solve(X.mT @ X + 0.3 * torch.eye(10, dtype=F64), (X.mT @ y.unsqueeze(-1)))[..., 0]
    assert torch.allclose(dual, primal, atol=1e-12)
    ls = gaussian.ridge(X, y, 0.0)
    assert torch.allclose((X @ ls.unsqueeze(-1))[..., 0], y, atol=1e-10)  # interpolates below threshold


def test_finite_L_theory_matches_one_problem():
    """A small fixed problem (L = 60) against its own finite-L theory, 60 training draws per α (check 17
    at reduced size)."""
    g = torch.Generator().manual_seed(3)
    prob = gaussian.make_problems(60, 3.0, 1, generator=g)
    spec = theory.spectrum_of(prob)
    assert abs(float(spec.rho[0]) - float(prob.rho[0])) < 1e-12
    alphas = [0.5, 2.0, 4.0]
    sim = gaussian.simulate(60, 3.0, 1e-2, alphas, 60, generator=g, problem=prob)
    th = theory.predict(alphas, 1e-2, spectrum=spec)
    for name in ("eps_g", "eps_train"):
        dev = np.abs(sim[name] - th[name])
        assert (dev < 3 * sim[f"{name}_sem"] + 0.03 * th[name]).all(), (name, dev, sim[f"{name}_sem"])


def test_invalid_nu_and_sizes():
    g = torch.Generator()
    for nu in (2.0, 1.0, float("nan")):
        with pytest.raises(ValueError, match="positive definite"):
            gaussian.make_problems(10, nu, 1, generator=g)
    with pytest.raises(ValueError, match="site"):
        gaussian.make_problems(10, 3.0, 1, generator=g, site=10)
    assert math.isclose(g_nu(3.0), 0.381966, abs_tol=1e-6)


def test_eps_g_is_noise_plus_a_quadratic_form():
    """Eq. (8): ε_g − Δ = (A − θ)ᵀS(A − θ)/L ≥ 0 for every A, = 0 at the teacher (no claim: a definition)."""
    g = torch.Generator().manual_seed(3)
    prob = gaussian.make_problems(20, 3.0, 2, generator=g)
    A = torch.randn(50, *prob.theta.shape, generator=g, dtype=F64) * torch.logspace(-3, 1, 50, dtype=F64)[:, None, None]
    excess = gaussian.errors(prob, A)["eps_g"] - prob.Delta
    assert (excess >= -1e-12).all()
    assert (gaussian.errors(prob, prob.theta)["eps_g"] - prob.Delta).abs().max() < 1e-10
