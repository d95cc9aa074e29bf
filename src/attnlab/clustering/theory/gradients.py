"""Eqs. (1)-(4), (7) and (15) of paper 4 (Sec. 3, App. B-C): the closed-form gradients of Lemma 1/2 and the
stationarity conditions of Prop. 3, checked against autograd.

Pure tensor code for ONE model (params with seed axis S = 1, float64 recommended), vectorised over a batch of
sentences x (B, N). θ = (q, V, W, U); E and P are fixed (App. B.1). Paper notation in code layout: z (B, N, d)
holds the columns z_t, s = softmax(zᵀq/√d) (B, N), ξ = V z s, ξ̄ = ξ/||ξ|| (Eq. (1)), Σ_ξ̄ = diag σ'(Wξ̄) (Eq. (3)),
Δ_z = (z/√d)(I_N − s 1ᵀ) (Eq. (4)), A_z = diag(s) (Eq. (2)), M = (I − ξ̄ξ̄ᵀ)/||ξ|| (Eq. (15); Lemma 2/3/5 and Prop. 3
print the factor 1/||ξ̄|| = 1, a typo — docs note 7-8), Q = U Σ_ξ̄ W M, C_x = Σ_j (p̂_j − p_j) E(j).
Only the paper's model is supported: sphere normalisation, no biases, no norm gains.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from attnlab.clustering.model import ModelSpec, Params, forward, loss_per_seed
from attnlab.core.config import ConfigError

GROUPS = ("q", "V", "W", "U")


def check_model(params: Params, spec: ModelSpec) -> None:
    extra = sorted(set(params) - {"E", "P", "q", "V", "W", "U"})
    if spec.norm != "sphere" or extra or spec.activation != "gelu":
        raise ConfigError(f"key 'norm' = {spec.norm!r} (activation {spec.activation!r}, extra tensors {extra}): the "
                          f"theory covers only the paper's model (norm 'sphere', GeLU, no biases, no gains)")
    if params["E"].shape[0] != 1:
        raise ConfigError(f"key 'params' has S = {params['E'].shape[0]} seeds: theory functions take one model "
                          f"(use model.select(params, i))")


def _state(params: Params, x: torch.Tensor, spec: ModelSpec, printed: bool = False) -> dict[str, torch.Tensor]:
    """Per-sentence quantities of Lemma 2: z, s, ξ̄, σ(Wξ̄), Σ_ξ̄ diagonal, K = Δ_z A_z (Vz)ᵀ and Q."""
    check_model(params, spec)
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
