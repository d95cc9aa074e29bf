"""The probe grid and chunked forward passes behind every head metric of :mod:`.heads` (paper 4 Secs. 3-4).

A probe is the ``(x, prefix_id, suffix_id)`` triple of :meth:`Task.probe_grid`, a plain (B, N) tensor of
sentences, a :class:`Grid`, or None (the task's own grid). Forward passes are chunked over seeds so that S·B·N·d
stays below ``max_elements``; ``xi_stats`` gives the within-group spreads of ξ that R_suffix, R_perm and the
cluster score are made of.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass

import torch

from attnlab.clustering.data import Task, encode
from attnlab.clustering.model import ModelSpec, Params, forward

MAX_ELEMENTS = 2**25                                  # per forward chunk, ≈ S·B·(N·d·4 + 3h + n_emb) elements


@dataclass(frozen=True)
class Grid:
    """A probe set prepared for the head metrics (``grid``): sentences, their prefix and multiset ids."""

    x: torch.Tensor        # (B, N) sentences
    pre: torch.Tensor      # (B,) prefix id in [0, n_pre)
    mid: torch.Tensor      # (B,) multiset id of the prefix in [0, n_mid)
    mid_pre: torch.Tensor  # (n_pre,) multiset id of each prefix
    y: torch.Tensor        # (B,) labels
    n_pre: int
    n_mid: int
    n_suf: int             # > 0 iff x is the prefix-major product grid: x[i] = (prefix i // n_suf, suffix i % n_suf)


Probe = tuple[torch.Tensor, torch.Tensor, torch.Tensor] | torch.Tensor | Grid | None


def _make_grid(task: Task, x: torch.Tensor, pre: torch.Tensor | None, suf: torch.Tensor | None = None) -> Grid:
    if pre is None:
        pre = torch.unique(encode(x[:, list(task.idx)], task.p), return_inverse=True)[1]
    B = len(pre)
    n_pre = int(pre.max()) + 1 if B else 0
    mid = task.multiset_id(x)
    mid_pre = torch.zeros(n_pre, dtype=torch.long, device=x.device).scatter_(0, pre, mid)
    n_suf = int(suf.max()) + 1 if suf is not None and B else 0
    i = torch.arange(B, device=x.device)
    if not (n_suf and task.spurious and n_pre * n_suf == B and torch.equal(pre, i // n_suf)
            and torch.equal(suf, i % n_suf)):
        n_suf = 0
    return Grid(x, pre, mid, mid_pre, task.labels(x), n_pre, task.n_classes, n_suf)


@functools.lru_cache(maxsize=16)
def _default_grid(task: Task, device: str) -> Grid:
    return _make_grid(task, *task.probe_grid(device=device))


def grid(task: Task, probe: Probe, device: torch.device | str) -> Grid:
    """``probe`` (None: the task's probe grid) prepared once, to pass as ``probe`` to the metrics."""
    if isinstance(probe, Grid):
        return probe
    if probe is None:
        return _default_grid(task, str(device))
    if isinstance(probe, torch.Tensor):
        return _make_grid(task, probe.to(device), None)
    return _make_grid(task, *(t.to(device) for t in probe))


def chunks(params: Params, spec: ModelSpec, x: torch.Tensor,
            max_elements: int = MAX_ELEMENTS) -> Iterator[dict[str, torch.Tensor]]:
    """Forward activations for consecutive seed chunks (S_c models at a time), without gradients."""
    S, B = params["E"].shape[0], x.shape[0]
    per_seed = B * (spec.N * spec.d * 4 + 3 * spec.h + spec.n_emb)
    size = max(1, max_elements // max(per_seed, 1))
    with torch.no_grad():
        for s0 in range(0, S, size):
            yield forward({k: v[s0:s0 + size].detach() for k, v in params.items()}, x, spec)


def collect(params: Params, spec: ModelSpec, x: torch.Tensor, names: tuple[str, ...],
             max_elements: int = MAX_ELEMENTS) -> dict[str, torch.Tensor]:
    parts = [{n: a[n] for n in names} for a in chunks(params, spec, x, max_elements)]
    return {n: torch.cat([p[n] for p in parts]) for n in names}


def group_mean(v: torch.Tensor, g: torch.Tensor, G: int) -> torch.Tensor:
    """Means of v (S, B, d) over the groups g (B,) → (S, G, d)."""
    sums = v.new_zeros(v.shape[0], G, v.shape[2]).index_add_(1, g, v)
    cnt = torch.bincount(g, minlength=G).clamp_min(1).to(v)
    return sums / cnt[None, :, None]


def sq_norm(v: torch.Tensor) -> torch.Tensor:
    return v.pow(2).sum((1, 2))


def xi_stats(xi: torch.Tensor, g: Grid, proj: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """R_suffix, R_perm and cluster_score (head metric 4–6) from ξ (S, B, d), in float64, by the exact
    variance decomposition over prefixes (a multiset is a union of prefixes): only one pass over the B sentences.
    A degenerate ξ (no variance) counts as invariant (R = 0) but unclustered (cluster_score = 0)."""
    xi = xi.double()
    if proj is not None:
        xi = xi @ proj.double()
    S = xi.shape[0]
    if g.n_suf:
        xr = xi.view(S, g.n_pre, g.n_suf, -1)
        m_pre = xr.mean(2)                                                          # (S, P, d)
        within_suf = (xr - m_pre[:, :, None]).pow(2).sum((1, 2, 3))
        n = torch.full((g.n_pre,), float(g.n_suf), dtype=xi.dtype, device=xi.device)
    else:
        m_pre = group_mean(xi, g.pre, g.n_pre)
        within_suf = sq_norm(xi - m_pre[:, g.pre])
        n = torch.bincount(g.pre, minlength=g.n_pre).to(xi)
    w = n[None, :, None]
    mean_all = (w * m_pre).sum(1, keepdim=True) / n.sum()
    m_mid = (w * m_pre).new_zeros(S, g.n_mid, m_pre.shape[2]).index_add_(1, g.mid_pre, w * m_pre)
    m_mid = m_mid / torch.zeros(g.n_mid, dtype=xi.dtype, device=xi.device).index_add_(0, g.mid_pre, n
                                                                                     ).clamp_min(1)[None, :, None]
    total = within_suf + (w * (m_pre - mean_all).pow(2)).sum((1, 2))
    within_mid = within_suf + (w * (m_pre - m_mid[:, g.mid_pre]).pow(2)).sum((1, 2))
    energy = within_suf + (w * m_pre.pow(2)).sum((1, 2))                                     # Σ ||ξ||²
    tot_pre = sq_norm(m_pre - m_pre.mean(1, keepdim=True))
    within_perm = sq_norm(m_pre - group_mean(m_pre, g.mid_pre, g.n_mid)[:, g.mid_pre])
    ok, ok_pre = total > 1e-12 * energy, tot_pre > 1e-12 * sq_norm(m_pre)
    zero = torch.zeros_like(total)
    return {"cluster_score": torch.where(ok, 1 - within_mid / total.clamp_min(1e-300), zero),
            "R_suffix": torch.where(ok, within_suf / total.clamp_min(1e-300), zero),
            "R_perm": torch.where(ok_pre, within_perm / tot_pre.clamp_min(1e-300), zero)}


def span_projector(params: Params, rtol: float = 1e-6) -> torch.Tensor:
    """Orthogonal projector (S, d, d) onto span{E(v)} ∪ span{w_i} (head metric 6)."""
    M = torch.cat([params["E"], params["W"]], dim=1).detach().double()
    _, s, vh = torch.linalg.svd(M, full_matrices=False)
    keep = (s > rtol * s[:, :1]).to(M)
    return vh.transpose(-1, -2) @ (keep[..., None] * vh)
