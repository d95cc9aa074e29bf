"""The head-pruning view of the paths study (Figs. 3e-f, 7): frames are the number k of heads pruned in score
order, variants the networks; its panels the head scores against the accuracy drops, U with the pruned paths
blanked, and the GD model's accuracy over k."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.paths.figures.oneshot import SET_NAME
from attnlab.paths.keys import net_key, set_key
from attnlab.paths.theory.scores import path_heads
from attnlab.paths.views import draw as D
from attnlab.paths.views.oneshot import Network, networks
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, View


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
                 "marker": {"color": D.THEORY, "opacity": fade}, "hovertext": hover, "hoverinfo": "text"},
                {"type": "bar", "x": labels, "y": drop, "name": "accuracy drop, ID (GD)", "offsetgroup": "d",
                 "yaxis": "y2", "marker": {"color": D.GP, "opacity": fade}, "hovertext": hover, "hoverinfo": "text"}]
        order = np.asarray(a["order"], int).reshape(-1, 2)
        names = [f"{ell + 1}.{h + 1}" for ell, h in order[:k]]
        nxt = f", next {order[k][0] + 1}.{order[k][1] + 1}" if k < len(order) else ", all prunable"
        rho = self.summary.get(net_key(net.name, "spearman_score_drop", "id"))
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
        lim = D.lim(net.a["U"])
        tau = self.summary.get(net_key(net.name, "tau_star"))
        title = f"{net.name}: U, paths through the {k} pruned heads blanked"
        return {"data": [D.heat(U, net.labels, 1)],
                "layout": D.heat_layout(title, ["paths (h₁, …, h_L)" + ("" if tau is None else f", τ* = {tau:g}")],
                                        lim, net.Hs)}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        net = self.nets[variant]
        return {n: getattr(self, f"_series_{n}")(net) for n in names}

    def _series_curve(self, net: Network) -> Figure:
        data = []
        for c, k in enumerate(self.sets):
            y = net.a[set_key("curve", k)]
            data.append(D.theory(np.arange(len(y)), y, name=SET_NAME.get(k, k), color=T.COLORS[c], symbol="circle"))
        frac = self.summary.get(net_key(net.name, "param_fraction_per_head"))
        xl = "heads pruned by score" + ("" if frac is None else f" ({100 * frac:.1f}% of parameters each)")
        lay = T.layout(f"{net.name}: GD accuracy after pruning k heads (click to jump)", xlabel=xl,
                       ylabel="accuracy", showlegend=True, legend={"font": {"size": 9}}, hovermode="x")
        return {"data": data, "layout": lay}


def open_pruning(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                 config: Mapping[str, Any]) -> PruningView:
    sets = ["id", *(config.get("ood") or ())]
    mode = str(config.get("score_mode", "both"))
    nets = networks(experiment, arrays, config, ["U", "order", set_key("scores", mode),
                                                 *[set_key(p, k) for k in sets for p in ("drop", "curve")]])
    for n in nets:
        if n.a["U"].shape != (len(n.labels),) * 2 or len(n.a[set_key("scores", mode)]) != sum(n.Hs):
            raise ConfigError(f"this {experiment} run's {n.name} arrays do not match Hs = {list(n.Hs)}")
    steps = max(len(n.a["order"]) for n in nets) + 1
    panels = [PanelSpec("scores", "head scores vs accuracy drops"), PanelSpec("u", "U with pruned paths blanked"),
              PanelSpec("curve", "accuracy vs heads pruned", "series")]
    notes = [f"heads pruned in increasing score order ({mode} mode, scores from the theory's U at "
             f"N = {config.get('score_width', '?')}); accuracies are the GD model's"]
    return PruningView(times=np.arange(steps, dtype=float), time_label="heads pruned", variants=[n.name for n in nets],
                       panels=panels, notes=notes, nets=nets, sets=sets, mode=mode, summary=dict(summary))
