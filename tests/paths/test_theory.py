"""The action, its gradient and the saddle point (checks A3-A8)."""

import math

import pytest
import torch

from attnlab.paths.theory import kernels
from attnlab.paths.theory import saddle as theory

F64 = torch.float64


def _action(pb, N, tau):
    return theory.Action(kernels.PathKernels(pb.Xi, pb.sigma2), pb.y, tau, N, pb.Hs, pb.sigma2)


@pytest.mark.parametrize("Hs", [(2, 2), (2, 1), (3, 2, 2), (1, 1)])
def test_gradient_matches_finite_differences(Hs, random_problem):
    """A3: ∂S/∂θ (Cholesky parameters, analytic via ∂S/∂U) vs central differences ε = 1e-6, σ² = 1.3, α = 2."""
    pb = random_problem(Hs, P=12, D=9, sigma2=1.3)
    act = _action(pb, N=6.0, tau=0.1)
    par = theory.CholeskyParams(act.sizes)
    g = torch.Generator().manual_seed(1)
    theta = 0.3 * torch.randn(par.dim, generator=g, dtype=F64)
    As = par.unpack(theta)
    grad = par.grad(As, act(As).grads)
    eps = 1e-6
    fd = torch.empty_like(theta)
    for i in range(par.dim):
        e = torch.zeros_like(theta)
        e[i] = eps
        fd[i] = (act(par.unpack(theta + e), grad=False).S - act(par.unpack(theta - e), grad=False).S) / (2 * eps)
    assert float((fd - grad).abs().max() / grad.abs().max()) < 1e-6


def test_kernel_modes_agree(random_problem):
    pb = random_problem((2, 3), P=10, D=5)
    U = torch.randn(6, 6, dtype=F64, generator=torch.Generator().manual_seed(0))
    U = U @ U.T
    M = torch.randn(10, 10, dtype=F64)
    M = M + M.T
    kb, kf = kernels.PathKernels(pb.Xi, mode="blocks"), kernels.PathKernels(pb.Xi, mode="features")
    assert torch.allclose(kb.K(U), kf.K(U), atol=1e-12) and torch.allclose(kb.contract(M), kf.contract(M), atol=1e-12)
    direct = sum(U[a, b] * kb.block(a, b) for a in range(6) for b in range(6)) / 6
    assert torch.allclose(kb.K(U), direct, atol=1e-12)


@pytest.mark.parametrize("Hs", [(2, 2), (2, 1), (3, 2)])
def test_gp_limit_solution(Hs, random_problem):
    """A4: at α = 0 the solve gives U^(ℓ) = σ^{2(L+2−ℓ)} I (and u = σ²), from a perturbed start."""
    s2 = 1.3
    pb = random_problem(Hs, sigma2=s2)
    act = _action(pb, N=math.inf, tau=0.1)
    start = [1.7 * u + 0.1 * torch.ones_like(u) for u in theory.gp_levels(Hs, s2)]
    sp = theory.solve(act, start)
    L = len(Hs)
    for ell, U in enumerate(sp.Us, 1):
        assert torch.allclose(U, s2 ** (L + 2 - ell) * torch.eye(U.shape[0], dtype=F64), atol=1e-6)
    assert abs(float(sp.Us[-1]) - s2) < 1e-6


@pytest.mark.parametrize("Hs", [(1, 1), (1, 1, 1)])
def test_single_head_reduces_to_the_scalar_theory(Hs, random_problem):
    """A5: one head per layer: the full multi-level solve equals the 1-D minimisation of
    (L+1)σ⁻²U^{1/(L+1)} − ln U + αℰ(U), in U and in S (relative 1e-6)."""
    pb = random_problem(Hs, P=20, D=9, sigma2=1.3)
    kern = kernels.PathKernels(pb.Xi, pb.sigma2)
    sp = theory.solve(theory.Action(kern, pb.y, 0.05, 4.0, Hs, 1.3))
    U1, S1 = theory.scalar_entropy_solution(pb, 4.0, 0.05, kern)
    assert abs(float(sp.U) - U1) / U1 < 1e-6
    assert abs(sp.S - S1) / abs(S1) < 1e-6


