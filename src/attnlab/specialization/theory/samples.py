"""Monte-Carlo samples of the reduced loss (10)-(11) (paper 0, Prop. III.1; App. B): ε, θ, χ*, ξ drawn once.

The samples are fixed along the flow (common random numbers, App. B). Token symmetry puts the relevant token at
ℓ = 0. ``symmetrize`` adds the sign-mirrored copy of every sample for each sign symmetry of P_θ and stratifies
discrete θ over its support, so that the unspecialised saddle is an exact fixed point of the MC flow
(docs/studies/specialization.md, Notes on the paper). For the finite-D p-correction,
:meth:`MCSamples.prepare` maps θ → Pθ with P = p^{1/2} for a batch of P's.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import torch

from attnlab.core.rng import generator
from attnlab.specialization.data.laws import symsqrt

Tensor = torch.Tensor

# ----------------------------------------------------------------------------------------------
# θ laws (duck-typed, so that any law of :mod:`attnlab.specialization.data.laws` works)


def law_info(law) -> dict:
    """Normalise a θ law to {'kind': 'discrete', support, probs, F} |
    {'kind': 'gaussian', mean, cov, F} | {'kind': 'sampler', law, F} (float64 CPU tensors)."""
    if getattr(law, "is_discrete", False):
        sup, pr = law.support()
        sup, pr = sup.double().cpu(), pr.double().cpu()
        return {"kind": "discrete", "support": sup, "probs": pr, "F": sup.shape[1]}
    if "gaussian" in type(law).__name__.lower():
        mu = law.mean().double().cpu()
        return {"kind": "gaussian", "mean": mu, "cov": law.cov().double().cpu(), "F": mu.shape[0]}
    return {"kind": "sampler", "law": law, "F": int(law.F)}


def _sign_symmetries(info: dict, F: int) -> list[Tensor]:
    """Diagonal sign flips R (as vectors) that leave the law of θ invariant
    (docs/studies/specialization.md, Notes on the paper)."""
    out = []
    for signs in itertools.product((1.0, -1.0), repeat=F):
        R = torch.tensor(signs, dtype=torch.float64)
        if info["kind"] == "discrete":
            sup, pr = info["support"], info["probs"]
            d = ((sup[:, None, :] * R - sup[None, :, :]).abs().amax(-1) < 1e-9) & (
                (pr[:, None] - pr[None, :]).abs() < 1e-12
            )
            ok = bool(d.any(1).all())
        elif info["kind"] == "gaussian":
            ok = bool(torch.allclose(R * info["mean"], info["mean"]) and torch.allclose(
                R[:, None] * info["cov"] * R[None, :], info["cov"]))
        else:
            ok = bool((R == 1).all())
        if ok:
            out.append(R)
    return out


# ----------------------------------------------------------------------------------------------
# Monte Carlo samples (App. B)


@dataclass
class MCSamples:
    """Fixed MC samples. Token 0 is the relevant one: χ*_{:,0} = A u + θ, A = (I + Cov θ)^{1/2} for
    Gaussian θ (integrated form, θ := E θ) else A = I; tokens ≥ 1: χ*_{:,ℓ} = z_ℓ. Weights w sum to 1."""

    theta: Tensor  # (N, F)
    u: Tensor  # (F, N)        token-0 noise
    z: Tensor  # (F, N, L)     noise; the token-0 slice is unused (u replaces it)
    xi: Tensor  # (H, N, L)
    w: Tensor  # (N,)
    cov: Tensor | None = None  # Cov θ if the Gaussian integrated form is used

    @property
    def n(self) -> int:
        return self.w.shape[0]

    def chi0(self, P: Tensor | None = None) -> Tensor:
        """Token-0 column of χ* for θ -> Pθ: (F,N), or (S,F,N) for batched P (S,F,F)."""
        eye = torch.eye(self.u.shape[0], dtype=self.u.dtype, device=self.u.device)
        P = eye if P is None else P.to(self.u)
        Au = self.u if self.cov is None else symsqrt(eye + P @ self.cov @ P.mT) @ self.u
        return Au + P @ self.theta.T

    def prepare(self, P: Tensor | None = None) -> dict:
        """Tensors used by the loss: Z = [χ*; ξ] (F+H, N, L) with χ*_0 = u, and d = χ*_0 - u (token-0
        correction, (F,N) or (S,F,N)), weights w."""
        Z = torch.cat([self.z, self.xi], 0).clone()
        F = self.z.shape[0]
        Z[:F, :, 0] = self.u
        return {"Z": Z, "d": self.chi0(P) - self.u, "w": self.w, "F": F}


def mc_samples(law, L: int, H: int, n: int, *, seed: int = 0, symmetrize: bool = True,
               antithetic: bool = True, head_cyclic: bool = False, gaussian_integrated: bool = True,
               dtype=torch.float64, device="cpu") -> MCSamples:
    """Draw ~n fixed MC samples of (θ, χ*, ξ) from an explicit ``torch.Generator(seed)`` (CPU, then moved).

    Discrete θ is stratified over its support (weights = probs). ``symmetrize``: add the mirror copies
    (θ, χ*) -> (Rθ, Rχ*) for all sign flips R preserving P_θ; ``antithetic``: add (ξ -> -ξ) (Lemma A.3
    exact); ``head_cyclic``: add all cyclic head shifts of ξ (Lemma A.1 exact). The total is rounded up to
    a multiple of the number of copies. Gaussian θ uses the integrated form χ*_0 ~ N(Eθ, I + Cov θ).
    """
    info = law_info(law)
    g = generator(seed)
    signs = _sign_symmetries(info, info["F"]) if symmetrize else [None]
    n_copies = len(signs) * (2 if antithetic else 1) * (H if head_cyclic else 1)
    nb = max(1, math.ceil(n / n_copies))
    cov = None
    if info["kind"] == "discrete":
        sup, pr = info["support"], info["probs"]
        per = math.ceil(nb / sup.shape[0])
        theta = sup.repeat_interleave(per, 0)
        w = (pr / per).repeat_interleave(per)
    elif info["kind"] == "gaussian" and gaussian_integrated:
        theta = info["mean"].expand(nb, -1).clone()
        cov, w = info["cov"], torch.full((nb,), 1.0 / nb, dtype=torch.float64)
    else:
        theta = _sample_law(info, nb, g)
        w = torch.full((nb,), 1.0 / nb, dtype=torch.float64)
    nb, F = theta.shape
    u = torch.randn(F, nb, generator=g, dtype=torch.float64)
    z = torch.randn(F, nb, L, generator=g, dtype=torch.float64)
    xi = torch.randn(H, nb, L, generator=g, dtype=torch.float64)
    parts = []
    for R in signs:
        Rv = torch.ones(F, dtype=torch.float64) if R is None else R
        for a in (1.0, -1.0) if antithetic else (1.0,):
            for c in range(H if head_cyclic else 1):
                parts.append((theta * Rv, Rv[:, None] * u, Rv[:, None, None] * z, a * xi.roll(c, 0), w))
    cat = [torch.cat(t, dim=1 if k in (1, 2, 3) else 0) for k, t in enumerate(zip(*parts, strict=True))]
    conv = {"dtype": dtype, "device": device}
    return MCSamples(cat[0].to(**conv), cat[1].to(**conv), cat[2].to(**conv), cat[3].to(**conv),
                     (cat[4] / len(parts)).to(**conv), None if cov is None else cov.to(**conv))


def _sample_law(info: dict, n: int, g: torch.Generator) -> Tensor:
    if info["kind"] == "gaussian":
        z = torch.randn(n, info["F"], generator=g, dtype=torch.float64)
        return info["mean"] + z @ symsqrt(info["cov"])
    return info["law"].sample(n, generator=g, dtype=torch.float64).cpu()
