"""Fig. 3-left and the replica theory (Eqs. (8), (36)-(42); frames = α = M/L).

* fig3left, finite_l (variants = λ): the replica ε_g(α) and training error (lines; fig3left: the paper's teacher weight
  solid, the exact one dashed; finite_l: the problem's finite-L theory solid, L → ∞ dashed) against ridge simulations
  (mean ± SEM); per frame, the spread of the realisations at the simulated α beside the theory there (interpolated
  once on opening; heavy-tailed near the interpolation peak α = 1).
* replica (theory only; variants = ν × teacher weight): ε_g(α) per λ, and ε_g vs λ at the shown α.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.potts.views.common import OPTIMUM, need, sub
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec, View

THEORY_NOTE = "theory: lines; simulation: dots"


# -- Fig. 3-left and finite_l: replica theory vs ridge simulations -----------------------------------------------


@dataclass
class Curves:
    """One variant of a replica view: the simulation and the theory curves it is compared with."""

    label: str
    sim: Trajectory
    curves: dict[str, list[tuple[str, np.ndarray, np.ndarray, str | None]]]  # observable → (name, x, y, dash)
    at_sim: dict[str, list[tuple[str, np.ndarray]]]  # observable → (name, theory at sim.time)


@dataclass
class ReplicaView(MethodView):
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


def open_fig3left(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                  config: Mapping[str, Any]) -> View:
    prefixes = sorted({k.split("/", 1)[0] for k in arrays if k.startswith("lam") and k.endswith("/sim_time")},
                      key=lambda p: float(p[3:]))
    if not prefixes or "dense_alpha" not in arrays:
        raise ConfigError(f"this {experiment} run stores no simulation ('lam<λ>/sim_time') or no theory curve")
    x = np.asarray(arrays["dense_alpha"], float)
    runs = []
    for p in prefixes:
        a = sub(arrays, f"{p}/")
        need(a, ("sim_eps_g", "theory_paper", "theory_paper_train"), f"{experiment} ({p})")
        sim = Trajectory.from_arrays(a, "sim_", time_name="alpha", source="simulation")
        curves = {"eps_g": [(f"replica ({w} weight)", x, a[f"theory_{w}"], d) for w, d in
                            (("paper", None), ("exact", "dash")) if f"theory_{w}" in a],
                  "eps_train": [(f"replica ({w} weight)", x, a[f"theory_{w}_train"], d) for w, d in
                                (("paper", None), ("exact", "dash")) if f"theory_{w}_train" in a]}
        at_sim = {k: [(n, np.interp(sim.time, cx, cy)) for n, cx, cy, _ in v] for k, v in curves.items()}
        runs.append(Curves(f"λ = {p[3:]}", sim, curves, at_sim))
    return _replica_view(runs, [f"{THEORY_NOTE} (mean ± SEM); solid: paper's teacher weight, dashed: exact",
                                f"ν = {config.get('nu', summary.get('nu', '?'))}, L = {config.get('L', '?')}"])


def open_finite_l(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                  config: Mapping[str, Any]) -> View:
    need(arrays, ("sim_time", "sim_eps_g", "dense_alpha", "finite_eps_g"), experiment)
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
class TheoryView(MethodView):
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


def open_replica(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                 config: Mapping[str, Any]) -> View:
    need(arrays, ("alpha", "lams", "nus"), experiment)
    groups = [(nu, w) for nu in np.asarray(arrays["nus"]).ravel() for w in ("paper", "exact")
              if f"nu{nu:g}_{w}/eps_g" in arrays]
    if not groups:
        raise ConfigError(f"this {experiment} run stores no ε_g curve ('nu<ν>_<weight>/eps_g')")
    eps = [sub(arrays, f"nu{nu:g}_{w}/") for nu, w in groups]
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
