"""MLM training on Potts data (Eq. (3)): mini-batch Adam/SGD with a cosine schedule (full-batch L-BFGS of the
same loss: ``train/pseudolikelihood.py``).

    fit = train_stacked("factored", data, seeds=[0, 1, 2], optim=Optim())     # 3 models in one computation
    fit.trajectory          # Trajectory over epochs: test_loss, train_loss, gap, recon_err, corr, each (T, S)
    fit.epoch_maps          # (T, S, L, L) float32 attention maps at the same evaluated epochs
    fit = train_vanilla(data, n_layers=1, seed=0, optim=Optim(lr=1e-3, epochs=60))
    sim = simulate(data, "factored", ...)                                     # the paired API (theory.potts_optimum)

Stacked models ('factored' Eq. (4), 'perturbed' Eq. (2)) carry a leading model axis; each model draws its
initialisation and its batch order from its own generators, so a model's run does not depend on which models
train beside it. A batch is ``batch`` sequences, each contributing its L masked predictions (docs note 21); the
vanilla transformer masks one random site per sequence while training (an unbiased estimate of the same loss,
L times cheaper, App. 'Numerical details') and is always evaluated on all L masked copies.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch

from attnlab.core import rng
from attnlab.core.trajectory import Trajectory
from attnlab.potts import metrics
from attnlab.potts.data.sets import PottsData
from attnlab.potts.model import (
    Attn,
    VanillaTransformer,
    attention,
    factored_logits,
    mlm_loss,
    perturbed_logits,
)

Tensor = torch.Tensor
OBSERVABLES = ("test_loss", "train_loss", "gap", "recon_err", "corr")


@dataclass(frozen=True)
class Optim:
    """Mini-batch optimiser (docs note 3): cosine lr(t) = lr0 (1 + cos(π t/T))/2 per step, no warm-up."""

    optimizer: Literal["adam", "sgd"] = "adam"
    lr: float = 0.05
    epochs: int = 100
    batch: int = 100
    schedule: Literal["cosine", "constant"] = "cosine"
    weight_decay: float = 0.0
    momentum: float = 0.0


def model_generators(seed: int, device: torch.device | str = "cpu") -> tuple[torch.Generator, torch.Generator]:
    """(init, batches) generators of one model, derived from its integer seed."""
    words = np.random.SeedSequence(int(seed)).generate_state(2, np.uint64)
    return tuple(rng.generator(int(w) & (2**63 - 1), device) for w in words)  # type: ignore


def _optimizer(params: list[Tensor], opt: Optim, steps: int) -> tuple[torch.optim.Optimizer, Any]:
    if opt.optimizer == "adam":
        o = torch.optim.Adam(params, lr=opt.lr, weight_decay=opt.weight_decay)
    elif opt.optimizer == "sgd":
        o = torch.optim.SGD(params, lr=opt.lr, momentum=opt.momentum, weight_decay=opt.weight_decay)
    else:
        raise ValueError(f"optimizer {opt.optimizer!r} is not known; allowed: adam, sgd")
    if opt.schedule == "cosine":
        sched = torch.optim.lr_scheduler.LambdaLR(o, lambda t: 0.5 * (1 + math.cos(math.pi * min(t, steps) / steps)))
    else:
        sched = torch.optim.lr_scheduler.LambdaLR(o, lambda t: 1.0)
    return o, sched


Checkpoint = Callable[[Callable[[], dict]], Any]


def _save_state(epoch: int, params: dict[str, Tensor], opt, sched, rows: list, epochs: list,
                gens: Sequence[torch.Generator]) -> dict:
    return {"epoch": epoch, "params": {k: v.detach().clone() for k, v in params.items()}, "opt": opt.state_dict(),
            "sched": sched.state_dict(), "rows": rows, "epochs": epochs, "gens": [g.get_state() for g in gens]}


def _load_state(state: dict, params: dict[str, Tensor], opt, sched, gens: Sequence[torch.Generator]) -> int:
    with torch.no_grad():
        for k, v in params.items():
            v.copy_(state["params"][k])
    opt.load_state_dict(state["opt"])
    sched.load_state_dict(state["sched"])
    for g, st in zip(gens, state["gens"], strict=True):
        g.set_state(st)
    return state["epoch"]


@dataclass(eq=False)
class Fit:
    """A trained stack of models: final parameters, the per-epoch trajectory, final attention maps (S, L, L), and
    the maps at every evaluated epoch (T, S, L, L) float32 (None: resumed from a state that did not record them)."""

    params: dict[str, Tensor]
    trajectory: Trajectory
    maps: Tensor
    extra: dict = field(default_factory=dict)
    epoch_maps: Tensor | None = None


def progress_arrays(state: dict) -> dict[str, np.ndarray]:
    """A training's checkpoint state as the arrays its finished unit stores, so far: the trajectory of the evaluated
    epochs (``traj_*``), their maps (``maps``, E × S × L × L) and the latest one as ``map`` (for live viewers)."""
    rows, epochs = state["rows"], state["epochs"]
    traj = Trajectory(np.asarray(epochs, float), {k: torch.stack([r[k].double().cpu() for r in rows])
                                                  for k in OBSERVABLES}, time_name="epoch")
    maps = _epoch_maps(rows)
    return {**traj.to_arrays("traj_"), **({} if maps is None else {"maps": maps.cpu().numpy(),
                                                                     "map": maps[-1].double().cpu().numpy()})}


def _epoch_maps(rows: list[dict]) -> Tensor | None:
    """The maps the evaluations recorded in ``rows`` (key "map", kept out of the trajectory's observables)."""
    if not rows or any("map" not in r for r in rows):
        return None
    return torch.stack([r["map"] for r in rows])


# -- stacked single-layer models ------------------------------------------------------------------------------------


def init_params(kind: str, n_models: int, L: int, C: int, gens: Sequence[torch.Generator], dtype: torch.dtype,
                attn: Attn = "softmax", init_scale: float = 0.1, v_scale: float = 0.01) -> dict[str, Tensor]:
    """Initial stacked parameters. factored: W ~ N(0, s²) (near-uniform attention; 'linear': 1/L + N(0, s²)),
    V ~ v_scale² N(0, 1/C); perturbed (Eq. (2), trained through W = QᵀK, d = C): the same draws, so that a = 0
    trains exactly like the factored layer.

    V starts near 0 on purpose: the first, attention-blind stage of training then aligns V with U. From an O(1)
    random V about half the seeds lock into a basin where V is misaligned and the attention avoids the true
    neighbours (on `cpu_fig2`: gap 0.19, corr(A, J) = -0.33 instead of 0.03 and 0.95).
    """
    dev = gens[0].device

    def randn(*shape):
        return torch.stack([torch.randn(*shape, generator=g, device=dev, dtype=dtype) for g in gens])

    if kind == "factored":
        W = init_scale * randn(L, L) + (1.0 / L if attn == "linear" else 0.0)
        return {"W": W, "V": v_scale * randn(C, C) / math.sqrt(C)}
    if kind == "perturbed":
        if L > C:
            raise ValueError(f"eq. (2) with one-hot positions and E = I needs L <= d = C (L = {L}, C = {C})")
        W = torch.zeros(len(gens), C, C, dtype=dtype, device=dev)
        W[:, :L, :L] = init_scale * randn(L, L)  # drawn first, as the factored layer's W
        V = v_scale * randn(C, C) / math.sqrt(C)
        W[:, :L, L:] = init_scale * randn(L, C - L)  # the key columns of token embeddings beyond position L
        return {"W": W, "V": V}
    raise ValueError(f"model kind {kind!r} is not known; allowed: factored, perturbed")


def stacked_logits(kind: str, params: dict[str, Tensor], c: Tensor, attn: Attn = "softmax",
                   a: Tensor | None = None) -> Tensor:
    if kind == "factored":
        return factored_logits(c, params["W"], params["V"], attn)
    return perturbed_logits(c, params["W"], params["V"], a)


@torch.no_grad()
def attention_maps(kind: str, params: dict[str, Tensor], c: Tensor, attn: Attn = "softmax",
                   a: Tensor | None = None) -> Tensor:
    """(S, L, L) attention of each stacked model; for Eq. (2) the mean over sequences c of the masked rows."""
    if kind == "factored":
        return attention(params["W"], attn)
    _, A = perturbed_logits(c, params["W"], params["V"], a, return_attention=True)
    return A.mean(-3)


def train_stacked(
    kind: Literal["factored", "perturbed"],
    data: PottsData,
    *,
    seeds: Sequence[int],
    optim: Optim = Optim(),
    attn: Attn = "softmax",
    a: Sequence[float] | Tensor | None = None,
    M: int | None = None,
    dtype: torch.dtype = torch.float32,
    init_scale: float = 0.1,
    eval_every: int = 1,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: Checkpoint | None = None,
    resume: dict | None = None,
) -> Fit:
    """Train len(seeds) single-layer models at once on the first ``M`` training sequences (default all).

    ``checkpoint(state_fn)`` is called after every epoch (``ctx.checkpoint`` saves when due); a saved state passed
    back as ``resume`` continues to the same result as an uninterrupted run."""
    device = data.train.device
    train = data.train if M is None else data.train[:M]
    test, J, L, C = data.test, data.potts.J, data.potts.L, data.potts.C
    S, n = len(seeds), train.shape[0]
    gens = [model_generators(s, device) for s in seeds]
    params = {k: v.requires_grad_(True) for k, v in
              init_params(kind, S, L, C, [g[0] for g in gens], dtype, attn, init_scale).items()}
    if kind == "perturbed":
        a = torch.as_tensor(a if a is not None else [0.0] * S, dtype=dtype, device=device)
    steps_per_epoch = -(-n // optim.batch)
    opt, sched = _optimizer(list(params.values()), optim, optim.epochs * steps_per_epoch)
    opt_loss = data.optimal_loss
    batch_gens = [g[1] for g in gens]

    def evaluate() -> dict[str, Tensor]:
        with torch.no_grad():
            test_loss = mlm_loss(stacked_logits(kind, params, test, attn, a), test).double()
            A = attention_maps(kind, params, test, attn, a).double()
        return {"test_loss": test_loss, "gap": test_loss - opt_loss, "recon_err": metrics.recon_error(A, J),
                "corr": metrics.corr_offdiag(A, J), "map": A.float().cpu()}

    rows, epochs, start = [], [], 1
    if resume is not None:
        start = _load_state(resume, params, opt, sched, batch_gens) + 1
        rows, epochs = resume["rows"], resume["epochs"]
    else:
        with torch.no_grad():
            first = mlm_loss(stacked_logits(kind, params, train, attn, a), train).double()
        rows.append({**evaluate(), "train_loss": first})
        epochs.append(0)
    for epoch in range(start, optim.epochs + 1):
        perms = torch.stack([torch.randperm(n, generator=g, device=device) for g in batch_gens])
        total = torch.zeros(S, dtype=torch.float64, device=device)
        for k in range(steps_per_epoch):
            idx = perms[:, k * optim.batch:(k + 1) * optim.batch]
            c = train[idx]  # (S, B, L)
            loss = mlm_loss(stacked_logits(kind, params, c, attn, a), c)
            opt.zero_grad(set_to_none=True)
            loss.sum().backward()
            opt.step()
            sched.step()
            total += loss.detach().double() * idx.shape[1]
        if epoch % eval_every == 0 or epoch == optim.epochs:
            rows.append({**evaluate(), "train_loss": total / n})
            epochs.append(epoch)
        if progress is not None:
            progress(epoch, optim.epochs)
        if checkpoint is not None:
            checkpoint(lambda e=epoch: _save_state(e, params, opt, sched, rows, epochs, batch_gens))
    traj = Trajectory(np.asarray(epochs, float), {k: torch.stack([r[k] for r in rows]) for k in OBSERVABLES},
                      time_name="epoch", source=kind, meta={"optimal_loss": opt_loss, "M": n})
    final = {k: v.detach() for k, v in params.items()}
    return Fit(final, traj, attention_maps(kind, final, test, attn, a).double(), epoch_maps=_epoch_maps(rows))


# -- the vanilla transformer ------------------------------------------------------------------------------------------


@torch.no_grad()
def vanilla_eval(model: VanillaTransformer, c: Tensor, chunk: int = 256) -> tuple[float, Tensor]:
    """Exact MLM loss on c (all L masked copies) and the mean attention map of each layer, (n_layers, L, L)."""
    total, maps = 0.0, 0.0
    for start in range(0, c.shape[0], chunk):
        part = c[start:start + chunk]
        logits, m = model.mlm_logits(part, with_maps=True)
        total += float(mlm_loss(logits, part)) * part.shape[0]
        maps = maps + m.double().sum(1)
    return total / c.shape[0], maps / c.shape[0]


def vanilla_map(layer_maps: Tensor) -> Tensor:
    """Fig. 2b's map: the only layer's, or the average of the last two layers' (paper, 3 layers)."""
    return layer_maps[-2:].mean(0)


def train_vanilla(
    data: PottsData,
    *,
    n_layers: int,
    seed: int,
    optim: Optim = Optim(lr=1e-3, epochs=60),
    d: int = 20,
    head: Literal["uva", "linear"] = "uva",
    mask: Literal["random", "all"] = "random",
    M: int | None = None,
    eval_every: int = 1,
    n_eval: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    checkpoint: Checkpoint | None = None,
    resume: dict | None = None,
) -> Fit:
    """Train the UvA transformer by MLM; evaluate every ``eval_every`` epochs on ``n_eval`` test sequences
    (``checkpoint`` / ``resume`` as in :func:`train_stacked`). ``epoch_maps`` holds Fig. 2b's map of each of these
    evaluations (on the ``n_eval`` sequences), ``maps`` the final one on the whole test set."""
    device = data.train.device
    train = data.train if M is None else data.train[:M]
    test, J, L, C = data.test, data.potts.J, data.potts.L, data.potts.C
    g_init, g_batch = model_generators(seed, "cpu")[0], model_generators(seed, device)[1]
    model = VanillaTransformer(C, L, d, n_layers, head, generator=g_init).to(device)
    n = train.shape[0]
    steps_per_epoch = -(-n // optim.batch)
    params = dict(model.named_parameters())
    opt, sched = _optimizer(list(params.values()), optim, optim.epochs * steps_per_epoch)
    opt_loss = data.optimal_loss
    probe = test if n_eval is None else test[:n_eval]

    def evaluate(c: Tensor) -> dict[str, Tensor]:
        loss, maps = vanilla_eval(model, c)
        A = vanilla_map(maps)
        return {"test_loss": torch.tensor([loss], dtype=torch.float64), "gap": torch.tensor([loss - opt_loss]),
                "recon_err": metrics.recon_error(A, J).reshape(1).cpu(),
                "corr": metrics.corr_offdiag(A, J).reshape(1).cpu(), "map": A[None].float().cpu()}

    if resume is not None:
        start = _load_state(resume, params, opt, sched, [g_batch]) + 1
        rows, epochs = resume["rows"], resume["epochs"]
    else:
        rows, epochs, start = [{**evaluate(probe), "train_loss": torch.tensor([float("nan")])}], [0], 1
    for epoch in range(start, optim.epochs + 1):
        perm = torch.randperm(n, generator=g_batch, device=device)
        total = 0.0
        for k in range(steps_per_epoch):
            c = train[perm[k * optim.batch:(k + 1) * optim.batch]]
            if mask == "random":
                sites = torch.randint(0, L, (c.shape[0],), generator=g_batch, device=device)
                logits = model(model.masked_inputs(c, sites))[torch.arange(c.shape[0], device=device), sites]
                loss = torch.nn.functional.cross_entropy(logits, c[torch.arange(c.shape[0], device=device), sites])
            else:
                logits, _ = model.mlm_logits(c)
                loss = mlm_loss(logits, c)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total += float(loss.detach()) * c.shape[0]
        if epoch % eval_every == 0 or epoch == optim.epochs:
            rows.append({**evaluate(probe), "train_loss": torch.tensor([total / n])})
            epochs.append(epoch)
        if progress is not None:
            progress(epoch, optim.epochs)
        if checkpoint is not None:
            checkpoint(lambda e=epoch: _save_state(e, params, opt, sched, rows, epochs, [g_batch]))
    traj = Trajectory(np.asarray(epochs, float),
                      {k: torch.stack([r[k].double().cpu() for r in rows]) for k in OBSERVABLES},
                      time_name="epoch", source=f"vanilla{n_layers}", meta={"optimal_loss": opt_loss, "M": n})
    loss, maps = vanilla_eval(model, test)
    A = vanilla_map(maps)
    extra = {"test_loss": loss, "layer_maps": maps.cpu()}
    return Fit({k: v.detach() for k, v in model.state_dict().items()}, traj, A[None], extra,
               epoch_maps=_epoch_maps(rows))


# -- the paired API ---------------------------------------------------------------------------------------------------


def simulate(data: PottsData, model: Literal["factored", "vanilla1", "vanilla3"] = "factored", *,
             seeds: Sequence[int] = (0,), optim: Optim | None = None, **kw) -> Trajectory:
    """MLM training of one architecture as a Trajectory over epochs (observables ``OBSERVABLES``, (T, S));
    :func:`attnlab.potts.theory.potts_optimum` returns the same observables for the exact Potts conditionals."""
    if model == "factored":
        return train_stacked("factored", data, seeds=seeds, optim=optim or Optim(), **kw).trajectory
    if model in ("vanilla1", "vanilla3"):
        return train_vanilla(data, n_layers=int(model[-1]), seed=seeds[0], optim=optim or Optim(lr=1e-3, epochs=60),
                             **kw).trajectory
    raise ValueError(f"model {model!r} is not known; allowed: factored, vanilla1, vanilla3")
