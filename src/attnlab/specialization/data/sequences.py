"""Spikes and sequences of paper 0, Eqs. (1)-(2); the SGD's counter-based data stream.

Public API (re-exported by :mod:`attnlab.specialization.data`)::

    K_star = sample_spikes(F, D, generator=g)            # (F, D), rows k*_f ~ N(0, I_D / D), Eq. (1)
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)          # or FlipSpike(2.0, 2.0), OneHotSpike(4, 10.0), ...
    law.F, law.name, law.is_discrete
    theta = law.sample(n, generator=g)                   # (n, F)
    law.mean() -> (F,), law.cov() -> (F, F)              # float64, CPU
    law.log_marginal(c, p=None) -> c.shape[:-1]    # Λ(c) = log ∫ exp(θᵀc - θᵀpθ/2) P_θ(dθ), p=I default
    values, probs = law.support()                        # discrete laws only: (S, F), (S,) float64
    batch = sample_sequences(law, K_star, n, L=L, generator=g)    # SequenceBatch(X, eps, theta, y)
    for batch in iter_sequences(law, K_star, n, L=L, generator=g, chunk=c): ...   # ≤ c sequences at once
    stream = SGDStream(law, seeds, N_b, L, D)            # the SGD's data: a function of (seed, step, sequence)
    eps, theta = stream.labels(t); X = stream.tokens(buf, t, first, eps, theta, K_star)

The laws of θ (``make_law``, ``ThetaLaw`` and its subclasses, ``symsqrt``) live in :mod:`.laws`. Randomness
always comes from an explicit ``torch.Generator``; samples are drawn on the generator's device.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import NamedTuple

import torch

from attnlab.specialization.data import noise
from attnlab.specialization.data.laws import ThetaLaw

Tensor = torch.Tensor
_F64 = torch.float64


def sample_spikes(
    F: int,
    D: int,
    *,
    generator: torch.Generator,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float32,
    orthonormal: bool = False,
) -> Tensor:
    """K* ∈ R^{F×D} with rows k*_f ~ N(0, I_D/D) iid, Eq. (1).

    ``orthonormal=True`` orthonormalises the rows (so p = K*K*ᵀ = I_F exactly): a deviation from (1)
    for tests only.
    """
    if F < 1 or D < F:
        raise ValueError(f"sample_spikes: need 1 <= F <= D, got F={F}, D={D}")
    ks = torch.randn(F, D, generator=generator, device=generator.device, dtype=_F64) / math.sqrt(D)
    if orthonormal:
        q, r = torch.linalg.qr(ks.T)  # Gram-Schmidt: (D, F) orthonormal columns spanning the same space
        ks = q.T * torch.sign(torch.diagonal(r))[:, None]
    return ks.to(device=device or ks.device, dtype=dtype)


# ---------------------------------------------------------------------------------------------
# sequences, Eq. (2)
# ---------------------------------------------------------------------------------------------
class SequenceBatch(NamedTuple):
    """n sequences of Eq. (2): X (n, L, D), eps (n,) int64 in [0, L), theta (n, F), y = X[μ, eps_μ] (n, D)."""

    X: Tensor
    eps: Tensor
    theta: Tensor
    y: Tensor


def plant(X: Tensor, eps: Tensor, theta: Tensor, K_star: Tensor) -> Tensor:
    """In place: X[μ, eps_μ] += θ_μ K* (the spike k̂ = K*ᵀθ of Eq. (2)). Works with extra leading dims."""
    theta = theta.to(K_star.dtype)
    spike = theta[..., 0:1] * K_star[..., None, 0, :]  # (..., n, D): Σ_f θ_f k*_f term by term (not a GEMM, whose
    for f in range(1, K_star.shape[-2]):  # rounding may depend on n), so a sequence's tokens never depend on n
        spike = spike + theta[..., f : f + 1] * K_star[..., None, f, :]
    spike = spike.to(X.dtype)
    L, D = X.shape[-2:]
    if X.is_contiguous():  # add the n spike rows to the flat (…·n·L, D) view: touches n·D floats only
        rows = torch.arange(eps.numel(), device=eps.device) * L + eps.reshape(-1)
        X.view(-1, D).index_add_(0, rows, spike.reshape(-1, D))
        return X
    idx = eps[..., None, None].expand(*eps.shape, 1, D)
    X.scatter_add_(-2, idx, spike.unsqueeze(-2))
    return X


def iter_sequences(
    law: ThetaLaw,
    K_star: Tensor,
    n: int,
    *,
    L: int,
    generator: torch.Generator,
    chunk: int | None = None,
    dtype: torch.dtype = torch.float32,
    out: Tensor | None = None,
) -> Iterator[SequenceBatch]:
    """Yield n iid sequences of Eq. (2) in chunks of at most ``chunk`` sequences (≤ chunk·L·D floats at once).

    All ε and θ are drawn first (small), then the noise chunk by chunk, all from ``generator`` (whose device
    must be ``K_star``'s). The stream depends on ``chunk``: equal (n, chunk, seed) ⇒ identical data.
    ``out``: a (≥ chunk, L, D) buffer the noise is drawn into (the yielded X are views of it, valid until the
    next chunk); same numbers as without it.
    """
    if K_star.shape[0] != law.F:
        raise ValueError(f"law has F={law.F} but K_star has {K_star.shape[0]} rows")
    dev, D = K_star.device, K_star.shape[1]
    chunk = n if chunk is None else max(1, min(int(chunk), n))
    eps = torch.randint(L, (n,), generator=generator, device=dev)
    theta = law.sample(n, generator=generator, device=dev, dtype=dtype)
    for lo in range(0, n, chunk):
        hi = min(lo + chunk, n)
        if out is None:
            X = torch.randn(hi - lo, L, D, generator=generator, device=dev, dtype=dtype)
        else:  # reuse a buffer of ≥ chunk sequences: no allocation (and no page faults) per chunk
            X = torch.randn(hi - lo, L, D, generator=generator, out=out[: hi - lo])
        plant(X, eps[lo:hi], theta[lo:hi], K_star)
        y = X.view(-1, D).index_select(0, torch.arange(hi - lo, device=dev) * L + eps[lo:hi])
        yield SequenceBatch(X, eps[lo:hi], theta[lo:hi], y)


def sample_sequences(
    law: ThetaLaw,
    K_star: Tensor,
    n: int,
    *,
    L: int,
    generator: torch.Generator,
    dtype: torch.dtype = torch.float32,
) -> SequenceBatch:
    """n iid sequences of Eq. (2) in one batch (X holds n·L·D floats; use :func:`iter_sequences` for more)."""
    return next(iter_sequences(law, K_star, n, L=L, generator=generator, chunk=n, dtype=dtype))


class SGDStream:
    """The SGD's data, chunk-independent: step t's labels ε (S, N_b) and θ (S, N_b, F) of every seed
    come from a torch generator seeded by (seed, t) (:func:`noise.step_seed`), the tokens of sequence i from the
    counter-based noise at (seed, t, i) (:mod:`attnlab.specialization.data.noise`; ``method``: its default for the
    device). So any chunking of the batch, any resume point and any set of seeds trained beside a seed give that
    seed the same sequences."""

    def __init__(self, law: ThetaLaw, seeds, batch: int, L: int, D: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, method: str | None = None) -> None:
        self.law, self.batch, self.L, self.dtype = law, int(batch), int(L), dtype
        self.method = method or noise.default_method(device)
        if self.method not in noise.METHODS:
            raise ValueError(f"noise method {self.method!r} is not allowed; use one of {', '.join(noise.METHODS)}")
        self.keys = [noise.seed_key(s, 1) for s in seeds]
        self.W = noise.words(L, D)
        self.gens = [torch.Generator(device=torch.device(device)) for _ in seeds]

    def labels(self, step: int) -> tuple[Tensor, Tensor]:
        """ε (S, N_b) int64 and θ (S, N_b, F) of step ``step``."""
        eps, theta = [], []
        for g, key in zip(self.gens, self.keys, strict=True):
            g.manual_seed(noise.step_seed(key, step))
            eps.append(torch.randint(self.L, (self.batch,), generator=g, device=g.device))
            theta.append(self.law.sample(self.batch, generator=g, device=g.device, dtype=self.dtype))
        return torch.stack(eps), torch.stack(theta)

    def tokens(self, out: Tensor, step: int, first: int, eps: Tensor, theta: Tensor, K_star: Tensor) -> Tensor:
        """Sequences ``first … first + n − 1`` of step ``step`` into ``out`` (S, n, L, D): noise, then the spike
        θ_μ K* planted at ε_μ (Eq. (2))."""
        n = out.shape[1]
        noise.fill_gaussian(out, noise.step_keys(self.keys, step, self.batch, self.W), first, self.batch, self.method)
        return plant(out, eps[:, first : first + n], theta[:, first : first + n], K_star)
