"""Pure panel data of the visual sandbox (paper Sec. 4.1, Figs. 1–6, 8, 11–12). No matplotlib here.

Every compute function has the signature ``fn(params, spec, task, *, history=None, seed=0, epoch=None, **opts)``
with ``params`` one model (S = 1, torch or numpy) and returns a plain dict of numpy arrays, strings and
numbers, so that the offline renderer (``render.py``) and a web front end draw the same data.

Geometry panels return coordinates in a *frame* (``data["frame"]``, see ``geometry.Frame``): the plane
itself for d = 2 (d = 1 is padded), the space itself (3-D coordinates) for d = 3, and for d > 3 a 2-D PCA
projection fitted on the panel's own points (on ξ for the ξ/ψ/level-line panels) with axis labels
"PC1 (xx%)". Vector-like panels (embeddings, normalised tokens, values, MLP weights) use an
origin-preserving projection (uncentred PCA) so that norms, the unit circle and the query arrow keep their
meaning; ξ/ψ use a centred one.
A panel that cannot be shown (no history for a metric panel, p > 3 for the output simplex) raises
:class:`PanelUnavailable`; renderers skip it with a notice.
"""

from __future__ import annotations

import colorsys
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import numpy as np
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, activation, forward, normalize
from attnlab.clustering.render.geometry import CLASS_MARKERS, Data, Frame, group_annotations, square_box

EPS_GRID = np.logspace(-5, 2, 50)                            # activation-sparsity thresholds (App. A.1, Fig. 7)
GRAD_GROUPS = ("E", "P", "q", "V", "W", "U")


class PanelUnavailable(Exception):
    """The panel cannot be drawn for these inputs; the message says why (one line)."""


# ----------------------------------------------------------------------------------------------- helpers
def as_params(params: Mapping[str, Any]) -> dict[str, torch.Tensor]:
    """One model as float64 torch tensors with a seed axis of length 1 (accepts a missing seed axis)."""
    out = {k: torch.as_tensor(np.asarray(v) if not torch.is_tensor(v) else v).detach().to(torch.float64)
           for k, v in params.items()}
    if out["E"].dim() == 2:
        out = {k: v[None] for k, v in out.items()}
    if out["E"].shape[0] != 1:
        raise ValueError(f"panel functions take one model (S = 1), got S = {out['E'].shape[0]}; "
                         "use History.params_at(index, seed)")
    return out


def sentence_styles(task: Task, x: torch.Tensor, prefix_id: np.ndarray) -> Data:
    """Sec. 4.1 styling of probe sentences: colour = prefix (hue by count vector, lightness jitter by prefix),
    marker = class (CLASS_MARKERS)."""
    ms = task.multiset_id(x).numpy()
    y = task.labels(x).numpy()
    n_ms = task.n_classes
    colors = np.zeros((len(x), 3))
    for m in range(n_ms):
        sel = ms == m
        prefixes = np.unique(prefix_id[sel])
        jitter = np.linspace(-0.12, 0.12, len(prefixes)) if len(prefixes) > 1 else np.zeros(1)
        hue = 0.8 * m / max(n_ms - 1, 1)
        for pre, dl in zip(prefixes, jitter, strict=True):
            colors[sel & (prefix_id == pre)] = colorsys.hls_to_rgb(hue, 0.45 + dl, 0.8)
    return {"colors": colors, "prefix_id": prefix_id, "multiset_id": ms, "classes": y,
            "markers": [CLASS_MARKERS[c % len(CLASS_MARKERS)] for c in y]}


def probe_sentences(task: Task, n_suffixes: int | None = 4, seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
    """Probe sentences for plots: all p^k prefixes × ``n_suffixes`` suffixes; (x, prefix_id)."""
    x, pre, _ = task.probe_grid(n_suffixes=n_suffixes, seed=seed)
    return x, pre.numpy()


def attention_probe(task: Task, n: int = 12, seed: int = 0) -> torch.Tensor:
    """``n`` probe sentences for the attention map, sorted by count vector then prefix (Fig. 5 layout)."""
    x, _, _ = task.probe_grid(seed=seed)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(len(x), size=min(n, len(x)), replace=False))
    x = x[pick]
    order = np.lexsort((pick, task.multiset_id(x).numpy()))
    return x[torch.as_tensor(order)]


