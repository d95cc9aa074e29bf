"""Adam on sparse modular addition, many seeds in one vectorised computation (paper 4 App. A; paper App. A, Sec. 9).

The loop reads top to bottom like a plain PyTorch training script; the twists are the leading seed axis S on
every parameter and the step itself: ``step.loss_and_grads`` (the backward pass written out) and a packed Adam,
the same numbers as autograd and torch.optim.Adam in a tenth of the kernels. Seed s's gradient is exactly
∂L_s/∂θ_s and Adam is element-wise, so training S seeds together gives each seed the run it would have alone (up
to the summation order of batched kernels). Each seed draws its training set, test set, initialisation, batch
order and dropout masks from its own streams (``streams.py``: attnlab's named ones, or pal's), so a seed's run
does not depend on which seeds train with it.

Recorded (``History``): every ``step_log_every`` steps the mini-batch loss and per-parameter gradient norms;
every ``log_every`` epochs the full-batch train loss/accuracy, 𝓔 = E[1 − p̂(y|x)], test and unseen accuracy,
full-batch per-parameter gradient norms ("full-batch" curves of Fig. 9), min token / ξ norms, decision margin
and the clustering-head monitors; every ``snapshot_every`` epochs all parameters.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from attnlab.clustering.analysis import heads, probe
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.data import Task, encode
from attnlab.clustering.model import ModelSpec, Params, forward, grow_vocab
from attnlab.clustering.train import streams
from attnlab.clustering.train.history import History
from attnlab.clustering.train.runner import EpochRunner, Stepper, graph_supported
from attnlab.clustering.train.step import Adam, Flat, chunked_tail, one_hot
from attnlab.core.config import ConfigError
from attnlab.core.rng import generator, stream_seed


@dataclass
class Data:
    """Per-seed data: train (S, n, N) / (S, n), test, unseen (the complement of each seed's train set)."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    x_unseen: torch.Tensor
    y_unseen: torch.Tensor
    probe_grid: probe.Grid
    space: SpaceIndex | None = None  # set when the probe grid is every sentence in code order (p=2, N=12)


@dataclass
class SpaceIndex:
    """Each seed's sets as positions in the enumerated space: train multiplicities (S, p^N), test and unseen
    codes (S, n)."""

    train_counts: torch.Tensor
    test: torch.Tensor
    unseen: torch.Tensor


def make_data(task: Task, cfg: TrainConfig, seeds: list[int], device: torch.device | str = "cpu") -> Data:
    """Training set of n_train draws with replacement (App. A), test set by ``test_mode``, unseen sentences
    (at most n_test, the same count for every seed), all from each seed's own streams."""
    xs, tests, unseen = [], [], []
    for s in seeds:
        if cfg.streams == "pal":
            x, x_test = streams.pal_data(task, cfg.n_train, cfg.n_test, s)
        else:
            x = task.sample(cfg.n_train, generator(stream_seed(s, "data")))
            x_test = task.test_set(cfg.test_mode, cfg.n_test, x, generator(stream_seed(s, "test")))
        xs.append(x)
        tests.append(x_test)
        u = task.unseen(x, cfg.n_test, generator(stream_seed(s, "unseen")))
        g_perm = generator(stream_seed(s, "unseen:order"))
        unseen.append(u[torch.randperm(len(u), generator=g_perm)])
    n_u = min(len(u) for u in unseen)
    n_t = min(len(t) for t in tests)
    x_train = torch.stack(xs).to(device)
    x_test = torch.stack([t[:n_t] for t in tests]).to(device)
    x_unseen = torch.stack([u[:n_u] for u in unseen]).to(device)
    grid = probe.grid(task, task.probe_grid(device=device), device)
    space = None
    if len(grid.x) == task.space and torch.equal(encode(grid.x, task.p), torch.arange(task.space, device=device)):
        codes = encode(x_train, task.p)
        counts = torch.zeros(len(seeds), task.space, device=device).scatter_add_(1, codes, torch.ones_like(codes,
                                                                                                  dtype=torch.float))
        space = SpaceIndex(counts, encode(x_test, task.p), encode(x_unseen, task.p))
    return Data(x_train, task.labels(x_train), x_test, task.labels(x_test), x_unseen, task.labels(x_unseen), grid,
                space)


def grad_norms(grads: list[torch.Tensor]) -> torch.Tensor:
    """Per-seed L2 norm of each gradient and of all together: (S, G + 1)."""
    norms = torch.stack([g.flatten(1).norm(dim=1) for g in grads], dim=1)
    return torch.cat([norms, norms.norm(dim=1, keepdim=True)], dim=1)


def dropout_masks(gens: list[torch.Generator], p: float, d: int, n: int, like: torch.Tensor) -> torch.Tensor | None:
    """One epoch of MLP dropout masks (S, d, n) from each seed's stream, kept entries scaled by 1/(1 − p)."""
    if not gens:
        return None
    u = torch.stack([torch.rand(d, n, generator=g) for g in gens])
    return (u >= p).to(like.dtype) * (1 / (1 - p))


def epoch_draws(cfg: TrainConfig, batch_gens: list[torch.Generator], drop_gens: list[torch.Generator],
                spec: ModelSpec, n_test: int) -> tuple[torch.Tensor, torch.Tensor | None, tuple | None]:
    """One epoch's batch order (S, n), dropout masks and (pal streams with dropout) the masks of the record after
    it, drawn on the CPU from every seed's generators. pal's streams draw the masks where the public code does:
    from the batch-order generator, one F.dropout per batch, then one for the full train set and one for the
    test set (its per-epoch record, in training mode), which the record uses with ``eval_dropout="on"``."""
    order = torch.stack([streams.epoch_order(cfg.streams, g, cfg.n_train) for g in batch_gens])
    if cfg.streams == "pal" and spec.mlp_dropout:
        n, bs, p, d = cfg.n_train, cfg.batch_size, spec.mlp_dropout, spec.d
        sizes = [bs] * (n // bs) + ([n % bs] if n % bs else [])
        keep = torch.stack([streams.pal_dropout(g, p, sizes, d) for g in batch_gens]).to(cfg.torch_dtype)
        evals = tuple(torch.stack([streams.pal_dropout(g, p, [m], d) for g in batch_gens]).to(cfg.torch_dtype)
                      for m in (n, n_test))
        return order, keep, evals
    like = torch.zeros((), dtype=cfg.torch_dtype)
    return order, dropout_masks(drop_gens, spec.mlp_dropout, spec.d, cfg.n_train, like), None


def eval_masks(cfg: TrainConfig, spec: ModelSpec, data: Data, epoch: int,
               drawn: tuple | None) -> dict[str, torch.Tensor] | None:
    """The dropout masks (S, d, n) of the record at ``epoch`` with ``eval_dropout="on"`` (else None): each seed's
    stream "dropout:eval:<epoch>" (train, test, then unseen sentences), the train and test ones replaced by the
    public code's (``drawn``, pal streams) where it has them (every epoch after the first)."""
    if cfg.eval_dropout == "off" or not spec.mlp_dropout:
        return None
    sets = {"train": data.x_train, "test": data.x_test, "unseen": data.x_unseen}
    gens = [generator(stream_seed(s, f"dropout:eval:{epoch}")) for s in cfg.seeds()]
    like = torch.zeros((), dtype=cfg.torch_dtype)
    out = {k: dropout_masks(gens, spec.mlp_dropout, spec.d, x.shape[1], like).to(x.device) for k, x in sets.items()}
    if drawn is not None:
        out["train"], out["test"] = (m[..., :sets[k].shape[1]].to(sets[k].device)
                                     for m, k in zip(drawn, ("train", "test"), strict=True))
    return out


def ce_per_seed(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    S, B, C = logits.shape
    return F.cross_entropy(logits.reshape(S * B, C), y.reshape(S * B), reduction="none").view(S, B).mean(1)


@torch.no_grad()
def _accuracy(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec,
              keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean CE and accuracy of each seed on (x, y) (MLP dropout masks ``keep`` (S, d, n) if given)."""
    z = forward(params, x, spec, tokens=False, mlp_keep=None if keep is None else keep.transpose(1, 2))["logits"]
    return ce_per_seed(z, y), (z.argmax(-1) == y).float().mean(1)


def evaluate(leaves: Params, data: Data, spec: ModelSpec, task: Task, head_metrics: bool,
             keep: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """Full-batch metrics of every seed (S,) at the current parameters (no optimiser step). ``keep``: dropout
    masks (S, d, n) of the train, test and unseen sets for losses, accuracies and the train gradient measured
    with the dropout on (``eval_dropout``); the head monitors read the model without it."""
    if data.space is not None and keep is None:
        return _evaluate_on_space(leaves, data, data.space, spec, task, head_metrics)
    keep = keep or {}
    acts = forward(leaves, data.x_train, spec, tokens=False,
                   mlp_keep=keep["train"].transpose(1, 2) if "train" in keep else None)
    loss = ce_per_seed(acts["logits"], data.y_train)
    grads = torch.autograd.grad(loss.sum(), list(leaves.values()))
    with torch.no_grad():
        prob = torch.softmax(acts["logits"], -1)
        out = {"train_loss": loss.detach(), "train_acc": (prob.argmax(-1) == data.y_train).float().mean(1),
               "tv_error": 1 - prob.gather(-1, data.y_train[..., None]).squeeze(-1).mean(1)}
        params = {k: v.detach() for k, v in leaves.items()}
        out["test_loss"], out["test_acc"] = _accuracy(params, data.x_test, data.y_test, spec, keep.get("test"))
        out["unseen_loss"], out["unseen_acc"] = _accuracy(params, data.x_unseen, data.y_unseen, spec,
                                                          keep.get("unseen"))
        head = heads.head_metrics(params, spec, task, probe=data.probe_grid, monitors=True)
    return _with_norms_and_monitors(out, leaves, grads, head, task, head_metrics)


def _evaluate_on_space(leaves: Params, data: Data, space: SpaceIndex, spec: ModelSpec, task: Task,
                       head_metrics: bool) -> dict[str, torch.Tensor]:
    """``evaluate`` when the probe grid enumerates the whole space (p = 2, N = 12): one pass of the head metrics'
    product form gives every sentence's ξ (differentiable), the closed-form tail (``step.tail_loss_and_grads``)
    its log-probabilities and the gradient of the train loss, the multiplicity-weighted mean over the space;
    test and unseen metrics are lookups. The same numbers up to rounding as forward passes over the train, test
    and probe sets and autograd, at a fraction of their cost."""
    g, xi, mass, _ = heads.grid_pass(leaves, spec, task, data.probe_grid, logits=False)
    params = {k: v.detach() for k, v in leaves.items()}
    weight = space.train_counts.to(xi.dtype) / data.x_train.shape[1]
    tail = chunked_tail(params, xi.detach().transpose(1, 2), one_hot(g.y[None], spec.n_emb, xi.dtype), spec, weight)
    head = torch.autograd.grad(xi, list(leaves.values()), tail.g_xi.transpose(1, 2), allow_unused=True)
    grads = [tail.grads[k] + h if k in tail.grads and h is not None else tail.grads[k] if h is None else h
             for k, h in zip(leaves, head, strict=True)]
    with torch.no_grad():
        logp = tail.logp                                                                # (S, n_emb, p^N)
        ce = -logp.gather(1, g.y.expand(logp.shape[0], 1, -1)).squeeze(1)
        correct = (_argmax1(logp) == g.y).to(ce.dtype)
        out = {"train_loss": tail.loss, "train_acc": (correct * weight).sum(1),
               "tv_error": 1 - (torch.exp(-ce) * weight).sum(1)}
        for name, codes in (("test", space.test), ("unseen", space.unseen)):
            out[f"{name}_loss"], out[f"{name}_acc"] = ce.gather(1, codes).mean(1), correct.gather(1, codes).mean(1)
        head = heads.pass_metrics(g, xi.detach(), mass.detach(), logp.transpose(1, 2))
    return _with_norms_and_monitors(out, leaves, grads, head, task, head_metrics)


def _argmax1(x: torch.Tensor) -> torch.Tensor:
    """x.argmax(1) (the first maximum) for a short axis 1: a loop over it, 5-10× faster on CPU than argmax."""
    best, idx = x[:, 0], torch.zeros_like(x[:, 0], dtype=torch.long)
    for v in range(1, x.shape[1]):
        better = x[:, v] > best
        best, idx = torch.where(better, x[:, v], best), torch.where(better, v, idx)
    return idx


def _with_norms_and_monitors(out: dict[str, torch.Tensor], leaves: Params, grads: tuple[torch.Tensor, ...],
                             head: dict[str, torch.Tensor], task: Task, head_metrics: bool) -> dict[str, torch.Tensor]:
    """``evaluate``'s record: ``out`` then the gradient norms, min token / ξ norms, margin, head metrics."""
    norms = grad_norms(list(grads))
    out = {"train_loss": out.pop("train_loss"), "train_acc": out.pop("train_acc"), "tv_error": out.pop("tv_error"),
           **{f"grad_{name}": norms[:, i] for i, name in enumerate(leaves)}, "grad_total": norms[:, -1], **out}
    with torch.no_grad():
        out["min_token_norm"] = heads.min_token_norm(leaves, task.p)
        out["min_xi_norm"], out["margin"] = head.pop("min_xi_norm"), head.pop("margin")
        if head_metrics:
            out.update(head)
    return out


class Recorder:
    """Preallocated buffers for the step, epoch and snapshot records of S seeds."""

    def __init__(self, cfg: TrainConfig, names: list[str], S: int, device: torch.device, start_epoch: int) -> None:
        self.cfg = cfg
        total_steps = cfg.epochs * cfg.steps_per_epoch
        n_step = total_steps // cfg.step_log_every if cfg.step_log_every else 0
        self.step_loss = torch.zeros(n_step, S, device=device)
        self.step_grad = torch.zeros(n_step, S, len(names) + 1, device=device)
        self.names = names
        self.epochs: list[int] = []
        self.epoch_rows: list[dict[str, torch.Tensor]] = []
        self.snap_epochs: list[int] = []
        self.snaps: list[Params] = []

    def steps(self, t0: int, loss: torch.Tensor, norms: torch.Tensor) -> None:
        """Record steps t0, t0 + 1, ... (losses (T, S), norms (T, S, G + 1)): every ``step_log_every``-th one."""
        every = self.cfg.step_log_every
        if not every:
            return
        first = (-(t0 + 1)) % every                          # rows first, first + every, ...: steps t ≡ −1 mod every
        if first < len(loss):                               # slices, not index tensors: no host-device sync
            at = (t0 + first + 1) // every - 1
            m = len(range(first, len(loss), every))
            self.step_loss[at:at + m] = loss[first::every]
            self.step_grad[at:at + m] = norms[first::every]

    def epoch(self, epoch: int, metrics: dict[str, torch.Tensor]) -> None:
        self.epochs.append(epoch)
        self.epoch_rows.append({k: v.detach().cpu() for k, v in metrics.items()})

    def snapshot(self, epoch: int, params: Params) -> None:
        self.snap_epochs.append(epoch)
        self.snaps.append({k: v.detach().cpu().clone() for k, v in params.items()})

    def history(self, spec: ModelSpec, task: Task, seeds: list[int]) -> History:
        every = self.cfg.step_log_every
        n = len(self.step_loss)
        step_metrics = {"loss": self.step_loss.cpu().numpy()}
        grads = self.step_grad.cpu().numpy()
        for i, name in enumerate([*self.names, "total"]):
            step_metrics[f"grad_{name}"] = grads[:, :, i]
        epoch_metrics = {k: np.stack([row[k].numpy() for row in self.epoch_rows]) for k in self.epoch_rows[0]}
        snaps = {k: np.stack([s[k].numpy() for s in self.snaps]) for k in self.snaps[0]}
        return History(spec=spec, task=task, seeds=seeds, snapshot_epochs=np.array(self.snap_epochs),
                       snapshots=snaps, epochs=np.array(self.epochs), epoch_metrics=epoch_metrics,
                       steps=np.arange(1, n + 1) * max(every, 1), step_metrics=step_metrics if n else {},
                       steps_per_epoch=self.cfg.steps_per_epoch)

    def state(self) -> dict[str, Any]:
        """A copy of everything recorded so far (the buffers keep filling after a checkpoint)."""
        return {"step_loss": self.step_loss.clone(), "step_grad": self.step_grad.clone(),
                **{k: list(getattr(self, k)) for k in ("epochs", "epoch_rows", "snap_epochs", "snaps")}}

    def load(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)


def _leaves(flat: Flat) -> Params:
    """The packed parameters as autograd leaves (no copy) for the per-epoch record's full-batch gradients."""
    return {k: v.detach().requires_grad_(True) for k, v in flat.views.items()}


def _due(epoch: int, every: int, last: int) -> bool:
    return epoch == 0 or epoch == last or (every > 0 and epoch % every == 0)


def train(cfg: TrainConfig, *, device: torch.device | str = "cpu", params: Params | None = None,
          spec: ModelSpec | None = None, task: Task | None = None, state: dict[str, Any] | None = None,
          on_epoch: Callable[[int, Callable[[], dict[str, Any]]], None] | None = None,
          progress: Callable[[int], None] | None = None, prefetch: bool | None = None,
          batch_gens: list[torch.Generator] | None = None) -> History:
    """Train ``cfg.n_seeds`` models of ``cfg`` together and return their ``History``.

    ``params``/``spec``/``task`` override the config's initialisation, architecture and task (transfer,
    training from a construction). ``on_epoch(epoch, state_fn)`` runs after every epoch (checkpointing:
    ``state_fn()`` is a resumable state); ``state`` resumes from one, bit-identically on CPU.
    ``progress(epochs_done)`` is called after each epoch. ``prefetch`` (default: on CUDA) draws the next epoch's
    batch order while the device still runs the current one; the same numbers either way. ``batch_gens`` replace
    the seeds' batch-order generators (finetuning: ``streams.finetune_gens``).
    """
    device = torch.device(device)
    task = task or cfg.task()
    spec = spec or cfg.spec()
    seeds = cfg.seeds()
    S, dtype = len(seeds), cfg.torch_dtype
    data = make_data(task, cfg, seeds, device)
    if params is None or batch_gens is None:
        init, gens = streams.initial(cfg.streams, spec, seeds, dtype, device, cfg.pal_table_rows)
        params, batch_gens = params if params is not None else init, batch_gens or gens
    init = params
    flat = Flat({k: v.detach().to(device=device, dtype=dtype) for k, v in init.items()})
    adam = Adam(flat, cfg.lr, cfg.mlp_lr_factor, (cfg.beta1, cfg.beta2), cfg.adam_eps, cfg.weight_decay)
    stepper = Stepper(flat, adam, spec, cfg.grad_clip)
    n, bs, spe = cfg.n_train, cfg.batch_size, cfg.steps_per_epoch
    runner = EpochRunner(stepper, n // bs, bs, cfg.cuda_graph and graph_supported(spec, device))
    drop_gens = [generator(stream_seed(s, "dropout")) for s in seeds] \
        if spec.mlp_dropout and cfg.streams != "pal" else []                 # pal: from the batch-order generator
    rec = Recorder(cfg, flat.names, S, device, 0)
    start, pending = 0, None
    if state is not None:
        flat.data.copy_(flat.pack(state["params"]))
        adam.load_state_dict(state["opt"], flat)
        for g, s in zip([*batch_gens, *drop_gens], [*state["batch_gens"], *state.get("dropout_gens", [])], strict=True):
            g.set_state(s)
        rec.load(state["recorder"])
        start, pending = state["epoch"], state.get("pending")
    else:
        rec.epoch(0, evaluate(_leaves(flat), data, spec, task, cfg.head_metrics, eval_masks(cfg, spec, data, 0, None)))
        rec.snapshot(0, flat.views)
    seed_ix = torch.arange(S, device=device)[:, None]
    prefetch = device.type == "cuda" if prefetch is None else prefetch

    for epoch in range(start, cfg.epochs):
        n_test = data.x_test.shape[1]
        order, keep, drawn = (*pending, None)[:3] if pending is not None else epoch_draws(cfg, batch_gens, drop_gens,
                                                                                          spec, n_test)
        order, keep = order.to(device), None if keep is None else keep.to(device)
        xs = one_hot(data.x_train[seed_ix, order].transpose(1, 2), task.p, dtype)                    # (S, p, N, n)
        ys = one_hot(data.y_train[seed_ix, order], spec.n_emb, dtype)                                  # (S, n_emb, n)
        rec.steps(epoch * spe, *runner.run(xs, ys, keep))
        if n % bs:                                                   # the last, partial batch (kept, App. A)
            tail = slice((n // bs) * bs, n)
            rec.steps(epoch * spe + n // bs, *(t[None] for t in stepper(
                xs[..., tail].contiguous(), ys[..., tail].contiguous(), None if keep is None else keep[..., tail])))
        done = epoch + 1
        # on CUDA the epoch runs asynchronously: draw the next epoch's order meanwhile (S generators on the CPU)
        pending = epoch_draws(cfg, batch_gens, drop_gens, spec, n_test) if prefetch and done < cfg.epochs else None
        if _due(done, cfg.log_every, cfg.epochs):
            rec.epoch(done, evaluate(_leaves(flat), data, spec, task, cfg.head_metrics,
                                     eval_masks(cfg, spec, data, done, drawn)))
        if _due(done, cfg.snapshot_every, cfg.epochs):
            rec.snapshot(done, flat.views)
        if progress is not None:
            progress(done)
        if on_epoch is not None:
            on_epoch(done, lambda done=done, pending=pending: {
                "epoch": done, "params": {k: v.clone() for k, v in flat.views.items()}, "opt": adam.state_dict(),
                "batch_gens": [g.get_state() for g in batch_gens], "dropout_gens": [g.get_state() for g in drop_gens],
                "pending": pending, "recorder": rec.state()})
    return rec.history(spec, task, seeds)


def transfer(params: Params, spec: ModelSpec, cfg: TrainConfig, *, device: torch.device | str = "cpu",
             **kwargs: Any) -> History:
    """Finetune trained models on modulus ``cfg.p`` ≥ spec.p (App. A.2, Figs. 6, 14, 15): new token rows ~ N(0,1)
    from each seed's init stream (none when the table already has p' rows, as pal's 3-row table for p' = 3, or
    when p' = p: the same task continued on a new training set with a fresh Adam, as pal's finetune.py allows),
    every other parameter carried over, a fresh Adam state and a new training set of ``cfg.n_train``
    p'-sentences; trains ``cfg.epochs`` epochs. Batch orders (and, pal streams, dropout masks) come from
    ``streams.finetune_gens``: under pal's streams, where the public code's ``finetune.py --seed s`` draws them."""
    if cfg.p < spec.p:
        raise ConfigError(f"key 'p' = {cfg.p}: transfer needs a modulus ≥ the trained p = {spec.p}")
    grown, new_spec = grow_vocab(params, spec, cfg.p, cfg.seeds())
    kwargs.setdefault("batch_gens", streams.finetune_gens(cfg.streams, spec, cfg.seeds()))
    return train(cfg, device=device, params=grown, spec=new_spec, **kwargs)
