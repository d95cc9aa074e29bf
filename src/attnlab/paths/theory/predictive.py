"""Draws of the predictor f(x*) from a stored order parameter U (Eqs. (29)-(31)): a saved result, no solve.

Given U (e.g. a run's ``theory_U`` at one width) the theory's posterior of the test outputs is Gaussian with the
renormalised kernel K(U) (Eqs. (29)-(31)):

    f* ~ N(k*ᵀ(K + τI)⁻¹Y, K** − k*ᵀ(K + τI)⁻¹k*),      K(x, x') = (σ_0²/n) Σ_ππ' U_ππ' C_ππ'(x, x'),

so joint draws over the whole test set need the P*×P* test kernel K** and one Cholesky factor; nothing of the
saddle point (Eqs. (11)-(12)) is recomputed. :func:`sample_predictor` returns them, its mean and variance are those
of :func:`attnlab.paths.theory.kernels.predict`.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.paths.theory.kernels import PathKernels, cholesky

Tensor = torch.Tensor
F64 = torch.float64


def test_kernel(kern: PathKernels, Xi_test: Tensor, U: Tensor) -> Tensor:
    """K(x*, x*') (P*, P*) on test path features (P*, n, D)."""
    Xt = Xi_test.to(F64)
    Y = torch.einsum("ab,pbd->pad", U, Xt).reshape(Xt.shape[0], -1)
    return kern.sigma2 / (kern.n * kern.D) * (Y @ Xt.reshape(Xt.shape[0], -1).T)


def sample_predictor(kern: PathKernels, U: Tensor | np.ndarray, y: Tensor, tau: float, Xi_test: Tensor,
                     draws: int, generator: torch.Generator, jitter: float = 1e-10) -> Tensor:
    """``draws`` joint samples (draws, P*) of the test outputs under the theory's Gaussian posterior at ``U``.

    ``jitter`` (relative to the mean variance, raised ×100 up to 1e-4 as needed) lets the covariance, singular
    where P* exceeds the features' rank n·D, be factorised."""
    U = torch.as_tensor(np.asarray(U), dtype=F64, device=kern.Xi.device)
    if U.shape != (kern.n, kern.n):
        raise ValueError(f"U has shape {tuple(U.shape)}; expected ({kern.n}, {kern.n}) for this problem's paths")
    Lc = cholesky(kern.K(U), tau)
    k, _ = kern.cross(Xi_test, U)
    v = torch.linalg.solve_triangular(Lc, k.T, upper=False)
    mean = k @ torch.cholesky_solve(y.to(F64)[:, None], Lc)[:, 0]
    cov = test_kernel(kern, Xi_test, U) - v.T @ v
    cov = 0.5 * (cov + cov.T)
    scale, eye = float(cov.diagonal().mean().clamp(min=1e-300)), torch.eye(cov.shape[0], dtype=F64, device=cov.device)
    while True:  # K** − k*ᵀ(K + τI)⁻¹k* is PSD but often singular: the smallest jitter that factorises
        Lt, info = torch.linalg.cholesky_ex(cov + jitter * scale * eye)
        if int(info) == 0 or jitter > 1e-4:
            break
        jitter *= 100
    if int(info) != 0:
        raise FloatingPointError("the predictive covariance is not positive semi-definite: U is not PSD")
    z = torch.randn(draws, cov.shape[0], generator=generator, dtype=F64, device=cov.device)
    return mean + z @ Lt.T
