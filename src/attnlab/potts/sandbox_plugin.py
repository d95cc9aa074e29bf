"""The potts study in the sandbox (paper 2): MLM training on Potts data against the exact conditionals, and the
replica theory of the Gaussian model against ridge simulations; theory (lines) and simulation (dots) overlaid.

* fig2 (Fig. 2a-c; frames = epochs, variants = model × seed): test loss vs epoch with the optimal (Bayes) loss of
  the exact conditionals (5), the reconstruction error (J - κ*A)² (log y, Fig. 2c) and corr(A, J) against the
  optimum's 1; per frame, every model's path in the (corr(A, J), test - optimal) plane up to the shown epoch, and
  J beside the learned map κ*A (Fig. 2b; the run stores the maps at the end of training only).
* fig2d (Fig. 2d; frames = epochs, variants = the mixing a of eq. (2)): the test loss vs a at the shown epoch
  (mean ± std over seeds, the last frame is Fig. 2d), corr(A, J) vs a, loss and corr vs epoch per a.
* fig3right, consistency (Fig. 3-right; frames = sample sizes M, variants = λ): test and train loss vs M with
  the optimal loss, corr(A, J) vs M; per frame, every L-BFGS realisation at M (converged: dots, not: crosses).
* fig3left, finite_l (Fig. 3-left, eqs. (8), (36)-(42); frames = the simulated α = M/L, variants = λ): the replica
  ε_g(α) and training error (lines; fig3left: the paper's teacher weight solid, the exact one dashed; finite_l: the
  problem's finite-L theory solid, L → ∞ dashed) against ridge simulations (mean ± SEM); per frame, the spread of
  the realisations at α beside the theory (heavy-tailed near the interpolation peak α = 1).
* replica (theory only; frames = α, variants = ν × teacher weight): ε_g(α) per λ, and ε_g vs λ at the shown α.
* gibbs (spec §2.5-2.6; frames = saved configurations of the paper-faithful chain): the last configurations as a
  raster, energy and Hamming distance between successive configurations, and the β scan that tuned β.

Series panels keep x linear (the page's cursor sits on linear axes). Nothing is recomputed: frames slice stored
arrays (the map panels add the L×L scale fit κ*), theory curves at the simulated α are interpolated once on opening.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.potts.figures import COLOR, NAMES
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register

OPTIMUM = "#000"
DIVERGING = [[0.0, "#2166ac"], [0.5, "#f7f7f7"], [1.0, "#b2182b"]]  # negative blue, 0 white, positive red
THEORY_NOTE = "theory: lines; simulation: dots"


def _sub(arrays: Mapping[str, np.ndarray], prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: np.asarray(v) for k, v in arrays.items() if k.startswith(prefix)}


def _need(arrays: Mapping[str, np.ndarray], keys: Sequence[str], experiment: str) -> None:
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ConfigError(f"this {experiment} run lacks the arrays {', '.join(missing)}; nothing to show")


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


def _mean_band(x: np.ndarray, y: np.ndarray, color: str, name: str, width: float = 1.8, **more: Any) -> list:
    """Mean over the last axis with a min-max band (``figures._band``, the stacked seeds)."""
    y = np.asarray(y, float).reshape(len(x), -1)
    out = []
    if y.shape[1] > 1:
        out.append(T.line(np.concatenate([x, x[::-1]]), np.concatenate([y.min(1), y.max(1)[::-1]]), color=color,
                          width=0, fill="toself", opacity=0.2, hoverinfo="skip", showlegend=False))
    out.append(T.line(x, y.mean(1), name=name, color=color, width=width, **more))
    return out


def _hline(times: np.ndarray, y: float, name: str, color: str = OPTIMUM, dash: str = "dash") -> dict[str, Any]:
    return T.line([float(times[0]), float(times[-1])], [y, y], name=name, color=color, dash=dash, width=1.2)


def _pad(lo: float, hi: float, frac: float = 0.06) -> list[float]:
    span = max(hi - lo, 1e-9)
    return [lo - frac * span, hi + frac * span]


@dataclass
class PottsView(View):
    """A view whose panels are methods ``_frame_<name>(index, variant)`` and ``_series_<name>(variant)``."""

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index, variant) for n in names}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")(variant) for n in names}


# -- Fig. 2a-c: factored vs vanilla training ---------------------------------------------------------------------


@dataclass
class TrainingView(PottsView):
    """``runs``: model → its trajectory (observables (T_m, S)); ``pairs``: variant → (model, seed);
    ``at[model][i]``: the model's last recorded epoch at or before ``times[i]``."""

    runs: dict[str, Trajectory] = field(default_factory=dict)
    pairs: list[tuple[str, int]] = field(default_factory=list)
    at: dict[str, np.ndarray] = field(default_factory=dict)
    maps: dict[str, np.ndarray] = field(default_factory=dict)  # model → (S, L, L) final maps
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

    def _frame_maps(self, index: int, variant: int) -> Figure:
        model, seed = self.pairs[variant]
        A = self.maps[model][min(seed, len(self.maps[model]) - 1)]
        corr = float(np.corrcoef(_offdiag(A), _offdiag(self.J))[0, 1])
        last = self.runs[model].time[-1]
        return _matrix_pair(self.J, A, f"J vs {NAMES.get(model, model)} (final, epoch {last:g}): corr {corr:.3f}",
                            f"κ*A, seed {seed + 1}")

    def _frame_scatter(self, index: int, variant: int) -> Figure:
        model, seed = self.pairs[variant]
        A = self.maps[model][min(seed, len(self.maps[model]) - 1)]
        j, a = _offdiag(self.J), _kappa(A, self.J) * _offdiag(A)
        lim = [float(min(j.min(), a.min())), float(max(j.max(), a.max()))]
        data = [T.line(lim, lim, color="#999", dash="dot", width=1, hoverinfo="skip"),
                T.scatter(np.stack([j, a], 1), color=T.rgb(COLOR.get(model, T.COLORS[0])), size=5,
                          name="i ≠ j")]
        lay = T.layout(f"κ*A_ij vs J_ij, {NAMES.get(model, model)} (final)", xlabel="J_ij", ylabel="κ* A_ij")
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
            data.append(_hline(self.times, self.optimum[optimum], "exact conditionals (optimum)"))
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


