"""The one-shot-task view of the paths study (Figs. 3b-d, 6): frames are the widths N, variants the networks; its
panels U*(N) beside the samples and the GD model, accuracy over τ at N, the static GD and alignment panels, and
accuracy, τ*(N) and the distance from the GP over N. Also the networks' arrays, which head pruning reuses."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.paths.figures.common import path_labels
from attnlab.paths.figures.oneshot import SET_NAME
from attnlab.paths.keys import net_key, set_key
from attnlab.paths.views import draw as D
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, View


@dataclass
class Network:
    """One variant of a one-shot run: its arrays (prefix stripped), heads per layer and path labels."""

    name: str
    Hs: tuple[int, ...]
    a: dict[str, np.ndarray]
    labels: list[str]


def networks(experiment: str, arrays: Mapping[str, np.ndarray], config: Mapping[str, Any],
             required: Sequence[str]) -> list[Network]:
    """The networks the config names that the run stores arrays of, each holding every key of ``required``."""
    out = []
    for var in config.get("variants") or ():
        Hs = tuple(int(h) for h in var["Hs"])
        name = f"L{len(Hs)}_H" + "-".join(map(str, Hs))
        a = {k[len(name) + 1:]: np.asarray(v) for k, v in arrays.items() if k.startswith(f"{name}/")}
        if a:
            D.need(a, required, experiment, f"arrays of network {name}")
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
        data = [D.heat(a["U_star"][index], net.labels, 1)]
        titles = [f"theory, N = {N:g}"]
        j = D.at(a["sim_time"], N) if "sim_time" in a else None
        if j is not None:
            data.append(D.heat(a["sim_U"][j], net.labels, 2))
            titles.append(f"samples, N = {N:g}")
        lim = D.lim(a["U_star"], *([a["sim_U"]] if "sim_U" in a else []))
        gd_lim = D.lim(a["U_gd"])
        k = len(titles) + 1
        data.append(D.heat(a["U_gd"], net.labels, k, coloraxis="coloraxis2"))
        titles.append(f"GD, N = {self.N_gd or 0:g} (±{gd_lim:.2g})")
        lay = D.heat_layout(f"{net.name}: U at N = {N:g}, τ* = {tau:g} (theory | samples | GD, own scale)", titles,
                            lim, net.Hs,
                            {"coloraxis2": {"colorscale": D.DIVERGING, "cmin": -gd_lim, "cmax": gd_lim,
                                            "showscale": False}})
        return {"data": data, "layout": lay}

    def _frame_tau(self, index: int, net: Network) -> Figure:
        a = net.a
        N, taus = a["widths"][index], a["taus"]
        data = []
        for c, k in enumerate(["val", *self.sets]):
            if set_key("acc_grid", k) not in a:
                continue
            color = "#888" if k == "val" else T.COLORS[c - 1]
            name = "validation" if k == "val" else SET_NAME.get(k, k)
            data.append(D.theory(taus, a[set_key("acc_grid", k)][:, index], name=f"{name}, N = {N:g}", color=color,
                                 symbol="circle"))
            data.append(T.line(taus, a[set_key("acc_gp_grid", k)], name=f"{name}, GP", color=color, dash="dash",
                               width=1.0))
        grids = [set_key(g, k) for g in ("acc_grid", "acc_gp_grid") for k in ["val", *self.sets]]
        lo, hi = D.value_range([a[g] for g in grids if g in a])
        star = float(a["tau_star"][index])
        data.append(T.line([star, star], [lo, hi], name=f"τ*(N) = {star:g}", color=D.THEORY, dash="dot", width=1.2))
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
        data = [D.theory(step, acc, name="validation accuracy", color=D.GD, symbol="circle")]
        if len(acc):
            data.append(T.scatter([[step[best], acc[best]]], name="kept model", color=D.GD, symbol="star", size=13,
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
                 "marker": {"color": D.THEORY}}]
        s = self.summary
        title = f"{net.name}: kernel PCs vs labels (static)"
        if net_key(net.name, "top5_overlap_fw") in s:
            fw, gp = (s[net_key(net.name, "top5_overlap", k)] for k in ("fw", "gp"))
            title += f": top-5 FW {fw:.2f}, GP {gp:.2f}"
        lay = T.layout(title, xlabel="kernel PC", ylabel="overlap with Y", barmode="group", showlegend=True,
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_series_{n}")(net) for n in names}

    def _series_accuracy(self, net: Network) -> Figure:
        a, s = net.a, self.summary
        N = a["widths"]
        data = []
        for c, k in enumerate(self.sets):
            color, name = T.COLORS[c], SET_NAME.get(k, k)
            data.append(D.theory(N, a[set_key("acc_fw", k)], name=f"{name}: theory (τ*)", color=color,
                                 text=[f"τ* = {t:g}" for t in a["tau_star"]]))
            data.append(D.hline(N[0], N[-1], float(a[set_key("acc_gp", k)]), f"{name}: GP", color, "dash"))
            sims = [(w, s.get(net_key(net.name, "acc_sample", k, N=w))) for w in a.get("sim_time", [])]
            sims = [(w, v) for w, v in sims if v is not None]
            if sims:
                data.append(D.samples([w for w, _ in sims], [v for _, v in sims], name=f"{name}: samples",
                                      color=color))
            gd = s.get(net_key(net.name, "gd_acc", k))
            if gd is not None and self.N_gd:
                data.append(T.scatter([[self.N_gd, gd]], name=f"{name}: GD model", color=color, symbol="star",
                                      size=12, hover=[f"GD model, N = {self.N_gd:g}: {gd:.3f}"]))
        lay = T.layout(f"{net.name}: accuracy vs N (theory, GP dashed, samples ●, GD ★)", ylabel="accuracy",
                       xaxis=D.N_AXIS, showlegend=True, legend={"font": {"size": 8}})
        return {"data": data, "layout": lay}

    def _series_tau_star(self, net: Network) -> Figure:
        a = net.a
        N = a["widths"]
        data = [D.theory(N, a["tau_star"], name="τ*(N)"),
                D.hline(N[0], N[-1], float(a["tau_gp"]), "τ* of the GP", D.GP, "dash")]
        lay = T.layout(f"{net.name}: validation-selected temperature τ*(N)", ylabel="τ*", xaxis=D.N_AXIS,
                       yaxis={"type": "log"}, showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_gp_distance(self, net: Network) -> Figure:
        a, s = net.a, self.summary
        dev = np.asarray([s.get(net_key(net.name, "U_dev_from_gp", N=N), np.nan) for N in a["widths"]], float)
        data = [D.theory(a["widths"], dev, name="max |U*(N) − U_GP|")]
        lay = T.layout(f"{net.name}: distance of U*(N) from the GP limit", ylabel="max |U − U_GP|", xaxis=D.N_AXIS,
                       yaxis={"type": "log"})
        return {"data": data, "layout": lay}


def open_oneshot(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                 config: Mapping[str, Any]) -> OneShotView:
    sets = ["id", *(config.get("ood") or ())]
    nets = networks(experiment, arrays, config, ["widths", "taus", "tau_star", "tau_gp", "U_star", "U_gd",
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
             "validation-selected τ*(N): lines, GP: dashed, Gibbs samples: dots, GD model: stars"]
    for n in nets:
        s = summary.get(net_key(n.name, "sign_agreement_gd"))
        if s is not None:
            bt, bg = (summary.get(net_key(n.name, "block_ratio", w), np.nan) for w in ("theory", "gd"))
            notes.append(f"{n.name}: GD U shares the sign of the theory's 10 largest off-diagonal entries in "
                         f"{100 * s:.0f}% (h₁ block ratio: theory {bt:.2f}, GD {bg:.2f})")
    return OneShotView(times=np.asarray(widths, float), time_label="N", variants=[n.name for n in nets],
                       panels=panels, notes=notes, nets=nets, sets=sets, summary=dict(summary),
                       N_gd=float(config["N_gd"]) if config.get("N_gd") else None)
