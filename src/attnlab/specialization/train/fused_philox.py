"""One fused Triton kernel per SGD step (Eqs. (5)-(6)) on the ``philox`` stream: no token touches memory.

One program per (seed, block of sequences) draws each token in registers from its counter
(:mod:`attnlab.specialization.data.philox`: ``tl.randn4x(seed, ((t·N_b + i)·L + ℓ)·⌈D/4⌉ + ⌊d/4⌋)``, lane d mod 4)
with the spike θ_μ K* planted at ε_μ (Eq. (2)), twice:

1. over tiles of d: the scores χ = X Kᵀ (H, L) and the Gram matrix G = X Xᵀ (L, L) of each sequence; then, in
   registers, the activation σ (softmax, softmax-1, Bayes-softmax: Eqs. (3)-(4)), s = mean_h σ, a = s − e_ε,
   the loss aᵀGa/D and ∂/∂χ, ∂/∂b, ∂/∂v by hand (:func:`attnlab.specialization.train.gram.gram_head` does them by
   autograd); ∂/∂χ (H·L floats per sequence) goes to a small scratch the same program reads back;
2. over tiles of d: ∇K += ∂χ_μ X_μ for the block's sequences, written once per block.

It writes only per-block partial sums: loss (S, B), ∇K (S, B, H, D), ∇b (S, B, H), ∇v (S, B); torch adds the B
blocks. The products are broadcast sums over the real heads and positions, padded only to the next power of two
(``tl.arange`` needs one): L = 10 runs on 16 rows, H = 3 on 4 heads. ``tl.dot`` would pad every dimension to 16
(L = 10 → 16, H = 2 → 16: 8× the head work), so it is not used. Any D (the lanes past D are masked).

Without Triton, or on a device it cannot run on, :func:`available` is False and the SGD takes the torch step on
the same stream (:class:`attnlab.specialization.data.philox.PhiloxStream`). ``TRITON_INTERPRET=1`` runs the kernel
on CPU tensors (tests). The tokens equal the torch stream's to a few float32 ulp, so a fused step matches the
torch step to float round-off, not bit for bit.
"""

from __future__ import annotations

import math

import torch

from attnlab.specialization.data import philox
from attnlab.specialization.train import fused

Tensor = torch.Tensor
ACT_CODE = {"softmax": 0, "softmax1": 1, "bsoftmax": 2}


def available(device: torch.device | str) -> bool:
    """Triton is importable and not turned off (``ATTNLAB_TRITON=0``), the device is CUDA (or the CPU under
    ``TRITON_INTERPRET=1``): :func:`attnlab.specialization.train.fused.available` without its even-D condition."""
    return fused.available(device, 2)