def _open_fig2(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> View:
    models = [m for m in config.get("models", NAMES) if f"{m}/traj_time" in arrays]
    if not models:
        raise ConfigError(f"this {experiment} run stores no training trajectory ('<model>/traj_time')")
    runs = {m: Trajectory.from_arrays(_sub(arrays, f"{m}/"), "traj_", time_name="epoch", source=m) for m in models}
    times = np.unique(np.concatenate([tr.time for tr in runs.values()]))
    at = {m: np.clip(np.searchsorted(tr.time, times, side="right") - 1, 0, None) for m, tr in runs.items()}
    pairs = [(m, s) for m in models for s in range(runs[m]["test_loss"].shape[1])]
    opt = _sub(arrays, "optimum/")
    optimum = {k: float(np.asarray(opt[k]).ravel()[0]) for k in ("test_loss", "corr", "gap", "recon_err") if k in opt}
    if "test_loss" not in optimum and "optimal_loss" in summary:
        optimum["test_loss"] = float(summary["optimal_loss"])
    corr = np.concatenate([tr["corr"].ravel() for tr in runs.values()] + [[optimum.get("corr", 1.0)]])
    gap = np.concatenate([tr["gap"].ravel() for tr in runs.values()] + [[0.0]])
    ok = np.isfinite(corr) & np.isfinite(np.resize(gap, corr.shape))
    plane = (_pad(float(np.nanmin(corr[ok], initial=0)), float(np.nanmax(corr[ok], initial=1))),
             _pad(float(np.nanmin(gap)), float(np.nanmax(gap))))
    maps = {m: np.asarray(arrays[f"{m}/map"], float).reshape(-1, *np.shape(arrays[f"{m}/map"])[-2:])
            for m in models if f"{m}/map" in arrays}
    panels = [PanelSpec("plane", "corr(A, J) vs loss gap, per epoch")]
    notes = ["optimum = the exact Potts conditionals (5) (theory, dashed); training runs: lines"]
    if "J" in arrays and len(maps) == len(models):
        panels += [PanelSpec("maps", "J beside the learned map (Fig. 2b)"),
                   PanelSpec("scatter", "κ*A_ij vs J_ij", default=False)]
        notes.append("attention maps are stored at the end of training only: map panels show the final map")
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
                        pairs=pairs, at=at, maps=maps, J=J, optimum=optimum, plane_range=plane)
    view.variants = [view._label(m, s) for m, s in pairs]
    return view


# -- Fig. 2d: the mixing a of eq. (2) ------------------------------------------------------------------------------


