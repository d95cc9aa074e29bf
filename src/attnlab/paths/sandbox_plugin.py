"""The paths study in the sandbox (paper 3): the order parameter U of a Bayesian deep multi-head attention network
as its width N grows, theory (lines, saddle point of Eq. 9) and Gibbs samples (dots) overlaid; and head pruning.

* Markov task (Figs. 2c, 2e, 5c, spec check C): frames are the widths N (time axis log₁₀ N). Frame panels: the
  path-path order parameter U(N) of the theory beside the sampled U where N was sampled (Fig. 2c right), and
  the test predictor f̄(x) ± √var (theory band, sampled dots, test points sorted by class). Series over N:
  accuracy and ε_g (theory, samples, GP limits as horizontal lines; Fig. 2c), the U entries (Fig. 2c right),
  sampling-vs-theory agreement (spec checks B9, B10) and the solver's convergence.
* One-shot task (Figs. 3b-d, 6): frames are the widths N, variants the networks (L, Hs). Frame panels: U*(N) at
  the validation-selected τ*(N) beside the sampled U and the gradient-descent model's U (Fig. 3c, h₁ blocks
  outlined); accuracy over the τ grid at N (how τ* is chosen); static: the GD validation curve and the
  kernel-PC alignment (Fig. 3d). Series over N: accuracy per test set (theory, GP, samples, GD at N_gd;
  Figs. 3b, 6), τ*(N) and max|U*(N) − U_GP|.
* Head pruning (Figs. 3e-f, 7): frames are the number k of heads pruned in score order, variants the networks.
  Frame panels: head scores from the theory's U against each head's single-head accuracy drop of the GD model
  (Fig. 3e) with the k pruned heads marked, and U with the paths through pruned heads blanked. Series over k:
  the GD model's accuracy after pruning k heads (Fig. 3f).

Figs. 2d and 5b hold no sweep (one width) and are not opened. The page places its cursor with a linear x axis,
so sweeps over N use log₁₀ N as time and label the ticks with N. Every panel only slices stored arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.core.trajectory import Trajectory
from attnlab.paths.figures import GP_NAME, _hs, _U_entries, path_labels  # the offline figures' own choices
from attnlab.paths.oneshot_figures import SET_NAME
from attnlab.paths.pruning import path_heads
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register

MARKOV = ("fig2c", "fig2e", "fig5c", "generic")
ONESHOT = ("fig3", "fig6")
PRUNING = ("fig3ef", "fig7")
THEORY, SAMPLES, GP, GD = T.COLORS[0], "#000", T.COLORS[3], T.COLORS[2]
GP_DASH = {"all": None, "good": "dash", "good_denoising": "dot", "good_uniform": "dot"}
DIVERGING = [[0.0, "#2166ac"], [0.25, "#92c5de"], [0.5, "#f7f7f7"], [0.75, "#f4a582"], [1.0, "#b2182b"]]


# -- shared drawing ----------------------------------------------------------------------------------------
def _n_axis(Ns: np.ndarray) -> dict[str, Any]:
    """A linear axis in log₁₀ N with the ticks labelled by N (the page's cursor needs a linear axis): ticks at
    the decades when the widths span two or more, else at the widths."""
    x = np.log10(np.asarray(Ns, float))
    decades = np.arange(np.ceil(x.min() - 1e-9), np.floor(x.max() + 1e-9) + 1)
    ticks = decades if len(decades) >= 2 else x
    return {"title": {"text": "width N (log scale)"}, "tickmode": "array", "tickvals": ticks,
            "ticktext": [f"{10 ** t:g}" for t in ticks]}


def _theory(x: Any, y: Any, name: str = "theory", color: str = THEORY, symbol: str = "x",
            **more: Any) -> dict[str, Any]:
    """Lines with markers in one colour (theory: crosses joined by a line, as in the paper's figures)."""
    return T.line(x, y, name=name, color=color, mode="lines+markers", marker={"symbol": symbol, "size": 7,
                                                                               "color": color}, **more)


def _samples(x: Any, y: Any, name: str = "samples (Gibbs)", color: str = SAMPLES, **more: Any) -> dict[str, Any]:
    return T.scatter(np.stack([np.asarray(x, float), np.asarray(y, float)], 1), name=name, color=color, size=8,
                     **more)


def _hline(x0: float, x1: float, y: float, name: str, color: str, dash: str | None = None) -> dict[str, Any]:
    return T.line([x0, x1], [y, y], name=name, color=color, dash=dash, width=1.3, hoverinfo="name+y")


def _heat(U: np.ndarray, labels: list[str], axis: int, coloraxis: str = "coloraxis") -> dict[str, Any]:
    suffix = "" if axis == 1 else str(axis)
    return {"type": "heatmap", "z": np.asarray(U, float), "x": labels, "y": labels, "coloraxis": coloraxis,
            "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "xgap": 0.5, "ygap": 0.5,
            "hovertemplate": "U[%{y}, %{x}] = %{z:.4g}<extra></extra>"}


def _heat_layout(title: str, titles: list[str], lim: float, Hs: Sequence[int] | None = None,
                 extra_axes: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Side-by-side heat maps (one per entry of ``titles``) on one diverging colour scale ±lim, rows top-down;
    with ``Hs`` the h₁ blocks of U are outlined (paths ordered with h₁ most significant)."""
    n = len(titles)
    gap = 0.06
    w = (1 - gap * (n - 1)) / n
    more: dict[str, Any] = {}
    shapes = []
    block = int(np.prod(Hs[1:])) if Hs is not None and len(Hs) > 1 else 1
    n_paths = int(np.prod(Hs)) if Hs is not None else 0
    for i, t in enumerate(titles):
        s = "" if i == 0 else str(i + 1)
        more[f"xaxis{s}"] = {"domain": [i * (w + gap), i * (w + gap) + w], "title": {"text": t}, "showgrid": False,
                             "tickangle": -90, "tickfont": {"size": 8}, "anchor": f"y{s}"}
        more[f"yaxis{s}"] = {"autorange": "reversed", "showgrid": False, "tickfont": {"size": 8}, "anchor": f"x{s}",
                             "showticklabels": i == 0, "scaleanchor": f"x{s}"}
        if block > 1:
            for e in np.arange(block, n_paths, block) - 0.5:
                line = {"type": "line", "xref": f"x{s}", "yref": f"y{s}", "line": {"width": 0.8, "color": "#222"}}
                shapes += [{**line, "x0": e, "x1": e, "y0": -0.5, "y1": n_paths - 0.5},
                           {**line, "x0": -0.5, "x1": n_paths - 0.5, "y0": e, "y1": e}]
    lay = T.layout(title, coloraxis={"colorscale": DIVERGING, "cmin": -lim, "cmax": lim,
                                     "colorbar": {"thickness": 8, "len": 0.8}}, **more, **(extra_axes or {}))
    lay["margin"] = {**lay["margin"], "b": 60}
    if shapes:
        lay["shapes"] = shapes
    return lay


def _lim(*arrays: np.ndarray) -> float:
    return max(max(float(np.nanmax(np.abs(a))) for a in arrays if np.size(a)), 1e-12)


def _at(times: np.ndarray, t: float) -> int | None:
    """Index of ``t`` in ``times`` (relative tolerance), or None."""
    hit = np.flatnonzero(np.isclose(times, t, rtol=1e-9, atol=0))
    return int(hit[0]) if hit.size else None


def _dash(style: str | None) -> str | None:
    return GP_DASH.get(style or "all")


def _need(arrays: Mapping[str, np.ndarray], keys: Sequence[str], experiment: str, what: str) -> None:
    missing = [k for k in keys if k not in arrays]
    if missing:
        raise ConfigError(f"this {experiment} run stores no {what} (missing {', '.join(missing[:3])}"
                          f"{', …' if len(missing) > 3 else ''}): it cannot be shown")


# -- Markov task: U and accuracy over N ---------------------------------------------------------------------
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
        return None if self.sim is None else _at(self.sim.time, self.th.time[index])

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index) for n in names}

    def _frame_u(self, index: int) -> Figure:
        N = self.th.time[index]
        j = self._sim_index(index)
        data = [_heat(self.th["U"][index], self.labels, 1)]
        titles = [f"theory, N = {N:g}"]
        if j is not None:
            data.append(_heat(self.sim["U"][j], self.labels, 2))
            titles.append(f"Gibbs samples, N = {N:g}")
        lim = _lim(self.th["U"], *([] if self.sim is None else [self.sim["U"]]))
        note = "" if self.sim is None or j is not None else " (not sampled at this N)"
        return {"data": data, "layout": _heat_layout(f"order parameter U at N = {N:g}{note}", titles, lim)}

    def _frame_outputs(self, index: int) -> Figure:
        N = self.th.time[index]
        o = self.order
        f, v = self.th["f_mean"][index][o], np.sqrt(np.maximum(self.th["f_var"][index][o], 0))
        x = np.arange(len(o))
        data = [T.line(x, f + v, color=THEORY, width=0, hoverinfo="skip", name="theory + σ", showlegend=False),
                T.line(x, f - v, color=THEORY, width=0, fill="tonexty", fillcolor="rgba(31,119,180,0.2)",
                       hoverinfo="skip", name="theory ± σ"),
                T.line(x, f, name="theory f̄", color=THEORY, width=1.4)]
        j = self._sim_index(index)
        if j is not None:
            data.append(T.scatter(np.stack([x, self.sim["f_mean"][j][o]], 1), name="samples f̄", color=SAMPLES,
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
        x = np.log10(self.th.time)
        hover = [f"N = {N:g}" for N in self.th.time]
        data = [_theory(x, self.th[key], text=hover)]
        if self.sim is not None:
            data.append(_samples(np.log10(self.sim.time), self.sim[key],
                                 hover=[f"N = {N:g}: {v:.4g}" for N, v in zip(self.sim.time, self.sim[key],
                                                                               strict=True)]))
        if gp_index is not None:
            for layout, vals in self.gp.items():
                if vals[gp_index] is not None:
                    data.append(_hline(x[0], x[-1], vals[gp_index], GP_NAME.get(layout, layout), GP,
                                       _dash(layout)))
        lay = T.layout(title, ylabel=ylabel, xaxis=_n_axis(self.th.time), showlegend=True, hovermode="closest",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_accuracy(self) -> Figure:
        return self._over_N("accuracy", "test accuracy vs N (click to jump)", "accuracy", 0)

    def _series_gen_error(self) -> Figure:
        return self._over_N("gen_error", "generalisation error ε_g vs N", "ε_g (MSE)", 1)

    def _series_entries(self) -> Figure:
        U = self.th["U"]
        x = np.log10(self.th.time)
        pairs = _U_entries(U)
        data = []
        for k, (i, j) in enumerate(pairs):
            c = T.hue(k, len(pairs))
            name = self.labels[i] if i == j else f"{self.labels[i]} · {self.labels[j]}"
            data.append(T.line(x, U[:, i, j], name=name, color=c, dash=None if i == j else "dash"))
            if self.sim is not None:
                data.append(_samples(np.log10(self.sim.time), self.sim["U"][:, i, j], name=f"{name} (samples)",
                                     color=c))
        lay = T.layout("U entries vs N (lines: theory, dots: samples; diagonal solid)", ylabel="U",
                       xaxis=_n_axis(self.th.time), showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_agreement(self) -> Figure:
        x = np.log10(self.sim.time)
        data = []
        for k, (key, name) in enumerate((("U_rel_fro", "‖U_s − U_th‖/‖U_th‖"), ("f_rel_err", "‖f̄_s − f̄_th‖/‖f̄_th‖"),
                                         ("acc_diff", "|acc_s − acc_th|"), ("U_gate_b10", "U gate B10 (≤ 1 passes)"),
                                         ("U_gate_b9", "U gate B9 (≤ 1 passes)"))):
            if key in self.agree:
                data.append(_theory(x, self.agree[key], name=name, color=T.COLORS[k], symbol="circle"))
        data.append(_theory(x, self.sim["rhat"], name="R̂ of the chains", color="#666", symbol="circle", dash="dot"))
        lay = T.layout("samples vs theory at the sampled widths", ylabel="deviation", xaxis=_n_axis(self.th.time),
                       yaxis={"type": "log"}, showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_solver(self) -> Figure:
        x = np.log10(self.th.time)
        data = [_theory(x, np.maximum(self.th[k], 1e-300), name=name, color=c, symbol="circle")
                for k, name, c in (("max_grad", "max |∂S/∂U|", T.COLORS[0]),
                                   ("residual", "self-consistency residual", T.COLORS[1])) if k in self.th]
        lay = T.layout("saddle-point solver convergence", ylabel="", xaxis=_n_axis(self.th.time),
                       yaxis={"type": "log", "exponentformat": "power"}, showlegend=True,
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}


def open_markov(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> MarkovView:
    _need(arrays, ["theory_time", "theory_U", "theory_accuracy", "theory_gen_error", "theory_f_mean",
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
    gp = {lay: (summary.get(f"acc_gp_{lay}"), summary.get(f"gen_error_gp_{lay}")) for lay in layouts}
    gp = {k: v for k, v in gp.items() if v != (None, None)}
    y = np.asarray(arrays["y_test"], float)
    order = np.lexsort((th["f_mean"][-1], y))  # class −1 first, then by the widest theory's f̄
    sd = np.sqrt(np.maximum(th["f_var"], 0))
    f_range = _range([th["f_mean"] + sd, th["f_mean"] - sd, *([] if sim is None else [sim["f_mean"]]), np.ones(1),
                      -np.ones(1)])
    panels = [PanelSpec("u", "order parameter U (theory | samples)"),
              PanelSpec("outputs", "test predictor f̄(x)"),
              PanelSpec("accuracy", "accuracy vs N", "series"), PanelSpec("gen_error", "ε_g vs N", "series"),
              PanelSpec("entries", "U entries vs N", "series")]
    if sim is not None:
        panels.append(PanelSpec("agreement", "samples vs theory", "series", default=False))
    panels.append(PanelSpec("solver", "solver convergence", "series", default=False))
    notes = [f"{layout} paths, σ⊥ = {config.get('sigma_perp', '?')}, τ = {config.get('tau', '?')}, "
             f"P = {config.get('P', '?')}; theory: lines, Gibbs samples: dots, GP limits: red",
             "time = log₁₀ N" + ("" if sim is not None else "; no Gibbs samples stored with this run")]
    variant = f"{layout} paths" + (f" (samples at N = {', '.join(f'{N:g}' for N in sim.time)})" if sim is not None
                                   else "")
    return MarkovView(times=np.log10(th.time), time_label="log₁₀ N", variants=[variant], panels=panels, notes=notes,
                      th=th, sim=sim, labels=labels, gp=gp, y_test=y,
                      agree={k.removeprefix("agree_"): np.asarray(v) for k, v in arrays.items()
                             if k.startswith("agree_")}, order=order, f_range=f_range)


# -- one-shot task: U*(N) and accuracy over N ---------------------------------------------------------------
@dataclass
class Network:
    """One variant of a one-shot run: its arrays (prefix stripped), heads per layer and path labels."""

    name: str
    Hs: tuple[int, ...]
    a: dict[str, np.ndarray]
    labels: list[str]


def _networks(experiment: str, arrays: Mapping[str, np.ndarray], config: Mapping[str, Any],
              required: Sequence[str]) -> list[Network]:
    out = []
    for var in config.get("variants") or ():
        Hs = tuple(int(h) for h in var["Hs"])
        name = f"L{len(Hs)}_H" + "-".join(map(str, Hs))
        a = {k[len(name) + 1:]: np.asarray(v) for k, v in arrays.items() if k.startswith(f"{name}/")}
        if a:
            _need(a, required, experiment, f"arrays of network {name}")
            out.append(Network(name, Hs, a, path_labels(Hs)))
    if not out:
        raise ConfigError(f"this {experiment} run stores no arrays of the networks its config names")
    return out


@dataclass
class OneShotView(View):
    nets: list[Network] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)  # test sets: id, then the OOD ones
    summary: Mapping[str, Any] = field(default_factory=dict)
    N_gd: float | None = None

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_frame_{n}")(index, net) for n in names}

    def _frame_u(self, index: int, net: Network) -> Figure:
        a = net.a
        N, tau = a["widths"][index], a["tau_star"][index]
        data = [_heat(a["U_star"][index], net.labels, 1)]
        titles = [f"theory, N = {N:g}"]
        j = _at(a["sim_time"], N) if "sim_time" in a else None
        if j is not None:
            data.append(_heat(a["sim_U"][j], net.labels, 2))
            titles.append(f"samples, N = {N:g}")
        lim = _lim(a["U_star"], *([a["sim_U"]] if "sim_U" in a else []))
        gd_lim = _lim(a["U_gd"])
        k = len(titles) + 1
        data.append(_heat(a["U_gd"], net.labels, k, coloraxis="coloraxis2"))
        titles.append(f"GD, N = {self.N_gd or 0:g} (±{gd_lim:.2g})")
        lay = _heat_layout(f"{net.name}: U at N = {N:g}, τ* = {tau:g} (theory | samples | GD, own scale)", titles,
                           lim, net.Hs,
                           {"coloraxis2": {"colorscale": DIVERGING, "cmin": -gd_lim, "cmax": gd_lim,
                                           "showscale": False}})
        return {"data": data, "layout": lay}

    def _frame_tau(self, index: int, net: Network) -> Figure:
        a = net.a
        N, taus = a["widths"][index], a["taus"]
        data = []
        for c, k in enumerate(["val", *self.sets]):
            if f"acc_grid_{k}" not in a:
                continue
            color = "#888" if k == "val" else T.COLORS[c - 1]
            name = "validation" if k == "val" else SET_NAME.get(k, k)
            data.append(_theory(taus, a[f"acc_grid_{k}"][:, index], name=f"{name}, N = {N:g}", color=color,
                                symbol="circle"))
            data.append(T.line(taus, a[f"acc_gp_grid_{k}"], name=f"{name}, GP", color=color, dash="dash",
                               width=1.0))
        lo, hi = _range([a[f"acc_grid_{k}"] for k in ["val", *self.sets] if f"acc_grid_{k}" in a]
                        + [a[f"acc_gp_grid_{k}"] for k in ["val", *self.sets] if f"acc_gp_grid_{k}" in a])
        star = float(a["tau_star"][index])
        data.append(T.line([star, star], [lo, hi], name=f"τ*(N) = {star:g}", color=THEORY, dash="dot", width=1.2))
        lay = T.layout(f"{net.name}: accuracy over τ at N = {N:g} (τ* chosen on validation)", xlabel="τ",
                       ylabel="accuracy", yaxis={"range": [lo, hi]},
                       xaxis={"type": "log", "tickmode": "array", "tickvals": taus,
                              "ticktext": [f"{t:g}" for t in taus]}, showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _frame_gd(self, index: int, net: Network) -> Figure:
        if "gd_val_curve" not in net.a:
            return {"data": [], "layout": T.layout(f"{net.name}: no GD curve stored")}
        step, acc = net.a["gd_val_curve"]
        best = int(np.argmax(acc)) if len(acc) else 0
        data = [_theory(step, acc, name="validation accuracy", color=GD, symbol="circle")]
        if len(acc):
            data.append(T.scatter([[step[best], acc[best]]], name="kept model", color=GD, symbol="star", size=13,
                                  hover=[f"kept: step {step[best]:g}, accuracy {acc[best]:.3f}"]))
        lay = T.layout(f"{net.name}: GD model validation accuracy (static)", xlabel="Adam step", ylabel="accuracy")
        return {"data": data, "layout": lay}

    def _frame_alignment(self, index: int, net: Network) -> Figure:
        a = net.a
        if "overlap_fw" not in a:
            return {"data": [], "layout": T.layout(f"{net.name}: alignment computed for the first network only")}
        k = np.arange(1, len(a["overlap_fw"]) + 1)
        data = [{"type": "bar", "x": k, "y": a["overlap_gp"], "name": "GP limit", "marker": {"color": T.COLORS[1]}},
                {"type": "bar", "x": k, "y": a["overlap_fw"], "name": "finite width (score_width)",
                 "marker": {"color": THEORY}}]
        s = self.summary
        title = f"{net.name}: kernel PCs vs labels (static)"
        if f"{net.name}/top5_overlap_fw" in s:
            title += f": top-5 FW {s[f'{net.name}/top5_overlap_fw']:.2f}, GP {s[f'{net.name}/top5_overlap_gp']:.2f}"
        lay = T.layout(title, xlabel="kernel PC", ylabel="overlap with Y", barmode="group", showlegend=True,
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_series_{n}")(net) for n in names}

    def _series_accuracy(self, net: Network) -> Figure:
        a, s = net.a, self.summary
        x = np.log10(a["widths"])
        xs = [x[0], x[-1]]
        data = []
        for c, k in enumerate(self.sets):
            color, name = T.COLORS[c], SET_NAME.get(k, k)
            data.append(_theory(x, a[f"acc_fw_{k}"], name=f"{name}: theory (τ*)", color=color,
                                text=[f"N = {N:g}, τ* = {t:g}" for N, t in zip(a["widths"], a["tau_star"],
                                                                             strict=True)]))
            data.append(_hline(xs[0], xs[1], float(a[f"acc_gp_{k}"]), f"{name}: GP", color, "dash"))
            sims = [(N, s.get(f"{net.name}/acc_sample_{k}_N{N:g}")) for N in a.get("sim_time", [])]
            sims = [(N, v) for N, v in sims if v is not None]
            if sims:
                data.append(_samples(np.log10([N for N, _ in sims]), [v for _, v in sims], name=f"{name}: samples",
                                     color=color))
            gd = s.get(f"{net.name}/gd_acc_{k}")
            if gd is not None and self.N_gd:
                data.append(T.scatter([[np.log10(self.N_gd), gd]], name=f"{name}: GD model", color=color,
                                      symbol="star", size=12, hover=[f"GD model, N = {self.N_gd:g}: {gd:.3f}"]))
        lay = T.layout(f"{net.name}: accuracy vs N (theory, GP dashed, samples ●, GD ★)", ylabel="accuracy",
                       xaxis=_n_axis(a["widths"]), showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_tau_star(self, net: Network) -> Figure:
        a = net.a
        x = np.log10(a["widths"])
        data = [_theory(x, a["tau_star"], name="τ*(N)"),
                _hline(x[0], x[-1], float(a["tau_gp"]), "τ* of the GP", GP, "dash")]
        lay = T.layout(f"{net.name}: validation-selected temperature τ*(N)", ylabel="τ*", xaxis=_n_axis(a["widths"]),
                       yaxis={"type": "log"}, showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_gp_distance(self, net: Network) -> Figure:
        a, s = net.a, self.summary
        dev = np.asarray([s.get(f"{net.name}/U_dev_from_gp_N{N:g}", np.nan) for N in a["widths"]], float)
        data = [_theory(np.log10(a["widths"]), dev, name="max |U*(N) − U_GP|")]
        lay = T.layout(f"{net.name}: distance of U*(N) from the GP limit", ylabel="max |U − U_GP|",
                       xaxis=_n_axis(a["widths"]), yaxis={"type": "log"})
        return {"data": data, "layout": lay}


def _range(arrays: Sequence[np.ndarray]) -> tuple[float, float]:
    vals = np.concatenate([np.ravel(a) for a in arrays]) if arrays else np.zeros(1)
    vals = vals[np.isfinite(vals)]
    lo, hi = (float(vals.min()), float(vals.max())) if vals.size else (0.0, 1.0)
    pad = 0.05 * max(hi - lo, 1e-3)
    return lo - pad, hi + pad


def open_oneshot(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                 config: Mapping[str, Any]) -> OneShotView:
    sets = ["id", *(config.get("ood") or ())]
    nets = _networks(experiment, arrays, config, ["widths", "taus", "tau_star", "tau_gp", "U_star", "U_gd",
                                                  *[f"acc_{p}_{k}" for k in sets for p in ("fw", "gp", "grid",
                                                                                           "gp_grid")]])
    widths = nets[0].a["widths"]
    if any(not np.array_equal(n.a["widths"], widths) for n in nets):
        raise ConfigError(f"the networks of this {experiment} run were solved on different widths")
    panels = [PanelSpec("u", "U*(N): theory | samples | GD"), PanelSpec("tau", "accuracy over τ at N"),
              PanelSpec("gd", "GD training curve (static)", default=False),
              PanelSpec("alignment", "kernel-PC alignment (static)", default=False),
              PanelSpec("accuracy", "accuracy vs N", "series"), PanelSpec("tau_star", "τ*(N)", "series", default=False),
              PanelSpec("gp_distance", "distance from the GP", "series", default=False)]
    notes = [f"{config.get('dataset', '?')} one-shot episodes, P = {config.get('P', '?')}; theory at the "
             "validation-selected τ*(N): lines, GP: dashed, Gibbs samples: dots, GD model: stars; time = log₁₀ N"]
    for n in nets:
        s = summary.get(f"{n.name}/sign_agreement_gd")
        if s is not None:
            bt, bg = (summary.get(f"{n.name}/block_ratio_{w}", np.nan) for w in ("theory", "gd"))
            notes.append(f"{n.name}: GD U shares the sign of the theory's 10 largest off-diagonal entries in "
                         f"{100 * s:.0f}% (h₁ block ratio: theory {bt:.2f}, GD {bg:.2f})")
    return OneShotView(times=np.log10(widths), time_label="log₁₀ N", variants=[n.name for n in nets], panels=panels,
                       notes=notes, nets=nets, sets=sets, summary=dict(summary),
                       N_gd=float(config["N_gd"]) if config.get("N_gd") else None)


# -- head pruning: scores from U, GD accuracy after pruning k heads ------------------------------------------
@dataclass
class PruningView(View):
    nets: list[Network] = field(default_factory=list)
    sets: list[str] = field(default_factory=list)
    mode: str = "both"
    summary: Mapping[str, Any] = field(default_factory=dict)

    def _k(self, index: int, net: Network) -> int:
        return min(index, len(net.a["order"]))  # networks with fewer prunable heads stay at their last state

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_frame_{n}")(self._k(index, net), net) for n in names}

    def _head_labels(self, net: Network) -> list[str]:
        return [f"{ell + 1}.{h + 1}" for ell, H in enumerate(net.Hs) for h in range(H)]

    def _pruned(self, k: int, net: Network) -> np.ndarray:
        """Flat (layer, head) mask of the first k heads of the pruning order."""
        flat = np.zeros(sum(net.Hs), bool)
        offsets = np.concatenate([[0], np.cumsum(net.Hs)[:-1]])
        for ell, h in np.asarray(net.a["order"], int)[:k].reshape(-1, 2):
            flat[offsets[ell] + h] = True
        return flat

    def _frame_scores(self, k: int, net: Network) -> Figure:
        a = net.a
        labels = self._head_labels(net)
        score, drop = a[f"scores_{self.mode}"], a["drop_id"]
        pruned = self._pruned(k, net)
        fade = np.where(pruned, 0.25, 1.0)
        hover = [f"head {lab}: score {sc:.3f}, drop {d:.3f}" + (" (pruned)" if p else "")
                 for lab, sc, d, p in zip(labels, score, drop, pruned, strict=True)]
        data = [{"type": "bar", "x": labels, "y": score, "name": "head score (theory U)", "offsetgroup": "s",
                 "marker": {"color": THEORY, "opacity": fade}, "hovertext": hover, "hoverinfo": "text"},
                {"type": "bar", "x": labels, "y": drop, "name": "accuracy drop, ID (GD)", "offsetgroup": "d",
                 "yaxis": "y2", "marker": {"color": GP, "opacity": fade}, "hovertext": hover, "hoverinfo": "text"}]
        order = np.asarray(a["order"], int).reshape(-1, 2)
        names = [f"{ell + 1}.{h + 1}" for ell, h in order[:k]]
        nxt = f", next {order[k][0] + 1}.{order[k][1] + 1}" if k < len(order) else ", all prunable"
        rho = self.summary.get(f"{net.name}/spearman_score_drop_id")
        title = f"{net.name}: {k} pruned ({' '.join(names) or 'none'}){nxt}"
        lay = T.layout(title, xlabel="head (layer.head)" + ("" if rho is None else f"; Spearman(score, drop) = "
                                                            f"{rho:.2f}"), ylabel="normalised score",
                       xaxis={"type": "category"},
                       yaxis2={"title": {"text": "accuracy drop"}, "overlaying": "y", "side": "right",
                               "zeroline": False, "showgrid": False},
                       barmode="group", showlegend=True, legend={"font": {"size": 9}, "x": 0, "y": 1.0})
        lay["margin"] = {**lay["margin"], "r": 44}
        return {"data": data, "layout": lay}

    def _frame_u(self, k: int, net: Network) -> Figure:
        U = np.array(net.a["U"], float)
        heads = path_heads(net.Hs)
        gone = np.zeros(len(heads), bool)
        for ell, h in np.asarray(net.a["order"], int)[:k].reshape(-1, 2):
            gone |= heads[:, ell] == h
        U[gone, :] = np.nan
        U[:, gone] = np.nan
        lim = _lim(net.a["U"])
        tau = self.summary.get(f"{net.name}/tau_star")
        title = f"{net.name}: U, paths through the {k} pruned heads blanked"
        return {"data": [_heat(U, net.labels, 1)],
                "layout": _heat_layout(title, ["paths (h₁, …, h_L)" + ("" if tau is None else f", τ* = {tau:g}")],
                                       lim, net.Hs)}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_series_{n}")(net) for n in names}

    def _series_curve(self, net: Network) -> Figure:
        data = []
        for c, k in enumerate(self.sets):
            y = net.a[f"curve_{k}"]
            data.append(_theory(np.arange(len(y)), y, name=SET_NAME.get(k, k), color=T.COLORS[c], symbol="circle"))
        frac = self.summary.get(f"{net.name}/param_fraction_per_head")
        xl = "heads pruned by score" + ("" if frac is None else f" ({100 * frac:.1f}% of parameters each)")
        lay = T.layout(f"{net.name}: GD accuracy after pruning k heads (click to jump)", xlabel=xl,
                       ylabel="accuracy", showlegend=True, legend={"font": {"size": 9}}, hovermode="x")
        return {"data": data, "layout": lay}


def open_pruning(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                 config: Mapping[str, Any]) -> PruningView:
    sets = ["id", *(config.get("ood") or ())]
    mode = str(config.get("score_mode", "both"))
    nets = _networks(experiment, arrays, config, ["U", "order", f"scores_{mode}",
                                                  *[f"{p}_{k}" for k in sets for p in ("drop", "curve")]])
    for n in nets:
        if n.a["U"].shape != (len(n.labels),) * 2 or len(n.a[f"scores_{mode}"]) != sum(n.Hs):
            raise ConfigError(f"this {experiment} run's {n.name} arrays do not match Hs = {list(n.Hs)}")
    steps = max(len(n.a["order"]) for n in nets) + 1
    panels = [PanelSpec("scores", "head scores vs accuracy drops"), PanelSpec("u", "U with pruned paths blanked"),
              PanelSpec("curve", "accuracy vs heads pruned", "series")]
    notes = [f"heads pruned in increasing score order ({mode} mode, scores from the theory's U at "
             f"N = {config.get('score_width', '?')}); accuracies are the GD model's"]
    return PruningView(times=np.arange(steps, dtype=float), time_label="heads pruned", variants=[n.name for n in nets],
                       panels=panels, notes=notes, nets=nets, sets=sets, mode=mode, summary=dict(summary))


# -- the plug-in ---------------------------------------------------------------------------------------------
MARKOV_FORM = ("layout", "sigma_perp", "tau", "P", "widths", "sample_widths", "chains", "burn_in", "samples", "seed")


class PathsPlugin(StudyPlugin):
    study = "paths"
    experiments = tuple(f"paths.{n}" for n in (*MARKOV, *ONESHOT, *PRUNING))
    forms = {f"paths.{n}": MARKOV_FORM for n in MARKOV}

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        name = experiment.split(".", 1)[1]
        if live:
            raise ConfigError(f"{experiment} runs publish no live snapshots: open the run when it has finished")
        if name in MARKOV:
            return open_markov(experiment, arrays, summary, config)
        if name in ONESHOT:
            return open_oneshot(experiment, arrays, summary, config)
        if name in PRUNING:
            return open_pruning(experiment, arrays, summary, config)
        raise ConfigError(f"the paths plug-in does not open {experiment} runs")


PLUGIN = register(PathsPlugin())
