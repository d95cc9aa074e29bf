"""Measuring a clustering head in trained parameters (paper 4 Secs. 3-4; the head metrics of
docs/studies/clustering.md, the Sec. 4.4 monitors, App. A.1 sparsity).

Every function takes stacked parameters with a leading seed axis S (:mod:`attnlab.clustering.model`) and returns
tensors of shape (S,) or (S, ...), computed under ``torch.no_grad``; nothing couples two seeds. Metrics on sentence
embeddings ξ are evaluated on the probe grid G = {prefixes} × {suffixes} (paper Sec. 2) unless a ``probe`` is given:
either the ``(x, prefix_id, suffix_id)`` triple of :meth:`Task.probe_grid` or a plain (B, N) tensor of sentences.
Forward passes are chunked over seeds so that S·B·N·d stays below ``max_elements``. Time-series detectors (two-stage
learning, spikes) live in :mod:`attnlab.clustering.train.dynamics`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch

from attnlab.clustering.analysis.probe import (  # noqa: F401  (Grid, grid, MAX_ELEMENTS re-exported)
    MAX_ELEMENTS,
    Grid,
    Probe,
    chunks,
    collect,
    grid,
    group_mean,
    span_projector,
    sq_norm,
    xi_stats,
)
from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, Params, activation, normalize, softmax_last, token_table

F64 = torch.float64

EPS_GRID = torch.logspace(-5, 2, 50, dtype=torch.float64)  # paper App. A.1: ε ∈ [1e-5, 1e2], 50 points
HEAD_THRESHOLDS = {"acc_min": 0.9, "r_max": 0.02, "mass_min": 0.9, "fuzzy_min": 0.5}  # head metric 8


# ----------------------------------------------------------------------------------------------- head metrics
def head_metrics(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *, monitors: bool = False,
                 max_elements: int = MAX_ELEMENTS) -> dict[str, torch.Tensor]:
    """Cheap per-epoch monitors (paper Sec. 4.3) from one pass over the probe grid: cluster_score, attn_prefix_mass,
    R_suffix, R_perm, each (S,) float64; with ``monitors`` also min_xi_norm and margin (Sec. 4.4).

    The pass reads the n_emb·N token table Z(v, t) instead of the (S, B, N, d) embeddings of ``forward``
    (ξ = Σ_t a_t V Z(x_t, t)); on the prefix × suffix grid the softmax sums are further split into a prefix
    part and a suffix part, so the cost is O(S·B·d). Equals ``forward`` up to rounding."""
    g = grid(task, probe, params["E"].device)
    S, (B, N), n_emb = params["E"].shape[0], g.x.shape, spec.n_emb
    per_seed = B * (2 * spec.d + spec.h + n_emb + 4) if g.n_suf else B * (N * (n_emb + 3) + 2 * spec.d + spec.h)
    size = max(1, max_elements // max(per_seed, 1))
    out: dict[str, list[torch.Tensor]] = {}
    with torch.no_grad():
        for s0 in range(0, S, size):
            prm = {k: v[s0:s0 + size].detach() for k, v in params.items()}
            xi, mass = _pass(prm, spec, task, g)
            part = pass_metrics(g, xi, mass, _logits_from_xi(prm, spec, xi) if monitors else None)
            for k, v in part.items():
                out.setdefault(k, []).append(v)
    return {k: torch.cat(v) for k, v in out.items()}


def grid_pass(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, logits: bool = True
              ) -> tuple[Grid, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """The pass of ``head_metrics`` over all seeds at once and differentiable: the grid, ξ (S, B, d), the
    attention mass on I (S,) and (unless ``logits=False``) the logits (S, B, n_emb) of every probe sentence
    (training's evaluation on the whole space reads its losses, gradients and head metrics from this one pass)."""
    g = grid(task, probe, params["E"].device)
    xi, mass = _pass(params, spec, task, g)
    return g, xi, mass, _logits_from_xi(params, spec, xi) if logits else None


def pass_metrics(g: Grid, xi: torch.Tensor, mass: torch.Tensor,
                 logits: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """``head_metrics`` from one pass's ξ and attention mass; with ``logits`` also min_xi_norm and margin."""
    out = xi_stats(xi, g)
    out["attn_prefix_mass"] = mass.double()
    if logits is not None:
        out["min_xi_norm"] = xi.norm(dim=-1).amin(-1).double()
        out["margin"] = _margin(logits, g.y).double()
    return out


def _pass(prm: Params, spec: ModelSpec, task: Task, g: Grid) -> tuple[torch.Tensor, torch.Tensor]:
    return (_pass_product if g.n_suf else _pass_table)(prm, spec, task, g)


def _tables(prm: Params, spec: ModelSpec) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention scores q·Z(v,t)/sqrt(d) (S, n_emb, N) and values V Z(v,t) (S, n_emb, N, d)."""
    Z = token_table(prm, spec)
    return ((Z @ prm["q"][:, None, :, None]).squeeze(-1) / spec.d**0.5,
            Z @ prm["V"][:, None].transpose(-1, -2))


def _pass_table(prm: Params, spec: ModelSpec, task: Task, g: Grid) -> tuple[torch.Tensor, torch.Tensor]:
    """ξ (S, B, d) and the attention mass on I (S,) for arbitrary sentences."""
    score, VZ = _tables(prm, spec)
    N = g.x.shape[1]
    a = softmax_last(score[:, g.x, torch.arange(N, device=g.x.device)])              # (S, B, N)
    onehot = torch.nn.functional.one_hot(g.x, spec.n_emb).to(a)                     # (B, N, n_emb)
    xi = (a[..., None] * onehot).flatten(2) @ VZ.transpose(1, 2).flatten(1, 2)       # (S, B, d)
    return xi, a[..., list(task.idx)].sum(-1).mean(-1)


def _pass_product(prm: Params, spec: ModelSpec, task: Task, g: Grid) -> tuple[torch.Tensor, torch.Tensor]:
    """Same on the prefix-major grid: softmax numerators/denominators summed separately over I and its
    complement (with their own max shifts), then combined for every (prefix, suffix) pair."""
    score, VZ = _tables(prm, spec)

    def half(tokens: torch.Tensor, pos: list[int]) -> tuple[torch.Tensor, ...]:
        t = torch.tensor(pos, device=tokens.device)
        s = score[:, tokens[:, pos], t]                                              # (S, n, m)
        m = s.amax(-1)
        w = torch.exp(s - m[..., None])
        return m, w.sum(-1), (w[..., None] * VZ[:, tokens[:, pos], t]).sum(-2)        # (S,n), (S,n), (S,n,d)

    mp, ap, vp = half(g.x[::g.n_suf], list(task.idx))
    ms, as_, vs = half(g.x[:g.n_suf], list(task.spurious))
    m = torch.maximum(mp[:, :, None], ms[:, None, :])
    ep, es = torch.exp(mp[:, :, None] - m), torch.exp(ms[:, None, :] - m)             # (S, P, Q)
    den = ap[:, :, None] * ep + as_[:, None, :] * es
    xi = (vp[:, :, None] * ep[..., None] + vs[:, None] * es[..., None]) / den[..., None]
    return xi.flatten(1, 2), (ap[:, :, None] * ep / den).flatten(1).mean(-1)


def _logits_from_xi(params: Params, spec: ModelSpec, xi: torch.Tensor) -> torch.Tensor:
    """ζ = E(ξ + U σ(W Norm(ξ))) (the tail of ``model.forward``, biases and gains included), (S, B, n_emb).

    Computed feature-major, (S, features, B): with B in the thousands and d = 2 the batched products are 4-5×
    faster on CPU in this layout than with the short feature axis last."""
    gain = params.get("g_mlp")
    xn = normalize(xi, spec, None if gain is None else gain[:, None]).transpose(1, 2).contiguous()  # (S, d, B)
    pre = params["W"] @ xn
    if "bW" in params:
        pre = pre + params["bW"][:, :, None]
    mlp = params["U"] @ activation(spec.activation)(pre)
    if "bU" in params:
        mlp = mlp + params["bU"][:, :, None]
    return (params["E"] @ (xi.transpose(1, 2) + mlp)).transpose(1, 2).contiguous()


def attn_prefix_mass(params: Params, spec: ModelSpec, task: Task, probe: Probe = None) -> torch.Tensor:
    """mean_x Σ_{t∈I} a_t(x) (head metric 1): k/N for uniform attention, ≈ 1 for an ideal head. (S,)"""
    g = grid(task, probe, params["E"].device)
    return collect(params, spec, g.x, ("attn",))["attn"][..., list(task.idx)].sum(-1).mean(-1)


def attn_by_value(params: Params, spec: ModelSpec, task: Task, probe: Probe = None) -> torch.Tensor:
    """Mean attention a_t on informative tokens with value v, v < p (head metric 1; Fig. 5 remark). (S, p);
    NaN for a value absent from the informative positions of the probe."""
    g = grid(task, probe, params["E"].device)
    a = collect(params, spec, g.x, ("attn",))["attn"][..., list(task.idx)].double()   # (S, B, k)
    onehot = torch.nn.functional.one_hot(g.x[:, list(task.idx)], task.p).double()      # (B, k, p)
    return torch.einsum("sbk,bkv->sv", a, onehot) / onehot.sum((0, 1))


def _Z(params: Params, spec: ModelSpec, p: int) -> torch.Tensor:
    """Normalised token embeddings Z(v, t) for v < p, all t: (S, p, N, d)."""
    e = params["E"][:, :p, None, :] + params["P"][:, None, :, :]
    gain = params.get("g_attn")
    return normalize(e.detach(), spec, None if gain is None else gain[:, None, None].detach())


def _diameter(X: torch.Tensor) -> torch.Tensor:
    """max pairwise distance within the second-to-last axis of X (..., T, d); 0 when T ≤ 1."""
    if X.shape[-2] <= 1:
        return X.new_zeros(X.shape[:-2])
    return torch.cdist(X, X).amax((-1, -2))


def pos_collapse(params: Params, spec: ModelSpec, task: Task) -> dict[str, torch.Tensor]:
    """Positional collapse (head metric 2, property P1): ``in``/``out`` = max_{t,t'} ||P(t) − P(t')|| /
    mean_t ||P(t)|| over t ∈ I / t ∉ I, (S,); ``in_Z``/``out_Z`` the same on Z(v, ·) for each v, (S, p)."""
    P = params["P"].detach().double()
    Z = _Z(params, spec, task.p).double()
    out = {}
    for name, ts in (("in", list(task.idx)), ("out", list(task.spurious))):
        if not ts:
            out[name], out[name + "_Z"] = P.new_zeros(P.shape[0]), P.new_zeros(P.shape[0], task.p)
            continue
        Pt, Zt = P[:, ts], Z[:, :, ts]
        out[name] = _diameter(Pt) / Pt.norm(dim=-1).mean(-1).clamp_min(1e-300)
        out[name + "_Z"] = _diameter(Zt) / Zt.norm(dim=-1).mean(-1).clamp_min(1e-300)
    return out


def value_collapse_out(params: Params, spec: ModelSpec, task: Task) -> torch.Tensor:
    """mean_{t∉I} max_{v,v'} ||VZ(v,t) − VZ(v',t)|| / mean_{t∈I} (same) (head metric 3): ≈ 0 when V
    collapses the spurious tokens (the "faulty attention corrected by value" head of Fig. 2). (S,)"""
    VZ = _Z(params, spec, task.p).double() @ params["V"].detach().double()[:, None].transpose(-1, -2)
    spread = _diameter(VZ.transpose(1, 2))                                              # (S, N)
    if not task.spurious:
        return spread.new_zeros(spread.shape[0])
    return spread[:, list(task.spurious)].mean(-1) / spread[:, list(task.idx)].mean(-1).clamp_min(1e-300)


def xi_invariance(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *,
                  project: bool = False) -> dict[str, torch.Tensor]:
    """R_suffix, R_perm, cluster_score (head metric 4–6), each (S,). ``project``: ξ projected on
    span{E(v)} ∪ span{w_i} first (the directions the MLP and unembedding read; matters only for d > 2)."""
    g = grid(task, probe, params["E"].device)
    xi = collect(params, spec, g.x, ("xi",))["xi"]
    return xi_stats(xi, g, span_projector(params) if project else None)


def R_suffix(params: Params, spec: ModelSpec, task: Task, probe: Probe = None) -> torch.Tensor:
    """Fraction of ξ-variance due to the suffix (head metric 4); 0 = suffix-invariant. (S,)"""
    return xi_invariance(params, spec, task, probe)["R_suffix"]


def R_perm(params: Params, spec: ModelSpec, task: Task, probe: Probe = None) -> torch.Tensor:
    """Variance of the suffix-averaged ξ̄_pre within multisets over its total (head metric 5); 0 = invariant. (S,)"""
    return xi_invariance(params, spec, task, probe)["R_perm"]


def cluster_score(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *,
                  project: bool = False) -> torch.Tensor:
    """R² of ξ explained by the prefix multiset over the grid (head metric 6); 1 for an ideal head. (S,)"""
    return xi_invariance(params, spec, task, probe, project=project)["cluster_score"]


# ----------------------------------------------------------------------------------------------- clusters
def cluster_labels(xi: torch.Tensor, rel_threshold: float = 0.02) -> torch.Tensor:
    """Single-linkage clusters of ξ (S, B, d) at distance ≤ rel_threshold·diam (head metric 7), i.e. the
    connected components of the threshold graph, found per seed by breadth-first search whose frontier is
    compared (in one matrix product) with the points not reached yet. Returns (S, B) long cluster indices
    0, 1, ... in order of first appearance."""
    out = torch.zeros(xi.shape[:2], dtype=torch.long)
    for s, Xt in enumerate(xi.detach().double().cpu()):
        floor = 1e-24 * float(Xt.pow(2).sum(-1).max()) if len(Xt) else 0.0  # rounding level: coincident points
        Xt = Xt - Xt.mean(0)
        sq = Xt.pow(2).sum(-1)
        diam2 = max((float(torch.addmm(sq[i:i + 128, None] + sq[None], Xt[i:i + 128], Xt.T, alpha=-2).max())
                     for i in range(0, len(Xt), 128)), default=0.0)          # small blocks: cache-friendly
        tau2 = max(rel_threshold**2 * diam2, floor)
        X, sqn = Xt.numpy(), sq.numpy()
        comp = np.full(len(X), -1, dtype=np.int64)
        todo = np.arange(len(X))                      # points not reached yet
        n = 0
        while todo.size:
            frontier, todo = todo[:1], todo[1:]
            comp[frontier] = n
            while frontier.size and todo.size:
                hit = np.zeros(todo.size, dtype=bool)
                for f in np.array_split(frontier, -(-frontier.size // 128)):
                    hit |= ((sqn[f, None] + sqn[None, todo] - 2 * (X[f] @ X[todo].T)) <= tau2).any(0)
                frontier, todo = todo[hit], todo[~hit]
                comp[frontier] = n
            n += 1
        out[s] = torch.from_numpy(comp)
    return out


def clusters(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *,
             rel_threshold: float = 0.02) -> dict[str, torch.Tensor]:
    """n_clusters (S,) long, cluster_purity (S,) (fraction of clusters holding a single label) and the
    labels (S, B) of :func:`cluster_labels` on the probe grid (head metric 7; ideal = C(k+p−1, k))."""
    g = grid(task, probe, params["E"].device)
    lab = cluster_labels(collect(params, spec, g.x, ("xi",))["xi"], rel_threshold)
    n, purity = [], []
    big = torch.iinfo(torch.long).max
    y = g.y.cpu()
    for f in lab:
        roots = torch.unique(f)
        lo = torch.full_like(f, big).scatter_reduce_(0, f, y, reduce="amin")
        hi = torch.full_like(f, -1).scatter_reduce_(0, f, y, reduce="amax")
        n.append(len(roots))
        purity.append((lo[roots] == hi[roots]).double().mean())
    return {"n_clusters": torch.tensor(n, dtype=torch.long),
            "cluster_purity": torch.tensor([float(v) for v in purity], dtype=torch.float64), "labels": lab}


def n_clusters(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *,
               rel_threshold: float = 0.02) -> torch.Tensor:
    return clusters(params, spec, task, probe, rel_threshold=rel_threshold)["n_clusters"]


def cluster_purity(params: Params, spec: ModelSpec, task: Task, probe: Probe = None, *,
                   rel_threshold: float = 0.02) -> torch.Tensor:
    return clusters(params, spec, task, probe, rel_threshold=rel_threshold)["cluster_purity"]


# ----------------------------------------------------------------------------------------------- taxonomy
def head_type(metrics: Mapping[str, object], **thresholds: float) -> list[str]:
    """Head taxonomy of head metric 8 from per-seed metrics (keys test_acc, attn_prefix_mass, R_suffix,
    R_perm; arrays (S,) or scalars): failed | ideal | value_corrected | fuzzy | partial.
    Thresholds (defaults ``HEAD_THRESHOLDS``): acc_min, r_max, mass_min, fuzzy_min."""
    th = {**HEAD_THRESHOLDS, **thresholds}
    unknown = set(thresholds) - set(HEAD_THRESHOLDS)
    if unknown:
        raise ValueError(f"unknown head_type thresholds {sorted(unknown)}; allowed: {sorted(HEAD_THRESHOLDS)}")
    m = {k: np.atleast_1d(_np(metrics[k])) for k in ("test_acc", "attn_prefix_mass", "R_suffix", "R_perm")}
    out = []
    for acc, mass, rs, rp in zip(*np.broadcast_arrays(*m.values()), strict=True):
        if not acc >= th["acc_min"]:
            out.append("failed")
        elif rs <= th["r_max"] and rp <= th["r_max"]:
            out.append("ideal" if mass >= th["mass_min"] else "value_corrected")
        elif rp > th["fuzzy_min"]:
            out.append("fuzzy")
        else:
            out.append("partial")
    return out


def classify_heads(params: Params, spec: ModelSpec, task: Task, probe: Probe = None,
                   test_acc: torch.Tensor | np.ndarray | None = None, **thresholds: float) -> list[str]:
    """:func:`head_type` of each seed; ``test_acc`` defaults to the accuracy on the probe sentences."""
    g = grid(task, probe, params["E"].device)
    met = head_metrics(params, spec, task, probe)
    if test_acc is None:
        test_acc = accuracy(params, spec, g.x, g.y)
    return head_type({**met, "test_acc": test_acc}, **thresholds)


def _attn_maps(params: Params, spec: ModelSpec, x: torch.Tensor) -> torch.Tensor:
    """Each seed's (sentences × N) attention map, flattened, centred and scaled to unit norm. (S, B·N)"""
    a = collect(params, spec, x, ("attn",))["attn"].flatten(1).double()
    a = a - a.mean(1, keepdim=True)
    return a / a.norm(dim=1, keepdim=True).clamp_min(1e-300)


def attn_init_final_corr(params_init: Params, params_final: Params, spec: ModelSpec,
                         x: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of the (sentences × N) attention maps at two snapshots (Fig. 5). (S,)"""
    return (_attn_maps(params_init, spec, x) * _attn_maps(params_final, spec, x)).sum(1)


def attn_corr_matrix(params_init: Params, params_final: Params, spec: ModelSpec, x: torch.Tensor) -> torch.Tensor:
    """Pearson correlation of seed i's attention map at the first snapshot with seed j's at the second: (S, S),
    whose diagonal is ``attn_init_final_corr`` and whose off-diagonal entries are the baseline of Fig. 5's claim
    (how much a final map resembles an initialisation it did not start from)."""
    return _attn_maps(params_init, spec, x) @ _attn_maps(params_final, spec, x).T


# ----------------------------------------------------------------------------------------------- monitors
def accuracy(params: Params, spec: ModelSpec, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Fraction of sentences whose argmax logit is the label. (S,)"""
    z = collect(params, spec, x, ("logits",))["logits"]
    return (z.argmax(-1) == y).double().mean(-1)


def min_token_norm(params: Params, p: int | None = None) -> torch.Tensor:
    """min_{x<p, t} ||E(x) + P(t)|| (docs note 17; the curvature of x/||x|| is 1/||x||). (S,)"""
    E = params["E"].detach()[:, :p] if p is not None else params["E"].detach()
    return (E[:, :, None] + params["P"].detach()[:, None]).norm(dim=-1).flatten(1).amin(1)


def min_xi_norm(params: Params, spec: ModelSpec, x: torch.Tensor) -> torch.Tensor:
    """min over the sentences x of ||ξ|| (docs note 17; the pre-MLP normalisation). (S,)"""
    return collect(params, spec, x, ("xi",))["xi"].norm(dim=-1).amin(-1)


def _margin(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    y = y.expand(z.shape[:2]) if y.dim() == 1 else y
    true = z.gather(-1, y[..., None]).squeeze(-1)
    other = z.scatter(-1, y[..., None], float("-inf")).amax(-1)
    return (true - other).amin(-1)


def decision_margin(params: Params, spec: ModelSpec, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """min over sentences of ζ_y − max_{j≠y} ζ_j (docs note 17); negative iff some sentence is misclassified. (S,)"""
    return _margin(collect(params, spec, x, ("logits",))["logits"], y)


def lr_over_norm(lr: float, params: Params, p: int | None = None) -> torch.Tensor:
    """lr / min_token_norm: the step can move a token past the origin when ≥ 1 (docs note 17, η < ||x|| test). (S,)"""
    return lr / min_token_norm(params, p)


# ----------------------------------------------------------------------------------------------- sparsity
def sparsity_curve(params: Params, spec: ModelSpec, x: torch.Tensor, eps: torch.Tensor | None = None,
                   max_elements: int = MAX_ELEMENTS) -> torch.Tensor:
    """sparsity_ε = fraction of entries of σ(W ξ̄) (sentences × h) with |·| < ε (App. A.1; paper App. A.1).
    Returns (S, n_eps), non-decreasing in ε; ``eps`` defaults to ``EPS_GRID`` = logspace(1e-5, 1e2, 50)."""
    eps = EPS_GRID if eps is None else torch.as_tensor(eps, dtype=torch.float64)
    out = []
    for acts in chunks(params, spec, x, max_elements):
        v = acts["hidden"].abs().flatten(1).double().sort(-1).values                  # (S_c, B·h)
        e = eps.to(v.device).expand(v.shape[0], -1).contiguous()
        out.append(torch.searchsorted(v, e).double() / v.shape[1])                    # count of |·| < ε
    return torch.cat(out)


def sparsity_summary(curve: torch.Tensor, eps: torch.Tensor | None = None, lo: float = 1e-3,
                     hi: float = 10.0) -> torch.Tensor:
    """Mean of sparsity_ε over ε ∈ [lo, hi] (docs checks, used by D6). curve (S, n_eps) → (S,)"""
    eps = EPS_GRID if eps is None else torch.as_tensor(eps, dtype=torch.float64)
    keep = (eps >= lo * (1 - 1e-9)) & (eps <= hi * (1 + 1e-9))
    return torch.as_tensor(curve)[..., keep.to(torch.as_tensor(curve).device)].mean(-1)


def _np(v: object) -> np.ndarray:
    return np.asarray(v.detach().cpu().double() if isinstance(v, torch.Tensor) else v, dtype=float)
