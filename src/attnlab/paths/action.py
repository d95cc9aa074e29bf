"""The action S({U^(ℓ)}) of the finite-width theory and its analytic gradient (Eqs. 11-12, 32-34).

With n_ℓ = Π_{k≥ℓ} H_k partial paths at level ℓ, order parameters U^(ℓ) (n_ℓ × n_ℓ, ℓ = 1..L) and the
scalar u = U^(L+1), and the convention U^(L+2) = 1, H_{L+1} = 1, the action (32)-(33) reads (spec §2.3)

    S = Σ_{ℓ=1}^{L+1} [ σ⁻² Σ_{h ≤ H_ℓ} Tr(U^(ℓ)_[h,h] (U^(ℓ+1))⁻¹) − ln det U^(ℓ) + H_ℓ ln det U^(ℓ+1) ] + α ℰ(U^(1))
    ℰ(U) = (1/P) [ln det(K(U) + τI) + Yᵀ(K(U) + τI)⁻¹Y],      α = P/N                           (12)/(34)

where U^(ℓ)_[h,h] is the h-th diagonal block (paths ordered with h_ℓ most significant, U_ext = I ⊗ U).
Its gradient (spec §2.4, re-derived and checked by finite differences in the tests):

    ∂S/∂U^(ℓ) = σ⁻² I_{H_ℓ} ⊗ (U^(ℓ+1))⁻¹ − (U^(ℓ))⁻¹
                + [ℓ ≥ 2] (H_{ℓ−1}(U^(ℓ))⁻¹ − σ⁻²(U^(ℓ))⁻¹ Σ_h U^(ℓ−1)_[h,h] (U^(ℓ))⁻¹) + [ℓ = 1] α B,
    B_ππ' = σ²/(nP) ⟨(K+τI)⁻¹ − wwᵀ, C_ππ'⟩,  w = (K+τI)⁻¹Y.

The U's enter by their Cholesky factors U^(ℓ) = A_ℓA_ℓᵀ (:class:`CholeskyParams`: A_ℓ lower triangular with
positive diagonal e^{d}), so every U^(ℓ) is positive definite for every parameter vector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnlab.paths.kernels import PathKernels, cholesky

Tensor = torch.Tensor
F64 = torch.float64


class SolveError(RuntimeError):
    """The saddle-point solve did not converge or left the positive-definite cone."""


def level_sizes(Hs: Sequence[int]) -> list[int]:
    """[n_1, ..., n_L, 1]: the number of partial paths π_ℓ = (h_ℓ, ..., h_L) at every level."""
    sizes = [1]
    for H in reversed(Hs):
        sizes.insert(0, sizes[0] * H)
    return sizes


def gp_levels(Hs: Sequence[int], sigma2: float = 1.0, device=None) -> list[Tensor]:
    """The GP-limit (α = 0) saddle point U^(ℓ) = σ^{2(L+2−ℓ)} I for ℓ = 1..L+1 (spec §2.3, check A4)."""
    L = len(Hs)
    return [sigma2 ** (L + 1 - i) * torch.eye(m, dtype=F64, device=device) for i, m in enumerate(level_sizes(Hs))]


# -- action and gradient ----------------------------------------------------------------------------


@dataclass
class ActionValue:
    S: Tensor
    entropy: Tensor  # −Σ ℒ: the entropy part of S
    energy: Tensor  # ℰ(U^(1))
    grads: list[Tensor]  # ∂S/∂U^(ℓ), ℓ = 1..L+1 (symmetric)


class Action:
    """S({U^(ℓ)}) of one (data set, N, τ) and its analytic gradient; U's are passed by Cholesky factors."""

    def __init__(self, kern: PathKernels, y: Tensor, tau: float, N: float, Hs: Sequence[int],
                 sigma2: float = 1.0) -> None:
        if tau <= 0:
            raise ValueError(f"key 'tau' = {tau}: the temperature must be > 0 for the saddle point")
        if N <= 0:
            raise ValueError(f"key 'N' = {N}: the width must be > 0")
        self.kern, self.y, self.tau, self.N = kern, y.to(F64), float(tau), float(N)
        self.Hs, self.sigma2 = tuple(Hs), float(sigma2)
        self.P = kern.P
        self.alpha = self.P / self.N
        self.sizes = level_sizes(Hs)
        if self.sizes[0] != kern.n:
            raise ValueError(f"Hs = {list(Hs)} gives {self.sizes[0]} paths but the kernels have {kern.n}")

    def energy(self, U: Tensor, grad: bool = True) -> tuple[Tensor, Tensor | None]:
        """ℰ(U) and B = ∂ℰ/∂U."""
        Lc = cholesky(self.kern.K(U), self.tau)
        w = torch.cholesky_solve(self.y[:, None], Lc)[:, 0]
        E = (2 * torch.log(torch.diagonal(Lc)).sum() + self.y @ w) / self.P
        if not grad:
            return E, None
        M = torch.cholesky_inverse(Lc) - torch.outer(w, w)
        return E, self.kern.contract(M) * (self.sigma2 / (self.kern.n * self.P))

    def __call__(self, As: Sequence[Tensor], grad: bool = True) -> ActionValue:
        s2, Hx = self.sigma2, [*self.Hs, 1]
        logdets = [2 * torch.log(torch.diagonal(A)).sum() for A in As]
        Us = [A @ A.T for A in As]
        invs = [torch.cholesky_inverse(A) for A in As]
        ent = torch.zeros((), dtype=F64, device=As[0].device)
        grads = [torch.zeros_like(U) for U in Us]
        for ell, (U, H) in enumerate(zip(Us, Hx, strict=True)):
            top = ell == len(Us) - 1
            m = 1 if top else Us[ell + 1].shape[0]
            Winv = torch.ones(1, 1, dtype=F64, device=U.device) if top else invs[ell + 1]
            diag_sum = U.reshape(H, m, H, m).diagonal(dim1=0, dim2=2).sum(-1)  # Σ_h U_[h,h]
            ent = ent + (Winv * diag_sum).sum() / s2 - logdets[ell] + (0.0 if top else H * logdets[ell + 1])
            if grad:
                eye = torch.eye(H, dtype=F64, device=U.device)
                grads[ell] = grads[ell] + torch.kron(eye, Winv.contiguous()) / s2 - invs[ell]
                if not top:
                    Wi = invs[ell + 1]
                    grads[ell + 1] = grads[ell + 1] + H * Wi - Wi @ diag_sum @ Wi / s2
        E, B = self.energy(Us[0], grad)
        if grad:
            grads[0] = grads[0] + self.alpha * B
            grads = [0.5 * (g + g.T) for g in grads]
        return ActionValue(ent + self.alpha * E, ent, E, grads)

    def at(self, Us: Sequence[Tensor]) -> ActionValue:
        """S and ∂S/∂U at explicit matrices (e.g. sampled or Adam iterates); they must be PD."""
        As = []
        for ell, U in enumerate(Us, 1):
            A, info = torch.linalg.cholesky_ex(0.5 * (U + U.T))
            if int(info) != 0:
                raise SolveError(f"U^({ell}) is not positive definite")
            As.append(A)
        return self(As)

    def residuals(self, Us: Sequence[Tensor], grads: Sequence[Tensor]) -> list[float]:
        """Relative stationarity residuals ‖U G U‖/‖U‖ per level: the §2.4 equations (e.g. the Riccati form
        σ⁻²U(I⊗W)⁻¹U + (H−1)U = σ⁻²Σ_h U_[h,h]) are U (∂S/∂U) U = 0."""
        return [float((U @ G @ U).norm() / U.norm()) for U, G in zip(Us, grads, strict=True)]


