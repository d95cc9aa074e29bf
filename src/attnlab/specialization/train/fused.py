"""The fused SGD step (optional, Triton on CUDA): the N_b·L·D tokens of a step never touch GPU memory.

The step's heavy work is three contractions of the batch X (N_b·L·D floats): the scores χ = X Kᵀ, the Gram
matrices G = X Xᵀ per sequence, and ∇K = Σ_μ ∂χ_μᵀ X_μ (:func:`attnlab.specialization.train.gram.gram_head`
between them). Written to memory and read three times, X costs 4× the write of ``torch.randn`` alone. Here
each token is made where it is used from its counter (the ``splitmix64`` stream of
:mod:`attnlab.specialization.data.noise`: word j of a sequence gives its tokens at flat positions 2j, 2j + 1) with
the spike θ_μ K* planted at ε_μ, twice per step:

* kernel A, one program per (seed, sequence): over tiles of d, the tokens of all L positions at once,
  χ += x kᵀ and G += x xᵀ (fp32 ``tl.dot`` with IEEE precision);
* kernel B, one program per (seed, tile of d, block of sequences): ∇K += ∂χ_μ x_μ.

Up to :data:`SUM_HEADS` heads, χ and ∇K are broadcast sums over the real heads instead of dots padded to 16 heads
(8× fewer multiply-adds at H = 2).

Between them the small (S, N_b, H, L) part runs in torch. Needs D even (a word's two tokens are then at the same
ℓ). Without Triton (``available()`` False) the step is the generic one, same stream, in chunks. The tokens are
the stream's up to the ulp of log/sin/cos (Triton's vs torch's), so a fused run matches a generic run to float
round-off, not bit for bit. ``TRITON_INTERPRET=1`` runs the kernels on CPU tensors (tests).
"""

from __future__ import annotations

import importlib.util
import math
import os

import torch

from attnlab.specialization.data import noise
from attnlab.specialization.train.gram import gram_head

Tensor = torch.Tensor

try:  # optional: the CPU wheel of torch ships no Triton
    import triton
    import triton.language as tl
except ImportError:  # pragma: no cover - exercised where Triton is absent
    triton = None


def available(device: torch.device | str, D: int) -> bool:
    """Triton is importable and not turned off (``ATTNLAB_TRITON=0``: e.g. a Triton that cannot build for this
    GPU), D is even, and the device is CUDA (or the CPU under ``TRITON_INTERPRET=1``)."""
    off = os.environ.get("ATTNLAB_TRITON", "1") == "0"
    if off or triton is None or importlib.util.find_spec("triton") is None or D % 2:
        return False
    kind = torch.device(device).type
    return kind == "cuda" or (kind == "cpu" and os.environ.get("TRITON_INTERPRET") == "1")


