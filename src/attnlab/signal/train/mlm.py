"""Masked-language-model training of the encoder (paper Figs. 1f, 4, C.2; App. A.1, A.3).

The paper's optimiser (HF Trainer semantics): AdamW (β = (0.9, 0.999), eps 1e-8, weight decay 0.01 on weights,
none on biases), a linear schedule with warm-up over the first 5% of the steps, gradient-norm clipping at 1.0,
batch 64, mask probability 0.15. P models (slots: one β and α_SA each, and/or several seeds) train together in
one batched computation on the same batches; clipping is per slot and AdamW is elementwise, so no slot influences
another. ``micro_batch`` accumulates each step's gradient over micro-batches (the same step in less memory: Fig.
1f's 60 layers at T = 512 on one GPU).

``train_mlm`` returns a :class:`Trajectory` over steps with, per slot, the training loss (mean over the logging
interval), the held-out loss, and the attention entropy S/log T and IPR of every layer on held-out sequences.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnlab.core import rng
from attnlab.core.trajectory import Trajectory
from attnlab.signal.arch import Architecture, qk_std_from_beta
from attnlab.signal.data import sequences as data
from attnlab.signal.model import Encoder


@dataclass(frozen=True)
class Optim:
    """The paper's optimiser settings (App. A)."""

    steps: int = 1000
    lr: float = 5e-4
    batch: int = 64
    warmup_ratio: float = 0.05
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    mask_prob: float = 0.15
    log_every: int = 25
    n_eval: int = 256
    micro_batch: int | None = None  # gradient accumulation over micro-batches of this size (None: one batch)


def linear_schedule(step: int, steps: int, warmup_ratio: float) -> float:
    """Multiplier of the learning rate: linear warm-up to 1, then linear decay to 0 (HF ``linear``)."""
    warm = math.ceil(warmup_ratio * steps)
    if step < warm:
        return step / max(1, warm)
    return max(0.0, (steps - step) / max(1, steps - warm))


def clip_per_slot(params: list[torch.nn.Parameter], max_norm: float) -> torch.Tensor:
    """Scale each slot's gradient to global norm ≤ max_norm (torch clip_grad_norm_ semantics); returns the norms."""
    sq = sum(p.grad.pow(2).reshape(p.shape[0], -1).sum(1) for p in params if p.grad is not None)
    norms = torch.sqrt(sq)
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for p in params:
        if p.grad is not None:
            p.grad.mul_(scale.reshape(-1, *([1] * (p.ndim - 1))))
    return norms


def _slot_losses(model: Encoder, inputs: torch.Tensor, labels: torch.Tensor, hook=None, total: bool = False
                 ) -> torch.Tensor:
    """Per-slot cross-entropy over the masked positions: its mean, or its sum (``total``)."""
    pos = torch.nonzero(labels.reshape(-1) >= 0).flatten()
    logits = model(inputs, positions=pos, hook=hook)  # (P, M, V)
    target = labels.reshape(-1)[pos]
    ce = torch.nn.functional.cross_entropy(logits.reshape(-1, model.vocab), target.repeat(model.P), reduction="none")
    return ce.reshape(model.P, -1).sum(1) if total else ce.reshape(model.P, -1).mean(1)


def _backward(model: Encoder, inputs: torch.Tensor, labels: torch.Tensor, micro: int | None) -> torch.Tensor:
    """Per-slot batch loss (mean over its masked positions) with its gradient accumulated in the parameters: in one
    pass, or over micro-batches of ``micro`` sequences, each adding its share Σ_micro CE / M_batch (the same
    gradient, up to rounding, in 1/k of the activation memory)."""
    if micro is None or micro >= inputs.shape[0]:
        losses = _slot_losses(model, inputs, labels)
        losses.sum().backward()
        return losses.detach()
    n = (labels >= 0).sum().clamp(min=1)
    out = torch.zeros(model.P, device=inputs.device)
    for i in range(0, inputs.shape[0], micro):
        part = _slot_losses(model, inputs[i:i + micro], labels[i:i + micro], total=True) / n
        part.sum().backward()
        out += part.detach()
    return out


@torch.no_grad()
def evaluate(model: Encoder, inputs: torch.Tensor, labels: torch.Tensor, chunk: int = 64) -> dict[str, torch.Tensor]:
    """Held-out loss per slot and the per-layer attention entropy S/log T and IPR (P, L)."""
    P, L = model.P, len(model.blocks)
    ent, ipr = torch.zeros(P, L), torch.zeros(P, L)
    losses, n = torch.zeros(P), 0
    for i in range(0, inputs.shape[0], chunk):
        x, y = inputs[i:i + chunk], labels[i:i + chunk]
        stats: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def hook(name, t, stats=stats):
            if name.endswith("attn.hook_pattern"):
                layer = int(name.split(".")[1])
                e = -(t * torch.log(t.clamp(min=1e-30))).sum(-1).mean((1, 2, 3)) / math.log(t.shape[-1])
                stats[layer] = (e, (t * t).sum(-1).mean((1, 2, 3)))

        k = x.shape[0]
        losses += _slot_losses(model, x, y, hook).cpu() * k
        for layer, (e, q) in stats.items():
            ent[:, layer] += e.cpu() * k
            ipr[:, layer] += q.cpu() * k
        n += k
    return {"eval_loss": losses / n, "entropy": ent / n, "ipr": ipr / n}


