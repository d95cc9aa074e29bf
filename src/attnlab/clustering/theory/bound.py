"""Eq. (33) of paper 4 (Prop. 2/4, App. C): the total-variation error 𝓔 and the gradient bound ||∇_θ L||² ≤ B̂·𝓔,
as printed and corrected (docs note 11).

Pure tensor code for ONE model (params with seed axis S = 1), vectorised over a batch of sentences x (B, N); only the
paper's model (sphere normalisation, GeLU, no biases, no norm gains).
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

from attnlab.clustering.model import ModelSpec, Params, forward
from attnlab.clustering.theory.gradients import check_model
from attnlab.core.config import ConfigError

SIGMA_PRIME_MAX = 1.13  # sup_x |σ'(x)| = Φ(√2) + √2 φ(√2) ≈ 1.1290 for the exact GeLU (docs note 11)


def tv_error(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec,
             form: Literal["onehot", "l1"] = "onehot") -> float:
    """𝓔 = E_x[d_TV(p̂_θ(·|x), p(·|x))] of Prop. 2/4: ``onehot`` E_x[1 − p̂(y|x)], ``l1`` E_x[½||p̂ − e_y||₁]
    (equal for one-hot targets)."""
    p_hat = torch.softmax(forward(params, x, spec)["logits"][0], dim=-1)
    if form == "onehot":
        return float((1 - p_hat.gather(-1, y[:, None])).mean())
    if form == "l1":
        return float(0.5 * (p_hat - F.one_hot(y, p_hat.shape[-1]).to(p_hat)).abs().sum(-1).mean())
    raise ConfigError(f"key 'form' = {form!r}: allowed: onehot, l1")


def _norms(params: Params, spec: ModelSpec) -> tuple[float, float, float, float]:
    check_model(params, spec)
    op = lambda t: float(torch.linalg.matrix_norm(t[0], ord=2))  # noqa: E731
    return float(params["E"][0].abs().max()), op(params["V"]), op(params["W"]), op(params["U"])


def bound_paper(params: Params, x: torch.Tensor, spec: ModelSpec) -> float:
    """B̂ of Prop. 4 / Eq. (33) as printed ("2n" read as 2N): ||∇_θ L||² ≤ B̂·𝓔 claimed, with B = max|E_vi|,
    B̂ = 4dB²[(2N√d||V||(1+√(2/π)||W||²||U||))² + d(1+2||W||||U||)² + 4||U||² + ||W||²]. Not a valid bound in
    general (it uses ||M||op = 1 and ||zᵀ||op ≤ √d; docs note 11); ``x`` is unused, kept for symmetry."""
    B, nV, nW, nU = _norms(params, spec)
    d, N = spec.d, spec.N
    q_term = (2 * N * math.sqrt(d) * nV * (1 + math.sqrt(2 / math.pi) * nW**2 * nU)) ** 2
    return 4 * d * B**2 * (q_term + d * (1 + 2 * nW * nU) ** 2 + 4 * nU**2 + nW**2)


def bound_corrected(params: Params, x: torch.Tensor, spec: ModelSpec) -> float:
    """Rigorous version of Prop. 4 (docs note 11), with κ = max_x 1/||ξ(x)|| over x:
    ||∇_θ L||² ≤ 4dB²𝓔·[(N(1+√N)/√d·||V||·c_Q)² + c_Q² + 1.13²||U||² + ||W||²], c_Q = 1 + 1.13κ||U||·||W||
    (||M||op = 1/||ξ||, ||zᵀ||op ≤ √N, ||zs|| ≤ 1, sup|σ'| ≤ 1.13, E||C_x||² ≤ 4dB²𝓔)."""
    B, nV, nW, nU = _norms(params, spec)
    d, N = spec.d, spec.N
    kappa = float(1 / forward(params, x, spec)["xi"][0].norm(dim=-1).min())
    c_q = 1 + SIGMA_PRIME_MAX * kappa * nU * nW
    q_term = (N * (1 + math.sqrt(N)) / math.sqrt(d) * nV * c_q) ** 2
    return 4 * d * B**2 * (q_term + c_q**2 + SIGMA_PRIME_MAX**2 * nU**2 + nW**2)
