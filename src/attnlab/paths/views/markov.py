"""The Markov-task view of the paths study (Figs. 2c, 2e, 5c, check C): frames are the widths N, its panels
U(N) and the test predictor per width, and accuracy, ε_g, U entries, sampling agreement and solver convergence
over N."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.paths.figures.common import GP_NAME, _hs, _U_entries, path_labels  # the offline figures' own choices
from attnlab.paths.keys import set_key
from attnlab.paths.views import draw as D
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, View


@dataclass
class MarkovView(View):
    th: Trajectory | None = None
    sim: Trajectory | None = None
    labels: list[str] = field(default_factory=list)
    gp: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)  # layout → (acc, ε_g)
    y_test: np.ndarray | None = None
    agree: dict[str, np.ndarray] = field(default_factory=dict)
    order: np.ndarray | None = None  # test points: class −1 then +1, each by the widest theory's f̄
    f_range: tuple[float, float] = (-1.5, 1.5)  # y range of the outputs panel over every frame

    def _sim_index(self, index: int) -> int | None:
        return None if self.sim is None else D.at(self.sim.time, self.th.time[index])

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index) for n in names}

    def _frame_u(self, index: int) -> Figure:
        N = self.th.time[index]
        j = self._sim_index(index)
        data = [D.heat(self.th["U"][index], self.labels, 1)]
        titles = [f"theory, N = {N:g}"]
        if j is not None:
            data.append(D.heat(self.sim["U"][j], self.labels, 2))
            titles.append(f"Gibbs samples, N = {N:g}")
        lim = D.lim(self.th["U"], *([] if self.sim is None else [self.sim["U"]]))
        note = "" if self.sim is None or j is not None else " (not sampled at this N)"
        return {"data": data, "layout": D.heat_layout(f"order parameter U at N = {N:g}{note}", titles, lim)}

    def _frame_outputs(self, index: int) -> Figure:
        N = self.th.time[index]
        o = self.order
        f, v = self.th["f_mean"][index][o], np.sqrt(np.maximum(self.th["f_var"][index][o], 0))
        x = np.arange(len(o))
        data = [T.line(x, f + v, color=D.THEORY, width=0, hoverinfo="skip", name="theory + σ", showlegend=False),
                T.line(x, f - v, color=D.THEORY, width=0, fill="tonexty", fillcolor="rgba(31,119,180,0.2)",
                       hoverinfo="skip", name="theory ± σ"),
                T.line(x, f, name="theory f̄", color=D.THEORY, width=1.4)]
        j = self._sim_index(index)
        if j is not None:
            data.append(T.scatter(np.stack([x, self.sim["f_mean"][j][o]], 1), name="samples f̄", color=D.SAMPLES,
                                  size=3))
        y = self.y_test[o]
        split = float(np.sum(y < 0)) - 0.5
        lo, hi = self.f_range
        data += [T.line([x[0], x[-1]], [0, 0], color="#888", width=0.8, hoverinfo="skip", name="threshold"),
                 T.line([split, split], [lo, hi], color="#888", dash="dot", width=0.8, hoverinfo="skip",
                        name="y = −1 | y = +1")]
        acc = self.th["accuracy"][index]
        lay = T.layout(f"test predictor f̄(x) ± σ at N = {N:g} (accuracy {acc:.3f})", xlabel="test point "
                       "(y = −1 left, y = +1 right)", ylabel="f̄", showlegend=True, legend={"font": {"size": 9}},
                       yaxis={"range": [lo, hi]})
        return {"data": data, "layout": lay}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")() for n in names}

    def _over_N(self, key: str, title: str, ylabel: str, gp_index: int | None) -> Figure:
        N = self.th.time
        data = [D.theory(N, self.th[key])]
        if self.sim is not None:
            data.append(D.samples(self.sim.time, self.sim[key]))
        if gp_index is not None:
            for layout, vals in self.gp.items():
                if vals[gp_index] is not None:
                    data.append(D.hline(N[0], N[-1], vals[gp_index], GP_NAME.get(layout, layout), D.GP,
                                        D.gp_dash(layout)))
        lay = T.layout(title, ylabel=ylabel, xaxis=D.N_AXIS, showlegend=True, hovermode="closest",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_accuracy(self) -> Figure:
        return self._over_N("accuracy", "test accuracy vs N (click to jump)", "accuracy", 0)

    def _series_gen_error(self) -> Figure:
        return self._over_N("gen_error", "generalisation error ε_g vs N", "ε_g (MSE)", 1)

    def _series_entries(self) -> Figure:
        U = self.th["U"]
        pairs = _U_entries(U)
        data = []
        for k, (i, j) in enumerate(pairs):
            c = T.hue(k, len(pairs))
            name = self.labels[i] if i == j else f"{self.labels[i]} · {self.labels[j]}"
            data.append(T.line(self.th.time, U[:, i, j], name=name, color=c, dash=None if i == j else "dash"))
            if self.sim is not None:
                data.append(D.samples(self.sim.time, self.sim["U"][:, i, j], name=f"{name} (samples)", color=c))
        lay = T.layout("U entries vs N (lines: theory, dots: samples; diagonal solid)", ylabel="U", xaxis=D.N_AXIS,
                       showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_agreement(self) -> Figure:
        N = self.sim.time
        data = []
        for k, (key, name) in enumerate((("U_rel_fro", "‖U_s − U_th‖/‖U_th‖"), ("f_rel_err", "‖f̄_s − f̄_th‖/‖f̄_th‖"),
                                         ("acc_diff", "|acc_s − acc_th|"), ("U_gate_b10", "U gate B10 (≤ 1 passes)"),
                                         ("U_gate_b9", "U gate B9 (≤ 1 passes)"))):
            if key in self.agree:
                data.append(D.theory(N, self.agree[key], name=name, color=T.COLORS[k], symbol="circle"))
        data.append(D.theory(N, self.sim["rhat"], name="R̂ of the chains", color="#666", symbol="circle", dash="dot"))
        lay = T.layout("samples vs theory at the sampled widths", ylabel="deviation", xaxis=D.N_AXIS,
                       yaxis={"type": "log"}, showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_solver(self) -> Figure:
        data = [D.theory(self.th.time, np.maximum(self.th[k], 1e-300), name=name, color=c, symbol="circle")
                for k, name, c in (("max_grad", "max |∂S/∂U|", T.COLORS[0]),
                                   ("residual", "self-consistency residual", T.COLORS[1])) if k in self.th]
        lay = T.layout("saddle-point solver convergence", ylabel="", xaxis=D.N_AXIS,
                       yaxis={"type": "log", "exponentformat": "power"}, showlegend=True,
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}


def open_markov(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> MarkovView:
    D.need(arrays, ["theory_time", "theory_U", "theory_accuracy", "theory_gen_error", "theory_f_mean",
                    "theory_f_var", "y_test"], experiment, "theory sweep over N")
    th = Trajectory.from_arrays(arrays, "theory_", time_name="N", source="theory")
    sim = Trajectory.from_arrays(arrays, "sim_", time_name="N", source="simulation") if "sim_time" in arrays else None
    if sim is not None and ("U" not in sim or "f_mean" not in sim):
        raise ConfigError(f"this {experiment} run stores samples without U or f_mean: it cannot be shown")
    if len(th.time) == 0 or th["U"].ndim != 3:
        raise ConfigError(f"this {experiment} run's theory_U has shape {th['U'].shape}; expected (widths, n, n)")
    layout = str(config.get("layout", "all"))
    n = th["U"].shape[-1]
    labels = path_labels(_hs(n, None), layout)
    if len(labels) != n:
        labels = [f"path {a + 1}" for a in range(n)]
    layouts = list(config.get("gp_layouts") or [k.removeprefix("acc_gp_") for k in summary
                                                 if k.startswith("acc_gp_") and not k.startswith("acc_gp_path")])
    gp = {lay: (summary.get(set_key("acc_gp", lay)), summary.get(set_key("gen_error_gp", lay))) for lay in layouts}
    gp = {k: v for k, v in gp.items() if v != (None, None)}
    y = np.asarray(arrays["y_test"], float)
    order = np.lexsort((th["f_mean"][-1], y))  # class −1 first, then by the widest theory's f̄
    sd = np.sqrt(np.maximum(th["f_var"], 0))
    f_range = D.value_range([th["f_mean"] + sd, th["f_mean"] - sd, *([] if sim is None else [sim["f_mean"]]),
                             np.ones(1), -np.ones(1)])
    panels = [PanelSpec("u", "order parameter U (theory | samples)"),
              PanelSpec("outputs", "test predictor f̄(x)"),
              PanelSpec("accuracy", "accuracy vs N", "series"), PanelSpec("gen_error", "ε_g vs N", "series"),
              PanelSpec("entries", "U entries vs N", "series")]
    if sim is not None:
        panels.append(PanelSpec("agreement", "samples vs theory", "series", default=False))
    panels.append(PanelSpec("solver", "solver convergence", "series", default=False))
    notes = [f"{layout} paths, σ⊥ = {config.get('sigma_perp', '?')}, τ = {config.get('tau', '?')}, "
             f"P = {config.get('P', '?')}; theory: lines, Gibbs samples: dots, GP limits: red"]
    if sim is None:
        notes.append("no Gibbs samples stored with this run")
    variant = f"{layout} paths" + (f" (samples at N = {', '.join(f'{N:g}' for N in sim.time)})" if sim is not None
                                   else "")
    return MarkovView(times=np.asarray(th.time, float), time_label="N", variants=[variant], panels=panels,
                      notes=notes, th=th, sim=sim, labels=labels, gp=gp, y_test=y,
                      agree={k.removeprefix("agree_"): np.asarray(v) for k, v in arrays.items()
                             if k.startswith("agree_")}, order=order, f_range=f_range)