if triton is not None:

    @triton.jit
    def _tokens(state, rows, cols, D, L, eps, th_ptr, ks_ptr, F: tl.constexpr):
        """Tokens (ℓ = rows, d = 2·cols and 2·cols + 1) of one sequence whose word 0 has state ``state``
        (uint64): x_even, x_odd (L_P, BD/2), with the spike planted at ℓ = ε; zero outside ℓ < L, d < D."""
        j = rows[:, None] * (D // 2) + cols[None, :]
        z = state + j.to(tl.uint64) * 0x9E3779B97F4A7C15
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB
        z = z ^ (z >> 31)
        angle = z.to(tl.int64, bitcast=True).to(tl.float32) * 3.4061215800865545e-19  # π·2^-63
        u1 = ((z & 0xFFFFFF).to(tl.float32) + 1.0) * 5.960464477539063e-08  # 2^-24
        r = tl.sqrt(-2.0 * tl.log(u1))
        valid = (rows[:, None] < L) & (cols[None, :] < D // 2)
        xe = tl.where(valid, r * tl.cos(angle), 0.0)
        xo = tl.where(valid, r * tl.sin(angle), 0.0)
        on = (rows[:, None] == eps) & (cols[None, :] < D // 2)
        for f in tl.static_range(F):
            th = tl.load(th_ptr + f)
            ke = tl.load(ks_ptr + f * D + 2 * cols, mask=cols < D // 2, other=0.0)
            ko = tl.load(ks_ptr + f * D + 2 * cols + 1, mask=cols < D // 2, other=0.0)
            xe = tl.where(on, xe + th * ke[None, :], xe)
            xo = tl.where(on, xo + th * ko[None, :], xo)
        return xe, xo

    @triton.jit
    def _scores_gram(keys_ptr, first, wg, eps_ptr, th_ptr, ks_ptr, k_ptr, chi_ptr, g_ptr, n, D, L, H,
                     F: tl.constexpr, L_P: tl.constexpr, H_P: tl.constexpr, BD: tl.constexpr, SUM_H: tl.constexpr):
        """Kernel A: χ (L, H) and G (L, L) of sequence ``first + pid(1)`` of seed pid(0)."""
        s, mu = tl.program_id(0), tl.program_id(1)
        state = tl.load(keys_ptr + s).to(tl.uint64, bitcast=True) + (first + mu).to(tl.uint64) * wg
        eps = tl.load(eps_ptr + s * n + mu)
        th, ks = th_ptr + (s * n + mu) * F, ks_ptr + s * F * D
        rows, hs = tl.arange(0, L_P), tl.arange(0, H_P)
        chi = tl.zeros((L_P, H_P), dtype=tl.float32)
        gram = tl.zeros((L_P, L_P), dtype=tl.float32)
        for c0 in range(0, D // 2, BD // 2):
            cols = c0 + tl.arange(0, BD // 2)
            xe, xo = _tokens(state, rows, cols, D, L, eps, th, ks, F)
            kmask = (hs[None, :] < H) & (cols[:, None] < D // 2)
            ke = tl.load(k_ptr + s * H * D + hs[None, :] * D + 2 * cols[:, None], mask=kmask, other=0.0)
            ko = tl.load(k_ptr + s * H * D + hs[None, :] * D + 2 * cols[:, None] + 1, mask=kmask, other=0.0)
            if SUM_H:  # few heads: a broadcast sum, not a dot padded to 16 heads
                chi += tl.sum(xe[:, :, None] * ke[None, :, :] + xo[:, :, None] * ko[None, :, :], axis=1)
            else:
                chi += tl.dot(xe, ke, input_precision="ieee") + tl.dot(xo, ko, input_precision="ieee")
            gram += tl.dot(xe, tl.trans(xe), input_precision="ieee") + tl.dot(xo, tl.trans(xo),
                                                                               input_precision="ieee")
        base = s * n + mu
        tl.store(chi_ptr + base * L * H + rows[:, None] * H + hs[None, :], chi,
                 mask=(rows[:, None] < L) & (hs[None, :] < H))
        tl.store(g_ptr + base * L * L + rows[:, None] * L + rows[None, :], gram,
                 mask=(rows[:, None] < L) & (rows[None, :] < L))

    @triton.jit
    def _key_gradient(keys_ptr, first, wg, eps_ptr, th_ptr, ks_ptr, gsc_ptr, out_ptr, n, D, L, H, block,
                      F: tl.constexpr, L_P: tl.constexpr, H_P: tl.constexpr, BD: tl.constexpr, SUM_H: tl.constexpr):
        """Kernel B: Σ_{μ in block pid(2)} ∂χ_μ (H, L) x_μ (L, tile pid(1) of d) of seed pid(0)."""
        s, t, blk = tl.program_id(0), tl.program_id(1), tl.program_id(2)
        rows, hs = tl.arange(0, L_P), tl.arange(0, H_P)
        cols = t * (BD // 2) + tl.arange(0, BD // 2)
        acc_e = tl.zeros((H_P, BD // 2), dtype=tl.float32)
        acc_o = tl.zeros((H_P, BD // 2), dtype=tl.float32)
        key = tl.load(keys_ptr + s).to(tl.uint64, bitcast=True)
        for mu in range(blk * block, tl.minimum(blk * block + block, n)):
            state = key + (first + mu).to(tl.uint64) * wg
            eps = tl.load(eps_ptr + s * n + mu)
            xe, xo = _tokens(state, rows, cols, D, L, eps, th_ptr + (s * n + mu) * F, ks_ptr + s * F * D, F)
            g = tl.load(gsc_ptr + (s * n + mu) * H * L + hs[:, None] * L + rows[None, :],
                        mask=(hs[:, None] < H) & (rows[None, :] < L), other=0.0)
            if SUM_H:
                acc_e += tl.sum(g[:, :, None] * xe[None, :, :], axis=1)
                acc_o += tl.sum(g[:, :, None] * xo[None, :, :], axis=1)
            else:
                acc_e += tl.dot(g, xe, input_precision="ieee")
                acc_o += tl.dot(g, xo, input_precision="ieee")
        nblk = tl.num_programs(2)
        base = out_ptr + (s * nblk + blk) * H * D + hs[:, None] * D
        omask = (hs[:, None] < H) & (cols[None, :] < D // 2)
        tl.store(base + 2 * cols[None, :], acc_e, mask=omask)
        tl.store(base + 2 * cols[None, :] + 1, acc_o, mask=omask)


def _pad(x: int, least: int = 16) -> int:
    return max(least, 1 << (x - 1).bit_length())  # tl.dot needs every dimension ≥ 16


SUM_HEADS = 4  # up to this many heads, χ and ∇K are broadcast sums over the real heads, not dots padded to 16


def chunk_sums(keys: list[int], first: int, batch: int, eps: Tensor, theta: Tensor, K_star: Tensor, K: Tensor,
               b: Tensor, v: Tensor, activation: str, L: int, block_d: int = 256, seq_block: int = 64,
               sum_heads: int = SUM_HEADS):
    """Loss and gradient sums of sequences ``first … first + n − 1`` of a step (n = eps.shape[1]), as
    :func:`attnlab.specialization.train.sgd._chunk_sums_gram` on the stream's tokens, made in the kernels.

    ``keys``: the seeds' states of the step's word 0 (:func:`noise.step_keys`); eps (S, n), theta (S, n, F)
    the labels of these sequences; K_star (S, F, D), K (S, H, D) float32.
    """

    S, n = eps.shape
    H, D, F = K.shape[1], K.shape[2], K_star.shape[1]
    dev = K.device
    W = noise.words(L, D)
    keys_t = torch.tensor(keys, dtype=torch.int64, device=dev)
    wg = noise._s64(W * noise.GAMMA)
    eps32 = eps.to(torch.int32).contiguous()
    th, ks, kk = theta.float().contiguous(), K_star.float().contiguous(), K.float().contiguous()
    small = sum_heads >= H
    meta = {"F": F, "L_P": _pad(L), "H_P": _pad(H, 1 if small else 16), "BD": block_d, "SUM_H": small}
    chi = torch.empty(S, n, L, H, device=dev)
    G = torch.empty(S, n, L, L, device=dev)
    _scores_gram[(S, n)](keys_t, first, wg, eps32, th, ks, kk, chi, G, n, D, L, H, **meta)
    loss, g_sc, gb, gv = gram_head(chi.mT, G, eps, b, v, activation, D)
    nblk = math.ceil(n / seq_block)
    part = torch.empty(S, nblk, H, D, device=dev)
    grid = (S, math.ceil(D / block_d), nblk)
    _key_gradient[grid](keys_t, first, wg, eps32, th, ks, g_sc.float().contiguous(), part, n, D, L, H, seq_block,
                        **meta)
    return loss, part.sum(1), gb, gv
