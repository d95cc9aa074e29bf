"""The paper's theory (paper 4 Sec. 3, Fig. 1, App. B-C): an explicit clustering head, the closed-form
gradients of Lemma 1/2 and Prop. 3, and the gradient bound of Prop. 2/4 (as printed and corrected).

Pure tensor code for ONE model (params with seed axis S = 1, float64 recommended), vectorised over a batch of
sentences x (B, N). θ = (q, V, W, U); E and P are fixed (App. B.1). Paper notation in code layout: z (B, N, d)
holds the columns z_t, s = softmax(zᵀq/√d) (B, N), ξ = V z s, ξ̄ = ξ/||ξ|| (Eq. (1)), Σ_ξ̄ = diag σ'(Wξ̄) (Eq. (3)),
Δ_z = (z/√d)(I_N − s 1ᵀ) (Eq. (4)), A_z = diag(s) (Eq. (2)), M = (I − ξ̄ξ̄ᵀ)/||ξ|| (Eq. (15); Lemma 2/3/5 and Prop. 3
print the factor 1/||ξ̄|| = 1, a typo — docs note 7-8), Q = U Σ_ξ̄ W M, C_x = Σ_j (p̂_j − p_j) E(j).
Only the paper's model is supported: sphere normalisation, no biases, no norm gains.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, Params, forward, loss_per_seed
from attnlab.core.config import ConfigError

GROUPS = ("q", "V", "W", "U")
SIGMA_PRIME_MAX = 1.13  # sup_x |σ'(x)| = Φ(√2) + √2 φ(√2) ≈ 1.1290 for the exact GeLU (docs note 11)


# ----------------------------------------------------------------------------------------------- construction
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


# ----------------------------------------------------------------------------------------------- gradients
def _check(params: Params, spec: ModelSpec) -> None:
    extra = sorted(set(params) - {"E", "P", "q", "V", "W", "U"})
    if spec.norm != "sphere" or extra or spec.activation != "gelu":
        raise ConfigError(f"key 'norm' = {spec.norm!r} (activation {spec.activation!r}, extra tensors {extra}): the "
                          f"theory covers only the paper's model (norm 'sphere', GeLU, no biases, no gains)")
    if params["E"].shape[0] != 1:
        raise ConfigError(f"key 'params' has S = {params['E'].shape[0]} seeds: theory functions take one model "
                          f"(use model.select(params, i))")


def _state(params: Params, x: torch.Tensor, spec: ModelSpec, printed: bool = False) -> dict[str, torch.Tensor]:
    """Per-sentence quantities of Lemma 2: z, s, ξ̄, σ(Wξ̄), Σ_ξ̄ diagonal, K = Δ_z A_z (Vz)ᵀ and Q."""
    _check(params, spec)
    acts = forward(params, x, spec)
    z, s, xi, xi_n = acts["z"][0], acts["attn"][0], acts["xi"][0], acts["xi_n"][0]
    V, W, U = params["V"][0], params["W"][0], params["U"][0]
    pre = acts["pre"][0]
    sig_prime = _gelu_prime(pre)                                                  # diag of Σ_ξ̄ (Eq. (3))
    Nn, d = z.shape[-2], z.shape[-1]
    eye_n = torch.eye(Nn, dtype=z.dtype, device=z.device)
    delta = z.transpose(-1, -2) @ (eye_n - s[:, :, None]) / math.sqrt(d)      # Δ_z = (z/√d)(I − s1ᵀ) (Eq. (4))
    vz_t = z @ V.T                                                                # (Vz)ᵀ, (B, N, d)
    kq = delta @ (s[:, :, None] * vz_t)                                           # Δ_z A_z (Vz)ᵀ, (B, d, d)
    eye_d = torch.eye(d, dtype=z.dtype, device=z.device)
    factor = 1.0 if printed else 1 / xi.norm(dim=-1)[:, None, None]
    M = factor * (eye_d - xi_n[:, :, None] * xi_n[:, None, :])                    # Eq. (15)
    Q = (U * sig_prime[:, None, :]) @ W @ M                                       # Q = U Σ_ξ̄ W M
    return {"z": z, "s": s, "pooled": acts["pooled"][0], "xi_n": xi_n, "hidden": acts["hidden"][0],
            "sig_prime": sig_prime, "kq": kq, "Q": Q, "logits": acts["logits"][0]}


def _gelu_prime(x: torch.Tensor) -> torch.Tensor:
    """σ'(x) = Φ(x) + x φ(x) for the exact GeLU."""
    return 0.5 * (1 + torch.erf(x / math.sqrt(2))) + x * torch.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)


