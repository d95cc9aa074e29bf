"""An epoch of Adam steps for S seeds: run eagerly, or captured once as a CUDA graph and replayed every epoch.

On CUDA the step of this tiny model is bound by kernel launches (measured on an H100: 5 ms per Adam step at
2 000 seeds with autograd, the same as on 2 CPU cores). ``step.py`` cut a step to 120 operators; a CUDA graph of
all the epoch's full batches (``EpochRunner(graph=True)``) launches them with one call per epoch: the host copies
the epoch's batches into static buffers, replays the graph and reads the per-step losses and gradient norms back.
The graph replays the very kernels the eager steps launch, so both give the same numbers. It is used where
``graph_supported`` says so: a CUDA device and a step without autograd fallbacks (the closed-form normalisers
sphere and rmsnorm, activations with a closed-form derivative).
"""

from __future__ import annotations

import torch

from attnlab.clustering.model import ModelSpec
from attnlab.clustering.train.step import ACT_BACKWARD, Adam, Flat, loss_and_grads


def packed_norms(grad: torch.Tensor, group: torch.Tensor, n_groups: int) -> torch.Tensor:
    """Per-seed L2 norm of each named tensor of a packed (S, P) gradient (column j belongs to tensor ``group[j]``)
    and of all of them: (S, G + 1)."""
    sq = grad.new_zeros(grad.shape[0], n_groups).index_add_(1, group, grad * grad)
    return torch.cat([sq, sq.sum(1, keepdim=True)], 1).sqrt()


class Stepper:
    """One Adam step of every seed on a batch: closed-form loss and gradients, per-tensor gradient norms, the
    optional per-seed clipping of the total norm, the packed Adam update. Returns (loss (S,), norms (S, G + 1))."""

    def __init__(self, flat: Flat, adam: Adam, spec: ModelSpec, clip: float | None) -> None:
        self.flat, self.adam, self.spec, self.clip = flat, adam, spec, clip
        device = flat.data.device
        self.group = torch.cat([torch.full((n,), i, device=device) for i, n in enumerate(flat.sizes)])

    def __call__(self, xb: torch.Tensor, yb: torch.Tensor, kb: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        loss, grads = loss_and_grads(self.flat.views, xb, yb, self.spec, kb)
        grad = self.flat.pack(grads)
        norms = packed_norms(grad, self.group, len(self.flat.names))
        if self.clip is not None:
            grad = grad * (self.clip / (norms[:, -1:] + 1e-6)).clamp(max=1.0)
        self.adam.step(self.flat.data, grad)
        return loss, norms


def graph_supported(spec: ModelSpec, device: torch.device) -> bool:
    """A CUDA device, and a step made of kernels only (no autograd fallback for the normaliser or activation)."""
    return device.type == "cuda" and spec.norm in ("sphere", "rmsnorm") and spec.activation in ACT_BACKWARD


class EpochRunner:
    """The ``n_full`` full batches of size ``bs`` of every epoch. ``run(xs, ys, keep)`` takes the epoch's one-hot
    tokens (S, p, N, n), labels (S, n_emb, n) and dropout masks (S, d, n) or None and returns the per-step losses
    (n_full, S) and gradient norms (n_full, S, G + 1)."""

    def __init__(self, stepper: Stepper, n_full: int, bs: int, graph: bool) -> None:
        self.stepper, self.n_full, self.bs, self.graph = stepper, n_full, bs, graph
        self._graph: torch.cuda.CUDAGraph | None = None
        self._static: list[torch.Tensor | None] = []

    def run(self, xs: torch.Tensor, ys: torch.Tensor, keep: torch.Tensor | None) -> tuple[torch.Tensor, ...]:
        if not self.graph:
            return self._steps(xs, ys, keep)
        if self._graph is None:
            self._capture(xs, ys, keep)
        for buf, new in zip(self._static[:3], (xs, ys, keep), strict=True):
            if buf is not None:
                buf.copy_(new)
        self._graph.replay()
        self.stepper.adam.t += self.n_full
        return self._static[3], self._static[4]

    def _steps(self, xs: torch.Tensor, ys: torch.Tensor, keep: torch.Tensor | None,
               n: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        losses, norms = [], []
        for i in range(self.n_full if n is None else n):
            sl = slice(i * self.bs, (i + 1) * self.bs)
            loss, norm = self.stepper(xs[..., sl].contiguous(), ys[..., sl].contiguous(),
                                      None if keep is None else keep[..., sl].contiguous())
            losses.append(loss)
            norms.append(norm)
        return torch.stack(losses), torch.stack(norms)

    def _capture(self, xs: torch.Tensor, ys: torch.Tensor, keep: torch.Tensor | None) -> None:
        """Warm up one step on a side stream (state saved and restored), then capture the epoch's steps."""
        adam, flat = self.stepper.adam, self.stepper.flat
        adam.capturable()
        static = [xs.clone(), ys.clone(), None if keep is None else keep.clone()]
        saved = [t.clone() for t in (flat.data, adam.m, adam.v, adam.t_dev)]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self._steps(*static, n=1)
        torch.cuda.current_stream().wait_stream(side)
        for t, s in zip((flat.data, adam.m, adam.v, adam.t_dev), saved, strict=True):
            t.copy_(s)
        self._graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self._graph):
            out = self._steps(*static)
        self._static = [*static, *out]
