"""Counter-based Gaussian noise for the SGD's sequences: each token is a pure function of (seed, step, sequence).

The noise of Eq. (2) (x_μℓ ~ N(0, I_D)) comes from a counter-based stream. Its counter is SplitMix64 (Steele,
Lea & Flood, OOPSLA 2014: the generator of Java's SplittableRandom, which passes BigCrush): word ``c`` of a
seed's stream is SplitMix64's output function at the state ``key + c·γ`` mod 2^64, and the counter of word j of
sequence i at SGD step t is

    c = (t · N_b + i) · W + j,        W = ⌈L·D / 2⌉ (two normals per word),

so a sequence's tokens do not depend on how the batch is cut into chunks, on what was drawn before, or on the
seeds trained beside it: a step is recomputed from its counter alone (resume needs no generator state).
Sequences are made in groups of R aligned on the step (sequences gR … (g+1)R − 1), each group always in the same
tensor shapes, so that no token depends on where a chunk boundary falls. Two methods:

* ``"splitmix64"`` (the default on GPUs): every word is hashed (integer ops only, int64 wraps mod 2^64 on every
  torch backend, pinned to a pure-Python reference by the tests), then Box-Muller: u₁ = (low 24 bits + 1)/2^24
  ∈ (0, 1] (exact in float32), the angle from the top 24 bits, z = √(−2 ln u₁)·(cos, sin) at the flat positions
  2j and 2j + 1 of the sequence's L·D tokens (so a fused kernel makes any token (ℓ, d) from one word, and the
  tokens of all ℓ at the same d together, as the Gram matrix needs). The uniforms are the same bits on CPU and
  CUDA; the normals agree to the ulp of log/cos/sin. A group is a tile of 64 Ki words on the CPU, 16 Mi on a
  GPU (16 bytes of int64 scratch per word): no per-sequence launches, and a CUDA graph can replay it.
* ``"mt19937"`` (the default on the CPU, where torch's fused ``randn`` is 1.3-3.4× faster than the hash and
  Box-Muller in separate torch ops): group g's tokens are ``torch.randn`` from a Mersenne twister seeded with the
  SplitMix64 word at the counter of the group's first word (R = ⌊2^16 / (L·D)⌋ sequences, at least one).

As torch's own float32 ``randn``, both cap the radius through the 24-bit uniform (|z| ≤ 5.9).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import torch

Tensor = torch.Tensor
_U64 = 2**64


def _s64(x: int) -> int:
    """An unsigned 64-bit constant as the int64 with the same bits."""
    x %= _U64
    return x - _U64 if x >= 2**63 else x


GAMMA = 0x9E3779B97F4A7C15  # the golden-ratio Weyl increment of SplitMix64
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_C1, _C2 = _s64(_M1), _s64(_M2)
_LOW = {s: (1 << (64 - s)) - 1 for s in (30, 27, 31)}  # masks that make >> logical on int64
METHODS = ("splitmix64", "mt19937")
TILE_WORDS = 2**16  # splitmix64 group on the CPU: 64 Ki words (512 KiB of int64), cache-sized
CUDA_TILE_WORDS = 2**24  # splitmix64 group on a GPU: 16 Mi words, 256 MiB of scratch
GROUP_FLOATS = 2**16  # mt19937 group: sequences per fresh generator ≈ this many floats


def mix64(z: int) -> int:
    """SplitMix64's output function on a 64-bit state (pure Python: the reference the tensor code is tested on)."""
    z %= _U64
    z = ((z ^ (z >> 30)) * _M1) % _U64
    z = ((z ^ (z >> 27)) * _M2) % _U64
    return z ^ (z >> 31)


def seed_key(seed: int, stream: int = 1) -> int:
    """The 64-bit key of a seed's stream (the ``SeedSequence([seed, stream])`` word of the SGD's generators:
    stream 1 = data)."""
    return int(np.random.SeedSequence([int(seed), int(stream)]).generate_state(1, np.uint64)[0])


def step_seed(key: int, step: int) -> int:
    """A 63-bit torch seed for step ``step`` of the stream ``key`` (the step's ε and θ draws)."""
    return mix64(key ^ mix64(step + 1)) >> 1


def words(L: int, D: int) -> int:
    """Words per sequence: two normals per word."""
    return (L * D + 1) // 2


def default_method(device: torch.device | str) -> str:
    return "mt19937" if torch.device(device).type == "cpu" else "splitmix64"


