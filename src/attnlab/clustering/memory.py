"""Peak memory of the clustering experiments, for ``attnlab.core.memory``'s "would not fit" check: the model of one
training run (``train.train``) and, for every experiment, the largest of its training units plus the records of
the units it keeps while the next one trains.

The model is linear in the number of seeds S; per seed it counts (f = bytes of the dtype; n = n_train, N, p, d,
h, n_emb, B = batch size, C = p^N sentences when the record is read from the enumerated space):

- parameters, Adam's two moments, the packed gradient: 5·P·f (P = parameters per seed);
- data: training, test and unseen tokens and labels in int64, 8·(n + 2·n_test)·(N + 1), and the space index;
- one epoch of one-hot batches, labels and dropout masks, (p·N + n_emb + d)·n·f, twice when a CUDA graph
  keeps static copies;
- one step's activations (the feature-major step of ``step.py``): about (4·p·N + 12·h + 12·N + 24·d)·B·f, twice
  under a CUDA graph (its private pool);
- the per-epoch record: the product-form pass over the C sentences with its autograd (about 24·d·C·f), the
  log-probabilities, ξ-gradients and per-sentence losses (≈ (2·n_emb + 2·d + 6)·C·f), and a closed-form tail chunk
  of 2^19 hidden units in all (not per seed); without the enumerated space, forward passes over the training set
  (about (3·n_emb·N + 6·h + 8·N)·n·f);
- the step record, kept on the device: 4·T·(G + 2) bytes for T recorded steps and G named tensors;
- on the CPU only, the host-side history as well: snapshots (P·f each) and per-epoch rows (≈ 30 float64).

Constants were set from measured peaks: on the CPU a seed of the default run costs 2.0-2.1 MiB of peak RSS
(30 vs 230 seeds) where the model says 1.9-2.0 (``tests/clustering/test_memory.py`` keeps them within ±60 %; a
cuda test bounds the GPU peak). On CUDA, float32, 1000 epochs with the default record (every step recorded, which
dominates) a seed needs 4.3 MB (paper preset) or 4.9 MB (pal preset), so 80 GB hold about 18 500 or 16 000 seeds
(139 GB: 32 000 / 28 000); recording one step per epoch (``step_log_every = 64``) halves that: ~35 000 seeds.
"""

from __future__ import annotations

from typing import Any

from attnlab.clustering.configs import TrainConfig, as_train_config, dim_config, parse_variant, unit_config, unit_dims
from attnlab.clustering.data import MAX_ENUMERATION

TAIL_CHUNK = 2**19        # hidden units per chunk of the record's closed-form tail (step.chunked_tail)


