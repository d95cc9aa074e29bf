"""The ``philox`` token stream of the SGD (Eqs. (2), (5)-(6)): Triton's own ``tl.randn4x``, reproduced in torch.

Each token x_μℓd of Eq. (2) at SGD step t is a pure function of the run's seed and the counters (t, i, ℓ, d), i
the sequence in the step's batch of N_b, so a GPU kernel can draw it in registers where it is used
(:mod:`attnlab.specialization.train.fused_philox`) and a chunk of any size draws the same token. The generator is
the one of ``tl.randn`` / ``tl.randint`` (Salmon, Moraes, Dror & Shaw, SC 2011): Philox-4x32 with 10 rounds on the
counter (offset_lo, offset_hi, 0, 0) and key (seed_lo, seed_hi), then Box-Muller. Four consecutive coordinates
d = 4j … 4j + 3 of a token come from one Philox call, as ``tl.randn4x(seed, offset)`` gives them:

    seed   = key of the run's seed (63 bits: :func:`seed_key`)
    offset = ((t · N_b + i) · L + ℓ) · ⌈D/4⌉ + ⌊d/4⌋,      lane d mod 4 of randn4x

(the lanes past D of the last word are dropped: no two tokens share a lane). ``tl.randn(seed, offset)`` is lane 0.
Distinct tokens have distinct (offset, lane) while offset < 2^63 (:data:`MAX_OFFSET`; an int64 in the kernels):
(T + 1) · N_b · L · ⌈D/4⌉ ≤ 2^63. Fig. 1 at D = N_b = 10^4, L = 10, τ = 120, γ = 0.02 uses 6001 · 2.5·10^8 ≈
1.5·10^12 ≈ 2^40.4 offsets; :func:`check_counters` raises beyond the bound.

The reference below works on int64 tensors holding uint32 values (products split so that nothing overflows
where it matters, ``umulhi`` exact): the Philox words and the uniforms equal Triton's bit for bit; the normals
agree to a few float32 ulp (log, sqrt, sin, cos of torch against Triton's libdevice or, in the interpreter,
numpy's). Box-Muller as in Triton: u ∈ [0, 1) from the word (x or ~x of the int32, × 4.6566127342e-10),
u₁ clamped at 10⁻⁷ (|z| ≤ 5.68), θ = 2π u₂; lanes 0, 1 = r(cos θ, sin θ) of words 0, 1, lanes 2, 3 of words 2, 3.
The ε and θ of Eq. (2) come from the step's torch generator as in every stream (:class:`SGDStream`).
"""

from __future__ import annotations

import torch

from attnlab.specialization.data import noise
from attnlab.specialization.data.sequences import SGDStream, plant

Tensor = torch.Tensor
ROUNDS = 10
KEY_A, KEY_B = 0x9E3779B9, 0xBB67AE85  # Weyl increments of the key (Triton's PHILOX_KEY_A/B for uint32)
ROUND_A, ROUND_B = 0xD2511F53, 0xCD9E8D57  # round multipliers (PHILOX_ROUND_A/B)
UNIFORM_SCALE = 4.6566127342e-10  # Triton's uint_to_uniform_float for 32-bit words: < 1 after float32 rounding
MAX_OFFSET = 2**63
TILE_OFFSETS = 2**20  # offsets made at once by :func:`fill` (≈ 10 int64 temporaries of 8 MiB each)
_M32 = 0xFFFFFFFF


def seed_key(seed: int) -> int:
    """The 63-bit Philox seed of a run seed's data stream (``SeedSequence([seed, 1])``'s word, as the other
    streams, shifted to fit an int64)."""
    return noise.seed_key(seed, 1) >> 1


def words_per_row(D: int) -> int:
    """Offsets per token (ℓ) row: ⌈D/4⌉, four coordinates per offset."""
    return (D + 3) // 4


def offsets_per_sequence(L: int, D: int) -> int:
    return L * words_per_row(D)


def check_counters(steps: int, batch: int, L: int, D: int) -> None:
    """Raise unless ``steps`` steps of ``batch`` sequences of (L, D) tokens fit in the 2^63 offsets."""
    need = steps * batch * offsets_per_sequence(L, D)
    if need > MAX_OFFSET:
        raise ValueError(f"philox stream: {steps} steps × N_b = {batch} × L·⌈D/4⌉ = {offsets_per_sequence(L, D)} "
                         f"= {need:.3g} offsets exceed 2^63: tokens would repeat")


def _umulhi_lo(a: int, b: Tensor) -> tuple[Tensor, Tensor]:
    """(high, low) 32-bit halves of the 64-bit product of the uint32 constant ``a`` and uint32 values ``b``."""
    lo16, hi16 = b & 0xFFFF, b >> 16
    p_lo, p_hi = lo16 * a, hi16 * a  # < 2^48 each
    high = (p_hi + (p_lo >> 16)) >> 16
    low = (p_lo + ((p_hi & 0xFFFF) << 16)) & _M32
    return high, low


