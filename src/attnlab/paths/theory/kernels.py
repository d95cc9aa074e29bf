"""Path-path kernels, the renormalised kernel K(U) and the predictor statistics (Eqs. (9)-(10), (29)-(31)).

C_ππ'(x, x') = ξ^π(x)·ξ^π'(x')/D is the overlap of the attentioned inputs of two paths (Eqs. (10)/(74)), and

    K(x, x') = (σ²/n) Σ_{π,π'} U_ππ' C_ππ'(x, x')                      (Eqs. (10)/(73), σ² from the V⁰ integral)

For a training set the n(n+1)/2 distinct P×P blocks are precomputed once (the block form), so that K(U) and
the contraction ⟨M, C_ππ'⟩ the energy gradient needs are each one matrix-vector product over the stored
blocks. Where the blocks would not fit in ``max_bytes`` the feature form K = (σ²/nD) Φ (U⊗I) Φᵀ is used
instead. Everything is float64, unless the kernels are built with ``dtype=torch.float32`` (config key
``solve_precision``, the public code's ``--single_precision``): then K, the action and the predictor are float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

Tensor = torch.Tensor
F64 = torch.float64



def prior_variances(Hs: Sequence[int], sigma2: float = 1.0, variances: Sequence[float] | None = None) -> tuple:
    """(σ_0², σ_1², ..., σ_L², σ_a²): ``variances`` checked (L+2 entries > 0), or σ² for every weight."""
    L = len(Hs)
    if variances is None:
        return (float(sigma2),) * (L + 2)
    if len(variances) != L + 2 or min(variances) <= 0:
        raise ValueError(f"key 'variances' = {list(variances)}: {L + 2} positive entries (σ_0², σ_1..σ_{L}², σ_a²) "
                         f"for L = {L} layers")
    return tuple(float(v) for v in variances)

@dataclass(frozen=True)
class Problem:
    """A network's fixed attention applied to a data set: path features and labels, train and test.

    ``Xi`` (P, n, D) and ``Xi_test`` (P*, n, D) come from :func:`model.path_features`; ``Hs`` are the heads
    per layer (n = Π Hs); ``sigma2`` is the prior variance σ² of every weight, unless ``variances`` gives one per
    weight (σ_0², σ_1², ..., σ_L², σ_a²: V⁰, the value layers, the readout).
    """

    Xi: Tensor
    y: Tensor
    Xi_test: Tensor
    y_test: Tensor
    Hs: tuple[int, ...]
    sigma2: float = 1.0
    variances: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        n = 1
        for H in self.Hs:
            if H < 1:
                raise ValueError(f"key 'Hs' = {list(self.Hs)}: every layer needs at least one head")
            n *= H
        for name in ("Xi", "Xi_test"):
            t = getattr(self, name)
            if t.ndim != 3 or t.shape[1] != n:
                raise ValueError(f"{name} has shape {tuple(t.shape)}; expected (P, {n}, D) for Hs = {list(self.Hs)}")
        if self.Xi.shape[2] != self.Xi_test.shape[2]:
            raise ValueError(f"train and test path features differ in width: {self.Xi.shape[2]} vs "
                             f"{self.Xi_test.shape[2]}")
        if self.y.shape != (self.Xi.shape[0],) or self.y_test.shape != (self.Xi_test.shape[0],):
            raise ValueError("labels must be vectors with one entry per example")
        if self.sigma2 <= 0:
            raise ValueError(f"key 'sigma2' = {self.sigma2}: the prior variance must be > 0")
        if self.variances is not None:
            prior_variances(self.Hs, self.sigma2, self.variances)

    @property
    def var(self) -> tuple[float, ...]:
        """(σ_0², σ_1², ..., σ_L², σ_a²)."""
        return self.variances if self.variances is not None else (self.sigma2,) * (self.L + 2)

    @property
    def sigma0(self) -> float:
        """σ_0², the variance of V⁰ that multiplies the kernel (Eq. (10))."""
        return self.var[0]

    @property
    def P(self) -> int:
        return self.Xi.shape[0]

    @property
    def n(self) -> int:
        return self.Xi.shape[1]

    @property
    def D(self) -> int:
        return self.Xi.shape[2]

    @property
    def L(self) -> int:
        return len(self.Hs)

    def U_gp(self) -> Tensor:
        """U in the GP limit α → 0: σ_a² Π_ℓ σ_ℓ² I = σ^{2(L+1)} I for one σ² (Sec. 3, App. B)."""
        v = 1.0
        for s2 in self.var[1:]:
            v *= s2
        return v * torch.eye(self.n, dtype=F64, device=self.Xi.device)

    def to(self, device) -> Problem:
        return Problem(self.Xi.to(device, F64), self.y.to(device, F64), self.Xi_test.to(device, F64),
                       self.y_test.to(device, F64), self.Hs, self.sigma2, self.variances)


class PathKernels:
    """The path-path kernel blocks of a training set and the maps U ↦ K(U), M ↦ ⟨M, C_ππ'⟩."""

    def __init__(self, Xi: Tensor, sigma2: float = 1.0, mode: str = "auto", max_bytes: int = 2**29,
                 dtype: torch.dtype = F64) -> None:
        self.Xi = Xi.to(dtype)
        self.P, self.n, self.D = Xi.shape
        self.sigma2 = sigma2
        self.iu = torch.triu_indices(self.n, self.n, device=Xi.device)
        m = self.iu.shape[1]
        if mode == "auto":
            mode = "blocks" if m * self.P**2 * 8 <= max_bytes else "features"
        if mode not in ("blocks", "features"):
            raise ValueError(f"key 'kernel_mode' = {mode!r}: allowed: auto, blocks, features")
        self.mode = mode
        if mode == "blocks":
            self.blocks = self._blocks()  # (m, P²): C_aa for a = b, C_ab + C_abᵀ for a < b

    def _blocks(self) -> Tensor:
        Xi, P, n = self.Xi, self.P, self.n
        out = torch.empty(self.iu.shape[1], P, P, dtype=Xi.dtype, device=Xi.device)
        k = 0
        for a in range(n):
            Ca = torch.einsum("pd,qbd->bpq", Xi[:, a], Xi[:, a:]) / self.D  # C_ab for b ≥ a
            out[k] = Ca[0]
            out[k + 1:k + n - a] = Ca[1:] + Ca[1:].mT
            k += n - a
        return out.reshape(-1, P * P)

    def block(self, a: int, b: int) -> Tensor:
        """C_ab (P, P) on the training set (always computed from the features; for plots and tests)."""
        return self.Xi[:, a] @ self.Xi[:, b].T / self.D

    def K(self, U: Tensor) -> Tensor:
        """Training kernel K(U) (P, P) for a symmetric U (n, n)."""
        c = self.sigma2 / self.n
        U = U.to(self.Xi.dtype)
        if self.mode == "blocks":
            return (c * U[self.iu[0], self.iu[1]] @ self.blocks).reshape(self.P, self.P)
        Y = torch.einsum("ab,pbd->pad", U, self.Xi).reshape(self.P, -1)
        return (c / self.D) * (self.Xi.reshape(self.P, -1) @ Y.T)

    def contract(self, M: Tensor) -> Tensor:
        """(n, n) matrix of ⟨M, C_ab⟩ = Tr(M C_abᵀ) for a symmetric M (P, P)."""
        if self.mode == "blocks":
            v = self.blocks @ M.reshape(-1)
            v = torch.where(self.iu[0] == self.iu[1], v, 0.5 * v)
            out = torch.zeros(self.n, self.n, dtype=self.Xi.dtype, device=M.device)
            out[self.iu[0], self.iu[1]] = v
            return out + torch.triu(out, 1).T
        Z = (M @ self.Xi.reshape(self.P, -1)).reshape(self.Xi.shape)
        return torch.einsum("pad,pbd->ab", self.Xi, Z) / self.D

    def cross(self, Xi_test: Tensor, U: Tensor) -> tuple[Tensor, Tensor]:
        """k (P*, P) = K(x*, x^μ) and the diagonal K(x*, x*) (P*,) for test path features (P*, n, D)."""
        c = self.sigma2 / (self.n * self.D)
        Xi_test = Xi_test.to(self.Xi.dtype)
        Y = torch.einsum("ab,pbd->pad", U.to(self.Xi.dtype), Xi_test)
        k = c * (Y.reshape(Y.shape[0], -1) @ self.Xi.reshape(self.P, -1).T)
        diag = c * (Y * Xi_test).sum(dim=(1, 2))
        return k, diag


