"""Around the saddle-point solve: starting points, the optimiser's history, the Hessian at the solution.

* Starts (the public code's options besides the GP solution, App. E): ``perturbed`` — every level
  U^(ℓ) = c·U_GP^(ℓ)(I + ε M) with M = GGᵀ/n_ℓ a Marchenko-Pastur matrix (G an n_ℓ × n_ℓ standard Gaussian),
  positive definite for every ε ≥ 0; ``good_vs_bad`` — diagonal levels with the first k paths at c and the
  others at f·c (a guess that the first paths are the good ones).
* History: every k optimiser steps the U's, S, its energy and entropy parts, and the largest energy and
  entropy gradients per level (the public code's record, kept as arrays of the run).
* Hessian of S at the solution in the independent entries of the symmetric U^(1..L) (upper triangles, the public
  code's packing) with the scalar u at its optimum (u eliminated: Schur complement), so that its eigenvalues
  are those of the public code's Hessian test; all > 0 at a minimum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnlab.paths.theory.action import Action, gp_levels

Tensor = torch.Tensor
F64 = torch.float64
STARTS = ("gp", "perturbed", "good_vs_bad")


def start(action: Action, kind: str = "gp", *, strength: float = 0.0, scale: float = 1.0, good: int = 1,
          bad_factor: float = 0.1, generator: torch.Generator | None = None) -> list[Tensor]:
    """Initial U^(1..L+1) of the solve (see the module doc); ``gp`` is the GP solution σ_a² Π σ_ℓ² I."""
    dev = action.kern.Xi.device
    gp = gp_levels(action.Hs, device=dev, variances=action.variances)
    if kind == "gp":
        return gp
    if kind == "perturbed":
        if strength < 0 or scale <= 0:
            raise ValueError(f"key 'init_strength' = {strength}, 'init_scale' = {scale}: need ε ≥ 0 and c > 0")
        out = []
        for U in gp[:-1]:
            m = U.shape[0]
            G = torch.randn(m, m, generator=generator, dtype=F64, device=dev)
            out.append(scale * U @ (torch.eye(m, dtype=F64, device=dev) + strength * G @ G.T / m))
        return [*out, gp[-1]]
    if kind == "good_vs_bad":
        if not bad_factor > 0 or scale <= 0 or good < 0:
            raise ValueError(f"key 'init_bad_factor' = {bad_factor}, 'init_scale' = {scale}, 'init_good' = {good}: "
                             "need f > 0, c > 0, k ≥ 0")
        out = []
        for U in gp[:-1]:
            d = torch.full((U.shape[0],), bad_factor * scale, dtype=F64, device=dev)
            d[:good] = scale
            out.append(torch.diag(d))
        return [*out, gp[-1]]
    raise ValueError(f"key 'init' = {kind!r}: allowed: {', '.join(STARTS)}")


class History:
    """The optimiser's record every ``every`` steps (``every = 0``: nothing)."""

    def __init__(self, action: Action, every: int = 0) -> None:
        self.action, self.every = action, int(every)
        self.rows: dict[str, list] = {k: [] for k in ("step", "S", "energy", "entropy", "max_grad",
                                                       "max_energy_grad", "max_entropy_grad")}
        self.Us: list[list[np.ndarray]] = []

    def __call__(self, step: int, Us: Sequence[Tensor], final: bool = False) -> None:
        if self.every <= 0 or (step % self.every and not final) or (self.rows["step"] and self.rows["step"][-1]
                                                                    == step):
            return
        val = self.action.at(Us)
        eg = [val.energy_grad] + [torch.zeros_like(g) for g in val.grads[1:]]
        self.rows["step"].append(step)
        for k, v in (("S", val.S), ("energy", val.energy), ("entropy", val.entropy)):
            self.rows[k].append(float(v))
        self.rows["max_grad"].append([float(g.abs().max()) for g in val.grads])
        self.rows["max_energy_grad"].append([float(g.abs().max()) for g in eg])
        self.rows["max_entropy_grad"].append([float((g - e).abs().max()) for g, e in zip(val.grads, eg, strict=True)])
        self.Us.append([U.detach().cpu().numpy() for U in Us])

    def arrays(self) -> dict[str, np.ndarray]:
        """``step``, ``S``, ``energy``, ``entropy`` (K,), the largest gradients per level (K, L+1), ``U{ℓ}``
        (K, n_ℓ, n_ℓ)."""
        if not self.rows["step"]:
            return {}
        out = {k: np.asarray(v, dtype=float) for k, v in self.rows.items()}
        for ell in range(len(self.Us[0])):
            out[f"U{ell + 1}"] = np.stack([u[ell] for u in self.Us])
        return out


def _pack(Us: Sequence[Tensor]) -> Tensor:
    return torch.cat([U[tuple(torch.triu_indices(*U.shape, device=U.device))] for U in Us])


def _unpack(x: Tensor, sizes: Sequence[int]) -> list[Tensor]:
    out, i = [], 0
    for m in sizes:
        iu = torch.triu_indices(m, m, device=x.device)
        k = iu.shape[1]
        A = torch.zeros(m, m, dtype=x.dtype, device=x.device).index_put((iu[0], iu[1]), x[i:i + k])
        out.append(A + torch.triu(A, 1).T)
        i += k
    return out


def hessian(action: Action, Us: Sequence[Tensor]) -> Tensor:
    """Hessian of S in the upper-triangle entries of U^(1..L) at ``Us``, u eliminated at its optimum (autograd
    through the Cholesky factors, float64)."""
    sizes = [U.shape[0] for U in Us]

    def S(x: Tensor) -> Tensor:
        As = [torch.linalg.cholesky(U) for U in _unpack(x, sizes)]
        return action(As, grad=False).S

    x0 = _pack(Us).detach()
    Hf = torch.autograd.functional.hessian(S, x0)
    k = x0.shape[0] - 1  # u is the last entry
    return Hf[:k, :k] - torch.outer(Hf[:k, k], Hf[k, :k]) / Hf[k, k]


def hessian_eigenvalues(action: Action, Us: Sequence[Tensor]) -> np.ndarray:
    """Ascending eigenvalues of :func:`hessian`; all > 0 at a minimum of S."""
    return torch.linalg.eigvalsh(hessian(action, Us)).cpu().numpy()