def philox4x32(c0: Tensor, c1: Tensor, k0, k1, rounds: int = ROUNDS) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Philox-4x32-``rounds`` of the counter (c0, c1, 0, 0) and key (k0, k1): uint32 values in int64 tensors
    (the keys may be ints or tensors broadcasting against the counters), as Triton's ``philox_impl``."""
    c2, c3 = torch.zeros_like(c0), torch.zeros_like(c0)
    for _ in range(rounds):
        hi_b, lo_b = _umulhi_lo(ROUND_B, c2)
        hi_a, lo_a = _umulhi_lo(ROUND_A, c0)
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0, k1 = (k0 + KEY_A) & _M32, (k1 + KEY_B) & _M32
    return c0, c1, c2, c3


def randint4x(seed, offset: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``tl.randint4x(seed, offset)`` for int64 offsets ≥ 0 and a seed in [0, 2^63) (int or int64 tensor
    broadcasting against ``offset``): four uint32 words as int64."""
    return philox4x32(offset & _M32, offset >> 32, _low(seed), _high(seed))


def _low(seed):
    return seed & _M32


def _high(seed):
    return (seed >> 32) & _M32


def uniform(word: Tensor) -> Tensor:
    """Triton's ``uint_to_uniform_float`` of 32-bit words: float32 in [0, 1)."""
    x = torch.where(word >= 2**31, word - 2**32, word)  # the int32 of the bits
    x = torch.where(x < 0, -x - 1, x)  # ~x
    return x.to(torch.float32) * torch.tensor(UNIFORM_SCALE, dtype=torch.float32)


def box_muller(u1: Tensor, u2: Tensor) -> tuple[Tensor, Tensor]:
    """Triton's ``pair_uniform_to_normal``, in float32."""
    u1 = torch.clamp_min(u1, 1.0e-7)
    th = torch.tensor(6.283185307179586, dtype=torch.float32) * u2
    r = torch.sqrt(-2.0 * torch.log(u1))
    return r * torch.cos(th), r * torch.sin(th)


def randn4x(seed, offset: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``tl.randn4x(seed, offset)``: four float32 N(0, 1) per offset."""
    w = randint4x(seed, offset)
    n0, n1 = box_muller(uniform(w[0]), uniform(w[1]))
    n2, n3 = box_muller(uniform(w[2]), uniform(w[3]))
    return n0, n1, n2, n3


def randn(seed, offset: Tensor) -> Tensor:
    """``tl.randn(seed, offset)``: lane 0 of :func:`randn4x` (its words 2, 3 unused)."""
    w = randint4x(seed, offset)
    return box_muller(uniform(w[0]), uniform(w[1]))[0]


def fill(out: Tensor, keys: list[int], step: int, first: int, batch: int) -> Tensor:
    """The noise of sequences ``first … first + n − 1`` of step ``step`` (batch of ``batch``) into ``out``
    (S, n, L, D), any float dtype (the draws are float32), for each seed's key (:func:`seed_key`)."""
    n, L, D = out.shape[1:]
    W = words_per_row(D)
    rows = n * L  # token rows (μ, ℓ) of the chunk, made in tiles of ≤ TILE_OFFSETS offsets
    per = max(1, TILE_OFFSETS // W)
    j = torch.arange(W, device=out.device, dtype=torch.int64)
    for s, key in enumerate(keys):
        flat = out[s].view(rows, D)  # each seed's (n, L, D) block is contiguous (a prefix of a chunk buffer is)
        for r0 in range(0, rows, per):
            r1 = min(rows, r0 + per)
            row = (step * batch + first) * L + torch.arange(r0, r1, device=out.device, dtype=torch.int64)
            z = torch.stack(randn4x(key, row[:, None] * W + j), dim=-1).reshape(r1 - r0, 4 * W)[:, :D]
            flat[r0:r1] = z
    return out


class PhiloxStream(SGDStream):
    """:class:`SGDStream` with the ``philox`` tokens (the labels ε, θ are the same as every stream's).
    ``keys``: the 63-bit Philox seeds; ``W``: offsets per sequence (L·⌈D/4⌉, the counter bound's unit)."""

    def __init__(self, law, seeds, batch: int, L: int, D: int, device: torch.device | str = "cpu",
                 dtype: torch.dtype = torch.float32, method: str | None = "philox") -> None:
        super().__init__(law, seeds, batch, L, D, device, dtype, "mt19937")
        self.method = "philox"
        self.philox_keys = [seed_key(s) for s in seeds]
        self.W = offsets_per_sequence(L, D)

    def tokens(self, out: Tensor, step: int, first: int, eps: Tensor, theta: Tensor, K_star: Tensor) -> Tensor:
        n = out.shape[1]
        fill(out, self.philox_keys, step, first, self.batch)
        return plant(out, eps[:, first : first + n], theta[:, first : first + n], K_star)