if fused.triton is not None:
    import triton
    import triton.language as tl

    @triton.jit
    def _tokens(seed, row0, rows, cols, D, L, W, eps, th_ptr, ks_ptr, F: tl.constexpr):
        """Lanes 0..3 of the tokens (ℓ = rows, d = 4·cols + lane) of the sequence whose row 0 is token row
        ``row0`` of the stream: four (L_P, BW) tiles, zero outside ℓ < L, d < D, the spike planted at ℓ = ε."""
        off = (row0 + rows[:, None]).to(tl.int64) * W + cols[None, :]
        x0, x1, x2, x3 = tl.randn4x(seed, off)
        rmask = rows[:, None] < L
        on = rows[:, None] == eps
        d0 = 4 * cols[None, :]
        x0 = tl.where(rmask & (d0 < D), x0, 0.0)
        x1 = tl.where(rmask & (d0 + 1 < D), x1, 0.0)
        x2 = tl.where(rmask & (d0 + 2 < D), x2, 0.0)
        x3 = tl.where(rmask & (d0 + 3 < D), x3, 0.0)
        for f in tl.static_range(F):
            th = tl.load(th_ptr + f)
            base = ks_ptr + f * D + d0
            x0 = tl.where(on, x0 + th * tl.load(base, mask=d0 < D, other=0.0), x0)
            x1 = tl.where(on, x1 + th * tl.load(base + 1, mask=d0 + 1 < D, other=0.0), x1)
            x2 = tl.where(on, x2 + th * tl.load(base + 2, mask=d0 + 2 < D, other=0.0), x2)
            x3 = tl.where(on, x3 + th * tl.load(base + 3, mask=d0 + 3 < D, other=0.0), x3)
        return x0, x1, x2, x3

    @triton.jit
    def _chi_lane(x, k_ptr, hs, d, H, D):
        """Σ_d k_hd x_ℓd over one lane's columns: (H_P, L_P)."""
        k = tl.load(k_ptr + hs[:, None] * D + d[None, :], mask=(hs[:, None] < H) & (d[None, :] < D), other=0.0)
        return tl.sum(k[:, None, :] * x[None, :, :], axis=2)

    @triton.jit
    def _gram_lane(x):
        return tl.sum(x[:, None, :] * x[None, :, :], axis=2)

    @triton.jit
    def _step(keys_ptr, base_ptr, eps_ptr, th_ptr, ks_ptr, k_ptr, b_ptr, v_ptr, dchi_ptr, loss_ptr, gk_ptr,
              gb_ptr, gv_ptr, n, D, L, H, W, block, inv_d,
              ACT: tl.constexpr, F: tl.constexpr, L_P: tl.constexpr, H_P: tl.constexpr, BW: tl.constexpr):
        s, blk = tl.program_id(0), tl.program_id(1)
        nblk = tl.num_programs(1)
        seed = tl.load(keys_ptr + s)
        row_base = tl.load(base_ptr)  # int64: the step's first token row t·N_b·L
        rows, hs, cw = tl.arange(0, L_P), tl.arange(0, H_P), tl.arange(0, BW)
        lmask, hmask = rows < L, hs < H
        valid = hmask[:, None] & lmask[None, :]
        kp, ks = k_ptr + s * H * D, ks_ptr + s * F * D
        b = tl.load(b_ptr + s * H + hs, mask=hmask, other=0.0)
        v = tl.load(v_ptr + s)
        lo = blk * block
        hi = tl.minimum(lo + block, n)
        loss_acc = tl.zeros((L_P,), dtype=tl.float32)
        gb_acc = tl.zeros((H_P,), dtype=tl.float32)
        gv_acc = tl.zeros((H_P,), dtype=tl.float32)
        for mu in range(lo, hi):
            eps = tl.load(eps_ptr + s * n + mu)
            th = th_ptr + (s * n + mu) * F
            row0 = row_base + mu * L
            chi = tl.zeros((H_P, L_P), dtype=tl.float32)
            gram = tl.zeros((L_P, L_P), dtype=tl.float32)
            for c0 in range(0, W, BW):
                cols = c0 + cw
                x0, x1, x2, x3 = _tokens(seed, row0, rows, cols, D, L, W, eps, th, ks, F)
                d0 = 4 * cols
                chi += _chi_lane(x0, kp, hs, d0, H, D) + _chi_lane(x1, kp, hs, d0 + 1, H, D)
                chi += _chi_lane(x2, kp, hs, d0 + 2, H, D) + _chi_lane(x3, kp, hs, d0 + 3, H, D)
                gram += _gram_lane(x0) + _gram_lane(x1) + _gram_lane(x2) + _gram_lane(x3)
            # the activation and its gradient, Eqs. (3)-(4), in registers
            if ACT == 2:  # Bayes-softmax: H · softmax over all (h, ℓ) of χ + b
                z = tl.where(valid, chi + b[:, None], -1.0e30)
                big = tl.max(tl.max(z, axis=1), axis=0)
                e = tl.where(valid, tl.exp(z - big), 0.0)
                p = e / tl.sum(tl.sum(e, axis=1), axis=0)
                sv = tl.sum(p, axis=0)  # s_ℓ = (1/H) Σ_h H π_hℓ
            else:
                z = tl.where(valid, chi, -1.0e30)
                big = tl.max(z, axis=1)
                if ACT == 1:
                    big = tl.maximum(big, b)
                e = tl.where(valid, tl.exp(z - big[:, None]), 0.0)
                den = tl.sum(e, axis=1)
                if ACT == 1:
                    sink = tl.exp(b - big)
                    den += sink
                den = tl.where(hmask, den, 1.0)
                p = e / den[:, None]
                sv = tl.sum(p, axis=0) / H
                if ACT == 1:
                    sv = v * sv
            a = tl.where(lmask, sv - tl.where(rows == eps, 1.0, 0.0), 0.0)
            ga = tl.sum(gram * a[None, :], axis=1)  # (G a)_ℓ, G symmetric
            loss_acc += a * ga * inv_d
            g = 2.0 * ga * inv_d  # ∂loss/∂s
            if ACT == 2:
                dchi = p * (g[None, :] - tl.sum(sv * g, axis=0))
                gb_acc += tl.sum(dchi, axis=1)
            else:
                pg = tl.sum(p * g[None, :], axis=1)  # Σ_ℓ p_hℓ g_ℓ
                dchi = p * (g[None, :] - pg[:, None]) / H
                if ACT == 1:
                    dchi = v * dchi
                    gb_acc += -(v / H) * (sink / den) * pg
                    gv_acc += pg / H
            tl.store(dchi_ptr + ((s * n + mu) * H_P + hs[:, None]) * L_P + rows[None, :], dchi)
        tl.debug_barrier()  # pass 2 reads the ∂χ the whole program wrote
        out = (s * nblk + blk)
        tl.store(loss_ptr + out, tl.sum(loss_acc, axis=0))
        tl.store(gb_ptr + out * H + hs, gb_acc, mask=hmask)
        tl.store(gv_ptr + out, tl.sum(gv_acc, axis=0))
        for c0 in range(0, W, BW):
            cols = c0 + cw
            d0 = 4 * cols
            acc0 = tl.zeros((H_P, BW), dtype=tl.float32)
            acc1 = tl.zeros((H_P, BW), dtype=tl.float32)
            acc2 = tl.zeros((H_P, BW), dtype=tl.float32)
            acc3 = tl.zeros((H_P, BW), dtype=tl.float32)
            for mu in range(lo, hi):
                eps = tl.load(eps_ptr + s * n + mu)
                x0, x1, x2, x3 = _tokens(seed, row_base + mu * L, rows, cols, D, L, W, eps,
                                         th_ptr + (s * n + mu) * F, ks, F)
                dchi = tl.load(dchi_ptr + ((s * n + mu) * H_P + hs[:, None]) * L_P + rows[None, :])[:, :, None]
                acc0 += tl.sum(dchi * x0[None, :, :], axis=1)
                acc1 += tl.sum(dchi * x1[None, :, :], axis=1)
                acc2 += tl.sum(dchi * x2[None, :, :], axis=1)
                acc3 += tl.sum(dchi * x3[None, :, :], axis=1)
            base = gk_ptr + (out * H + hs[:, None]) * D + d0[None, :]
            tl.store(base, acc0, mask=hmask[:, None] & (d0[None, :] < D))
            tl.store(base + 1, acc1, mask=hmask[:, None] & (d0[None, :] + 1 < D))
            tl.store(base + 2, acc2, mask=hmask[:, None] & (d0[None, :] + 2 < D))
            tl.store(base + 3, acc3, mask=hmask[:, None] & (d0[None, :] + 3 < D))