def train_mlm(arch: Architecture, windows: torch.Tensor, vocab: int, opt: Optim = Optim(), *, betas=None, alphas=None,
              eval_windows: torch.Tensor | None = None, gen_init: torch.Generator | None = None,
              gen_data: torch.Generator | None = None, device=None, emb_std: float = 0.1,
              resume: dict[str, Any] | None = None, checkpoint: Callable[[Callable[[], dict]], Any] | None = None,
              progress: Callable[[int], None] | None = None) -> Trajectory:
    """Train P = len(betas) (broadcast with alphas) encoders on MLM over ``windows`` (N, T); see module doc."""
    b = torch.as_tensor(arch.beta if betas is None else betas, dtype=torch.float64).reshape(-1)
    a = torch.as_tensor(arch.alpha_sa if alphas is None else alphas, dtype=torch.float64).reshape(-1)
    b, a = torch.broadcast_tensors(b, a)
    scale = arch.beta_score / arch.beta
    qk = torch.tensor([qk_std_from_beta(float(x) * scale, arch.d, arch.t_init) for x in b], device=device)
    model = Encoder(arch, vocab, b.numel(), gen=gen_init, device=device, qk_std=qk, alpha_sa=a.float(),
                    emb_std=emb_std)
    decay = [p for n, p in model.named_parameters() if not n.split(".")[-1].startswith("b") and n != "head_b"]
    no_decay = [p for n, p in model.named_parameters() if n.split(".")[-1].startswith("b") or n == "head_b"]
    optim = torch.optim.AdamW([{"params": decay, "weight_decay": opt.weight_decay},
                               {"params": no_decay, "weight_decay": 0.0}], lr=opt.lr, eps=1e-8)
    sched = torch.optim.lr_scheduler.LambdaLR(optim, lambda s: linear_schedule(s, opt.steps, opt.warmup_ratio))
    windows = windows.to(device)
    ev = windows[: opt.n_eval] if eval_windows is None else eval_windows.to(device)
    eval_gen = rng.generator(12345, windows.device)
    ev_in, ev_lab = data.mask_tokens(ev, vocab, eval_gen, opt.mask_prob)
    hist: dict[str, list] = {"step": [], "loss": [], "eval_loss": [], "entropy": [], "ipr": []}
    step, running, count = 0, torch.zeros(model.P), 0
    if resume is not None:
        model.load_state_dict(resume["model"])
        optim.load_state_dict(resume["optim"])
        sched.load_state_dict(resume["sched"])
        hist, step, running, count = resume["hist"], resume["step"], resume["running"], resume["count"]

    def record(train_loss: torch.Tensor) -> None:
        e = evaluate(model, ev_in, ev_lab)
        hist["step"].append(step)
        hist["loss"].append(train_loss.numpy())
        for k in ("eval_loss", "entropy", "ipr"):
            hist[k].append(e[k].numpy())

    if step == 0:
        e0 = evaluate(model, ev_in, ev_lab)["eval_loss"]
        record(e0)
    params = [p for p in model.parameters() if p.requires_grad]
    while step < opt.steps:
        idx = torch.randint(0, windows.shape[0], (opt.batch,), generator=gen_data, device=windows.device)
        inputs, labels = data.mask_tokens(windows[idx], vocab, gen_data, opt.mask_prob)
        optim.zero_grad(set_to_none=True)
        losses = _backward(model, inputs, labels, opt.micro_batch)
        clip_per_slot(params, opt.max_grad_norm)
        optim.step()
        sched.step()
        step += 1
        running += losses.cpu()
        count += 1
        if step % opt.log_every == 0 or step == opt.steps:
            record(running / count)
            running, count = torch.zeros(model.P), 0
            if checkpoint is not None:
                checkpoint(lambda step=step, running=running, count=count: {
                    "model": model.state_dict(), "optim": optim.state_dict(), "sched": sched.state_dict(),
                    "hist": hist, "step": step, "running": running, "count": count})
        if progress is not None:
            progress(step)
    return history(hist, meta={"P": model.P, "vocab": vocab, "lr": opt.lr})


def history(hist: dict[str, list], meta: dict[str, Any] | None = None) -> Trajectory:
    """The logged steps of ``train_mlm`` (its checkpoint's ``hist``) as a trajectory over the step axis."""
    obs = {k: np.stack(hist[k]) for k in ("loss", "eval_loss", "entropy", "ipr")}
    return Trajectory(np.asarray(hist["step"]), obs, time_name="step", source="training", meta=meta or {})