def cholesky(K: Tensor, tau: float, what: str = "K + τI") -> Tensor:
    """Lower Cholesky factor of K + τI; a non-positive-definite matrix is an error that says so."""
    A = K + tau * torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
    Lc, info = torch.linalg.cholesky_ex(A)
    if int(info) != 0:
        raise FloatingPointError(f"{what} is not positive definite (τ = {tau}); the kernel or U left the PD cone")
    return Lc


class SingularKernelError(FloatingPointError):
    """The training kernel is singular to working precision (the public code: "certainly above capacity")."""


def invertibility(kern: PathKernels, U: Tensor, tau: float = 0.0, with_temperature: bool = False) -> dict[str, float]:
    """The public code's kernel-invertibility test (``--test_kernel_invertibility[_with_temperature]``): the
    spectrum of the P×P kernel K(U) (K(U) + τI ``with_temperature``), for U = U_GP the GP kernel of Eq. (10).

    Returns ``kernel_min_eig``, ``kernel_max_eig``, ``kernel_cond`` (λ_max/λ_min; inf when λ_min ≤ 0),
    ``kernel_nonpositive`` (eigenvalues ≤ 0, the public code's count) and ``kernel_singular`` (1.0 when
    λ_min ≤ P·ε·λ_max, the matrix-rank tolerance of LAPACK / numpy: singular to working precision, ε of the
    kernel's dtype). The energy (Eq. (12)) needs (K + τI)⁻¹: a singular K means P exceeds what the paths can
    fit (above capacity) and the solve then hangs on τ alone."""
    K = kern.K(U)
    if with_temperature:
        K = K + tau * torch.eye(K.shape[0], dtype=K.dtype, device=K.device)
    lam = torch.linalg.eigvalsh(K)
    lo, hi = float(lam[0]), float(lam[-1])
    eps = torch.finfo(K.dtype).eps
    return {"kernel_min_eig": lo, "kernel_max_eig": hi, "kernel_cond": hi / lo if lo > 0 else float("inf"),
            "kernel_nonpositive": float((lam <= 0).sum()),
            "kernel_singular": float(lo <= K.shape[0] * eps * abs(hi))}