def _pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def step_sums(keys: list[int], step: int, batch: int, eps: Tensor, theta: Tensor, K_star: Tensor, K: Tensor,
              b: Tensor, v: Tensor, activation: str, L: int, block_w: int = 32, seq_block: int = 16):
    """Loss and gradient sums over the step's N_b = ``batch`` sequences, as
    :func:`attnlab.specialization.train.sgd._chunk_sums_gram` on the ``philox`` tokens, in one kernel.

    ``keys``: the seeds' Philox seeds (:func:`philox.seed_key`); eps (S, N_b), theta (S, N_b, F) the step's
    labels; K_star (S, F, D), K (S, H, D), b (S, H), v (S,). Returns (loss (S,), ∇K (S, H, D), ∇b (S, H) or None,
    ∇v (S,) or None). ``block_w``: offsets per tile (4·block_w coordinates); ``seq_block``: sequences per program.
    """
    if activation not in ACT_CODE:
        raise ValueError(f"fused philox step: activation {activation!r} is not one of {', '.join(ACT_CODE)}")
    S, n = eps.shape
    H, D, F = K.shape[1], K.shape[2], K_star.shape[1]
    dev = K.device
    W = philox.words_per_row(D)
    L_P, H_P = _pow2(L), _pow2(H)
    nblk = math.ceil(n / seq_block)
    f32 = {"device": dev, "dtype": torch.float32}
    loss, gk = torch.empty(S, nblk, **f32), torch.empty(S, nblk, H, D, **f32)
    gb, gv = torch.empty(S, nblk, H, **f32), torch.empty(S, nblk, **f32)
    dchi = torch.empty(S, n, H_P, L_P, **f32)
    keys_t = torch.tensor(keys, dtype=torch.int64, device=dev)
    base = torch.tensor([step * batch * L], dtype=torch.int64, device=dev)
    _step[(S, nblk)](keys_t, base, eps.to(torch.int32).contiguous(), theta.float().contiguous(),
                     K_star.float().contiguous(), K.float().contiguous(), b.float().contiguous(),
                     v.float().contiguous(), dchi, loss, gk, gb, gv, n, D, L, H, W, seq_block, 1.0 / D,
                     ACT=ACT_CODE[activation], F=F, L_P=L_P, H_P=H_P, BW=min(block_w, _pow2(W)))
    dt = K.dtype
    return (loss.sum(1).to(dt), gk.sum(1).to(dt), None if activation == "softmax" else gb.sum(1).to(dt),
            gv.sum(1).to(dt) if activation == "softmax1" else None)
