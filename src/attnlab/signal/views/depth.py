"""The signal depth runs in the sandbox (Figs. 1d/e and the synthetic (β, α_SA) grid, α_c(L) check, Fig. 5 tanh,
Fig. C.3 no skip): the time axis is the layer l, variants are the run's configurations. Lines are theory (Eq. (19)
iterated from the measured ρ_0; dashed: its finite-T twin), dots the random networks (mean ± std over inits ×
sequences).

* ``cobweb`` (frame): the block map ρ_l → ρ_{l+1} of the shown configuration with the theory's staircase up to l
  and the simulated steps (ρ_k, ρ_{k+1}); rank collapse is the staircase running into the fixed point ρ = 1
  (Fig. 5 left). Fig. 5 stores its map; for the other runs the asymptotic map is evaluated once on opening
  (``theory.block``) and shown only where it reproduces the stored iteration.
* ``observables`` (frame): every per-layer observable at l, theory against simulation (ρ, ρ after SA, IPR q_sa
  Eq. (13), entropy S/log T B.18, ‖SA out‖²/d Eq. (8), ‖MLP out‖²/d Eqs. (17)-(18)); ``configs``: ρ_l of every
  configuration at l (which ones have collapsed by this depth).
* ``rho``, ``entropy`` (series, all configurations, the shown one bold), ``ipr``, ``rho_mid``, ``norms`` and the
  theory-simulation gap ``deviation`` (off by default).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec
from attnlab.signal.views.settings import Setting, attach_maps, depth_settings

#: per-layer observables (train.OBSERVABLES) → label in the panels
LABELS = {"rho": "ρ", "rho_mid": "ρ after SA", "ipr": "IPR q_sa", "entropy": "S/log T", "q_attn_out": "‖SA out‖²/d",
          "q_mlp_out": "‖MLP out‖²/d"}
SHORT = {"rho": "ρ", "rho_mid": "ρ_mid", "ipr": "q_sa", "entropy": "S/log T", "q_attn_out": "q_SA out",
         "q_mlp_out": "q_MLP out"}
FAINT = 0.3
KEY = "○ theory, × finite-T theory, ◆ simulation ± std"


def _error_bars(std: np.ndarray, color: str) -> dict[str, Any]:
    return {"type": "data", "array": std, "visible": True, "thickness": 1, "width": 2, "color": color}


def _markers(x: Any, y: Any, *, name: str, color: str, std: np.ndarray | None = None, size: float = 6,
             symbol: str = "circle", **more: Any) -> dict[str, Any]:
    trace = T.line(x, y, name=name, color=color, mode="markers", **more)
    trace["marker"] = {"size": size, "color": color, "symbol": symbol}
    if std is not None:
        trace["error_y"] = _error_bars(std, color)
    return trace


@dataclass
class DepthView(MethodView):
    """A depth run: one variant per configuration, one frame per layer."""

    settings: list[Setting] = field(default_factory=list)
    threshold: float | None = None  # 1 − ε of the α_c check

    # -- frames ------------------------------------------------------------------------------------------
    def _frame_cobweb(self, index: int, variant: int) -> Figure:
        s = self.settings[variant]
        c = T.hue(variant, len(self.settings))
        rho = s.theory["rho"]
        data = [T.line([0, 1], [0, 1], name="ρ_l+1 = ρ_l", color="#999", dash="dot", width=1, hoverinfo="skip"),
                T.line(s.grid, s.fmap, name="block map F (Eq. 19)", color="#222", width=1.4)]
        k = np.arange(index)  # steps 0 → 1, …, l−1 → l
        # staircase (ρ_0, ρ_0) → (ρ_0, ρ_1) → (ρ_1, ρ_1) → … → (ρ_{l−1}, ρ_l) → (ρ_l, ρ_l)
        xs = np.concatenate([rho[:1], np.stack([rho[:index], rho[1 : index + 1]], 1).ravel()])
        ys = np.concatenate([rho[:1], np.repeat(rho[1 : index + 1], 2)])
        data.append(T.line(xs, ys, name="theory", color=c, width=1.6))
        if "rho" in s.sim and index:
            sr = s.sim["rho"]
            data.append(_markers(sr[k], sr[k + 1], name="simulation", color=c, size=6, symbol="diamond",
                                 hovertext=[f"layer {j} → {j + 1}" for j in k], hoverinfo="text+x+y"))
        data.append(T.scatter(np.array([[rho[max(index - 1, 0)], rho[index]]]), color=c, size=11, showlegend=False,
                              hover=[f"layer {index}: ρ = {rho[index]:.4f} (theory)"
                                     + (f", {s.sim['rho'][index]:.4f} ± {s.sim['rho_std'][index]:.3f} (sim)"
                                        if "rho_std" in s.sim else "")]))
        lay = T.layout(f"block map, {s.label}: layer {int(self.times[index])}", equal=True, xlabel="ρ_l",
                       ylabel="ρ_l+1", xaxis={"range": [-0.02, 1.02], "constrain": "domain"},
                       yaxis={"range": [-0.02, 1.02], "constrain": "domain"}, showlegend=True,
                       legend={"x": 0.98, "y": 0.02, "xanchor": "right", "yanchor": "bottom", "font": {"size": 9},
                               "bgcolor": "rgba(255,255,255,0.7)"})
        return {"data": data, "layout": lay}

    def _frame_observables(self, index: int, variant: int) -> Figure:
        s = self.settings[variant]
        names = [n for n in LABELS if n in s.theory]
        x = [SHORT[n] for n in names]
        th = np.array([s.theory[n][index] for n in names], dtype=float)
        data = [_markers(x, th, name="theory", color=T.COLORS[0], size=10, symbol="circle-open")]
        if s.finite:
            fin = np.array([s.finite[n][index] if n in s.finite else np.nan for n in names], dtype=float)
            data.append(_markers(x, fin, name="theory, finite T", color=T.COLORS[0], size=9, symbol="x-thin-open"))
        if s.sim:
            sim = np.array([s.sim[n][index] if n in s.sim else np.nan for n in names], dtype=float)
            std = np.array([s.sim.get(f"{n}_std", np.full(len(self.times), np.nan))[index] for n in names])
            data.append(_markers(x, sim, name="simulation", color=T.COLORS[1], std=std, size=7, symbol="diamond"))
        lay = T.layout(f"layer {int(self.times[index])}, {s.label}: {KEY}", ylabel="value")
        lay["title"]["font"] = {"size": 11}
        return {"data": data, "layout": lay}

    def _frame_configs(self, index: int, variant: int) -> Figure:
        x = [s.label for s in self.settings]
        th = np.array([s.theory["rho"][index] for s in self.settings], dtype=float)
        data = [_markers(x, th, name="theory", color=T.COLORS[0], size=10, symbol="circle-open")]
        if any(s.finite for s in self.settings):
            fin = np.array([s.finite["rho"][index] if s.finite else np.nan for s in self.settings], dtype=float)
            data.append(_markers(x, fin, name="theory, finite T", color=T.COLORS[0], size=9, symbol="x-thin-open"))
        if any(s.sim for s in self.settings):
            sim = np.array([s.sim["rho"][index] if s.sim else np.nan for s in self.settings], dtype=float)
            std = np.array([s.sim["rho_std"][index] if s.sim else np.nan for s in self.settings], dtype=float)
            data.append(_markers(x, sim, name="simulation", color=T.COLORS[1], std=std, size=7, symbol="diamond"))
        if self.threshold is not None:
            data.append(T.line([x[0], x[-1]], [self.threshold] * 2, name="1 − ε", color="#000", dash="dot", width=1))
        lay = T.layout(f"ρ at layer {int(self.times[index])}: {KEY}", ylabel="ρ_l", yaxis={"range": [-0.02, 1.05]},
                       xaxis={"tickangle": -20, "automargin": True})
        lay["title"]["font"] = {"size": 11}
        return {"data": data, "layout": lay}

    # -- series ------------------------------------------------------------------------------------------
    def _over_depth(self, variant: int, names: Sequence[str], title: str, ylabel: str, **more: Any) -> Figure:
        data: list[dict[str, Any]] = []
        dashes = (None, "dot", "dashdot")
        for i, s in enumerate(self.settings):
            c = T.hue(i, len(self.settings))
            shown = i == variant
            op = 1.0 if shown else FAINT
            for name, dash in zip(names, dashes, strict=False):
                tag = f"{s.label}" + (f" {LABELS[name]}" if len(names) > 1 else "")
                if name in s.theory:
                    data.append(T.line(self.times, s.theory[name], name=f"{tag} theory", color=c, dash=dash,
                                       width=2.2 if shown else 1.2, opacity=op))
                if name in s.finite:
                    data.append(T.line(self.times, s.finite[name], name=f"{tag} theory, finite T", color=c,
                                       dash="dash", width=1.2, opacity=op))
                if name in s.sim:
                    data.append(_markers(self.times, s.sim[name], name=f"{tag} simulation", color=c,
                                         std=s.sim.get(f"{name}_std") if shown else None, size=6 if shown else 4,
                                         opacity=op))
        lay = T.layout(f"{title} (click to jump)", xlabel="layer l", ylabel=ylabel, hovermode="x", **more)
        return {"data": data, "layout": lay}

    def _series_rho(self, variant: int) -> Figure:
        fig = self._over_depth(variant, ["rho"], "mean cosine ρ_l (lines theory, dots simulation ± std)", "ρ_l",
                               yaxis={"range": [-0.02, 1.05]})
        if self.threshold is not None:
            fig["data"].append(T.line([self.times[0], self.times[-1]], [self.threshold] * 2, name="1 − ε",
                                      color="#000", dash="dot", width=1))
        return fig

    def _series_entropy(self, variant: int) -> Figure:
        return self._over_depth(variant, ["entropy"], "attention entropy S/log T", "S/log T",
                                yaxis={"range": [-0.02, 1.05]})

    def _series_ipr(self, variant: int) -> Figure:
        return self._over_depth(variant, ["ipr"], "attention IPR q_sa (Eq. 13)", "q_sa", yaxis={"range": [-0.02, 1.05]})

    def _series_rho_mid(self, variant: int) -> Figure:
        return self._over_depth(variant, ["rho_mid"], "cosine after SA + skip (Eq. 16)", "ρ_mid",
                                yaxis={"range": [-0.02, 1.05]})

    def _series_norms(self, variant: int) -> Figure:
        return self._over_depth(variant, ["q_attn_out", "q_mlp_out"], "branch norms (solid SA, dotted MLP)", "‖·‖²/d")

    def _series_deviation(self, variant: int) -> Figure:
        data = []
        for i, s in enumerate(self.settings):
            if "rho" not in s.sim:
                continue
            c, shown = T.hue(i, len(self.settings)), i == variant
            for src, dash in (("theory", None), ("finite", "dash")):
                ref = getattr(s, src).get("rho")
                if ref is not None:
                    data.append(T.line(self.times, np.abs(s.sim["rho"] - ref), color=c, dash=dash,
                                       name=f"{s.label} |sim − {'finite-T ' if src == 'finite' else ''}theory|",
                                       width=2 if shown else 1, opacity=1.0 if shown else FAINT))
        lay = T.layout("|ρ_sim − ρ_theory| (dashed: finite-T theory)", xlabel="layer l", ylabel="|Δρ|",
                       hovermode="x")
        return {"data": data, "layout": lay}


def open_depth(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> DepthView:
    settings, pairs, changes = depth_settings(experiment, arrays, config)
    if not settings:
        raise ConfigError(f"this {experiment} run stores no configuration")
    n = len(settings[0].theory["rho"])
    for s in settings:
        for src in (s.theory, s.sim, s.finite):
            bad = [k for k, v in src.items() if len(v) != n]
            if bad:
                raise ConfigError(f"{experiment}: {s.label} has {bad[0]} over {len(src[bad[0]])} layers, not {n}")
    notes = ["lines: theory (Eq. 19 iterated); dots: simulation, mean ± std over inits × sequences"]
    if any(s.finite for s in settings):
        notes.append("dashed: finite-T theory (Monte Carlo of the score field)")
    if settings[0].fmap is None:
        why = attach_maps(settings, pairs, config, changes)
        if why:
            notes.append(why)
    threshold = 1 - float(config["sim_eps"]) if "sim_eps" in config and "alphas_sim" in arrays else None
    if threshold is not None and "alpha_c_sim_L" in summary:
        notes.append(f"α_c({config.get('sim_L')}) = {summary['alpha_c_sim_L']:.3f} at ε = {config['sim_eps']:g}")
    has = set().union(*(s.theory for s in settings))
    panels = [PanelSpec("cobweb", "block map ρ_l → ρ_{l+1} (cobweb)")] if settings[0].fmap is not None else []
    if len(has) > 1:
        panels.append(PanelSpec("observables", "observables at layer l: theory vs simulation"))
    panels.append(PanelSpec("configs", "ρ_l of every configuration", default=len(settings) > 1))
    panels.append(PanelSpec("rho", "cosine ρ_l over depth", "series"))
    for key, title, default in (("entropy", "attention entropy over depth", True), ("ipr", "IPR over depth", False),
                                ("rho_mid", "cosine after SA over depth", False)):
        if key in has:
            panels.append(PanelSpec(key, title, "series", default))
    if {"q_attn_out", "q_mlp_out"} <= has:
        panels.append(PanelSpec("norms", "branch norms over depth", "series", False))
    if any("rho" in s.sim for s in settings):
        panels.append(PanelSpec("deviation", "|simulation − theory| over depth", "series", False))
    return DepthView(times=np.arange(n, dtype=float), time_label="layer", variants=[s.label for s in settings],
                     panels=panels, notes=notes, settings=settings, threshold=threshold)