@pytest.mark.parametrize("layout", ["all", "good_denoising"])
def test_stationarity_residuals_on_markov_data(layout, markov_problem):
    """A6: the §2.4 stationarity equations hold at the optimum, α = 10 (relative residual < 1e-6)."""
    pb = markov_problem(layout, P=100, P_test=10)
    sp = theory.solve(_action(pb, N=10.0, tau=0.01))
    assert sp.converged and max(sp.residuals) < 1e-6
    assert sp.min_eig > 0


def test_permuting_heads_permutes_U_and_keeps_the_predictor(random_problem):
    """A7: permuting the heads of layer 1 permutes rows and columns of U*; ⟨f*⟩ is unchanged (1e-8)."""
    pb = random_problem((2, 3), P=15, D=8)
    perm_h = torch.tensor([1, 0])
    idx = torch.arange(6).reshape(2, 3)[perm_h].reshape(-1)  # paths (h1, h2) with h1 permuted
    pb2 = kernels.Problem(pb.Xi[:, idx], pb.y, pb.Xi_test[:, idx], pb.y_test, pb.Hs)
    t1 = theory.predict(pb, [5.0], 0.05, tol=1e-11)
    t2 = theory.predict(pb2, [5.0], 0.05, tol=1e-11)
    U1, U2 = torch.as_tensor(t1["U"][0]), torch.as_tensor(t2["U"][0])
    assert float((U2 - U1[idx][:, idx]).abs().max()) < 1e-8
    assert abs(t1["f_mean"] - t2["f_mean"]).max() < 1e-8


def test_wide_network_is_the_gp(markov_problem):
    """A8: as α → 0 the finite-width predictor is GP regression with K_GP (1e-6); at τ = 0.01 the O(α) shift of
    the predictor at N = 1e7 (P = 60) is still 2e-6, so the check uses N = 1e9."""
    pb = markov_problem("all", P=60, P_test=50)
    fw = theory.predict(pb, [1e9], 0.01)
    gp = theory.predict_gp(pb, 0.01)
    assert abs(fw["f_mean"][0] - gp.mean.numpy()).max() < 1e-6
    assert abs(fw["f_var"][0] - gp.var.numpy()).max() < 1e-6


def test_markov_finite_width_beats_gp_and_structures_U(markov_all):
    """Fast version of B4/B5: at N = 10, FW ≫ GP-all, adversarial paths suppressed, good/denoising anti-correlated."""
    tr = theory.predict(markov_all, [10.0, 1000.0], 0.01)
    gp = theory.predict_gp(markov_all, 0.01).accuracy(markov_all.y_test)
    U = tr["U"][0]
    assert tr["accuracy"][0] >= gp + 0.05
    assert U[1, 1] <= 0.1 * U[0, 0] and U[3, 3] <= 0.1 * U[0, 0] and U[0, 0] >= 3
    assert U[0, 2] / math.sqrt(U[0, 0] * U[2, 2]) <= -0.3
    assert abs(tr["U"][1] - torch.eye(4).numpy()).max() <= 0.3
    assert (tr["converged"] == 1).all() and (tr["max_grad"] <= 1e-8).all()


def test_adam_reaches_the_same_saddle_point(random_problem):
    pb = random_problem((2, 1), P=12, D=9)
    act = _action(pb, N=12.0, tau=0.1)
    a = theory.solve(act, method="adam", tol=1e-6, lr=0.05, max_iter=20_000)
    b = theory.solve(act)
    assert torch.allclose(a.U, b.U, atol=1e-4)


def test_an_unconverged_solve_is_an_error_not_a_result(random_problem):
    pb = random_problem((2, 2))
    act = _action(pb, N=2.0, tau=0.1)
    with pytest.raises(theory.SolveError, match="not converged"):
        theory.solve(act, method="adam", max_iter=3)
    sp = theory.solve(act, method="adam", max_iter=3, strict=False)
    assert not sp.converged and sp.max_grad > 1e-8
    with pytest.raises(ValueError, match="'tau'"):
        theory.Action(kernels.PathKernels(pb.Xi), pb.y, -1.0, 10, pb.Hs)
    with pytest.raises(ValueError, match="Hs"):
        kernels.Problem(pb.Xi, pb.y, pb.Xi_test, pb.y_test, (3, 2))
