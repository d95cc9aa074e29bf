"""Sparse modular addition (paper 4 Sec. 2, eq. (SMA); paper Sec. 2).

y = (Σ_{t∈I} x_t) mod p for a length-N sequence over F_p = {0..p-1}; only the k positions of the informative
index set I matter (I = the first k positions by default). The training set is 2^11 draws *with replacement*
from the p^N sentences (App. A); duplicates are kept. Test sets: fresh i.i.d. draws, the complement of the
training set, or the full enumeration. Every sampler takes an explicit ``torch.Generator`` so the same seed
gives the same tensors on any machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import torch

from attnlab.core.config import ConfigError
from attnlab.core.rng import generator

TestMode = Literal["iid", "complement", "full"]
MAX_ENUMERATION = 2**20  # p^N above this is sampled, never enumerated (paper Sec. 2)
PROBE_LIMIT = 2**16      # probe grids larger than this keep one random suffix per prefix (p ≥ 5 at k = 5)
MAX_PREFIXES = 2**20     # the probe grid enumerates every prefix: p^k must stay below this


def n_multisets(p: int, k: int) -> int:
    """Number of prefix classes = multisets of size k over F_p = C(k+p-1, k) (footnote 1, stars and bars)."""
    return math.comb(k + p - 1, k)


@dataclass(frozen=True)
class Task:
    """The SMA task: modulus ``p``, length ``N``, informative positions ``informative`` (default the first k)."""

    p: int = 2
    N: int = 12
    k: int = 5
    informative: tuple[int, ...] | None = None
    idx: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.p < 2:
            raise ConfigError(f"key 'p' = {self.p}: the modulus must be ≥ 2")
        if self.N < 1:
            raise ConfigError(f"key 'N' = {self.N}: the sequence length must be ≥ 1")
        if not 1 <= self.k <= self.N:
            raise ConfigError(f"key 'k' = {self.k}: need 1 ≤ k ≤ N = {self.N}")
        idx = tuple(range(self.k)) if self.informative is None else tuple(int(i) for i in self.informative)
        if len(idx) != self.k or len(set(idx)) != self.k:
            raise ConfigError(f"key 'informative' = {list(idx)}: need k = {self.k} distinct positions")
        bad = [i for i in idx if not 0 <= i < self.N]
        if bad:
            raise ConfigError(f"key 'informative' = {list(idx)}: position(s) {bad} outside [0, N) = [0, {self.N})")
        if self.p**self.k > MAX_PREFIXES:
            raise ConfigError(f"keys 'p', 'k' = {self.p}, {self.k}: p^k prefixes is too many for the probe grid, "
                              f"which enumerates them (limit {MAX_PREFIXES}); lower p or k")
        object.__setattr__(self, "idx", tuple(sorted(idx)))

    @property
    def n_classes(self) -> int:
        """C(k+p-1, k): the number of clusters of an ideal head (6 for p=2, k=5)."""
        return n_multisets(self.p, self.k)

    @property
    def spurious(self) -> tuple[int, ...]:
        return tuple(t for t in range(self.N) if t not in self.idx)

    @property
    def space(self) -> int:
        return self.p**self.N

    def labels(self, x: torch.Tensor) -> torch.Tensor:
        """f*(x) = Σ_{t∈I} x_t mod p, for x of shape (..., N)."""
        return x[..., list(self.idx)].sum(-1) % self.p

    def sample(self, n: int, generator: torch.Generator, device: torch.device | str = "cpu") -> torch.Tensor:
        """n i.i.d. uniform sentences (n, N), with replacement (App. A)."""
        return torch.randint(0, self.p, (n, self.N), generator=generator, device=generator.device).to(device)

    def enumerate(self, device: torch.device | str = "cpu") -> torch.Tensor:
        """All p^N sentences in lexicographic order (position 0 most significant)."""
        if self.space > MAX_ENUMERATION:
            raise ConfigError(f"p^N = {self.p}^{self.N} = {self.space} sentences is too many to enumerate "
                              f"(limit {MAX_ENUMERATION}); use test_mode 'iid' or 'complement'")
        return decode(torch.arange(self.space, device=device), self.p, self.N)

    def test_set(self, mode: TestMode, n: int, train: torch.Tensor, generator: torch.Generator,
                 device: torch.device | str = "cpu") -> torch.Tensor:
        """Held-out sentences: ``iid`` n fresh draws; ``complement`` sentences absent from ``train``
        (all of them when p^N ≤ 2^20, else n sampled unseen ones); ``full`` every sentence."""
        if mode == "iid":
            return self.sample(n, generator, device)
        if mode == "full":
            return self.enumerate(device)
        if mode == "complement":
            return self.unseen(train, n, generator, device)
        raise ConfigError(f"key 'test_mode' = {mode!r}: allowed: iid, complement, full")

    def unseen(self, train: torch.Tensor, n: int, generator: torch.Generator,
               device: torch.device | str = "cpu") -> torch.Tensor:
        """At most n sentences not in ``train``, in random order: a random subset of the enumerated complement
        when p^N ≤ 2^20 (all of it when it has ≤ n sentences), else n fresh draws that miss ``train``. (The full
        complement is ≈ 529 000 sentences at p = 3, N = 12: evaluated at every log for every seed it does not
        fit in memory; p^N ≤ 2^20 allows.)"""
        seen = encode(train.cpu(), self.p)
        if self.space <= MAX_ENUMERATION:
            mask = torch.ones(self.space, dtype=torch.bool)
            mask[seen] = False
            codes = mask.nonzero().squeeze(1)
            codes = codes[torch.randperm(len(codes), generator=generator)[:n]]
            return decode(codes, self.p, self.N).to(device)
        draws = self.sample(4 * n, generator, "cpu")
        fresh = draws[~torch.isin(encode(draws, self.p), seen)][:n]
        return fresh.to(device)

    def probe_grid(self, n_suffixes: int | None = None, seed: int = 0,
                   device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Probe sentences = all p^k prefixes × a set of suffixes (Sec. 4.1; paper Sec. 2).

        Suffixes: all p^(N-k) of them when that is ≤ 128 and ``n_suffixes`` is None (p=2, N=12: the whole
        space), else ``n_suffixes`` (default 16, or 1 when p^k × 16 exceeds PROBE_LIMIT: 1.6M sentences at
        p = 10, k = 5) fixed random ones from ``seed``. Returns (x, prefix_id, suffix_id), prefix-major: x[i] has
        prefix i // n_suf and suffix i % n_suf.
        """
        n_spur = self.N - self.k
        n_all = self.p**n_spur
        if n_suffixes is None:
            n_suffixes = n_all if n_all <= 128 else 16
            if self.p**self.k * min(n_suffixes, n_all) > PROBE_LIMIT:
                n_suffixes = 1
        prefixes = decode(torch.arange(self.p**self.k), self.p, self.k)
        if n_suffixes >= n_all:
            suffixes = decode(torch.arange(n_all), self.p, n_spur)
        else:
            g = generator(seed)
            suffixes = torch.randint(0, self.p, (n_suffixes, n_spur), generator=g)
        n_pre, n_suf = len(prefixes), len(suffixes)
        x = torch.empty(n_pre, n_suf, self.N, dtype=torch.long)
        x[:, :, list(self.idx)] = prefixes[:, None, :]
        x[:, :, list(self.spurious)] = suffixes[None, :, :]
        pre_id = torch.arange(n_pre).repeat_interleave(n_suf)
        suf_id = torch.arange(n_suf).repeat(n_pre)
        return x.reshape(-1, self.N).to(device), pre_id.to(device), suf_id.to(device)

    def counts(self, x: torch.Tensor) -> torch.Tensor:
        """Count vector n_v = #{t ∈ I : x_t = v}, shape (..., p)."""
        pre = x[..., list(self.idx)]
        return torch.nn.functional.one_hot(pre, self.p).sum(-2)

    def multiset_id(self, x: torch.Tensor) -> torch.Tensor:
        """Integer id of the prefix's multiset (count vector), in [0, C(k+p-1, k)); label = f(id)."""
        codes = encode(self.counts(x), self.k + 1)
        table = encode(_multiset_table(self.p, self.k).to(x.device), self.k + 1)  # distinct codes
        order = table.argsort()
        return order[torch.searchsorted(table[order], codes)]


def _multiset_table(p: int, k: int) -> torch.Tensor:
    """All count vectors (n_0..n_{p-1}) with Σ n = k, in lexicographic order."""
    out: list[list[int]] = []

    def rec(prefix: list[int], left: int, slots: int) -> None:
        if slots == 1:
            out.append([*prefix, left])
            return
        for v in range(left, -1, -1):
            rec([*prefix, v], left - v, slots - 1)

    rec([], k, p)
    return torch.tensor(out, dtype=torch.long)


def encode(x: torch.Tensor, base: int) -> torch.Tensor:
    """Base-``base`` integer code of the last axis (first entry most significant)."""
    weights = base ** torch.arange(x.shape[-1] - 1, -1, -1, device=x.device)
    return (x * weights).sum(-1)


def decode(code: torch.Tensor, base: int, length: int) -> torch.Tensor:
    """Inverse of :func:`encode`: integers → (..., length) digits."""
    weights = base ** torch.arange(length - 1, -1, -1, device=code.device)
    return (code[..., None] // weights) % base