def group_size(method: str, device: torch.device | str, L: int, D: int) -> int:
    """Sequences per group (the unit a token's bits depend on; a chunk on group bounds makes no group twice)."""
    if method == "mt19937":
        return max(1, GROUP_FLOATS // (L * D))
    if method == "philox":  # a pure function of each token's counter (:mod:`.philox`): no groups
        return 1
    return max(1, tile_words(torch.device(device)) // words(L, D))


def tile_words(device: torch.device) -> int:
    """splitmix64 words made at once: :data:`TILE_WORDS` on the CPU, :data:`CUDA_TILE_WORDS` on a GPU."""
    return TILE_WORDS if device.type == "cpu" else CUDA_TILE_WORDS


def step_keys(keys: list[int], step: int, batch: int, words_per_seq: int) -> list[int]:
    """Per-seed states of step ``step``'s first word: key + t·N_b·W·γ mod 2^64, as int64 values."""
    return [_s64(k + step * batch * words_per_seq * GAMMA) for k in keys]


def fill_gaussian(out: Tensor, keys: list[int], first: int, batch: int, method: str = "splitmix64") -> Tensor:
    """Fill ``out`` (S, n, L, D) with the noise of sequences ``first … first + n − 1`` of a step of ``batch``
    sequences, for every seed's stream.

    ``keys`` (S,): the seeds' keys offset to the step (:func:`step_keys`). ``out`` may be a non-contiguous view
    (a prefix of a chunk buffer) as long as each sequence's L·D floats are contiguous. A group cut by a chunk
    boundary is made whole in scratch and its rows copied.
    """
    if method not in METHODS:
        raise ValueError(f"noise method {method!r} is not allowed; use one of {', '.join(METHODS)}")
    S, n, L, D = out.shape
    W = words(L, D)
    flat = out.view(S, n, L * D)
    R = group_size(method, out.device, L, D)
    fill = _splitmix_group if method == "splitmix64" else _mt19937_group
    scratch = None
    for g in range(first // R, (first + n - 1) // R + 1):
        lo, hi = g * R, min((g + 1) * R, batch)
        a, b = max(lo, first), min(hi, first + n)
        for s in range(S):
            if (a, b) == (lo, hi):
                target = flat[s, lo - first : hi - first]
            else:
                if scratch is None or scratch.shape[0] < hi - lo:
                    scratch = flat.new_empty(hi - lo, L * D)
                target = scratch[: hi - lo]
            fill(target, _s64(keys[s] + lo * W * GAMMA), W)
            if (a, b) != (lo, hi):
                flat[s, a - first : b - first] = target[a - lo : b - lo]
    return out


def _mt19937_group(target: Tensor, state: int, W: int) -> None:
    """A group's tokens (rows, L·D), contiguous: torch.randn from a generator seeded with the group's first word."""
    gen = _cpu_generator() if target.device.type == "cpu" else torch.Generator(device=target.device)
    gen.manual_seed(mix64(state) >> 1)
    torch.randn(target.shape, generator=gen, out=target)


@lru_cache(maxsize=1)
def _cpu_generator() -> torch.Generator:
    return torch.Generator()


def _splitmix_group(target: Tensor, state: int, W: int) -> None:
    """A group's tokens (rows, L·D) from the words of its sequences, in tiles of ≤ :func:`tile_words` words."""
    rows = target.shape[0]
    seq0 = state + _wrap_mul(torch.arange(rows, device=target.device, dtype=torch.int64), W * GAMMA)
    span = min(W, tile_words(target.device))
    for j in range(0, W, span):
        j1 = min(j + span, W)
        z = seq0.unsqueeze(-1) + _weyl(j1 - j, j, target.device)
        cos_out, sin_out = target[:, 2 * j : 2 * j1 : 2], target[:, 2 * j + 1 : 2 * j1 : 2]
        normals_from_words(mix64_(z, torch.empty_like(z)), cos_out, sin_out)


def mix64_(z: Tensor, tmp: Tensor) -> Tensor:
    """SplitMix64's output function, in place on an int64 tensor (``tmp``: scratch of the same shape)."""
    for shift, mult in ((30, _C1), (27, _C2), (31, None)):
        torch.bitwise_right_shift(z, shift, out=tmp).bitwise_and_(_LOW[shift])
        z.bitwise_xor_(tmp)
        if mult is not None:
            z.mul_(mult)
    return z


def normals_from_words(z: Tensor, cos_out: Tensor, sin_out: Tensor) -> None:
    """Box-Muller of the words ``z`` (int64, destroyed) into ``cos_out`` (same shape) and ``sin_out`` (same
    shape, or fewer trailing entries when L·D is odd)."""
    angle = z.to(cos_out.dtype).mul_(math.pi * 2.0**-63)  # top bits of z: uniform on [−π, π)
    r = z.bitwise_and_(0xFFFFFF).to(cos_out.dtype).add_(1.0).mul_(2.0**-24).log_().mul_(-2.0).sqrt_()
    k = sin_out.shape[-1]
    torch.sin(angle[..., :k], out=sin_out).mul_(r[..., :k])
    torch.cos(angle, out=cos_out).mul_(r)


@lru_cache(maxsize=16)
def _weyl(n: int, start: int, device: torch.device) -> Tensor:
    """(start + arange(n))·γ mod 2^64 as int64 (cached: the same tile offsets recur every step)."""
    return _wrap_mul(torch.arange(start, start + n, dtype=torch.int64, device=device), GAMMA)


def _wrap_mul(x: Tensor, c: int) -> Tensor:
    """x·c mod 2^64 on int64 (wrapping)."""
    return x * _s64(c)
