"""The action S({U^(ℓ)}) of the finite-width theory and its analytic gradient (Eqs. (11)-(12), (32)-(34)).

With n_ℓ = Π_{k≥ℓ} H_k partial paths at level ℓ, order parameters U^(ℓ) (n_ℓ × n_ℓ, ℓ = 1..L) and the
scalar u = U^(L+1), and the convention U^(L+2) = 1, H_{L+1} = 1, the action (32)-(33) reads

    S = Σ_{ℓ=1}^{L+1} [ σ⁻² Σ_{h ≤ H_ℓ} Tr(U^(ℓ)_[h,h] (U^(ℓ+1))⁻¹) − ln det U^(ℓ) + H_ℓ ln det U^(ℓ+1) ] + α ℰ(U^(1))
    ℰ(U) = (1/P) [ln det(K(U) + τI) + Yᵀ(K(U) + τI)⁻¹Y],      α = P/N                           (12)/(34)

where U^(ℓ)_[h,h] is the h-th diagonal block (paths ordered with h_ℓ most significant, U_ext = I ⊗ U).

Per-layer widths and prior variances (the public code's generalisation of the paper's single N and σ²): with
N_ℓ the width of x^(ℓ) (N_{L+1} = N_a, the readout's) and σ_0², σ_ℓ², σ_a² the variances of V⁰, V^(ℓ), a, the
level-ℓ order parameter is a Wishart matrix with N_ℓ degrees of freedom around σ_ℓ² I ⊗ U^(ℓ+1), so level ℓ
of the entropy is weighted by N_ℓ/N̄ and uses σ_ℓ⁻² (σ_a⁻² at ℓ = L+1), the energy by α = P/N̄ with
N̄ = max_ℓ N_ℓ (any N̄ gives the same U*), and σ_0² multiplies the kernel (:class:`PathKernels`). Equal widths
and variances give the paper's action above.
Its gradient (re-derived from Eqs. (32)-(34), checked by finite differences: check A3):

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

from attnlab.paths.theory.kernels import PathKernels, cholesky, prior_variances

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


def gp_levels(Hs: Sequence[int], sigma2: float = 1.0, device=None,
              variances: Sequence[float] | None = None) -> list[Tensor]:
    """The GP-limit (α = 0) saddle point U^(ℓ) = σ_a² Π_{k≥ℓ} σ_k² I for ℓ = 1..L+1 (σ^{2(L+2−ℓ)} I for one σ²;
    check A4)."""
    var = prior_variances(Hs, sigma2, variances)
    out, v = [], var[-1]
    for ell in range(len(Hs), -1, -1):  # ℓ = L+1 (u) down to 1
        out.insert(0, v * torch.eye(level_sizes(Hs)[ell], dtype=F64, device=device))
        v *= var[ell]
    return out


# -- action and gradient ----------------------------------------------------------------------------


@dataclass
class ActionValue:
    S: Tensor
    entropy: Tensor  # −Σ ℒ: the entropy part of S
    energy: Tensor  # ℰ(U^(1))
    grads: list[Tensor]  # ∂S/∂U^(ℓ), ℓ = 1..L+1 (symmetric)
    energy_grad: Tensor | None = None  # α ∂ℰ/∂U^(1) (symmetric); the entropy's gradient is grads − this


def widths_of(N: float | Sequence[float], L: int) -> tuple[float, ...]:
    """(N_1, ..., N_L, N_a) from one width or L+1 of them, checked (> 0)."""
    ws = (float(N),) * (L + 1) if not isinstance(N, Sequence) else tuple(float(n) for n in N)
    if len(ws) != L + 1 or min(ws) <= 0:
        raise ValueError(f"key 'N' = {N}: the width must be > 0 (one width, or {L + 1} per-layer widths "
                         f"N_1..N_{L}, N_a)")
    return ws


class Action:
    """S({U^(ℓ)}) of one (data set, N, τ) and its analytic gradient; U's are passed by Cholesky factors."""

    def __init__(self, kern: PathKernels, y: Tensor, tau: float, N: float | Sequence[float], Hs: Sequence[int],
                 sigma2: float = 1.0, variances: Sequence[float] | None = None) -> None:
        if tau <= 0:
            raise ValueError(f"key 'tau' = {tau}: the temperature must be > 0 for the saddle point")
        self.widths = widths_of(N, len(Hs))
        self.dtype = kern.Xi.dtype  # float64, or float32 for a single-precision solve
        self.kern, self.y, self.tau, self.N = kern, y.to(self.dtype), float(tau), max(self.widths)
        self.Hs, self.sigma2 = tuple(Hs), float(sigma2)
        self.variances = prior_variances(Hs, sigma2, variances)
        if abs(self.variances[0] - kern.sigma2) > 1e-12 * kern.sigma2:
            raise ValueError(f"key 'variances' = {list(self.variances)}: σ_0² must be the kernels' σ² = {kern.sigma2}")
        self.level_weights = [n / self.N for n in self.widths] if float("inf") > self.N else [1.0] * len(self.widths)
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
        return E, self.kern.contract(M) * (self.kern.sigma2 / (self.kern.n * self.P))

    def __call__(self, As: Sequence[Tensor], grad: bool = True) -> ActionValue:
        Hx = [*self.Hs, 1]
        logdets = [2 * torch.log(torch.diagonal(A)).sum() for A in As]
        Us = [A @ A.T for A in As]
        invs = [torch.cholesky_inverse(A) for A in As]
        ent = torch.zeros((), dtype=As[0].dtype, device=As[0].device)
        grads = [torch.zeros_like(U) for U in Us]
        for ell, (U, H) in enumerate(zip(Us, Hx, strict=True)):
            top = ell == len(Us) - 1
            m = 1 if top else Us[ell + 1].shape[0]
            Winv = torch.ones(1, 1, dtype=U.dtype, device=U.device) if top else invs[ell + 1]
            s2, wl = self.variances[ell + 1], self.level_weights[ell]  # σ_ℓ² (σ_a² at the top), N_ℓ/N̄
            diag_sum = U.reshape(H, m, H, m).diagonal(dim1=0, dim2=2).sum(-1)  # Σ_h U_[h,h]
            ent = ent + wl * ((Winv * diag_sum).sum() / s2 - logdets[ell] + (0.0 if top else H * logdets[ell + 1]))
            if grad:
                eye = torch.eye(H, dtype=U.dtype, device=U.device)
                grads[ell] = grads[ell] + wl * (torch.kron(eye, Winv.contiguous()) / s2 - invs[ell])
                if not top:
                    Wi = invs[ell + 1]
                    grads[ell + 1] = grads[ell + 1] + wl * (H * Wi - Wi @ diag_sum @ Wi / s2)
        E, B = self.energy(Us[0], grad)
        eg = None
        if grad:
            eg = self.alpha * 0.5 * (B + B.T)
            grads = [0.5 * (g + g.T) for g in grads]
            grads[0] = grads[0] + eg
        return ActionValue(ent + self.alpha * E, ent, E, grads, eg)

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
        """Relative stationarity residuals ‖U G U‖/‖U‖ per level: the Sec. 2.4 equations (e.g. the Riccati form
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