def _forward(m: dict[str, torch.Tensor], x: torch.Tensor, spec: ModelSpec) -> dict[str, np.ndarray]:
    with torch.no_grad():
        return {k: v[0].numpy() for k, v in forward(m, x, spec).items()}


def head_probs(m: dict[str, torch.Tensor], spec: ModelSpec, xi: np.ndarray) -> np.ndarray:
    """p̂(·|ξ) = softmax(E(ξ + Uσ(W Norm(ξ)))) for arbitrary ξ (B, d): the tail of ``model.forward`` (eq. sentence
    transform, logits), with the optional gain/biases of the model variants."""
    x = torch.as_tensor(xi, dtype=torch.float64)[None]
    g = m.get("g_mlp")
    with torch.no_grad():
        pre = normalize(x, spec, None if g is None else g[:, None]) @ m["W"].transpose(-1, -2)
        if "bW" in m:
            pre = pre + m["bW"][:, None]
        out = activation(spec.activation)(pre) @ m["U"].transpose(-1, -2)
        if "bU" in m:
            out = out + m["bU"][:, None]
        return torch.softmax((x + out) @ m["E"].transpose(-1, -2), -1)[0].numpy()


def _token_table(m: dict[str, torch.Tensor], spec: ModelSpec,
                 task: Task) -> tuple[torch.Tensor, np.ndarray, np.ndarray]:
    """E(x)+P(t) for all (x, t) ∈ F_p × [N], x-major: (1, p·N, d) tensor, x (p·N,), t (p·N,) 0-based."""
    xs, ts = np.meshgrid(np.arange(task.p), np.arange(task.N), indexing="ij")
    e = m["E"][:, xs.ravel()] + m["P"][:, ts.ravel()]
    return e, xs.ravel(), ts.ravel()


def _token_cloud(points: np.ndarray, xs: np.ndarray, ts: np.ndarray, task: Task, frame: Frame, title: str) -> Data:
    xy = frame.project(points)
    keys = [(int(x), int(t) + 1) for x, t in zip(xs, ts, strict=True)]
    informative = set(task.idx)
    return {"title": title, "frame": frame.as_dict(), "points": xy, "x": xs, "t": ts, "color_index": ts.copy(),
            "markers": ["o" if t in informative else "s" for t in ts],
            "labels": [f"({x},{t})" for x, t in keys], "annotations": group_annotations(xy, keys)}


