"""The specialization study in the sandbox (paper 0): head trajectories m_h(τ) in the feature plane, the loss vs τ
with the Bayes risk dashed, theory (lines) and simulation (dots) overlaid.

Opens the SGD-vs-theory runs (Figs. 1, 9, 10: variants = activations, both sources) and the theory trajectory
runs (Figs. 2-4, 12-19: variants = the figure's panels). Frames are the recorded times τ; the trajectory panel
draws each head's path up to the shown τ over its whole path (faint), so the axes stay put while scrubbing.
Arrays are read with ``core.trajectory.Trajectory.from_arrays``, the study's own layout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register
from attnlab.specialization.figures import NAMES

SIM_VS_THEORY = ("fig1", "fig9", "fig10")
TRAJECTORIES = ("fig2", "fig3", "fig4", "fig12", "fig13", "fig14", "fig16", "fig17", "fig18", "fig19")
SOURCES = {"theory": ("lines", None), "simulation": ("markers", 5)}


@dataclass
class SpecializationView(View):
    runs: list[dict[str, Trajectory]] = field(default_factory=list)  # per variant: source → trajectory
    bayes: float | None = None

    def _m(self, variant: int) -> dict[str, np.ndarray]:
        return {src: tr["m"][:, 0] for src, tr in self.runs[variant].items()}  # (T, H, F) of the first seed

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: self._plane(index, variant, *PLANES[n]) for n in names}

    def _plane(self, index: int, variant: int, a: int, b: int) -> Figure:
        ms = self._m(variant)
        data: list[dict[str, Any]] = []
        lo = np.min([m[..., [a, b]].min((0, 1)) for m in ms.values()], 0)
        hi = np.max([m[..., [a, b]].max((0, 1)) for m in ms.values()], 0)
        pad = 0.1 * max(float((hi - lo).max()), 1e-3)
        for src, m in ms.items():
            mode, size = SOURCES.get(src, ("lines", None))
            for h in range(m.shape[1]):
                c = T.hue(h, m.shape[1])
                data.append(T.line(m[:, h, a], m[:, h, b], color=c, width=0.8, opacity=0.25, hoverinfo="skip"))
                path = T.line(m[: index + 1, h, a], m[: index + 1, h, b], color=c, width=2, mode=mode,
                              hoverinfo="skip")
                if size:
                    path["marker"] = {"size": size, "color": c}
                data.append(path)
                data.append(T.scatter(m[index : index + 1, h, [a, b]], color=c, size=11,
                                      symbol="circle" if src == "theory" else "diamond",
                                      hover=[f"head {h + 1} ({src}) at τ = {self.times[index]:.3g}<br>"
                                             f"m = ({m[index, h, a]:.3f}, {m[index, h, b]:.3f})"]))
        lay = T.layout(f"heads m_h in the (k*_{a + 1}, k*_{b + 1}) plane", equal=True, xlabel=f"m·k*_{a + 1}",
                       ylabel=f"m·k*_{b + 1}", xaxis={"range": [lo[0] - pad, hi[0] + pad], "zeroline": True},
                       yaxis={"range": [lo[1] - pad, hi[1] + pad], "zeroline": True})
        return {"data": data, "layout": lay}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")(variant) for n in names}

    def _series_loss(self, variant: int) -> Figure:
        data = []
        for src, tr in self.runs[variant].items():
            mode, size = SOURCES.get(src, ("lines", None))
            trace = T.line(tr.time, tr["loss"][:, 0], name=src, color=T.COLORS[0], mode=mode)
            if size:
                trace["marker"] = {"size": size, "color": T.COLORS[0]}
            data.append(trace)
        lay = T.layout("loss vs τ (click to jump)", xlabel="τ", ylabel="loss", showlegend=True, hovermode="x")
        if self.bayes is not None:
            data.append(T.line([self.times[0], self.times[-1]], [self.bayes, self.bayes], name="Bayes risk",
                               color="#000", dash="dash", width=1.2))
        return {"data": data, "layout": lay}

    def _series_overlaps(self, variant: int) -> Figure:
        data = []
        for src, tr in self.runs[variant].items():
            m = tr["m"][:, 0]
            mode, size = SOURCES.get(src, ("lines", None))
            for h in range(m.shape[1]):
                for f in range(m.shape[2]):
                    trace = T.line(tr.time, m[:, h, f], name=f"m_{h + 1}{f + 1} {src}", color=T.hue(h, m.shape[1]),
                                   dash=None if f == 0 else "dot", mode=mode)
                    if size:
                        trace["marker"] = {"size": size - 1, "color": T.hue(h, m.shape[1])}
                    data.append(trace)
        lay = T.layout("overlaps m_hf(τ) (f = 1 solid, f ≥ 2 dotted)", xlabel="τ", ylabel="m", hovermode="x")
        return {"data": data, "layout": lay}


PLANES = {"plane12": (0, 1), "plane13": (0, 2)}


def open_sim_vs_theory(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                       config: Mapping[str, Any]) -> View:
    """Figs. 1, 9, 10: one variant per activation, theory and SGD simulation overlaid."""
    runs, variants = [], []
    for act in config.get("activations", ()):
        a = {k.split("/", 1)[1]: v for k, v in arrays.items() if k.startswith(f"{act}/")}
        if a:
            runs.append({"theory": Trajectory.from_arrays(a, "theory_", source="theory"),
                         "simulation": Trajectory.from_arrays(a, "sim_", source="simulation")})
            variants.append(NAMES.get(act, act))
    return _view(experiment, runs, variants, summary, ["theory: lines; simulation (SGD): dots"])


def open_trajectories(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                      config: Mapping[str, Any]) -> View:
    """Figs. 2-4, 12-19: one variant per panel of the figure, theory only."""
    runs, variants = [], []
    for i, p in enumerate(config.get("panels", ())):
        pre = f"panel{i}/"
        a = {k[len(pre):]: v for k, v in arrays.items() if k.startswith(pre)}
        if a:
            runs.append({"theory": Trajectory.from_arrays(a, source="theory")})
            variants.append(f"{NAMES.get(p['activation'], p['activation'])}, H={p['H']}, "
                            f"ν=({p['nu1']:g},{p['nu2']:g})" + (f", run {p['seed']}" if p["seed"] else ""))
    return _view(experiment, runs, variants, summary, ["theory trajectories"])


def _view(experiment: str, runs: list[dict[str, Trajectory]], variants: list[str], summary: Mapping[str, Any],
          notes: list[str]) -> View:
    if not runs:
        raise ConfigError(f"this {experiment} run stores no trajectory arrays")
    F = runs[0]["theory"]["m"].shape[-1]
    panels = [PanelSpec("plane12", "heads in feature plane (1,2)")] if F >= 2 else []
    if F >= 3:
        panels.append(PanelSpec("plane13", "heads in feature plane (1,3)", default=False))
    panels += [PanelSpec("loss", "loss vs τ", "series"), PanelSpec("overlaps", "overlaps m(τ)", "series")]
    bayes = summary.get("bayes_risk")
    if bayes is None:
        notes.append("no Bayes risk stored with this run")
    return SpecializationView(times=np.asarray(runs[0]["theory"].time, dtype=float), time_label="τ",
                              variants=variants, panels=panels, notes=notes, runs=runs,
                              bayes=None if bayes is None else float(bayes))


class SpecializationPlugin(StudyPlugin):
    study = "specialization"
    openers = {**dict.fromkeys(SIM_VS_THEORY, open_sim_vs_theory), **dict.fromkeys(TRAJECTORIES, open_trajectories)}
    forms = {f"specialization.{n}": ("law", "L", "H", "nu1", "nu2", "D", "gamma", "tau_max", "record_every", "n_mc",
                                     "activations", "seed") for n in SIM_VS_THEORY}


PLUGIN = register(SpecializationPlugin())
