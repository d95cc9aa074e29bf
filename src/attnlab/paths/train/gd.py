"""Gradient-descent training of the one-shot model (App. H.1) and head pruning without retraining (Sec. 4.2).

All weights are trained, Q and K included, by Adam on the MSE to ±1 ("binary regression, as in the theory"),
on fresh episodes drawn from the training classes every step; the validation accuracy is checked every
``eval_every`` steps and the best model is kept (best-validation checkpointing). Training runs in float32 on
the run's device; the learned Q/K then feed the Bayesian theory as fixed heads (``model.logit_matrices()``).

Pruning removes heads from the sum of Eq. (2) — the kept heads of a layer rescaled by (H − k)^{-1/2}
(the public code's choice) or not — and re-evaluates the accuracy; no retraining.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch

from attnlab.paths.data.episodes import Tokenizer, sample_episodes
from attnlab.paths.data.images import ImageSet
from attnlab.paths.model import AttentionPathNet

Tensor = torch.Tensor


@dataclass
class GDResult:
    """The best-validation model's state and the training history."""

    state: dict
    best_val: float
    best_step: int
    history: dict[str, list[float]] = field(default_factory=dict)


@torch.no_grad()
def accuracy(net: AttentionPathNet, X: Tensor, y: Tensor, batch: int = 2048) -> float:
    """Fraction of episodes with sign f = y."""
    dev = next(net.parameters()).device
    hits = 0.0
    for i in range(0, X.shape[0], batch):
        f = net(X[i:i + batch].to(dev, torch.float32))
        hits += float((torch.sign(f).cpu() == y[i:i + batch].sign()).sum())
    return hits / X.shape[0]


def train_gd(net: AttentionPathNet, train: ImageSet, tokenizer: Tokenizer, val: tuple[Tensor, Tensor], *,
             steps: int, batch: int = 128, lr: float = 3e-4, eval_every: int = 100,
             generator: torch.Generator, state: dict | None = None,
             progress: Callable[[int], None] | None = None,
             checkpoint: Callable[[Callable[[], dict]], None] | None = None) -> GDResult:
    """Adam on the MSE for ``steps`` steps of ``batch`` fresh training episodes; best validation model kept.

    Episodes are drawn on the CPU from ``generator`` (a CPU generator, its state part of the checkpoint).
    ``state`` (from a checkpoint) resumes; ``checkpoint(get_state)`` is offered after every step.
    """
    dev = next(net.parameters()).device
    opt = torch.optim.Adam(net.parameters(), lr=lr)
    st = state or {"step": 0, "best_val": -1.0, "best_step": 0, "best": None,
                   "history": {"step": [], "train_loss": [], "val_acc": []}}
    if state is not None:
        net.load_state_dict(state["net"])
        opt.load_state_dict(state["opt"])
        generator.set_state(state["generator"])
    running = []
    while st["step"] < steps:
        X, y = sample_episodes(train, batch, tokenizer, generator)
        loss = ((net(X.to(dev, torch.float32)) - y.to(dev, torch.float32)) ** 2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        running.append(float(loss.detach()))
        st["step"] += 1
        if st["step"] % eval_every == 0 or st["step"] == steps:
            acc = accuracy(net, *val)
            h = st["history"]
            h["step"].append(st["step"])
            h["train_loss"].append(sum(running) / len(running))
            h["val_acc"].append(acc)
            running = []
            if acc > st["best_val"]:
                st.update(best_val=acc, best_step=st["step"], best=copy.deepcopy(net.state_dict()))
        if progress is not None:
            progress(st["step"])
        if checkpoint is not None:
            checkpoint(lambda: {**st, "net": net.state_dict(), "opt": opt.state_dict(),
                                "generator": generator.get_state()})
    net.load_state_dict(st["best"])
    return GDResult(st["best"], st["best_val"], st["best_step"], st["history"])


def prune_mask(Hs: Sequence[int], heads: Sequence[tuple[int, int]]) -> list[list[bool]]:
    """Keep-mask per layer with the (layer, head) pairs of ``heads`` removed (0-based)."""
    mask = [[True] * H for H in Hs]
    for ell, h in heads:
        mask[ell][h] = False
    return mask


def pruning_curve(net: AttentionPathNet, order: Sequence[tuple[int, int]], sets: dict[str, tuple[Tensor, Tensor]],
                  max_pruned: int, rescale: bool = True) -> dict[str, list[float]]:
    """Accuracy on every set after pruning the first k heads of ``order``, k = 0..max_pruned (a k that would
    empty a layer gets NaN; :func:`pruning.pruning_order` never asks for one)."""
    out: dict[str, list[float]] = {name: [] for name in sets}
    for k in range(max_pruned + 1):
        mask = prune_mask(net.Hs, order[:k])
        ok = all(any(m) for m in mask)
        net.prune(mask if ok else None, rescale)
        for name, (X, y) in sets.items():
            out[name].append(accuracy(net, X, y) if ok else float("nan"))
    net.prune(None)
    return out


def single_head_drops(net: AttentionPathNet, sets: dict[str, tuple[Tensor, Tensor]],
                      rescale: bool = True) -> dict[str, list[float]]:
    """Accuracy drop (full − pruned) from removing each head alone, heads in (layer, head) order."""
    full = {name: accuracy(net, X, y) for name, (X, y) in sets.items()}
    out: dict[str, list[float]] = {name: [] for name in sets}
    for ell, H in enumerate(net.Hs):
        for h in range(H):
            mask = prune_mask(net.Hs, [(ell, h)])
            ok = all(any(m) for m in mask)
            net.prune(mask if ok else None, rescale)
            for name, (X, y) in sets.items():
                out[name].append(full[name] - accuracy(net, X, y) if ok else float("nan"))
    net.prune(None)
    return out
