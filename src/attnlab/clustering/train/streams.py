"""Where a run's random numbers come from: attnlab's named per-seed streams, or the public code's (``streams="pal"``).

``attnlab`` (default): every seed draws its initialisation (one generator per parameter), training set, test
set, batch order and dropout masks from its own named stream ``stream_seed(seed, name)`` (paper App. A).

``pal``: seed s draws what facebookresearch/pal's training script draws under ``--seed s`` (behaviour read off
the public code and checked against its saved weights, not its code): one torch generator seeded with s gives,
in this order, a table of max(2048, h) × (2d + 2) U(−1, 1) numbers (the nested MLP, ``model.nested_mlp``), then
E ~ N(0, 1), P ~ N(0, 1), q ~ U(±1/sqrt(d)), V ~ U(±1/sqrt(d)), then the default draws of the MLP's and the
output layer's nn.Linear, which the script overwrites; every epoch then takes two 64-bit integers from the same
generator (DataLoader's shuffle), the second seeding a fresh generator whose permutation of the training set is
the epoch's batch order. The data are numpy ``default_rng(s)``: the training set's integers first, the test
set's next. So ``preset="pal", seed=s`` starts from pal's weights, data and batch order for seed s, bit for bit
in float32, and follows its run up to the rounding of batched kernels (measured: the same first-epoch losses to
6e-8; over 400 epochs 19 of 19 seeds reach the same success verdict). With ``mlp_dropout`` > 0 the masks come
from the same generator, where pal's F.dropout draws them on the CPU (``pal_dropout``): after the epoch's shuffle,
one (batch, d) mask per batch, then one (n_train, d) and one (n_test, d) for its per-epoch record (pal measures
in training mode); ``eval_dropout="on"`` uses those two. Fine-tuning (pal's ``finetune.py --seed s``,
``finetune_gens``): the generator seeded with s has drawn only the model constructor's tensors (no MLP table)
before the first epoch. Measured against the public code (seed 0, 2 + 2 epochs, dropout 0 and 0.3): every
weight within 4.5e-7 after each epoch. Always from attnlab's streams: unseen-sentence samples, the record's masks
at epoch 0 (pal has no epoch-0 record) and of the unseen set. The table's row count is pal's MAX_FFN_DIM
(``pal_table_rows``, 2048): its ``grid --ablation ffn_dim`` sets 10 000, which moves every later draw (E, P, q, V,
batch orders, masks); ``pal_table_rows=10000`` draws as those runs do (measured against the public code, seed 0,
ffn_dim 10 and 1000, 2 epochs: see ``tests/clustering/test_pal_ablations.py``).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, Params, init_params, nested_mlp
from attnlab.core.rng import generator, stream_seed

PAL_TABLE_ROWS = 2048  # the public code's default MAX_FFN_DIM (key pal_table_rows): its MLP table's rows (≥ h, d)


def initial(kind: str, spec: ModelSpec, seeds: list[int], dtype: torch.dtype, device: torch.device | str,
            table_rows: int = PAL_TABLE_ROWS) -> tuple[Params, list[torch.Generator]]:
    """Initial parameters (S, ...) and each seed's batch-order generator, positioned after the init draws
    (``table_rows``: pal's MAX_FFN_DIM, the rows of its MLP table; pal only)."""
    if kind == "pal":
        draws = [pal_init(spec, s, table_rows) for s in seeds]
        params = {k: torch.stack([p[k] for p, _ in draws]).to(device=device, dtype=dtype) for k in draws[0][0]}
        return params, [g for _, g in draws]
    gens = [generator(stream_seed(s, "batch")) for s in seeds]
    return init_params(spec, seeds, dtype=dtype, device=device), gens


def pal_init(spec: ModelSpec, seed: int, table_rows: int = PAL_TABLE_ROWS) -> tuple[Params, torch.Generator]:
    """One seed's float32 parameters as the public code draws them from a ``table_rows``-row MLP table (its
    MAX_FFN_DIM; at least h and d rows), and its generator after those draws."""
    d, h, g = spec.d, spec.h, generator(seed)
    table = torch.rand(max(table_rows, h, d), 2 * d + 2, generator=g) * 2 - 1
    out = _pal_module_draws(spec, g)
    out.update(nested_mlp(table, spec))
    return out, g


def _pal_module_draws(spec: ModelSpec, g: torch.Generator) -> Params:
    """The draws of the public code's model constructor, in its order (E, P, q, V, the MLP's and the tied output
    layer's nn.Linear defaults): the returned E, P, q, V, and g advanced past all of them."""
    d, h = spec.d, spec.h

    def uniform(shape: tuple[int, ...], fan_in: int) -> torch.Tensor:
        gain = math.sqrt(2.0 / (1 + math.sqrt(5) ** 2))     # nn.Linear's kaiming_uniform(a=√5): 1/sqrt(fan_in)
        bound = math.sqrt(3.0) * (gain / math.sqrt(fan_in))
        return torch.empty(shape).uniform_(-bound, bound, generator=g)

    out = {"E": torch.empty(spec.n_emb, d).normal_(generator=g), "P": torch.empty(spec.N, d).normal_(generator=g),
           "q": uniform((1, d), d)[0], "V": uniform((d, d), d)}
    linear = [((h, d), d), ((h,), d), ((d, h), h), ((d,), h)]
    for shape, fan_in in linear if spec.mlp_bias else linear[::2]:
        uniform(shape, fan_in)                                      # nn.Linear's own draws, overwritten
    uniform((spec.n_emb, d), d)                                     # the tied output layer's, overwritten
    return out


def finetune_gens(kind: str, spec: ModelSpec, seeds: list[int]) -> list[torch.Generator]:
    """Each seed's batch-order generator for finetuning a model of architecture ``spec`` (the pretrained one,
    before any token rows are added). attnlab: the seed's "batch" stream, as for training. pal: what the public
    code's ``finetune.py --seed s`` has drawn before its first epoch: it seeds torch's generator with s and
    builds the model (the constructor's draws of ``_pal_module_draws``, no MLP table), then loads the trained
    weights over them; its batch orders (and dropout masks) follow from there."""
    if kind == "pal":
        gens = [generator(s) for s in seeds]
        for g in gens:
            _pal_module_draws(spec, g)
        return gens
    return [generator(stream_seed(s, "batch")) for s in seeds]


def pal_dropout(g: torch.Generator, p: float, sizes: list[int], d: int) -> torch.Tensor:
    """Dropout masks (d, Σ sizes) as the public code's F.dropout on the CPU draws them from its generator, one
    forward at a time (a batch of ``size`` rows each): torch's own ``bernoulli_(1 − p)`` of a (size, d) float32
    tensor, divided in place by 1 − p, the batches side by side."""
    return torch.cat([torch.empty(n, d).bernoulli_(1 - p, generator=g).div_(1 - p).T for n in sizes], dim=1)


def pal_data(task: Task, n_train: int, n_test: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Training and test sentences of seed s: numpy ``default_rng(s)``, train integers first, test next."""
    rng = np.random.default_rng(int(seed))
    x = rng.integers(0, task.p, (n_train, task.N))
    xt = rng.integers(0, task.p, (n_test, task.N))
    return torch.from_numpy(x).long(), torch.from_numpy(xt).long()


def epoch_order(kind: str, g: torch.Generator, n: int) -> torch.Tensor:
    """One epoch's batch order: a permutation of the n training points from the seed's generator (pal: the
    DataLoader's draws, a throw-away integer then the seed of the permutation's generator)."""
    if kind == "pal":
        torch.empty((), dtype=torch.int64).random_(generator=g)
        inner = int(torch.empty((), dtype=torch.int64).random_(generator=g).item())
        return torch.randperm(n, generator=generator(inner))
    return torch.randperm(n, generator=g)