@dataclass
class MixingView(PottsView):
    """``traj`` observables (T, n_a · seeds), a-major; ``a_values`` the distinct a."""

    traj: Trajectory | None = None
    a_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_seeds: int = 1
    optimal: float | None = None
    corr_range: list[float] = field(default_factory=lambda: [-1.0, 1.0])

    def _by_a(self, name: str) -> np.ndarray:
        y = self.traj[name]
        return y.reshape(len(y), len(self.a_values), self.n_seeds)  # (T, n_a, seeds)

    def _vs_a(self, index: int, variant: int, name: str, title: str, ylabel: str, yaxis: dict) -> Figure:
        y = self._by_a(name)[index]
        a = self.a_values
        data = [T.scatter(np.stack([np.repeat(a, self.n_seeds), y.ravel()], 1), color=T.COLORS[0], size=5,
                          name="seeds", opacity=0.5, hover=[f"a = {av:g}, seed {s + 1}: {v:.4f}" for av, row in
                                                             zip(a, y, strict=True) for s, v in enumerate(row)]),
                T.line(a, y.mean(1), color=T.COLORS[0], width=1.8, mode="lines+markers", name="mean ± std",
                       error_y={"type": "data", "array": y.std(1), "visible": True, "thickness": 1}),
                T.scatter(np.array([[a[variant], y[variant].mean()]]), color=T.COLORS[3], size=12, symbol="diamond",
                          name="selected a", hover=[f"a = {a[variant]:g}: mean {y[variant].mean():.4f}"])]
        if name == "test_loss" and self.optimal is not None:
            data.append(T.line([a[0], a[-1]], [self.optimal] * 2, name="optimal loss", color=OPTIMUM, dash="dash",
                               width=1.2))
        lay = T.layout(f"{title}, epoch {self.times[index]:g}", xlabel="mixing a of eq. (2)", ylabel=ylabel,
                       yaxis=yaxis)
        return {"data": data, "layout": lay}

    def _frame_loss_a(self, index: int, variant: int) -> Figure:
        return self._vs_a(index, variant, "test_loss", "test loss vs a", "test loss", {})

    def _frame_corr_a(self, index: int, variant: int) -> Figure:
        return self._vs_a(index, variant, "corr", "corr(A, J) vs a", "corr(A, J)", {"range": self.corr_range})

    def _series_vs_epoch(self, variant: int, name: str, title: str, ylabel: str, optimal: bool) -> Figure:
        y = self._by_a(name)
        n = len(self.a_values)
        data: list[dict[str, Any]] = []
        for k, a in enumerate(self.a_values):
            chosen = k == variant
            data += _mean_band(self.traj.time, y[:, k], T.hue(k, n), f"a = {a:g}", width=2.6 if chosen else 1.2,
                               opacity=1.0 if chosen else 0.6)
        if optimal and self.optimal is not None:
            data.append(_hline(self.times, self.optimal, "optimal loss"))
        lay = T.layout(title, xlabel="epoch", ylabel=ylabel, showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_loss(self, variant: int) -> Figure:
        return self._series_vs_epoch(variant, "test_loss", "test loss vs epoch per a (band: seeds)", "test loss",
                                     True)

    def _series_corr(self, variant: int) -> Figure:
        return self._series_vs_epoch(variant, "corr", "corr(A, J) vs epoch per a", "corr(A, J)", False)


def _open_fig2d(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> View:
    _need(arrays, ("traj_time", "traj_test_loss", "traj_corr", "a"), experiment)
    traj = Trajectory.from_arrays(arrays, "traj_", time_name="epoch", source="eq2")
    a = np.asarray(arrays["a"], float)
    values = np.asarray(list(dict.fromkeys(a.tolist())), float)
    n_seeds = len(a) // len(values)
    if n_seeds * len(values) != len(a) or not np.array_equal(np.repeat(values, n_seeds), a):
        raise ConfigError(f"this {experiment} run's models are not grouped by a (a = {a.tolist()})")
    if traj["test_loss"].shape[1] != len(a):
        raise ConfigError(f"this {experiment} run stores {traj['test_loss'].shape[1]} models for {len(a)} values of a")
    corr = traj["corr"][np.isfinite(traj["corr"])]
    panels = [PanelSpec("loss_a", "test loss vs a (Fig. 2d)"), PanelSpec("corr_a", "corr(A, J) vs a")]
    notes = ["Fig. 2d is the last frame; frames scrub the same curve through training"]
    panels += [PanelSpec("loss", "test loss vs epoch", "series"), PanelSpec("corr", "corr(A, J) vs epoch", "series")]
    optimal = summary.get("optimal_loss")
    if optimal is None:
        notes.append("no optimal loss stored with this run")
    return MixingView(times=traj.time, time_label="epoch", variants=[f"a = {v:g}" for v in values], panels=panels,
                      notes=notes, traj=traj, a_values=values, n_seeds=n_seeds,
                      optimal=None if optimal is None else float(optimal),
                      corr_range=_pad(float(corr.min(initial=0.0)), float(corr.max(initial=1.0))))


# -- Fig. 3-right and consistency: L-BFGS fits over the number of samples ----------------------------------------


@dataclass
class SampleView(PottsView):
    """``fits[key]``: (n_M, n_lam, n_real) per quantity (test, train, corr, converged, n_iter)."""

    fits: dict[str, np.ndarray] = field(default_factory=dict)
    lams: np.ndarray = field(default_factory=lambda: np.zeros(0))
    optimal: float | None = None
    L: int | None = None
    ranges: tuple[list[float], list[float]] = ([0.0, 1.0], [0.0, 1.0])

    def _frame_fits(self, index: int, variant: int) -> Figure:
        f = {k: v[index, variant] for k, v in self.fits.items()}
        ok = f["converged"].astype(bool)
        M = int(self.times[index])
        data = []
        for key, symbol, color, label in (("test", "circle", T.COLORS[0], "test"),
                                          ("train", "diamond-open", T.COLORS[1], "train")):
            for sel, sym, tag in ((ok, symbol, "converged"), (~ok, "x", "not converged")):
                if sel.any():
                    xy = np.stack([f["corr"][sel], f[key][sel]], 1)
                    data.append(T.scatter(xy, color=color, symbol=sym, size=8, name=f"{label}, {tag}",
                                          hover=[f"realisation {r + 1}: {label} loss {v:.4f}, corr {c:.3f}, "
                                                 f"{int(n)} iterations ({tag})" for r, v, c, n in
                                                 zip(np.flatnonzero(sel), f[key][sel], f["corr"][sel],
                                                     f["n_iter"][sel], strict=True)]))
        if self.optimal is not None:
            data.append(T.line(self.ranges[0], [self.optimal] * 2, name="optimal loss", color=OPTIMUM, dash="dash",
                               width=1.2))
        alpha = f", α = {M / self.L:.3g}" if self.L else ""
        lay = T.layout(f"each realisation at M = {M}{alpha}", xlabel="corr(A, J)", ylabel="loss",
                       showlegend=True, legend={"font": {"size": 9}}, xaxis={"range": self.ranges[0]},
                       yaxis={"range": self.ranges[1]})
        return {"data": data, "layout": lay}

    def _mean_sem(self, key: str, variant: int) -> tuple[np.ndarray, np.ndarray]:
        y = self.fits[key][:, variant]
        sem = y.std(1, ddof=1) / np.sqrt(y.shape[1]) if y.shape[1] > 1 else np.zeros(len(y))
        return y.mean(1), sem

    def _series_test(self, variant: int) -> Figure:
        data = []
        for key, color, dash, label in (("test", T.COLORS[0], None, "test loss"),
                                        ("train", T.COLORS[1], "dot", "train loss")):
            m, sem = self._mean_sem(key, variant)
            data.append(T.line(self.times, m, name=f"{label} (mean ± SEM)", color=color, dash=dash,
                               mode="lines+markers", error_y={"type": "data", "array": sem, "visible": True,
                                                              "thickness": 1}))
        if self.optimal is not None:
            data.append(_hline(self.times, self.optimal, "optimal loss"))
        lay = T.layout(f"loss vs M, λ = {self.lams[variant]:g}" + (f" (M = L = {self.L}: α = 1)" if self.L else ""),
                       xlabel="number of samples M", ylabel="loss", showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_corr(self, variant: int) -> Figure:
        m, sem = self._mean_sem("corr", variant)
        conv = self.fits["converged"][:, variant].mean(1)
        data = [T.line(self.times, m, name="corr(A, J)", color=T.COLORS[2], mode="lines+markers",
                       error_y={"type": "data", "array": sem, "visible": True, "thickness": 1},
                       hovertext=[f"M = {M:g}: corr {c:.3f}, {100 * f:.0f} % converged"
                                  for M, c, f in zip(self.times, m, conv, strict=True)], hoverinfo="text")]
        lay = T.layout(f"recovered couplings vs M, λ = {self.lams[variant]:g}", xlabel="number of samples M",
                       ylabel="corr(A, J)", hovermode="x")
        return {"data": data, "layout": lay}


def _open_sweep(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> View:
    Ms = [int(M) for M in np.asarray(arrays.get("Ms", config.get("Ms", ()))).ravel()]
    Ms = [M for M in Ms if f"M{M}/test" in arrays]
    if not Ms:
        raise ConfigError(f"this {experiment} run stores no fit at any sample size ('M<M>/test')")
    keys = ("test", "train", "corr", "converged", "n_iter")
    _need(arrays, [f"M{M}/{k}" for M in Ms for k in keys], experiment)
    fits = {k: np.stack([np.asarray(arrays[f"M{M}/{k}"], float) for M in Ms]) for k in keys}
    lams = np.asarray(arrays.get("lams", config.get("lams", [np.nan] * fits["test"].shape[1])), float).ravel()
    if len(lams) != fits["test"].shape[1]:
        raise ConfigError(f"this {experiment} run stores {fits['test'].shape[1]} λ per M but names {len(lams)}")
    losses = np.concatenate([fits["test"].ravel(), fits["train"].ravel()])
    losses = losses[np.isfinite(losses)]
    optimal = summary.get("optimal_loss")
    lo = min(float(losses.min(initial=0.0)), float(optimal) if optimal is not None else np.inf)
    corr = fits["corr"][np.isfinite(fits["corr"])]
    ranges = (_pad(float(corr.min(initial=0.0)), float(corr.max(initial=1.0))),
              _pad(lo, float(losses.max(initial=1.0))))
    notes = ["L-BFGS fits of the factored pseudo-likelihood; frames: the sample sizes M"]
    if optimal is None:
        notes.append("no optimal loss stored with this run")
    L = config.get("L")
    return SampleView(times=np.asarray(Ms, float), time_label="M", variants=[f"λ = {v:g}" for v in lams],
                      panels=[PanelSpec("fits", "realisations at M: loss vs corr(A, J)"),
                              PanelSpec("test", "loss vs M (Fig. 3-right)", "series"),
                              PanelSpec("corr", "corr(A, J) vs M", "series")],
                      notes=notes, fits=fits, lams=lams, optimal=None if optimal is None else float(optimal),
                      L=int(L) if L else None, ranges=ranges)


# -- Fig. 3-left and finite_l: replica theory vs ridge simulations -----------------------------------------------


@dataclass
class Curves:
    """One variant of a replica view: the simulation and the theory curves it is compared with."""

    label: str
    sim: Trajectory
    curves: dict[str, list[tuple[str, np.ndarray, np.ndarray, str | None]]]  # observable → (name, x, y, dash)
    at_sim: dict[str, list[tuple[str, np.ndarray]]]  # observable → (name, theory at sim.time)


@dataclass
class ReplicaView(PottsView):
    runs: list[Curves] = field(default_factory=list)
    jitter: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def _frame_spread(self, index: int, variant: int) -> Figure:
        run = self.runs[variant]
        alpha = float(self.times[index])
        data: list[dict[str, Any]] = []
        for row, (name, label, color) in enumerate((("eps_g", "test ε_g", T.COLORS[0]),
                                                    ("eps_train", "train", T.COLORS[1]))):
            if f"{name}_all" not in run.sim:
                continue
            v = run.sim[f"{name}_all"][index]
            y = row + self.jitter[: len(v)]
            data.append(T.scatter(np.stack([v, y], 1), color=color, size=6, opacity=0.6, name=f"{label}, each draw",
                                  hover=[f"draw {k + 1}: {label} = {x:.4g}" for k, x in enumerate(v)]))
            m = run.sim[name][index]
            sem = run.sim[f"{name}_sem"][index] if f"{name}_sem" in run.sim else 0.0
            data.append(T.scatter(np.array([[m, row + 0.3]]), color=color, size=10, symbol="square",
                                  name=f"{label}, mean ± SEM", error_x={"type": "data", "array": [sem],
                                                                       "visible": True},
                                  hover=[f"{label}: mean {m:.4g} ± {sem:.2g}"]))
            for k, (tname, th) in enumerate(run.at_sim.get(name, [])):
                data.append(T.line([th[index]] * 2, [row - 0.35, row + 0.45], name=tname, color=OPTIMUM,
                                   dash=None if k == 0 else "dash", width=1.6,
                                   hovertext=[f"{tname}: {th[index]:.4g}"] * 2, hoverinfo="text"))
        lay = T.layout(f"the draws at α = {alpha:g} ({run.label}); lines: theory", xlabel="error (log)",
                       xaxis={"type": "log"}, yaxis={"tickvals": [0, 1], "ticktext": ["test", "train"],
                                                     "range": [-0.6, 1.7]})
        return {"data": data, "layout": lay}

    def _series_obs(self, variant: int, name: str, title: str, ylabel: str) -> Figure:
        data: list[dict[str, Any]] = []
        for k, run in enumerate(self.runs):
            chosen = k == variant
            c = T.hue(k, len(self.runs))
            alpha = 1.0 if chosen else 0.45
            for cname, x, y, dash in run.curves.get(name, []):
                data.append(T.line(x, y, name=f"{cname}, {run.label}", color=c, dash=dash,
                                   width=2 if chosen else 1, opacity=alpha))
            if name in run.sim:
                sem = run.sim[f"{name}_sem"] if f"{name}_sem" in run.sim else np.zeros(len(run.sim.time))
                data.append(T.scatter(np.stack([run.sim.time, run.sim[name]], 1), color=c, size=8 if chosen else 5,
                                      name=f"simulation, {run.label}", opacity=alpha,
                                      error_y={"type": "data", "array": sem, "visible": True, "thickness": 1},
                                      hover=[f"α = {a:g}: {v:.4g} ± {s:.2g}" for a, v, s in
                                             zip(run.sim.time, run.sim[name], sem, strict=True)]))
        lay = T.layout(title, xlabel="α = M/L", ylabel=ylabel, showlegend=True, legend={"font": {"size": 9}},
                       yaxis={"type": "log"})
        return {"data": data, "layout": lay}

    def _series_eps_g(self, variant: int) -> Figure:
        return self._series_obs(variant, "eps_g", "test loss ε_g(α): theory lines, ridge dots", "ε_g (log)")

    def _series_eps_train(self, variant: int) -> Figure:
        return self._series_obs(variant, "eps_train", "training error vs α", "training error (log)")


def _open_fig3left(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                   config: Mapping[str, Any]) -> View:
    prefixes = sorted({k.split("/", 1)[0] for k in arrays if k.startswith("lam") and k.endswith("/sim_time")},
                      key=lambda p: float(p[3:]))
    if not prefixes or "dense_alpha" not in arrays:
        raise ConfigError(f"this {experiment} run stores no simulation ('lam<λ>/sim_time') or no theory curve")
    x = np.asarray(arrays["dense_alpha"], float)
    runs = []
    for p in prefixes:
        a = _sub(arrays, f"{p}/")
        _need(a, ("sim_eps_g", "theory_paper", "theory_paper_train"), f"{experiment} ({p})")
        sim = Trajectory.from_arrays(a, "sim_", time_name="alpha", source="simulation")
        curves = {"eps_g": [(f"replica ({w} weight)", x, a[f"theory_{w}"], d) for w, d in
                            (("paper", None), ("exact", "dash")) if f"theory_{w}" in a],
                  "eps_train": [(f"replica ({w} weight)", x, a[f"theory_{w}_train"], d) for w, d in
                                (("paper", None), ("exact", "dash")) if f"theory_{w}_train" in a]}
        at_sim = {k: [(n, np.interp(sim.time, cx, cy)) for n, cx, cy, _ in v] for k, v in curves.items()}
        runs.append(Curves(f"λ = {p[3:]}", sim, curves, at_sim))
    return _replica_view(runs, [f"{THEORY_NOTE} (mean ± SEM); solid: paper's teacher weight, dashed: exact",
                                f"ν = {config.get('nu', summary.get('nu', '?'))}, L = {config.get('L', '?')}"])


def _open_finite_l(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                   config: Mapping[str, Any]) -> View:
    _need(arrays, ("sim_time", "sim_eps_g", "dense_alpha", "finite_eps_g"), experiment)
    sim = Trajectory.from_arrays(arrays, "sim_", time_name="alpha", source="simulation")
    x = np.asarray(arrays["dense_alpha"], float)
    curves = {"eps_g": [("finite-L theory", x, arrays["finite_eps_g"], None)]
              + ([("L → ∞", x, arrays["inf_eps_g"], "dash")] if "inf_eps_g" in arrays else []),
              "eps_train": [("finite-L theory", x, arrays["finite_eps_train"], None)]
              if "finite_eps_train" in arrays else []}
    at_sim = {k: [(n, np.interp(sim.time, cx, cy)) for n, cx, cy, _ in v] for k, v in curves.items()}
    for k in ("eps_g", "eps_train"):  # the theory solved at the simulated α itself, when stored
        if f"theory_{k}" in arrays and len(arrays[f"theory_{k}"]) == len(sim.time):
            at_sim[k] = [("finite-L theory", np.asarray(arrays[f"theory_{k}"], float)), *at_sim[k][1:]]
    label = f"λ = {config.get('lam', '?')}"
    return _replica_view([Curves(label, sim, curves, at_sim)],
                         [f"{THEORY_NOTE} (mean ± SEM over training draws of one fixed problem); dashed: L → ∞",
                          f"ν = {config.get('nu', '?')}, L = {config.get('L', '?')}"])


def _replica_view(runs: list[Curves], notes: list[str]) -> View:
    times = runs[0].sim.time
    if any(not np.array_equal(r.sim.time, times) for r in runs):
        raise ConfigError("the variants of this run were simulated at different α; cannot share one α axis")
    n = max((r.sim["eps_g_all"].shape[1] for r in runs if "eps_g_all" in r.sim), default=1)
    jitter = 0.25 * (np.random.default_rng(0).random(n) - 0.5)
    panels = [PanelSpec("spread", "the draws at α vs theory")] if any("eps_g_all" in r.sim for r in runs) else []
    panels += [PanelSpec("eps_g", "ε_g(α): replica vs ridge (Fig. 3-left)", "series"),
               PanelSpec("eps_train", "training error vs α", "series")]
    return ReplicaView(times=np.asarray(times, float), time_label="α", variants=[r.label for r in runs],
                       panels=panels, notes=notes, runs=runs, jitter=jitter)


# -- the L → ∞ theory alone -------------------------------------------------------------------------------------------


@dataclass
class TheoryView(PottsView):
    """``eps[variant]``: name → (T, n_lam) over the α grid ``times``."""

    eps: list[dict[str, np.ndarray]] = field(default_factory=list)
    lams: np.ndarray = field(default_factory=lambda: np.zeros(0))
    y_range: list[float] = field(default_factory=lambda: [-3.0, 1.0])

    def _frame_vs_lam(self, index: int, variant: int) -> Figure:
        e = self.eps[variant]
        data = [T.line(self.lams, e[k][index], name=label, color=c, mode="lines+markers", dash=d)
                for k, label, c, d in (("eps_g", "ε_g", T.COLORS[0], None),
                                       ("eps_train", "training error", T.COLORS[1], "dot")) if k in e]
        lay = T.layout(f"theory at α = {self.times[index]:.3g}: error vs λ", xlabel="λ", ylabel="error (log)",
                       showlegend=True, xaxis={"type": "log"}, yaxis={"type": "log", "range": self.y_range})
        return {"data": data, "layout": lay}

    def _series_lam(self, variant: int, name: str, title: str) -> Figure:
        y = self.eps[variant][name]
        data = [T.line(self.times, y[:, k], name=f"λ = {lam:g}", color=T.hue(k, len(self.lams)))
                for k, lam in enumerate(self.lams)]
        ylabel = {"eps_g": "ε_g (log)", "eps_train": "training error (log)"}.get(name, name)
        lay = T.layout(title, xlabel="α = M/L", ylabel=ylabel, showlegend=True, hovermode="x",
                       yaxis={"type": "log"}, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_eps_g(self, variant: int) -> Figure:
        return self._series_lam(variant, "eps_g", f"replica ε_g(α), {self.variants[variant]}")

    def _series_eps_train(self, variant: int) -> Figure:
        return self._series_lam(variant, "eps_train", f"replica training error, {self.variants[variant]}")


def _open_replica(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                  config: Mapping[str, Any]) -> View:
    _need(arrays, ("alpha", "lams", "nus"), experiment)
    groups = [(nu, w) for nu in np.asarray(arrays["nus"]).ravel() for w in ("paper", "exact")
              if f"nu{nu:g}_{w}/eps_g" in arrays]
    if not groups:
        raise ConfigError(f"this {experiment} run stores no ε_g curve ('nu<ν>_<weight>/eps_g')")
    eps = [_sub(arrays, f"nu{nu:g}_{w}/") for nu, w in groups]
    vals = np.concatenate([v.ravel() for e in eps for v in e.values()])
    vals = vals[np.isfinite(vals) & (vals > 0)]
    y_range = [float(np.log10(vals.min())) - 0.1, float(np.log10(vals.max())) + 0.1] if len(vals) else [-3.0, 1.0]
    return TheoryView(times=np.asarray(arrays["alpha"], float), time_label="α",
                      variants=[f"ν = {nu:g}, {w} weight" for nu, w in groups],
                      panels=[PanelSpec("vs_lam", "error vs λ at the shown α"),
                              PanelSpec("eps_g", "ε_g(α) per λ", "series"),
                              PanelSpec("eps_train", "training error per λ", "series", default=False)],
                      notes=["replica theory only (L → ∞); its simulations are in fig3left and finite_l"],
                      eps=eps, lams=np.asarray(arrays["lams"], float).ravel(), y_range=y_range)


# -- the sampler ------------------------------------------------------------------------------------------------------


@dataclass
class ChainView(PottsView):
    samples: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (N, L) colours
    energies: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hamming: np.ndarray = field(default_factory=lambda: np.zeros(0))  # to the previous configuration
    C: int = 2
    scan: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    rows: int = 20

    def _frame_chain(self, index: int, variant: int) -> Figure:
        lo = max(0, index + 1 - self.rows)
        z = self.samples[lo: index + 1]
        data = [{"type": "heatmap", "z": z, "x": np.arange(z.shape[1]), "y": np.arange(lo, index + 1),
                 "zmin": 0, "zmax": self.C - 1, "colorscale": "Turbo", "showscale": False,
                 "hovertemplate": "configuration %{y}, site %{x}: colour %{z}<extra></extra>"}]
        lay = T.layout(f"the last {len(z)} configurations up to {index} (rows), sites (columns)", xlabel="site i",
                       ylabel="configuration", yaxis={"range": [index - self.rows + 0.5, index + 0.5]})
        return {"data": data, "layout": lay}

    def _frame_beta(self, index: int, variant: int) -> Figure:
        b, s = self.scan["betas"], self.summary
        data = [T.line(b, self.scan[k], name=label, color=c, mode="lines+markers", dash=d)
                for k, label, c, d in (("pooled/d_pooled", "pooled chains", T.COLORS[0], None),
                                       ("pooled/d_within", "within those chains", T.COLORS[0], "dash"),
                                       ("single/d_single", "one chain (paper)", T.COLORS[3], None))
                if k in self.scan]
        if "target" in s:
            data.append(T.line([b[0], b[-1]], [s["target"]] * 2, name="target", color=OPTIMUM, dash="dash", width=1))
        if "beta_tuned" in s:
            data.append(T.line([s["beta_tuned"]] * 2, [0, 1], name="tuned β", color=T.COLORS[3], width=1))
        lay = T.layout("Hamming distance vs β (the scan that tuned β)", xlabel="β", ylabel="mean Hamming distance",
                       showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_energy(self, variant: int) -> Figure:
        data = [T.line(self.times, self.energies, name="H(s)", color=T.COLORS[3], width=1.2)]
        lay = T.layout("energy H(s) along the chain", xlabel="saved configuration", ylabel="H(s)", hovermode="x")
        return {"data": data, "layout": lay}

    def _series_hamming(self, variant: int) -> Figure:
        data = [T.line(self.times[1:], self.hamming[1:], name="d(s_k, s_k-1)", color=T.COLORS[0], width=1.2)]
        if "d_chain" in self.summary:
            data.append(_hline(self.times, self.summary["d_chain"], "mean pairwise d_H of the chain"))
        if "target" in self.summary:
            data.append(_hline(self.times, self.summary["target"], "target", color="#888", dash="dot"))
        lay = T.layout("Hamming distance to the previous configuration", xlabel="saved configuration",
                       ylabel="fraction of sites changed", showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}


def _open_gibbs(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> View:
    _need(arrays, ("chain/samples", "chain/energies"), experiment)
    s = np.asarray(arrays["chain/samples"])
    if s.ndim != 2 or len(s) == 0:
        raise ConfigError(f"this {experiment} run's chain holds no configuration (samples shape {s.shape})")
    ham = np.concatenate([[np.nan], (s[1:] != s[:-1]).mean(1)])
    scan = {k: np.asarray(v, float) for k, v in arrays.items()
            if k in ("betas", "pooled/d_pooled", "pooled/d_within", "single/d_single")}
    keep = {k: float(summary[k]) for k in ("target", "beta_tuned", "d_chain") if summary.get(k) is not None}
    panels = [PanelSpec("chain", "configurations of the chain")]
    if "betas" in scan and len(scan) > 1:
        panels.append(PanelSpec("beta", "Hamming distance vs β", default=False))
    panels += [PanelSpec("energy", "energy along the chain", "series"),
               PanelSpec("hamming", "change between configurations", "series")]
    beta = f" at β = {keep['beta_tuned']:.3g}" if "beta_tuned" in keep else ""
    thin = config.get("chain_thin")
    return ChainView(times=np.arange(len(s), dtype=float), time_label="configuration", variants=[f"one chain{beta}"],
                     panels=panels, notes=[f"saved configurations {thin} sweeps apart" if thin else "one chain"],
                     samples=s, energies=np.asarray(arrays["chain/energies"], float).ravel(), hamming=ham,
                     C=int(config.get("C", int(s.max()) + 1)), scan=scan, summary=keep)


# -- the plug-in -------------------------------------------------------------------------------------------------------

OPENERS: dict[str, Callable[..., View]] = {
    "fig2": _open_fig2, "fig2d": _open_fig2d, "fig3right": _open_sweep, "consistency": _open_sweep,
    "fig3left": _open_fig3left, "finite_l": _open_finite_l, "replica": _open_replica, "gibbs": _open_gibbs,
}


class PottsPlugin(StudyPlugin):
    study = "potts"
    experiments = tuple(f"potts.{n}" for n in OPENERS)
    #: the experiments that finish within about a minute at quick scale (fig2, fig3right, gibbs take longer)
    forms = {"potts.fig3left": ("L", "nu", "lams", "alphas", "n_real", "seed"),
             "potts.finite_l": ("L", "nu", "lam", "alphas", "n_draws", "seed"),
             "potts.replica": ("lams", "nus", "alpha_max", "n_nodes"),
             "potts.fig2d": ("a_values", "seeds", "epochs", "lr", "beta", "seed")}

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        name = experiment.split(".", 1)[1]
        if name not in OPENERS:
            raise ConfigError(f"the potts plug-in does not show {experiment} runs")
        try:
            return OPENERS[name](experiment, arrays, summary or {}, config or {})
        except (KeyError, IndexError, ValueError) as exc:
            if isinstance(exc, ConfigError):
                raise
            raise ConfigError(f"this {experiment} run's arrays cannot be shown: {' '.join(str(exc).split())}") from None


PLUGIN = register(PottsPlugin())