def check_invertibility(kern: PathKernels, U: Tensor, tau: float, mode: str) -> dict[str, float]:
    """:func:`invertibility` for the config key ``kernel_check`` (``off`` | ``kernel`` | ``with_temperature``):
    {} when off; raises :class:`SingularKernelError` with the numbers when the kernel is singular."""
    if mode == "off":
        return {}
    if mode not in ("kernel", "with_temperature"):
        raise ValueError(f"key 'kernel_check' = {mode!r}: allowed: off, kernel, with_temperature")
    out = invertibility(kern, U, tau, mode == "with_temperature")
    if out["kernel_singular"]:
        what = "K_GP + τI" if mode == "with_temperature" else "K_GP"
        raise SingularKernelError(
            f"key 'kernel_check' = {mode!r}: the {kern.P}×{kern.P} kernel {what} is singular to working precision "
            f"(smallest eigenvalue {out['kernel_min_eig']:.3e} ≤ P·ε·largest = "
            f"{kern.P * torch.finfo(kern.Xi.dtype).eps * out['kernel_max_eig']:.3e}; "
            f"{int(out['kernel_nonpositive'])} eigenvalues ≤ 0): duplicated examples, or P above the paths' "
            "capacity; lower P, or run with kernel_check=with_temperature to test K + τI")
    return out


@dataclass(frozen=True)
class Prediction:
    """Posterior predictor statistics on a test set (Eqs. (29)-(30)) and the observables derived from them."""

    mean: Tensor  # ⟨f*⟩ (P*,)
    var: Tensor  # ⟨δf*²⟩ (P*,)

    def accuracy(self, y: Tensor) -> float:
        """A = mean of δ(y, sign⟨f⟩) (Sec. 4.1: the sign of the mean predictor)."""
        return float((torch.sign(self.mean) == y).to(F64).mean())

    def gen_error(self, y: Tensor) -> float:
        """MSE generalisation error ε_g = mean[(⟨f⟩ − y)² + ⟨δf²⟩]."""
        return float(((self.mean - y) ** 2 + self.var).mean())


def predict(kern: PathKernels, U: Tensor, y: Tensor, tau: float, Xi_test: Tensor) -> Prediction:
    """⟨f*⟩ = kᵀ(K + τI)⁻¹Y and ⟨δf*²⟩ = K(x*,x*) − kᵀ(K + τI)⁻¹k with the renormalised kernel K(U)."""
    Lc = cholesky(kern.K(U), tau)
    w = torch.cholesky_solve(y.to(Lc.dtype)[:, None], Lc)[:, 0]
    k, diag = kern.cross(Xi_test, U)
    v = torch.linalg.solve_triangular(Lc, k.T, upper=False)
    return Prediction(k @ w, diag - (v * v).sum(0))


def alignment(K: Tensor, y: Tensor, top: int = 5) -> dict[str, Tensor | float]:
    """Kernel-task alignment (Fig. 2d, 3d): cosine overlaps |φ_k·Y|/‖Y‖ of the PCs (eigenvalues descending),
    the top-``top`` squared overlap Σ_{k≤top} (φ_k·Y)²/‖Y‖², and Yᵀ K Y/(‖K‖_F ‖Y‖²)."""
    lam, phi = torch.linalg.eigh(K)
    lam, phi = lam.flip(0), phi.flip(1)
    yn = y.to(F64) / y.norm()
    ov = (phi.T @ yn).abs()
    return {"eigenvalues": lam, "overlaps": ov, "top_overlap": float((ov[:top] ** 2).sum()),
            "kta": float(yn @ K @ yn / K.norm())}