def _contract(st: dict[str, torch.Tensor], U: torch.Tensor, c: torch.Tensor) -> dict[str, torch.Tensor]:
    """Lemma 2's four gradients with E(j) replaced by per-sentence vectors c (B, C, d): shapes (B, C, ...)."""
    g = c + torch.einsum("bed,bce->bcd", st["Q"], c)                              # (I + Qᵀ) c
    return {
        "q": torch.einsum("bde,bce->bcd", st["kq"], g),                           # Δ_z A_z (Vz)ᵀ (I + Qᵀ) c
        "V": g[..., :, None] * st["pooled"][:, None, None, :],                    # (I + Qᵀ) c [z s]ᵀ
        "W": (st["sig_prime"][:, None, :] * (c @ U))[..., None] * st["xi_n"][:, None, None, :],  # Σ Uᵀ c ξ̄ᵀ
        "U": c[..., :, None] * st["hidden"][:, None, None, :],                    # c σ(Wξ̄)ᵀ
    }


def logit_grads(params: Params, x: torch.Tensor, spec: ModelSpec, *, printed: bool = False) -> dict[str, torch.Tensor]:
    """Lemma 2 (full statement of Lemma 1; Lemmas 4-7): ∇_θ ζ_j for every sentence and class j, E, P fixed.

    Returns {"q": (B, C, d), "V": (B, C, d, d), "W": (B, C, h, d), "U": (B, C, d, h)} with C = rows of E.
    ``printed=True`` uses the paper's printed factor 1/||ξ̄|| = 1 in M instead of 1/||ξ|| (documentation only)."""
    st = _state(params, x, spec, printed)
    E = params["E"][0]
    return _contract(st, params["U"][0], E[None].expand(x.shape[0], -1, -1))


def closed_form_grads(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec) -> dict[str, torch.Tensor]:
    """Lemma 1/3 grouped as in Prop. 3 Eq. (7) / App. C.2: ∇_θ L = E_x[...C_x] for the mean CE on (x, y).

    ∇_q L = E[Δ_z A_z (Vz)ᵀ(I+Qᵀ)C_x], ∇_V L = E[(I+Qᵀ)C_x (zs)ᵀ], ∇_W L = E[Σ_ξ̄ Uᵀ C_x ξ̄ᵀ],
    ∇_U L = E[C_x σ(Wξ̄)ᵀ]; shapes (d,), (d,d), (h,d), (d,h) (no seed axis)."""
    st = _state(params, x, spec)
    E = params["E"][0]
    p_hat = torch.softmax(st["logits"], dim=-1)
    c = (p_hat - F.one_hot(y, E.shape[0]).to(p_hat)) @ E                        # C_x, (B, d)
    return {n: t[:, 0].mean(0) for n, t in _contract(st, params["U"][0], c[:, None]).items()}


def stationarity_residuals(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec) -> dict[str, float]:
    """Norms of the four stationarity expressions of Prop. 3 Eq. (7), plus their joint norm ("total")."""
    g = closed_form_grads(params, x, y, spec)
    out = {n: float(t.norm()) for n, t in g.items()}
    out["total"] = math.sqrt(sum(v * v for v in out.values()))
    return out


def autograd_grads(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec,
                   groups: tuple[str, ...] = GROUPS) -> dict[str, torch.Tensor]:
    """Autograd gradients of the mean CE w.r.t. ``groups`` (no seed axis), for comparison with the closed form."""
    if params["E"].shape[0] != 1:
        raise ConfigError(f"key 'params' has S = {params['E'].shape[0]} seeds: pass one model")
    leaves = {n: t.detach().clone().requires_grad_(n in groups) for n, t in params.items()}
    loss = loss_per_seed(leaves, x, y, spec)[0]
    grads = torch.autograd.grad(loss, [leaves[n] for n in groups])
    return {n: gr[0] for n, gr in zip(groups, grads, strict=True)}


# ----------------------------------------------------------------------------------------------- bound
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
    _check(params, spec)
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