# -- Cholesky parametrisation --------------------------------------------------------------------------


class CholeskyParams:
    """θ ↔ lower-triangular factors A_ℓ with positive diagonal e^{d}: U^(ℓ) = A_ℓ A_ℓᵀ is PD for every θ."""

    def __init__(self, sizes: Sequence[int], device=None) -> None:
        self.sizes = list(sizes)
        self.device = device
        self.tril = [torch.tril_indices(m, m, -1, device=device) for m in sizes]
        self.counts = [m * (m + 1) // 2 for m in sizes]

    @property
    def dim(self) -> int:
        return sum(self.counts)

    def unpack(self, theta: Tensor) -> list[Tensor]:
        As, i = [], 0
        for m, idx in zip(self.sizes, self.tril, strict=True):
            k = idx.shape[1]
            A = torch.zeros(m, m, dtype=theta.dtype, device=theta.device)
            A = A.index_put((idx[0], idx[1]), theta[i:i + k])
            A = A + torch.diag(torch.exp(theta[i + k:i + k + m]))
            As.append(A)
            i += k + m
        return As

    def pack(self, Us: Sequence[Tensor]) -> Tensor:
        parts = []
        for U, idx in zip(Us, self.tril, strict=True):
            A = torch.linalg.cholesky(U.to(F64))
            parts += [A[idx[0], idx[1]], torch.log(torch.diagonal(A))]
        return torch.cat(parts)

    def grad(self, As: Sequence[Tensor], grads: Sequence[Tensor]) -> Tensor:
        """dS/dθ from symmetric dS/dU: dS/dA = 2 (dS/dU) A on the lower triangle, times A_ii on the diagonal."""
        parts = []
        for A, G, idx in zip(As, grads, self.tril, strict=True):
            GA = 2 * G @ A
            parts += [GA[idx[0], idx[1]], torch.diagonal(GA) * torch.diagonal(A)]
        return torch.cat(parts)
