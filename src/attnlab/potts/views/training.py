"""Fig. 2a-c (fig2; frames = epochs, variants = model × seed): test loss vs epoch with the optimal (Bayes) loss of
the exact conditionals (5), the reconstruction error (J - κ*A)² (log y, Fig. 2c) and corr(A, J) against the optimum's
1; per frame, every model's path in the (corr(A, J), test - optimal) plane up to the shown epoch, and J beside the
learned map κ*A (Fig. 2b) at the frame's epoch (the panels add the L×L scale fit κ*). Runs that store per-epoch maps
(``<model>/maps``, (E, S, L, L) on the trajectory's epochs) are scrubbable; older runs show the final map at every
frame, with a note.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.potts.figures import COLOR, NAMES
from attnlab.potts.views.common import OPTIMUM, hline, pad, sub
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec, View

DIVERGING = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]  # negative blue, 0 white, positive red


def _offdiag(X: np.ndarray) -> np.ndarray:
    return X[~np.eye(X.shape[-1], dtype=bool)]


def _kappa(A: np.ndarray, J: np.ndarray) -> float:
    """The best scale κ* = ⟨J, A⟩/⟨A, A⟩ over i ≠ j (``metrics.recon_error``'s gauge)."""
    a, j = _offdiag(A), _offdiag(J)
    return float((a * j).sum() / max(float((a * a).sum()), 1e-300))


def _blank_diagonal(X: np.ndarray) -> np.ndarray:
    X = np.array(X, dtype=float)
    np.fill_diagonal(X, np.nan)  # the sink of softmax attention: no coupling there (Fig. 2b blanks it too)
    return X


def _heatmap(z: np.ndarray, *, zmax: float, axes: str = "", showscale: bool = False,
             hover: str = "i=%{y}, j=%{x}: %{z:.3f}") -> dict[str, Any]:
    """A matrix as a Plotly heatmap (traces has no heatmap helper): diverging scale symmetric around 0."""
    t = {"type": "heatmap", "z": z, "zmin": -zmax, "zmax": zmax, "colorscale": DIVERGING, "showscale": showscale,
         "hovertemplate": hover + "<extra></extra>"}
    if axes:
        t.update(xaxis=f"x{axes}", yaxis=f"y{axes}")
    return t


def _matrix_pair(J: np.ndarray, A: np.ndarray, title: str, right: str) -> Figure:
    """J (left) beside κ*A (right) on one colour scale, diagonal blanked, matrix orientation (row i down)."""
    kA = _kappa(A, J) * np.asarray(A, float)
    zmax = max(float(np.abs(_offdiag(J)).max()), 1e-12)
    data = [_heatmap(_blank_diagonal(J), zmax=zmax), _heatmap(_blank_diagonal(kA), zmax=zmax, axes="2",
                                                              showscale=True)]
    data[1]["colorbar"] = {"thickness": 10, "len": 0.9}
    ax = {"showgrid": False, "nticks": 5}
    lay = T.layout(title, xlabel="J (true couplings)", xaxis={**ax, "domain": [0, 0.44]},
                   yaxis={**ax, "autorange": "reversed", "scaleanchor": "x"},
                   xaxis2={**ax, "domain": [0.5, 0.94], "title": {"text": right}},
                   yaxis2={**ax, "autorange": "reversed", "anchor": "x2", "scaleanchor": "x2"})
    return {"data": data, "layout": lay}


@dataclass
class TrainingView(MethodView):
    """``runs``: model → its trajectory (observables (T_m, S)); ``pairs``: variant → (model, seed);
    ``at[model][i]``: the model's last recorded epoch at or before ``times[i]``."""

    runs: dict[str, Trajectory] = field(default_factory=dict)
    pairs: list[tuple[str, int]] = field(default_factory=list)
    at: dict[str, np.ndarray] = field(default_factory=dict)
    maps: dict[str, np.ndarray] = field(default_factory=dict)  # model → (S, L, L) final maps
    epoch_maps: dict[str, np.ndarray] = field(default_factory=dict)  # model → (T_m, S, L, L) maps per evaluated epoch
    J: np.ndarray | None = None
    optimum: dict[str, float] = field(default_factory=dict)  # exact conditionals: test_loss, corr, recon_err
    plane_range: tuple[list[float], list[float]] = ([0.0, 1.0], [0.0, 1.0])

    def _label(self, model: str, seed: int) -> str:
        many = self.runs[model]["test_loss"].shape[1] > 1
        return NAMES.get(model, model) + (f", seed {seed + 1}" if many else "")

    def _style(self, model: str, seed: int, variant: int) -> tuple[str, float, float]:
        chosen = self.pairs[variant] == (model, seed)
        return T.rgb(COLOR.get(model, T.COLORS[0])), (2.6 if chosen else 1.1), (1.0 if chosen else 0.45)

    def _frame_plane(self, index: int, variant: int) -> Figure:
        data: list[dict[str, Any]] = []
        for model, tr in self.runs.items():
            k = int(self.at[model][index])
            corr, gap = tr["corr"], tr["gap"]
            for s in range(corr.shape[1]):
                c, width, alpha = self._style(model, s, variant)
                data.append(T.line(corr[:, s], gap[:, s], color=c, width=0.8, opacity=0.2, hoverinfo="skip"))
                data.append(T.line(corr[: k + 1, s], gap[: k + 1, s], color=c, width=width, opacity=alpha,
                                   hoverinfo="skip"))
                data.append(T.scatter(np.array([[corr[k, s], gap[k, s]]]), color=c, size=9 if width > 2 else 6,
                                      name=NAMES.get(model, model), opacity=alpha,
                                      hover=[f"{NAMES.get(model, model)}, seed {s + 1}, epoch {tr.time[k]:g}<br>"
                                             f"corr(A, J) = {corr[k, s]:.3f}<br>test - optimal = {gap[k, s]:.4f}"]))
        if "corr" in self.optimum:
            data.append(T.scatter(np.array([[self.optimum["corr"], self.optimum.get("gap", 0.0)]]), color=OPTIMUM,
                                  symbol="star", size=12, name="exact conditionals",
                                  hover=["exact Potts conditionals (5): A ∝ J, test - optimal = 0"]))
        xr, yr = self.plane_range
        lay = T.layout(f"corr(A, J) vs test - optimal, epoch {self.times[index]:g}", xlabel="corr(A, J)",
                       ylabel="test loss - optimal", xaxis={"range": xr}, yaxis={"range": yr})
        return {"data": data, "layout": lay}

    def _map(self, index: int, model: str, seed: int) -> tuple[np.ndarray, str]:
        """The model's map at the frame's epoch (its last evaluated epoch at or before it) where the run stores
        per-epoch maps, else the final map; and a label saying which."""
        if model in self.epoch_maps:
            k = int(self.at[model][index])
            maps = self.epoch_maps[model][k]
            return maps[min(seed, len(maps) - 1)], f"epoch {self.runs[model].time[k]:g}"
        A = self.maps[model][min(seed, len(self.maps[model]) - 1)]
        return A, f"final, epoch {self.runs[model].time[-1]:g}"

    def _frame_maps(self, index: int, variant: int) -> Figure:
        model, seed = self.pairs[variant]
        A, when = self._map(index, model, seed)
        corr = float(np.corrcoef(_offdiag(A), _offdiag(self.J))[0, 1])
        return _matrix_pair(self.J, A, f"J vs {NAMES.get(model, model)} ({when}): corr {corr:.3f}",
                            f"κ*A, seed {seed + 1}")

    def _frame_scatter(self, index: int, variant: int) -> Figure:
        model, seed = self.pairs[variant]
        A, when = self._map(index, model, seed)
        j, a = _offdiag(self.J), _kappa(A, self.J) * _offdiag(A)
        lim = [float(min(j.min(), a.min())), float(max(j.max(), a.max()))]
        data = [T.line(lim, lim, color="#999", dash="dot", width=1, hoverinfo="skip"),
                T.scatter(np.stack([j, a], 1), color=T.rgb(COLOR.get(model, T.COLORS[0])), size=5,
                          name="i ≠ j")]
        lay = T.layout(f"κ*A_ij vs J_ij, {NAMES.get(model, model)} ({when})", xlabel="J_ij", ylabel="κ* A_ij")
        return {"data": data, "layout": lay}

    def _series_observable(self, variant: int, name: str, title: str, ylabel: str, log: bool = False,
                           optimum: str | None = None, train: bool = False) -> Figure:
        data: list[dict[str, Any]] = []
        for model, tr in self.runs.items():
            y = tr[name]
            for s in range(y.shape[1]):
                c, width, alpha = self._style(model, s, variant)
                data.append(T.line(tr.time, y[:, s], name=self._label(model, s), color=c,
                                   width=width, opacity=alpha))
        model, seed = self.pairs[variant]
        if train and "train_loss" in self.runs[model]:
            tr = self.runs[model]
            data.append(T.line(tr.time, tr["train_loss"][:, seed], name=f"{NAMES.get(model, model)} train",
                               color=T.rgb(COLOR.get(model, T.COLORS[0])), dash="dot", width=1.4))
        if optimum in self.optimum:
            data.append(hline(self.times, self.optimum[optimum], "exact conditionals (optimum)"))
        lay = T.layout(title, xlabel="epoch", ylabel=ylabel, showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}}, **({"yaxis": {"type": "log"}} if log else {}))
        return {"data": data, "layout": lay}

    def _series_loss(self, variant: int) -> Figure:
        return self._series_observable(variant, "test_loss", "test loss vs epoch; dashed: optimal (Bayes) loss",
                                       "MLM test loss", optimum="test_loss", train=True)

    def _series_recon(self, variant: int) -> Figure:
        return self._series_observable(variant, "recon_err", "reconstruction error (J - κ*A)² (Fig. 2c)",
                                       "mean_{i≠j} (J - κ*A)²", log=True)

    def _series_corr(self, variant: int) -> Figure:
        return self._series_observable(variant, "corr", "corr(A, J) vs epoch; dashed: the optimum's", "corr(A, J)",
                                       optimum="corr")

    def _series_gap(self, variant: int) -> Figure:
        return self._series_observable(variant, "gap", "test loss - optimal (log)", "gap", log=True)


