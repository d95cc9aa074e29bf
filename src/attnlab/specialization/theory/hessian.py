"""Saddle analysis of paper 0 (App. A 2): softmax-1 unspecialised fixed point (Lemma A.4,
(A16)-(A19), (A39)), Hessian constants c1-c4 of Lemma III.1 / A.5 ((13), (A33)-(A37)) in closed form and
by autodiff, the autodiff Hessian of the MC reduced loss in m, and the linearised escape rates / times
of the specialisation phase (Prop. III.4).
"""

from __future__ import annotations

import math

import torch
from torch.autograd.functional import hessian, jacobian

from attnlab.specialization.model.activations import get_activation
from attnlab.specialization.theory import reduced_loss

Tensor = torch.Tensor
_F64 = torch.float64


# ---------------------------------------------------------------------------------------------
# softmax-1 on the unspecialised manifold at m = 0, r = 0, b = b̃ 1 (Lemma A.4)


def softmax1_fixed_point_v(L: int, b: float) -> float:
    """v on the attractive fixed-point curve L v = L + e^{b̃} (s = 1/L)."""
    return (L + math.exp(b)) / L


def softmax1_unspecialised(L: int, H: int, b: float, v: float) -> dict:
    """Closed forms at m = 0, r = 0, b = b̃1: loss 1 - 2s + L s² (s = v/(L+e^b̃)), per-head ∂Ẽ/∂b_h (A16),
    ∂Ẽ/∂v (A17), and the b-Hessian entry ∂²Ẽ/∂b_h∂b_h' (A39, valid on the fixed-point curve)."""
    a, eb = L + math.exp(b), math.exp(b)
    s = v / a
    return {
        "s": s,
        "loss": 1 - 2 * s + L * s * s,
        "grad_b": -2 * (L * v / a - 1) * (v / H) * eb / a**2,
        "grad_v": 2 * (L * v / a - 1) / a,
        "hess_b": 2 * v**2 * L * eb**2 / (H**2 * a**4),
    }


# ---------------------------------------------------------------------------------------------
# Hessian constants (A34)-(A37)


def constants_closed_form(activation: str, L: int, H: int, b: float = 0.0) -> dict:
    """c1..c4 of (A33)-(A37) (c2 with Σ_ℓ, not Σ_ℓℓ': docs/studies/specialization.md).
    softmax-1 at b̃ = b, v = (L + e^b)/L."""
    if activation in ("softmax", "bsoftmax"):
        c1 = (L - 1) / (H**2 * L**2)
        c2 = (L - 1) / (H**2 * L**3)
        if activation == "softmax":
            return {"c1": c1, "c2": c2, "c3": (L - 1) / (H * L**2) * (1 - 2 / L), "c4": 0.0}
        return {"c1": c1, "c2": c2, "c3": (L - 1) / (H * L**2) * (1 - 2 / (H * L)),
                "c4": (L - 1) / L * 2 / (H * L) ** 2}
    if activation == "softmax1":
        a = L + math.exp(b)
        v = a / L
        k = (1 - 1 / a) ** 2 + (L - 1) / a**2
        return {"c1": k / (H**2 * L), "c2": k / (H**2 * L**2), "c3": v * (L - 1) / (H * L * a) * (1 - 2 / a),
                "c4": 0.0}
    get_activation(activation)
    raise ValueError(activation)


def constants_autodiff(activation: str, L: int, H: int, b: float = 0.0, v: float = 1.0) -> dict:
    """c1..c4 from their definitions (A34)-(A37) by autodiff of σ at χ = 0 (head 1, relevant token 1)."""
    sigma = get_activation(activation)
    bb = torch.full((H,), float(b), dtype=_F64)
    chi0 = torch.zeros(H, L, dtype=_F64)

    def tot(chi):  # Σ_h σ(χ, b, v; h)_ℓ, shape (L,)
        return sigma(chi, bb, v).sum(0)

    J = jacobian(tot, chi0)  # (L, H, L): ∂ Σ_h σ_hℓ / ∂χ_h'ℓ'
    c1 = float((J[:, 0, :] ** 2).sum()) / H**2
    c2 = float((J[:, 0, 0] ** 2).sum()) / H**2
    res = tot(chi0) / H - torch.eye(L, dtype=_F64)[0]  # s_ℓ - δ_ℓ1
    d2 = torch.stack([hessian(lambda c, ell=ell: tot(c)[ell], chi0) for ell in range(L)])  # (L, H, L, H, L)
    c3 = -float((res * d2[:, 0, 0, 0, 0]).sum()) / H
    c4 = float((res * d2[:, 0, 0, 1, 0]).sum()) / H if H > 1 else 0.0
    return {"c1": c1, "c2": c2, "c3": c3, "c4": c4}


def predicted_hessian_m(c: dict, cov: Tensor, H: int) -> Tensor:
    """∇²_m Ẽ at m = 0, r = 0 from (A20)/(13), shape (H,F,H,F):
    2[1 1ᵀ ⊗ (c1 I + (c2+c4) Cov θ) - (c3+c4) I ⊗ Cov θ]."""
    cov = torch.as_tensor(cov, dtype=_F64)
    F = cov.shape[0]
    block = c["c1"] * torch.eye(F, dtype=_F64) + (c["c2"] + c["c4"]) * cov
    eye_h = torch.eye(H, dtype=_F64)
    diag = (c["c3"] + c["c4"]) * eye_h[:, None, :, None] * cov[None, :, None, :]
    out = block[None, :, None, :].expand(H, F, H, F) - diag
    return 2 * out


def hessian_m(activation: str, prep: dict, H: int, F: int, b: float = 0.0, v: float = 1.0,
              m: Tensor | None = None, r: Tensor | None = None) -> Tensor:
    """Autodiff Hessian of the MC reduced loss in m, (H,F,H,F), at (m, r, b1, v) (default m = 0, r = 0)."""
    dt = prep["Z"].dtype
    m = torch.zeros(H, F, dtype=dt) if m is None else m
    r = torch.zeros(H, H, dtype=dt) if r is None else r
    bb = torch.full((H,), float(b), dtype=dt)
    return hessian(lambda mm: reduced_loss(mm, r, bb, torch.tensor(v, dtype=dt), prep, activation), m)


# ---------------------------------------------------------------------------------------------
# escape from the unspecialised saddle (Prop. III.4, from the Hessian (13))


def escape_rates(activation: str, L: int, H: int, mean: Tensor, cov: Tensor, b: float = 0.0) -> Tensor:
    """Linearised growth rates λ_f = 2(c3+c4) eig_f(P_⊥ Cov θ P_⊥) (P_⊥ projects orthogonally to E θ),
    valid at r ≈ 0, m ≈ 0, sorted decreasingly (F,)."""
    c = constants_closed_form(activation, L, H, b)
    mean, cov = torch.as_tensor(mean, dtype=_F64), torch.as_tensor(cov, dtype=_F64)
    F = cov.shape[0]
    P = torch.eye(F, dtype=_F64)
    if mean.norm() > 0:
        e = mean / mean.norm()
        P = P - torch.outer(e, e)
    evals = torch.linalg.eigvalsh(P @ cov @ P).flip(0)
    return 2 * (c["c3"] + c["c4"]) * evals


def escape_time(rate: float, D: float, amplitude: float = 1.0) -> float:
    """τ^s ≈ log(amplitude² D) / (2λ): time for an O(D^{-1/2}) perturbation growing as e^{λτ} to reach
    ``amplitude`` (Prop. III.4; the O(1) offset is not predicted)."""
    return math.log(amplitude**2 * D) / (2 * rate)
