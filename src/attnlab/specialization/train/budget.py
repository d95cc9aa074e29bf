"""Memory of the specialization study's computations, in bytes, and the SGD's chunk (:mod:`attnlab.core.memory`).

The SGD (Figs. 1, 9, 10) holds, per seed, a chunk of ``chunk`` sequences (L·D floats each, the only large
tensor) plus its small per-sequence terms, and a fixed part (keys, spikes, gradients, the step's labels, the
noise's tile scratch). Its chunk is the largest the device's free memory allows (:func:`sgd_chunk`): on CUDA
that is the whole batch of N_b = 10^4 sequences at D = 10^4, L = 10 (4 GB), one chunk per step; on the CPU it
is capped at :data:`CPU_CHUNK_BYTES` (measured: a chunk that stays in cache is faster than a large one). The
result does not depend on the chunk (the data are counter-based: :mod:`attnlab.specialization.data.noise`).
The theory (reduced-loss flow) holds its fixed Monte-Carlo samples: N_mc·L·(F+H) float64 and a few
N_mc·H·L activation buffers per run in the batch.
"""

from __future__ import annotations

import torch

from attnlab.core import memory
from attnlab.specialization.data import noise

F64 = 8
#: the SGD's chunk on the CPU is at most this many bytes: measured fastest on a 2-core machine (benchmarks)
CPU_CHUNK_BYTES = 2**24
#: a chunk below this many sequences (or N_b) is pointless: the step would be bound by per-chunk overheads
MIN_CHUNK = 16


def sgd_seq_bytes(S: int, L: int, D: int, H: int, itemsize: int = 4) -> int:
    """Bytes one sequence of a chunk costs, all S seeds: its L·D tokens, scores/attention/gradient buffers
    (8·H·L) and Gram terms (4·L²)."""
    return S * itemsize * (L * D + 8 * H * L + 4 * L * L)


def sgd_fixed_bytes(S: int, batch: int, L: int, D: int, H: int, F: int, itemsize: int = 4,
                    device: torch.device | str = "cpu") -> int:
    """Bytes the SGD holds whatever the chunk: K, K(0), the gradient, updates and K* (≈ 6H + 2F rows of D per
    seed), the step's ε and θ (N_b·(8 + F·itemsize) per seed, twice), and the noise's tile scratch."""
    tile = noise.tile_words(torch.device(device))
    return S * (itemsize * D * (6 * H + 2 * F) + 2 * batch * (8 + F * itemsize)) + 16 * tile


def sgd_chunk(S: int, batch: int, L: int, D: int, H: int, F: int, dtype: torch.dtype = torch.float32,
              device: torch.device | str = "cpu", fraction: float = 0.5, method: str | None = None) -> int:
    """Sequences per chunk: the most that ``fraction`` of the device's free memory holds (all of N_b when it
    fits), at least min(N_b, :data:`MIN_CHUNK`); on the CPU at most :data:`CPU_CHUNK_BYTES` of tokens; a
    multiple of the noise's group of sequences (:func:`noise.fill_gaussian`) so that no group is made twice."""
    device = torch.device(device)
    per = sgd_seq_bytes(S, L, D, H, dtype.itemsize)
    chunk = memory.chunk_size(batch, per, device, fraction=fraction, at_least=min(batch, MIN_CHUNK))
    if device.type == "cpu":
        chunk = min(chunk, max(min(batch, MIN_CHUNK), CPU_CHUNK_BYTES // per))
    group = noise.group_size(method or noise.default_method(device), device, L, D)
    return chunk if chunk == batch or chunk < group else chunk // group * group  # chunks on noise-group bounds


def sgd_bytes(S: int, batch: int, L: int, D: int, H: int, F: int, itemsize: int = 4,
              device: torch.device | str = "cpu") -> int:
    """The SGD's smallest peak: the fixed part and a chunk of min(N_b, MIN_CHUNK) sequences (it takes more
    when more is free, never needs more)."""
    return sgd_fixed_bytes(S, batch, L, D, H, F, itemsize, device) + min(batch, MIN_CHUNK) * sgd_seq_bytes(
        S, L, D, H, itemsize)


def theory_bytes(n_mc: int, L: int, H: int, F: int, runs: int = 1, buffers: int = 10) -> int:
    """The reduced-loss flow: fixed MC samples N_mc·L·(F+H) float64 and, per run in the batch, ``buffers``
    activation/gradient tensors of N_mc·H·L float64 (measured ≈ 7-9 for the flow's hand-derived gradient;
    3 for a no-grad evaluation on fresh samples)."""
    return F64 * n_mc * L * ((F + H) + buffers * H * runs)


def bayes_bytes(n: int, L: int, F: int) -> int:
    """The Bayes risk by MC: chunks of ≤ 10^5 samples of (θ, χ*) and the posterior's buffers (≈ 12 per token)."""
    return F64 * min(n, 100_000) * L * (F + 12)
