"""Laws of θ of paper 0 (Sec. II): the spike strengths planted in the relevant token, Eq. (2).

Laws (all immutable, hashable frozen dataclasses, subclasses of ``ThetaLaw``):

==================  =========================  ==========================================================
``make_law`` name   class                      definition (Sec. II)
==================  =========================  ==========================================================
'flip'  (F = 2)     ``FlipSpike(nu1, nu2)``    θ = (√ν1, s√ν2), s = ±1 w.p. 1/2 (``nu=`` sets both)
'flip'  (F ≥ 3)     ``OneHotSpike(F, nu)``     θ = √ν e_f, f ~ Unif[F] (Sec. II)
'onehot' (F ≥ 2)    ``OneHotSpike(F, nu)``     same, any F ≥ 2
'gaussian'          ``NonIsoGaussian(F, nu1, nu2)``   θ_f ~ N(0, ν̃_f), ν̃ = linspace(ν1, ν2, F), ν1 ≥ ν2
'gaussian_iso'      ``IsoGaussian(F, nu)``     θ ~ N(0, ν I_F)
'discrete'          ``DiscreteLaw(values, probs)``    generic finite support
'gaussian_general'  ``GaussianLaw(mean, cov)``  generic N(mean, cov), cov PSD
==================  =========================  ==========================================================

Λ is returned *exactly*, constants included (they cancel in the Bayes posterior softmax_ℓ Λ(χ*_ℓ) of
Eq. (16)); the optional ``p = K* K*ᵀ`` gives the finite-D weight e^{-θᵀpθ/2} (docs/studies/specialization.md).
Randomness always comes from an explicit ``torch.Generator``; samples are drawn on the generator's device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

Tensor = torch.Tensor
_F64 = torch.float64


def symsqrt(a: Tensor) -> Tensor:
    """Symmetric PSD square root of the symmetric part of ``a`` (..., n, n): eigh, eigenvalues clamped at 0.

    Used for Gaussian sampling, for r = symsqrt(q − m p⁻¹ mᵀ) (Eq. (9)) and for P = p^{1/2} (the finite-D
    p-correction)."""
    w, u = torch.linalg.eigh((a + a.mT) / 2)
    return (u * w.clamp(min=0).sqrt().unsqueeze(-2)) @ u.mT


class ThetaLaw:
    """Base of the laws P_θ on R^F. Subclasses define ``F``, ``name`` and the methods below."""

    name: str = "law"
    is_discrete: bool = False

    @property
    def F(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def sample(
        self,
        n: int,
        *,
        generator: torch.Generator,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> Tensor:
        """n iid draws θ ~ P_θ, shape (n, F)."""
        raise NotImplementedError

    def mean(self) -> Tensor:
        """E θ, shape (F,), float64."""
        raise NotImplementedError

    def cov(self) -> Tensor:
        """Cov θ, shape (F, F), float64."""
        raise NotImplementedError

    def log_marginal(self, c: Tensor, p: Tensor | None = None) -> Tensor:
        """Λ(c) = log ∫ exp(θᵀc − θᵀpθ/2) P_θ(dθ) for c of shape (..., F) (Eq. (16); p = I_F default)."""
        raise NotImplementedError

    def log_marginal_weight(self, c: Tensor, p: Tensor | None = None) -> Tensor:
        """Alias of :meth:`log_marginal` (the name in Eq. (16)'s derivation)."""
        return self.log_marginal(c, p)

    def support(self) -> tuple[Tensor, Tensor]:
        """(values (S, F), probs (S,)) of a discrete law."""
        raise TypeError(f"law {self.name!r} is continuous and has no finite support")

    def params(self) -> dict:
        """Constructor keyword arguments (for configs and tables)."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}  # type: ignore[attr-defined]


def _check_positive(law: str, **values: float) -> None:
    for k, v in values.items():
        try:
            ok = not isinstance(v, bool) and math.isfinite(float(v)) and float(v) > 0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"law {law!r}: parameter {k}={v!r} is not allowed; must be a finite number > 0")


class _Discrete(ThetaLaw):
    """Methods of every law with finite support, written in terms of ``support()``."""

    is_discrete = True

    @property
    def F(self) -> int:
        return self.support()[0].shape[1]

    def sample(self, n, *, generator, device=None, dtype=torch.float32):
        values, probs = self.support()
        dev = generator.device
        idx = torch.multinomial(probs.to(dev), n, replacement=True, generator=generator)
        return values.to(dev)[idx].to(device=device or dev, dtype=dtype)

    def mean(self):
        values, probs = self.support()
        return probs @ values

    def cov(self):
        values, probs = self.support()
        centred = values - self.mean()
        return (centred * probs[:, None]).T @ centred

    def log_marginal(self, c, p=None):
        values, probs = self.support()
        values, probs = values.to(device=c.device, dtype=c.dtype), probs.to(device=c.device, dtype=c.dtype)
        p = torch.eye(values.shape[1], dtype=c.dtype, device=c.device) if p is None else p.to(c)
        quad = ((values @ p) * values).sum(-1)  # θ_jᵀ p θ_j
        return torch.logsumexp(torch.log(probs) - quad / 2 + c @ values.T, dim=-1)


@dataclass(frozen=True)
class DiscreteLaw(_Discrete):
    """Generic finite law: P(θ = values[j]) = probs[j]. Stored as tuples (immutable, hashable)."""

    values: tuple[tuple[float, ...], ...]
    probs: tuple[float, ...]
    name: str = field(default="discrete", init=False)

    def __post_init__(self) -> None:
        vals = torch.as_tensor(self.values, dtype=_F64)
        pr = torch.as_tensor(self.probs, dtype=_F64)
        if vals.ndim != 2 or pr.ndim != 1 or vals.shape[0] != pr.shape[0] or vals.shape[0] == 0:
            raise ValueError(
                f"law 'discrete': values must be (S, F) and probs (S,), got {tuple(vals.shape)} "
                f"and {tuple(pr.shape)}"
            )
        if (pr <= 0).any() or abs(float(pr.sum()) - 1) > 1e-9:
            raise ValueError(f"law 'discrete': probs={pr.tolist()} must be > 0 and sum to 1")
        object.__setattr__(self, "values", tuple(tuple(map(float, r)) for r in vals.tolist()))
        object.__setattr__(self, "probs", tuple(map(float, pr.tolist())))

    def support(self):
        return torch.tensor(self.values, dtype=_F64), torch.tensor(self.probs, dtype=_F64)

    def params(self) -> dict:
        return {"values": self.values, "probs": self.probs}


@dataclass(frozen=True)
class FlipSpike(_Discrete):
    """Flipping spike, F = 2: θ = (√ν1, s√ν2), s = ±1 with prob. 1/2 (Sec. II)."""

    nu1: float
    nu2: float
    name: str = field(default="flip", init=False)

    def __post_init__(self) -> None:
        _check_positive("flip", nu1=self.nu1, nu2=self.nu2)

    def support(self):
        a, c = math.sqrt(self.nu1), math.sqrt(self.nu2)
        return torch.tensor([[a, c], [a, -c]], dtype=_F64), torch.tensor([0.5, 0.5], dtype=_F64)

    def params(self) -> dict:
        return {"nu1": self.nu1, "nu2": self.nu2}


@dataclass(frozen=True)
class OneHotSpike(_Discrete):
    """One-hot ("flipping" for F > 2) spike: θ = √ν e_f, f ~ Unif[F] (Sec. II)."""

    n_features: int
    nu: float
    name: str = field(default="onehot", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.n_features, int) or self.n_features < 2:
            raise ValueError(f"law 'onehot': F={self.n_features!r} is not allowed; must be an integer >= 2")
        _check_positive("onehot", nu=self.nu)

    def support(self):
        F = self.n_features
        return math.sqrt(self.nu) * torch.eye(F, dtype=_F64), torch.full((F,), 1.0 / F, dtype=_F64)

    def params(self) -> dict:
        return {"F": self.n_features, "nu": self.nu}


class _Gaussian(ThetaLaw):
    """Methods of every Gaussian law N(μ, Σ), written in terms of ``_moments()``."""

    def _moments(self) -> tuple[Tensor, Tensor]:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def F(self) -> int:
        return self._moments()[0].shape[0]

    def mean(self):
        return self._moments()[0]

    def cov(self):
        return self._moments()[1]

    def sample(self, n, *, generator, device=None, dtype=torch.float32):
        mu, sig = self._moments()
        dev = generator.device
        z = torch.randn(n, mu.shape[0], generator=generator, device=dev, dtype=_F64)
        theta = mu.to(dev) + z @ symsqrt(sig).to(dev)
        return theta.to(device=device or dev, dtype=dtype)

    def log_marginal(self, c, p=None):
        # θ = μ + S z, z ~ N(0, I), S = Σ^{1/2}: Gaussian integral over z (valid for singular Σ).
        mu, sig = (t.to(device=c.device, dtype=c.dtype) for t in self._moments())
        F = mu.shape[0]
        eye = torch.eye(F, dtype=c.dtype, device=c.device)
        p = eye if p is None else p.to(c)
        s = symsqrt(sig)
        a = eye + s @ p @ s
        w = (c - p @ mu) @ s  # (..., F); s symmetric
        quad = (w * torch.linalg.solve(a, w.unsqueeze(-1)).squeeze(-1)).sum(-1)
        return c @ mu - mu @ p @ mu / 2 - torch.logdet(a) / 2 + quad / 2


@dataclass(frozen=True)
class GaussianLaw(_Gaussian):
    """Generic Gaussian N(mean, cov); ``mean=None`` means 0. Stored as tuples (immutable, hashable)."""

    cov_matrix: tuple[tuple[float, ...], ...]
    mean_vector: tuple[float, ...] | None = None
    name: str = field(default="gaussian_general", init=False)

    def __post_init__(self) -> None:
        sig = torch.as_tensor(self.cov_matrix, dtype=_F64)
        if sig.ndim != 2 or sig.shape[0] != sig.shape[1] or sig.shape[0] == 0:
            raise ValueError(
                f"law 'gaussian_general': cov must be a square (F, F) matrix, got {tuple(sig.shape)}"
            )
        if not torch.allclose(sig, sig.T) or torch.linalg.eigvalsh(sig).min() < -1e-12:
            raise ValueError("law 'gaussian_general': cov must be symmetric positive semi-definite")
        mu = (
            torch.zeros(sig.shape[0], dtype=_F64)
            if self.mean_vector is None
            else torch.as_tensor(self.mean_vector, dtype=_F64)
        )
        if mu.shape != (sig.shape[0],):
            raise ValueError(
                f"law 'gaussian_general': mean has shape {tuple(mu.shape)}, cov {tuple(sig.shape)}"
            )
        object.__setattr__(self, "cov_matrix", tuple(tuple(map(float, r)) for r in sig.tolist()))
        object.__setattr__(self, "mean_vector", tuple(map(float, mu.tolist())))

    def _moments(self):
        return torch.tensor(self.mean_vector, dtype=_F64), torch.tensor(self.cov_matrix, dtype=_F64)

    def params(self) -> dict:
        return {"cov": self.cov_matrix, "mean": self.mean_vector}


@dataclass(frozen=True)
class NonIsoGaussian(_Gaussian):
    """θ_f ~ N(0, ν̃_f) independent, ν̃ = linspace(ν1, ν2, F) (F = 1: ν̃ = ν1), ν1 ≥ ν2 > 0 (Sec. II)."""

    n_features: int
    nu1: float
    nu2: float
    name: str = field(default="gaussian", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.n_features, int) or self.n_features < 1:
            raise ValueError(f"law 'gaussian': F={self.n_features!r} is not allowed; must be an integer >= 1")
        _check_positive("gaussian", nu1=self.nu1, nu2=self.nu2)
        if self.nu1 < self.nu2:
            raise ValueError(
                f"law 'gaussian': nu1={self.nu1} < nu2={self.nu2} is not allowed; need nu1 >= nu2"
            )

    @property
    def variances(self) -> Tensor:
        """ν̃ (F,): from ν1 (f = 1) down to ν2 (f = F)."""
        F = self.n_features
        if F == 1:
            return torch.tensor([float(self.nu1)], dtype=_F64)
        f = torch.arange(F, dtype=_F64)
        return self.nu1 + (self.nu2 - self.nu1) * f / (F - 1)

    def _moments(self):
        return torch.zeros(self.n_features, dtype=_F64), torch.diag(self.variances)

    def params(self) -> dict:
        return {"F": self.n_features, "nu1": self.nu1, "nu2": self.nu2}


@dataclass(frozen=True)
class IsoGaussian(_Gaussian):
    """θ ~ N(0, ν I_F) (Sec. II)."""

    n_features: int
    nu: float
    name: str = field(default="gaussian_iso", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.n_features, int) or self.n_features < 1:
            raise ValueError(
                f"law 'gaussian_iso': F={self.n_features!r} is not allowed; must be an integer >= 1"
            )
        _check_positive("gaussian_iso", nu=self.nu)

    def _moments(self):
        F = self.n_features
        return torch.zeros(F, dtype=_F64), self.nu * torch.eye(F, dtype=_F64)

    def params(self) -> dict:
        return {"F": self.n_features, "nu": self.nu}


_LAW_PARAMS: dict[str, tuple[str, ...]] = {
    "flip": ("nu", "nu1", "nu2"),
    "onehot": ("nu",),
    "gaussian": ("nu1", "nu2"),
    "gaussian_iso": ("nu",),
    "discrete": ("values", "probs"),
    "gaussian_general": ("cov", "mean"),
}
LAW_NAMES: tuple[str, ...] = tuple(_LAW_PARAMS)


def make_law(name: str, F: int, **params) -> ThetaLaw:
    """The law called ``name`` on R^F (see the module table); one-line ValueError on any bad value."""
    if name not in _LAW_PARAMS:
        raise ValueError(f"unknown law {name!r}; allowed: {', '.join(LAW_NAMES)}")
    unknown = sorted(set(params) - set(_LAW_PARAMS[name]))
    if unknown:
        raise ValueError(
            f"law {name!r}: unknown parameter {unknown[0]!r}; allowed: {', '.join(_LAW_PARAMS[name])}"
        )
    if not isinstance(F, int) or isinstance(F, bool) or F < 1:
        raise ValueError(f"law {name!r}: F={F!r} is not allowed; must be an integer >= 1")

    def need(key: str):
        if key not in params:
            raise ValueError(f"law {name!r}: missing parameter {key!r}")
        return params[key]

    if name == "flip" and F == 2:
        if "nu" in params and ("nu1" in params or "nu2" in params):
            raise ValueError("law 'flip': give either nu (= nu1 = nu2) or nu1 and nu2, not both")
        if "nu" in params:
            _check_positive("flip", nu=params["nu"])
            return FlipSpike(params["nu"], params["nu"])
        return FlipSpike(need("nu1"), need("nu2"))
    if name == "flip":
        if F == 1:
            raise ValueError(
                "law 'flip': F=1 is not allowed; flipping spike needs F=2 (nu1, nu2) or F>=3 (nu)"
            )
        if "nu1" in params or "nu2" in params:
            raise ValueError(f"law 'flip': with F={F} >= 3 (one-hot spike) give nu, not nu1/nu2")
        return OneHotSpike(F, need("nu"))
    if name == "onehot":
        return OneHotSpike(F, need("nu"))
    if name == "gaussian":
        return NonIsoGaussian(F, need("nu1"), need("nu2"))
    if name == "gaussian_iso":
        return IsoGaussian(F, need("nu"))
    if name == "discrete":
        law: ThetaLaw = DiscreteLaw(need("values"), need("probs"))
    else:
        law = GaussianLaw(need("cov"), params.get("mean"))
    if law.F != F:
        raise ValueError(f"law {name!r}: F={F} does not match the given parameters, which have F={law.F}")
    return law