def open_fig2(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
              config: Mapping[str, Any]) -> View:
    models = [m for m in config.get("models", NAMES) if f"{m}/traj_time" in arrays]
    if not models:
        raise ConfigError(f"this {experiment} run stores no training trajectory ('<model>/traj_time')")
    runs = {m: Trajectory.from_arrays(sub(arrays, f"{m}/"), "traj_", time_name="epoch", source=m) for m in models}
    times = np.unique(np.concatenate([tr.time for tr in runs.values()]))
    at = {m: np.clip(np.searchsorted(tr.time, times, side="right") - 1, 0, None) for m, tr in runs.items()}
    pairs = [(m, s) for m in models for s in range(runs[m]["test_loss"].shape[1])]
    opt = sub(arrays, "optimum/")
    optimum = {k: float(np.asarray(opt[k]).ravel()[0]) for k in ("test_loss", "corr", "gap", "recon_err") if k in opt}
    if "test_loss" not in optimum and "optimal_loss" in summary:
        optimum["test_loss"] = float(summary["optimal_loss"])
    corr = np.concatenate([tr["corr"].ravel() for tr in runs.values()] + [[optimum.get("corr", 1.0)]])
    gap = np.concatenate([tr["gap"].ravel() for tr in runs.values()] + [[0.0]])
    ok = np.isfinite(corr) & np.isfinite(np.resize(gap, corr.shape))
    plane = (pad(float(np.nanmin(corr[ok], initial=0)), float(np.nanmax(corr[ok], initial=1))),
             pad(float(np.nanmin(gap)), float(np.nanmax(gap))))
    maps = {m: np.asarray(arrays[f"{m}/map"], float).reshape(-1, *np.shape(arrays[f"{m}/map"])[-2:])
            for m in models if f"{m}/map" in arrays}
    epoch_maps = {}  # per-epoch maps on the model's own epochs (E, S, L, L); a run without them shows final maps
    for m in models:
        if f"{m}/maps" in arrays:
            E = np.asarray(arrays[f"{m}/maps"], float)
            if E.ndim != 4 or len(E) != len(runs[m].time):
                raise ConfigError(f"'{m}/maps' has shape {E.shape}: expected (epochs = {len(runs[m].time)}, S, L, L)")
            epoch_maps[m] = E
    panels = [PanelSpec("plane", "corr(A, J) vs loss gap, per epoch")]
    notes = ["optimum = the exact Potts conditionals (5) (theory, dashed); training runs: lines"]
    if "J" in arrays and len(maps) == len(models):
        panels += [PanelSpec("maps", "J beside the learned map (Fig. 2b)"),
                   PanelSpec("scatter", "κ*A_ij vs J_ij", default=False)]
        if len(epoch_maps) == len(models):
            notes.append("map panels show each model's map at its last evaluated epoch at or before the frame's")
        else:
            final = ", ".join(NAMES.get(m, m) for m in models if m not in epoch_maps)
            notes.append(f"attention maps are stored at the end of training only ({final}): "
                         "map panels show the final map")
    else:
        notes.append("this run stores no attention maps or no J: map panels are off")
    panels += [PanelSpec("loss", "test loss vs epoch (Fig. 2a)", "series"),
               PanelSpec("recon", "reconstruction error vs epoch (Fig. 2c)", "series"),
               PanelSpec("corr", "corr(A, J) vs epoch", "series"),
               PanelSpec("gap", "test - optimal (log) vs epoch", "series", default=False)]
    if "test_loss" not in optimum:
        notes.append("no optimal loss stored with this run")
    J = np.asarray(arrays["J"], float) if "J" in arrays else None
    view = TrainingView(times=times, time_label="epoch", variants=[], panels=panels, notes=notes, runs=runs,
                        pairs=pairs, at=at, maps=maps, epoch_maps=epoch_maps, J=J, optimum=optimum,
                        plane_range=plane)
    view.variants = [view._label(m, s) for m, s in pairs]
    return view
