"""Eqs. (1)-(2), Sec. 3, Fig. 1 and Prop. 1 of paper 4: the explicit clustering head, (P1)-(P4) realised by hand.

Pure tensor code for ONE model (params with seed axis S = 1, float64 by default): the token and position
embeddings, query, value and MLP weights that cluster the prefix count vectors and read S mod p from them.
"""

from __future__ import annotations

import math

import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, Params
from attnlab.core.config import ConfigError


def build_clustering_head(p: int, N: int, k: int, d: int, h: int, *, a: float = 1.0, b: float = 1.0,
                          R: float = 10.0, beta: float = 20.0, lam: float = 10.0, mu: float = 10.0,
                          informative: tuple[int, ...] | list[int] | None = None,
                          dtype: torch.dtype = torch.float64) -> tuple[Params, ModelSpec]:
    """The explicit clustering head of paper Sec. 3, Fig. 1 (realises Fig. 1 / Prop. 1's (P1)-(P4)); S = 1 params.

    Case A (d ≥ p+1): E(v) = a·e_v, ê = e_p. Case B (p = 2, d = 2): E = (∓a, 0), ê = e_1. P(t) = b·ê on the
    informative positions, −R·ê elsewhere; q = β·ê; V = I. ξ then depends only on the prefix count vector and
    ê·ξ = b/s (s = √(a²+b²)), so homogeneous receptors w_i = λ(r + (c0 − τ_i)(s/b)ê) read λ(S − τ_i) for the
    integer prefix sum S; assemblers u_i implement the piecewise-linear interpolation of 1{S mod p = v} with
    thresholds τ = (−2, −1, 1, …, K−1), K = k(p−1) (needs h ≥ K+1).
    """
    task = Task(p, N, k, None if informative is None else tuple(informative))  # validates p, N, k, informative
    K = k * (p - 1)
    if h < K + 1:
        raise ConfigError(f"key 'h' = {h}: the clustering-head construction needs h ≥ k(p−1)+1 = {K + 1}")
    case_b = p == 2 and d == 2
    if not case_b and d < p + 1:
        raise ConfigError(f"key 'd' = {d}: the clustering-head construction needs d ≥ p+1 = {p + 1} "
                          f"(or p = 2 with d = 2)")
    s = math.sqrt(a * a + b * b)
    eye = torch.eye(d, dtype=torch.float64)
    if case_b:
        E = torch.tensor([[-a, 0.0], [a, 0.0]], dtype=torch.float64)
        e_hat, r, c0 = eye[1], (k * s / (2 * a)) * eye[0], k / 2
    else:
        E = a * eye[:p]
        e_hat, r, c0 = eye[p], (k * s / a) * (torch.arange(p, dtype=torch.float64) @ eye[:p]), 0.0
    taus = torch.tensor([-2.0, -1.0, *range(1, K)], dtype=torch.float64)
    coef = _interpolation_coefficients(p, K)                                     # (p, K+1)
    P = (-R * e_hat).repeat(N, 1)
    P[list(task.idx)] = b * e_hat
    W = torch.zeros(h, d, dtype=torch.float64)
    W[: K + 1] = lam * (r[None] + ((c0 - taus) * (s / b))[:, None] * e_hat[None])
    U = torch.zeros(d, h, dtype=torch.float64)
    if case_b:
        U[0, : K + 1] = mu * (coef[1] - coef[0]) / (2 * a)
    else:
        U[:p, : K + 1] = (mu / a) * coef
    params = {"E": E, "P": P, "q": beta * e_hat, "V": eye.clone(), "W": W, "U": U}
    return {n: t[None].to(dtype) for n, t in params.items()}, ModelSpec(p=p, N=N, d=d, h=h)


def _interpolation_coefficients(p: int, K: int) -> torch.Tensor:
    """C[v, i] with Σ_i C[v,i] ReLU(S − τ_i) = 1{S mod p = v} on S = 0..K (paper Sec. 3, Fig. 1 (c))."""
    S = torch.arange(K + 1)
    g = (S[None] % p == torch.arange(p)[:, None]).to(torch.float64)           # g_v(S), (p, K+1)
    delta = g[:, 1] - g[:, 0]
    second = g[:, 2:] - 2 * g[:, 1:-1] + g[:, :-2]                             # c = 1..K−1
    return torch.cat([(g[:, 0] - delta)[:, None], (2 * delta - g[:, 0])[:, None], second], dim=1)