def per_seed_bytes(cfg: Any, device: str | None = None) -> int:
    """Bytes one seed of ``cfg`` (a TrainConfig) adds to the run's peak on ``device`` (default cfg.device)."""
    device = device or cfg.device
    spec, task = cfg.spec(), cfg.task()
    f = 8 if cfg.dtype == "float64" else 4
    d, h, N, p, n_emb, n, B = spec.d, spec.h, task.N, task.p, spec.n_emb, cfg.n_train, cfg.batch_size
    P = spec.n_params
    G = 6 + (2 if spec.mlp_bias else 0) + (2 if spec.norm == "rmsnorm" and spec.norm_gain else 0)
    graph = 2 if device.startswith("cuda") and cfg.cuda_graph else 1
    whole = p**N <= MAX_ENUMERATION and p ** (N - task.k) <= 128 and task.idx == tuple(range(task.k))
    space = p**N if whole else 0
    out = 5 * P * f
    out += 8 * (n + 2 * cfg.n_test) * (N + 1) + (4 * space + 16 * cfg.n_test if space else 0)
    out += graph * (p * N + n_emb + d) * n * f
    out += graph * (4 * p * N + 12 * h + 12 * N + 24 * d) * B * f
    if space:
        out += (24 * d + 2 * n_emb + 2 * d + 6) * space * f
    else:
        out += (3 * n_emb * N + 6 * h + 8 * N) * n * f
    steps = cfg.epochs * cfg.steps_per_epoch // cfg.step_log_every if cfg.step_log_every else 0
    out += 4 * steps * (G + 2)
    if not device.startswith("cuda"):
        snaps = cfg.epochs // cfg.snapshot_every + 2 if cfg.snapshot_every else 2
        out += snaps * P * f + (cfg.epochs // cfg.log_every + 2) * 30 * 8
    return int(out)


def train_bytes(cfg: Any) -> tuple[int, str]:
    """The run's peak bytes (all seeds, plus the tail chunk and a fixed 64 MiB of workspace) and what to reduce."""
    f = 8 if cfg.dtype == "float64" else 4
    fixed = 64 * 2**20 + 12 * TAIL_CHUNK * f
    hint = (f"reduce n_seeds (= {cfg.n_seeds}; ~{per_seed_bytes(cfg) / 2**20:.2g} MiB each), or record fewer steps "
            f"(--set step_log_every=64)")
    return cfg.n_seeds * per_seed_bytes(cfg) + fixed, hint


def max_seeds(cfg: Any, free: int, device: str = "cuda") -> int:
    """How many seeds of ``cfg`` fit in ``free`` bytes on ``device``."""
    f = 8 if cfg.dtype == "float64" else 4
    return max(0, (free - 64 * 2**20 - 12 * TAIL_CHUNK * f) // per_seed_bytes(cfg, device))


def record_bytes(cfg: TrainConfig) -> int:
    """Host bytes of a finished unit's record that an experiment keeps: snapshots and per-epoch rows of all seeds."""
    f = 8 if cfg.dtype == "float64" else 4
    snaps = cfg.epochs // cfg.snapshot_every + 2 if cfg.snapshot_every else 2
    return cfg.n_seeds * (snaps * cfg.spec().n_params * f + (cfg.epochs // cfg.log_every + 2) * 30 * 8)


def units_bytes(units: list[TrainConfig]) -> tuple[int, str]:
    """An experiment of sequential training units: its largest unit's run plus every unit's kept record."""
    peaks = [train_bytes(u)[0] for u in units]
    i = max(range(len(units)), key=peaks.__getitem__)
    keep = sum(record_bytes(u) for j, u in enumerate(units) if j != i)
    return peaks[i] + keep, f"reduce n_seeds (= {units[i].n_seeds}; the largest unit trains p = {units[i].p}, " \
                            f"d = {units[i].d})"


def transfer_bytes(cfg: Any) -> tuple[int, str]:

    return units_bytes([as_train_config(cfg), as_train_config(cfg, p=cfg.p_new, epochs=cfg.epochs_new)])


def stationarity_bytes(cfg: Any) -> tuple[int, str]:

    return train_bytes(as_train_config(cfg, n_seeds=1, epochs=cfg.epochs))


def dynamics_bytes(cfg: Any) -> tuple[int, str]:

    units = []
    for d in unit_dims(cfg):
        units.append(dim_config(cfg, d))
        if cfg.full_batch:
            units.append(dim_config(cfg, d, batch_size=cfg.n_train, lr=cfg.full_batch_lr or cfg.lr,
                                       epochs=cfg.full_batch_epochs or cfg.epochs, log_every=cfg.full_batch_log_every))
    return units_bytes(units)


def spike_bytes(cfg: Any) -> tuple[int, str]:

    return units_bytes([dim_config(cfg, d) for d in unit_dims(cfg)])


def remedies_bytes(cfg: Any) -> tuple[int, str]:

    return units_bytes([as_train_config(cfg, **parse_variant(v)) for v in cfg.variants])


def sparsity_bytes(cfg: Any) -> tuple[int, str]:

    return units_bytes([unit_config(cfg, d=d) for d in cfg.dims()])


def fig14_bytes(cfg: Any) -> tuple[int, str]:

    ps = sorted(set(cfg.ps) | set(cfg.ft_ps))
    return units_bytes([unit_config(cfg, epochs=cfg.phase1_epochs)] + [unit_config(cfg, p=q) for q in ps])


def fig16_bytes(cfg: Any) -> tuple[int, str]:

    return units_bytes([unit_config(cfg, **change) for change in cfg.settings().values()])