# ----------------------------------------------------------------------------------------------- geometry panels
def tokens(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 1 (Fig. 1, frame 1): the p token embeddings E(v), labelled by v."""
    E = as_params(params)["E"][0, : task.p].numpy()
    fr = Frame(spec.d, E, center=False)
    xy = fr.project(E)
    return {"title": "token embeddings $E(x)$", "frame": fr.as_dict(), "points": xy, "values": np.arange(task.p),
            "labels": [str(v) for v in range(task.p)],
            "annotations": group_annotations(xy, [(v,) for v in range(task.p)])}


def positions(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 2 (Fig. 1, frame 2): P(t), circles for informative t ∈ [k], squares for spurious t, labelled t."""
    P = as_params(params)["P"][0].numpy()
    fr = Frame(spec.d, P, center=False)
    xy = fr.project(P)
    ts = np.arange(task.N)
    return {"title": "position embeddings $P(t)$", "frame": fr.as_dict(), "points": xy, "t": ts,
            "color_index": ts.copy(), "markers": ["o" if t in task.idx else "s" for t in ts],
            "labels": [str(t + 1) for t in ts], "annotations": group_annotations(xy, [(t + 1,) for t in ts])}


def embeddings(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 3a: unnormalised E(x)+P(t), colour = position t, annotated (x,t); min norm (spikes, Sec. 4.4)."""
    m = as_params(params)
    e, xs, ts = _token_table(m, spec, task)
    pts = e[0].numpy()
    out = _token_cloud(pts, xs, ts, task, Frame(spec.d, pts, center=False), "embeddings $E(x)+P(t)$")
    out["min_norm"] = float(np.linalg.norm(pts, axis=1).min())
    return out


def normalized(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 3b (Fig. 1, frame 3): Z(x,t) on the unit circle and the query q as an arrow (rescaled)."""
    m = as_params(params)
    e, xs, ts = _token_table(m, spec, task)
    g = m.get("g_attn")
    z = normalize(e, spec, None if g is None else g[:, None]).numpy()[0]
    fr = Frame(spec.d, z, center=False)
    out = _token_cloud(z, xs, ts, task, fr, "normalised $Z(x,t)$ and query $q$")
    q = m["q"][0].numpy()
    qn = float(np.linalg.norm(q))
    radius = float(np.sqrt(spec.d)) if spec.norm == "rmsnorm" else 1.0
    out["query"] = {"vector": fr.project(q, vector=True) * (1.25 * radius / max(qn, 1e-12)), "norm": qn}
    out["radius"] = radius
    return out


def value(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 5 (Fig. 2): the value transform V Z(x,t), styled as panel 3."""
    m = as_params(params)
    e, xs, ts = _token_table(m, spec, task)
    g = m.get("g_attn")
    vz = (normalize(e, spec, None if g is None else g[:, None]) @ m["V"].transpose(-1, -2)).numpy()[0]
    return _token_cloud(vz, xs, ts, task, Frame(spec.d, vz, center=False), "value transform $VZ(x,t)$")


def _sentences(params, spec: ModelSpec, task: Task, n_suffixes: int | None, probe_seed: int):
    m = as_params(params)
    x, pre = probe_sentences(task, n_suffixes, probe_seed)
    acts = _forward(m, x, spec)
    return m, x, acts, sentence_styles(task, x, pre)


def xi(params, spec: ModelSpec, task: Task, *, n_suffixes: int | None = 4, probe_seed: int = 0, **_: Any) -> Data:
    """Panel 6 (Figs. 1–4, 8): sentence embeddings ξ of the probe sentences (colour = prefix, marker = class)."""
    _, _, acts, style = _sentences(params, spec, task, n_suffixes, probe_seed)
    fr = Frame(spec.d, acts["xi"], center=True)
    return {"title": r"sentence embeddings $\xi$", "frame": fr.as_dict(), "points": fr.project(acts["xi"]),
            "raw": acts["xi"], **style}


def psi(params, spec: ModelSpec, task: Task, *, n_suffixes: int | None = 4, probe_seed: int = 0,
        region_grid: int = 80, **_: Any) -> Data:
    """Panel 6b (Fig. 1, last frame): ψ = ξ + Uσ(Wξ̄) in ξ's frame; background = argmax_v E(v)·ψ (d = 2 or PCA)."""
    m, _, acts, style = _sentences(params, spec, task, n_suffixes, probe_seed)
    fr = Frame(spec.d, acts["xi"], center=True)
    xy = fr.project(acts["psi"])
    out = {"title": r"sentence transforms $\psi$", "frame": fr.as_dict(), "points": xy, "raw": acts["psi"],
           "regions": None, **style}
    if fr.dim == 2:
        x0, x1, y0, y1 = square_box(xy)
        gx, gy = np.meshgrid(np.linspace(x0, x1, region_grid), np.linspace(y0, y1, region_grid))
        pts = fr.lift(np.stack([gx.ravel(), gy.ravel()], 1))
        logit = pts @ m["E"][0, : task.p].numpy().T
        out["regions"] = {"extent": (x0, x1, y0, y1), "argmax": logit.argmax(1).reshape(region_grid, region_grid)}
    return out


def levels(params, spec: ModelSpec, task: Task, *, n_suffixes: int | None = 4, probe_seed: int = 0,
           grid: int = 200, **_: Any) -> Data:
    """Panel 7 (Figs. 8, 11): p̂(·|ξ) on a G×G grid over the probe ξ's bounding box padded 20 % (made square for
    equal aspect); probs (G, G, p) with rows = y. For d ≥ 3 the grid lies on the PCA plane of ξ (a slice)."""
    m, _, acts, style = _sentences(params, spec, task, n_suffixes, probe_seed)
    fr = Frame(spec.d, acts["xi"], center=True, plane=True)
    xy = fr.project(acts["xi"])
    x0, x1, y0, y1 = square_box(xy)
    xs, ys = np.linspace(x0, x1, grid), np.linspace(y0, y1, grid)
    gx, gy = np.meshgrid(xs, ys)
    probs = head_probs(m, spec, fr.lift(np.stack([gx.ravel(), gy.ravel()], 1)))
    return {"title": r"level lines $\hat p(\cdot|\xi)$", "frame": fr.as_dict(), "note": "slice on the PCA plane of ξ",
            "points": xy, "xs": xs, "ys": ys, "probs": probs.reshape(grid, grid, -1), **style}


def mlp(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Panel 8 (Fig. 12): receptors w_i (rows of W) and assemblers u_i (columns of U); neuron i = one colour."""
    m = as_params(params)
    w, u = m["W"][0].numpy(), m["U"][0].numpy().T
    fr = Frame(spec.d, np.concatenate([w, u]), center=False)
    h = len(w)
    return {"title": "MLP receptors $w_i$ (o), assemblers $u_i$ (^)", "frame": fr.as_dict(),
            "receptors": fr.project(w), "assemblers": fr.project(u), "color_index": np.arange(h),
            "labels": [str(i + 1) for i in range(h)]}


# ----------------------------------------------------------------------------------------------- other panels
def attention(params, spec: ModelSpec, task: Task, *, n_attention: int = 12, probe_seed: int = 0, **_: Any) -> Data:
    """Panel 4 (Figs. 5–6): attention a(x) ∈ Δ_N for probe sentences (rows sum to 1) with their tokens."""
    x = attention_probe(task, n_attention, probe_seed)
    a = _forward(as_params(params), x, spec)["attn"]
    toks = x.numpy()
    rows = ["".join(str(v) if v < 10 else "+" for v in r[list(task.idx)]) + " " +
            "".join(str(v) if v < 10 else "+" for v in r[list(task.spurious)]) for r in toks]
    return {"title": "attention (darker = higher)", "attn": a, "tokens": toks, "row_labels": rows,
            "informative": np.array(task.idx), "prefix_mass": float(a[:, list(task.idx)].sum(1).mean())}


def output(params, spec: ModelSpec, task: Task, *, n_suffixes: int | None = 4, probe_seed: int = 0,
           **_: Any) -> Data:
    """Output p̂ of the probe sentences: p = 2 → p̂(y=1) per count vector; p = 3 → points in the 2-simplex."""
    if task.p > 3 or spec.n_emb > task.p:
        raise PanelUnavailable(f"output panel needs p ≤ 3 and n_emb = p (got p = {task.p}, n_emb = {spec.n_emb})")
    _, _, acts, style = _sentences(params, spec, task, n_suffixes, probe_seed)
    probs = np.exp(acts["logits"] - acts["logits"].max(1, keepdims=True))
    probs /= probs.sum(1, keepdims=True)
    if task.p == 2:
        rng = np.random.default_rng(0)
        pts = np.stack([probs[:, 1], style["multiset_id"] + rng.uniform(-0.25, 0.25, len(probs))], 1)
        return {"title": r"output $\hat p(y=1|x)$", "kind": "strip", "points": pts, "probs": probs, **style}
    verts = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])
    return {"title": r"output simplex $\hat p(\cdot|x)$", "kind": "simplex", "points": probs @ verts,
            "vertices": verts, "probs": probs, **style}


def sparsity(params, spec: ModelSpec, task: Task, **_: Any) -> Data:
    """Activation sparsity (App. A.1, Fig. 7): fraction of |σ(Wξ̄)| < ε over the full probe grid × h neurons."""
    x, _, _ = task.probe_grid()
    hid = np.abs(_forward(as_params(params), x, spec)["hidden"]).ravel()
    hid.sort()
    frac = np.searchsorted(hid, EPS_GRID, side="left") / len(hid)
    return {"title": r"activation sparsity vs $\varepsilon$", "eps": EPS_GRID.copy(), "sparsity": frac,
            "band": (1e-3, 10.0)}


def _curves(history, panel: str, metrics: list[str], seed: int, epoch: float | None, title: str) -> Data:
    """Epoch curves of one seed from a History, with the cursor at the shown snapshot's epoch."""
    if history is None:
        raise PanelUnavailable(f"panel '{panel}' needs a training history (none given)")
    s = {n: np.asarray(history.epoch_metrics[n])[:, seed] for n in metrics if n in history.epoch_metrics}
    if not s:
        raise PanelUnavailable(f"panel '{panel}': the history has none of {', '.join(metrics)}")
    return {"title": title, "epochs": np.asarray(history.epochs, dtype=float), "series": s, "cursor": epoch}


def loss(params, spec: ModelSpec, task: Task, *, history=None, seed: int = 0, epoch: float | None = None,
         **_: Any) -> Data:
    """Panel 9 (Figs. 8–9): train/test loss and accuracy vs epoch with a cursor at the shown snapshot."""
    return _curves(history, "loss", ["train_loss", "test_loss", "train_acc", "test_acc"], seed, epoch,
                   "loss and accuracy")


def grads(params, spec: ModelSpec, task: Task, *, history=None, seed: int = 0, epoch: float | None = None,
          per_step: bool = False, **_: Any) -> Data:
    """Panel 10a (Figs. 9, 13, 17): per-group gradient norms ||∇_E L||, …, ||∇_U L|| vs epoch (log scale): the
    full-batch epoch metrics, or the logged mini-batch step metrics (``per_step``, or when no epoch ones)."""
    names, d = [f"grad_{g}" for g in GRAD_GROUPS], None
    if history is not None and history.step_metrics and (
            per_step or not any(n in history.epoch_metrics for n in names)):
        s = {n: np.asarray(history.step_metrics[n])[:, seed] for n in names if n in history.step_metrics}
        if s:
            x = np.asarray(history.steps, dtype=float) / max(history.steps_per_epoch, 1)
            d = {"title": "gradient norms (mini-batch)", "epochs": x, "series": s, "cursor": epoch}
    if d is None:
        d = _curves(history, "grads", names, seed, epoch, "gradient norms per group")
    d["series"] = {k.removeprefix("grad_"): v for k, v in d["series"].items()}
    return d


def min_norm(params, spec: ModelSpec, task: Task, *, history=None, seed: int = 0, epoch: float | None = None,
             **_: Any) -> Data:
    """Panel 10c (Sec. 4.4, Fig. 10): min_{x,t} ||E(x)+P(t)|| and min_x ||ξ(x)|| vs epoch (small ⇒ spike risk)."""
    return _curves(history, "min_norm", ["min_token_norm", "min_xi_norm"], seed, epoch, "min-norm monitor")


# ----------------------------------------------------------------------------------------------- registry
class Panel(NamedTuple):
    compute: Callable[..., Data]
    draw: Callable[[Any, Data], None]
    needs_planar: bool


def _lazy_draw(name: str) -> Callable[[Any, Data], None]:
    def draw(ax: Any, data: Data) -> None:
        from attnlab.clustering.render import draw as drawing  # matplotlib only when drawing

        drawing.draw_panel(ax, name, data)

    draw.__name__ = f"draw_{name}"
    return draw


_COMPUTE: dict[str, tuple[Callable[..., Data], bool]] = {
    "tokens": (tokens, True), "positions": (positions, True), "embeddings": (embeddings, True),
    "normalized": (normalized, True), "attention": (attention, False), "value": (value, True),
    "xi": (xi, True), "psi": (psi, True), "levels": (levels, True), "mlp": (mlp, True),
    "output": (output, False), "loss": (loss, False), "grads": (grads, False),
    "sparsity": (sparsity, False), "min_norm": (min_norm, False),
}
#: name → (compute fn, draw fn, needs_planar); a layout is a list of these names.
PANELS: dict[str, Panel] = {n: Panel(f, _lazy_draw(n), planar) for n, (f, planar) in _COMPUTE.items()}
DEFAULT_LAYOUT = ("tokens", "positions", "normalized", "attention", "value", "xi", "psi", "levels", "mlp", "loss")
IDEAL_LAYOUT = ("tokens", "positions", "normalized", "xi", "psi")  # Fig. 1, left to right


def compute_panels(names: list[str] | tuple[str, ...], params, spec: ModelSpec, task: Task,
                   **kw: Any) -> tuple[dict[str, Data], dict[str, str]]:
    """Data of every named panel and, separately, the reason each unavailable one was skipped."""
    data, skipped = {}, {}
    for n in names:
        if n not in PANELS:
            raise KeyError(f"unknown panel {n!r}; known: {', '.join(PANELS)}")
        try:
            data[n] = PANELS[n].compute(params, spec, task, **kw)
        except PanelUnavailable as exc:
            skipped[n] = str(exc)
    return data, skipped
