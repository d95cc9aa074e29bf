"""The signal study in the sandbox (paper 1): signal propagation through a deep post-LN transformer at
initialisation, scrubbed layer by layer, and MLM training from those initialisations, scrubbed step by step.

Depth runs (Figs. 1d/e and the synthetic (β, α_SA) grid, α_c(L) check, Fig. 5 tanh, Fig. C.3 no skip): the time
axis is the layer l, variants are the run's configurations. Lines are theory (Eq. 19 iterated from the measured
ρ_0; dashed: its finite-T twin), dots the random networks (mean ± std over inits × sequences).

* ``cobweb`` (frame): the block map ρ_l → ρ_{l+1} of the shown configuration with the theory's staircase up to l
  and the simulated steps (ρ_k, ρ_{k+1}); rank collapse is the staircase running into the fixed point ρ = 1
  (Fig. 5 left). Fig. 5 stores its map; for the other runs the asymptotic map is evaluated once on opening
  (``theory.block``) and shown only where it reproduces the stored iteration.
* ``observables`` (frame): every per-layer observable at l, theory against simulation (ρ, ρ after SA, IPR q_sa
  Eq. 13, entropy S/log T B.18, ‖SA out‖²/d Eq. 8, ‖MLP out‖²/d Eqs. 17-18); ``configs``: ρ_l of every
  configuration at l (which ones have collapsed by this depth).
* ``rho``, ``entropy`` (series, all configurations, the shown one bold), ``ipr``, ``rho_mid``, ``norms`` and the
  theory-simulation gap ``deviation`` (off by default).

MLM runs (Figs. 4, C.2, 1f): time = training step, variants = seeds (and the two arms of Fig. 1f); series of the
held-out loss (training loss dotted) and the layer-1 attention entropy per (β, α_SA), frames of loss and entropy
across the swept parameter at a step (β_c = √2 of Eq. 13 dashed: entropy collapse above it) and of the entropy
per layer. Runs without a depth or step axis (Figs. 1a/b, 1c, 3, B.1, C.1, universality) are not opened here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register

DEPTH = ("fig1d", "fig1e", "depth", "alphac", "figC3", "fig5")
MLM = ("fig4", "figC2", "fig1f")
#: per-layer observables (train.OBSERVABLES) → label in the panels
LABELS = {"rho": "ρ", "rho_mid": "ρ after SA", "ipr": "IPR q_sa", "entropy": "S/log T", "q_attn_out": "‖SA out‖²/d",
          "q_mlp_out": "‖MLP out‖²/d"}
MAP_TOL = 1e-6  # the evaluated block map must reproduce the stored Eq. 19 iteration to this
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


# ---------------------------------------------------------------------------------------------- depth runs
@dataclass
class Setting:
    """One configuration of a depth run: per-layer theory (asymptotic, finite-T) and simulation, block map."""

    label: str
    theory: dict[str, np.ndarray]
    sim: dict[str, np.ndarray] = field(default_factory=dict)  # name and name_std
    finite: dict[str, np.ndarray] = field(default_factory=dict)
    grid: np.ndarray | None = None
    fmap: np.ndarray | None = None


@dataclass
class DepthView(View):
    settings: list[Setting] = field(default_factory=list)
    threshold: float | None = None  # 1 − ε of the α_c check

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index, variant) for n in names}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")(variant) for n in names}

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


def _columns(arrays: Mapping[str, np.ndarray], prefix: str, n_layers: int, experiment: str) -> list[dict]:
    """``prefix<name>`` arrays of shape (L+1, C) → one {name: (L+1,)} per configuration."""
    keys = [k for k in arrays if k.startswith(prefix) and k not in (f"{prefix}time", f"{prefix}flops")]
    out: list[dict] = []
    for k in keys:
        a = np.asarray(arrays[k], dtype=float)
        if a.ndim != 2 or a.shape[0] != n_layers:
            raise ConfigError(f"{experiment}: array {k!r} has shape {a.shape}, expected ({n_layers}, configurations)")
        out += [{} for _ in range(a.shape[1] - len(out))]
        for i in range(a.shape[1]):
            out[i][k[len(prefix):]] = a[:, i]
    return out


def _depth_settings(experiment: str, arrays: Mapping[str, np.ndarray],
                    config: Mapping[str, Any]) -> tuple[list[Setting], list[tuple[Any, Any]], dict[str, Any]]:
    """Settings of a depth run, the (β, α_SA) behind each (None: the architecture's) and architecture changes."""
    name = experiment.split(".", 1)[1]
    if "grid" in arrays and "sigma_w2s" in arrays:  # Fig. 5: per-σ_w² arrays, the map stored
        out = []
        for s in np.asarray(arrays["sigma_w2s"], dtype=float):
            tag = f"{s:g}"
            if f"theory_{tag}" not in arrays or f"map_{tag}" not in arrays:
                raise ConfigError(f"{experiment}: no theory_{tag} / map_{tag} arrays for σ_w² = {tag}")
            sim = {"rho": arrays[f"sim_{tag}"], "rho_std": arrays[f"sim_std_{tag}"]} if f"sim_{tag}" in arrays else {}
            out.append(Setting(f"σ_w²={tag}" + ("" if sim else " (theory only)"), {"rho": arrays[f"theory_{tag}"]},
                               {k: np.asarray(v, dtype=float) for k, v in sim.items()},
                               grid=np.asarray(arrays["grid"], dtype=float),
                               fmap=np.asarray(arrays[f"map_{tag}"], dtype=float)))
        return out, [], {}
    if "theory_rho" not in arrays or "sim_rho" not in arrays or "theory_time" not in arrays:
        raise ConfigError(f"this {experiment} run stores no per-layer theory and simulation arrays "
                          "(theory_rho, sim_rho)")
    n = len(arrays["theory_time"])
    theory = _columns(arrays, "theory_", n, experiment)
    sim = _columns(arrays, "sim_", n, experiment)
    finite = _columns(arrays, "finite_", n, experiment) if "finite_rho" in arrays else [{} for _ in theory]
    if not (len(theory) == len(sim) == len(finite)):
        raise ConfigError(f"{experiment}: theory, simulation and finite-T arrays hold different numbers of "
                          f"configurations ({len(theory)}, {len(sim)}, {len(finite)})")
    C = len(theory)
    changes: dict[str, Any] = {}
    if name == "figC3" or "table_betas" in arrays:
        pairs = [(float(b), 0.0) for b in arrays["table_betas"]]
        labels = [f"β={b:g}" for b, _ in pairs]
        changes = {"alpha_sa": 0.0, "alpha_mlp": 0.0}
    elif "alphas_sim" in arrays:
        pairs = [(None, float(a)) for a in arrays["alphas_sim"]]
        labels = [f"α_SA={a:g}" for _, a in pairs]
        changes = {"L": config.get("sim_L", config.get("L"))}
    elif "betas" in arrays and "alphas" in arrays and len(arrays["betas"]) == C:
        pairs = [(float(b), float(a)) for b, a in zip(arrays["betas"], arrays["alphas"], strict=True)]
        labels = [f"β={b:.3g}, α_SA={a:g}" for b, a in pairs]
    else:
        pairs, labels = [(None, None)] * C, [f"configuration {i + 1}" for i in range(C)]
    if len(pairs) != C:
        raise ConfigError(f"{experiment}: {len(pairs)} configurations named but {C} stored")
    out = [Setting(lab, th, si, fi) for lab, th, si, fi in zip(labels, theory, sim, finite, strict=True)]
    return out, pairs, changes


def _attach_maps(settings: list[Setting], pairs: list[tuple[Any, Any]], config: Mapping[str, Any],
                 changes: Mapping[str, Any]) -> str | None:
    """Evaluate the asymptotic block map (Eq. 19) of each setting once; None, or why the cobweb is not shown."""
    import torch

    from attnlab.signal import theory
    from attnlab.signal.arch import Architecture

    try:
        arch = Architecture(**{k: config[k] for k in Architecture.model_fields if k in config})
        arch = arch.replace(**{k: v for k, v in changes.items() if v is not None})
    except (ValueError, TypeError) as exc:
        return f"block map not shown: the run's config gives no architecture ({' '.join(str(exc).split())[:80]})"
    if arch.ln_position != "post":
        return "block map not shown: pre-LN propagates (q, ρ), not ρ alone"
    grid = np.linspace(0.0, 1.0, 201)
    for s, (beta, alpha) in zip(settings, pairs, strict=True):
        rho = s.theory["rho"]
        pts = torch.as_tensor(np.concatenate([grid, rho[:-1]]), dtype=torch.float64)
        fmap = theory.block(pts, arch, beta, alpha)["rho"].numpy()
        if not np.all(np.abs(fmap[len(grid):] - rho[1:]) <= MAP_TOL):
            return "block map not shown: the map evaluated from the config does not reproduce the stored iteration"
        s.grid, s.fmap = grid, fmap[: len(grid)]
    return None


def _open_depth(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
                config: Mapping[str, Any]) -> DepthView:
    settings, pairs, changes = _depth_settings(experiment, arrays, config)
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
        why = _attach_maps(settings, pairs, config, changes)
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


# ---------------------------------------------------------------------------------------------- MLM runs
@dataclass
class Arm:
    """The slots of one batched MLM run: per-step losses (S, P), per-layer entropy and IPR (S, P, L)."""

    name: str
    loss: np.ndarray
    eval_loss: np.ndarray
    entropy: np.ndarray
    ipr: np.ndarray
    slots: list[tuple[float, float, int]]  # (β, α_SA, seed)


@dataclass
class MLMView(View):
    groups: list[tuple[Arm, list[int]]] = field(default_factory=list)  # per variant: arm and its slot indices
    uniform_loss: float | None = None
    beta_c: float | None = None  # β_c = √2 in the run's β convention

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_frame_{n}")(index, variant) for n in names}

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        return {n: getattr(self, f"_series_{n}")(variant) for n in names}

    def _color(self, arm: Arm, i: int) -> str:
        combos = sorted({(b, a) for b, a, _ in arm.slots})
        return T.hue(combos.index(arm.slots[i][:2]), len(combos))

    def _label(self, arm: Arm, i: int) -> str:
        b, a, _ = arm.slots[i]
        return f"β={b:g}, α_SA={a:g}"

    def _series_loss(self, variant: int) -> Figure:
        arm, idx = self.groups[variant]
        data = []
        for i in idx:
            c, lab = self._color(arm, i), self._label(arm, i)
            data.append(T.line(self.times, arm.eval_loss[:, i], name=f"{lab} held-out", color=c, width=2))
            data.append(T.line(self.times, arm.loss[:, i], name=f"{lab} training", color=c, dash="dot", width=1))
        if self.uniform_loss is not None:
            data.append(T.line([self.times[0], self.times[-1]], [self.uniform_loss] * 2, name="uniform guess",
                               color="#000", dash="dash", width=1))
        lay = T.layout("MLM loss (solid held-out, dotted training; click to jump)", xlabel="step", ylabel="loss",
                       hovermode="x", showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_entropy(self, variant: int) -> Figure:
        arm, idx = self.groups[variant]
        data = [T.line(self.times, arm.entropy[:, i, 0], name=self._label(arm, i), color=self._color(arm, i),
                       width=2) for i in idx]
        lay = T.layout("layer-1 attention entropy S/log T", xlabel="step", ylabel="S/log T", hovermode="x",
                       yaxis={"range": [-0.02, 1.02]}, showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_ipr(self, variant: int) -> Figure:
        arm, idx = self.groups[variant]
        data = [T.line(self.times, arm.ipr[:, i, 0], name=self._label(arm, i), color=self._color(arm, i), width=2)
                for i in idx]
        lay = T.layout("layer-1 attention IPR", xlabel="step", ylabel="IPR", hovermode="x",
                       yaxis={"range": [-0.02, 1.02]})
        return {"data": data, "layout": lay}

    def _frame_sweep(self, index: int, variant: int) -> Figure:
        """Held-out loss (left axis) and layer-1 entropy (right axis) against the swept β (else α_SA)."""
        arm, idx = self.groups[variant]
        betas = {arm.slots[i][0] for i in idx}
        on_beta = len(betas) > 1 or len({arm.slots[i][1] for i in idx}) == 1
        key, other = (0, 1) if on_beta else (1, 0)
        data = []
        for j, fixed in enumerate(sorted({arm.slots[i][other] for i in idx})):
            sub = sorted((i for i in idx if arm.slots[i][other] == fixed), key=lambda i: arm.slots[i][key])
            x = np.array([arm.slots[i][key] for i in sub])
            tag = f"{'α_SA' if on_beta else 'β'}={fixed:g}"
            data.append(T.line(x, arm.eval_loss[index, sub], name=f"held-out loss, {tag}", color=T.COLORS[0],
                               dash=(None, "dot", "dash")[j % 3], mode="lines+markers"))
            data.append(T.line(x, arm.entropy[index, sub, 0], name=f"S/log T, {tag}", color=T.COLORS[1],
                               dash=(None, "dot", "dash")[j % 3], mode="lines+markers", yaxis="y2"))
        if on_beta and self.beta_c is not None:
            data.append(T.line([self.beta_c] * 2, [0, 1], name="β_c = √2 (Eq. 13)", color="#000", dash="dash",
                               width=1, yaxis="y2"))
        xl = "β" if on_beta else "α_SA"
        lay = T.layout(f"step {int(self.times[index])}: held-out loss (left) and layer-1 S/log T (right) vs {xl}",
                       xlabel=xl, xaxis={"type": "log"} if on_beta and min(betas) > 0 else {},
                       yaxis={"title": {"text": "held-out loss", "font": {"color": T.COLORS[0]}}},
                       yaxis2={"title": {"text": "S/log T", "font": {"color": T.COLORS[1]}}, "overlaying": "y",
                               "side": "right", "range": [-0.02, 1.02], "tickmode": "auto", "nticks": 6,
                               "showgrid": False, "zeroline": False},
                       margin={"r": 44})
        lay["title"]["font"] = {"size": 11}
        return {"data": data, "layout": lay}

    def _frame_layers(self, index: int, variant: int) -> Figure:
        arm, idx = self.groups[variant]
        layers = np.arange(1, arm.entropy.shape[2] + 1)
        data = [T.line(layers, arm.entropy[index, i], name=self._label(arm, i), color=self._color(arm, i),
                       mode="lines+markers") for i in idx]
        lay = T.layout(f"attention entropy per layer at step {int(self.times[index])}", xlabel="layer",
                       ylabel="S/log T", yaxis={"range": [-0.02, 1.02]}, showlegend=True,
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}


def _slots_of(prefix: str, arrays: Mapping[str, np.ndarray], config: Mapping[str, Any],
              P: int) -> list[tuple[float, float, int]] | None:
    """(β, α_SA, seed) of each slot, in ``_train``'s order (β × α, repeated per seed); None when unknown."""
    if all(f"slot_{k}" in arrays for k in ("betas", "alphas", "seeds")):
        slots = list(zip(*(np.asarray(arrays[f"slot_{k}"]).tolist() for k in ("betas", "alphas", "seeds")),
                         strict=True))
    else:  # Fig. 1f: the arms' slots follow from the config
        arm = prefix.rstrip("_")
        if arm == "rank":
            bs, als = [config.get("rank_beta")], config.get("rank_alphas") or ()
        elif arm == "entropy":
            bs, als = config.get("entropy_betas") or (), [config.get("entropy_alpha")]
        else:
            bs, als = config.get("betas") or (), config.get("alphas") or ()
        combos = list(itertools.product(bs, als))
        n = len(combos) * int(config.get("n_seeds", 1))
        slots = [(*combos[i % len(combos)], i // len(combos)) for i in range(n)]
    if len(slots) != P or any(v is None for s in slots for v in s):
        return None
    return [(float(b), float(a), int(s)) for b, a, s in slots]


def _open_mlm(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
              config: Mapping[str, Any]) -> MLMView:
    prefixes = sorted(k[: -len("eval_loss")] for k in arrays if k.endswith("eval_loss"))
    need = ("time", "loss", "eval_loss", "entropy", "ipr")
    prefixes = [p for p in prefixes if all(f"{p}{k}" in arrays for k in need)]
    if not prefixes:
        raise ConfigError(f"this {experiment} run stores no MLM training history (time, loss, eval_loss, entropy)")
    order = {"rank_": 0, "entropy_": 1}
    prefixes.sort(key=lambda p: order.get(p, 2))
    times = np.asarray(arrays[f"{prefixes[0]}time"], dtype=float)
    groups, variants = [], []
    for p in prefixes:
        if not np.array_equal(np.asarray(arrays[f"{p}time"], dtype=float), times):
            raise ConfigError(f"{experiment}: the arms were logged at different steps; cannot share a time axis")
        a = {k: np.asarray(arrays[f"{p}{k}"], dtype=float) for k in need[1:]}
        S, P = len(times), a["eval_loss"].shape[-1] if a["eval_loss"].ndim == 2 else -1
        shapes = {k: v.shape for k, v in a.items()}
        if shapes["eval_loss"] != (S, P) or shapes["loss"] != (S, P) or \
                any(len(shapes[k]) != 3 or shapes[k][:2] != (S, P) for k in ("entropy", "ipr")):
            raise ConfigError(f"{experiment}: the {p or 'MLM '}training arrays {shapes} are not (steps, models[, "
                              "layers]) over one step axis")
        slots = _slots_of(p, arrays, config, P)
        if slots is None:
            raise ConfigError(f"{experiment}: the (β, α_SA, seed) of the {P} trained models are not recorded")
        arm = Arm(p.rstrip("_") or "mlm", a["loss"], a["eval_loss"], a["entropy"], a["ipr"], slots)
        seeds = sorted({s for _, _, s in slots})
        for seed in seeds:
            groups.append((arm, [i for i, s in enumerate(slots) if s[2] == seed]))
            where = f"{arm.name}-collapse arm (L={a['entropy'].shape[2]})" if p else ""
            variants.append(", ".join(filter(None, [where, f"seed {seed}" if len(seeds) > 1 or not p else ""])))
    beta_c = None
    try:
        from attnlab.signal.arch import Architecture

        arch = Architecture(**{k: config[k] for k in Architecture.model_fields if k in config})
        beta_c = math.sqrt(2.0) * arch.beta / arch.beta_theory  # Eq. 13 at ρ = 0, in the run's β convention
    except (ValueError, TypeError):
        pass
    notes = [f"{len(times)} logged steps to step {int(times[-1])}; held-out loss and attention on held-out "
             "sequences"]
    uniform = summary.get("uniform_loss")
    if uniform is not None:
        notes.append(f"dashed: uniform guess, loss {float(uniform):.3f}")
    L = max(arm.entropy.shape[2] for arm, _ in groups)
    panels = [PanelSpec("sweep", "loss and entropy across the sweep at a step"),
              PanelSpec("layers", "attention entropy per layer", default=True) if L > 1 else None,
              PanelSpec("loss", "MLM loss over training", "series"),
              PanelSpec("entropy", "layer-1 attention entropy over training", "series"),
              PanelSpec("ipr", "layer-1 attention IPR over training", "series", default=False)]
    return MLMView(times=times, time_label="step", variants=variants, panels=[p for p in panels if p], notes=notes,
                   groups=groups, uniform_loss=None if uniform is None else float(uniform), beta_c=beta_c)


# ---------------------------------------------------------------------------------------------- plug-in
_DEPTH_FORM = ("L", "d", "H", "T", "n_inits", "n_seqs", "sigma_v2", "sigma_w2", "activation", "seed")


class SignalPlugin(StudyPlugin):
    study = "signal"
    experiments = tuple(f"signal.{n}" for n in (*DEPTH, *MLM))
    forms = {"signal.depth": ("pairs", "rho0", *_DEPTH_FORM),
             "signal.fig1d": ("alphas", "hf_std", *_DEPTH_FORM),
             "signal.fig1e": ("beta", "alphas", *_DEPTH_FORM),
             "signal.alphac": ("sim_L", "sim_alphas", "sim_eps", "rho0", "beta", "d", "T", "n_inits", "n_seqs",
                               "seed"),
             "signal.figC3": ("L", "table_betas", "rho0", "sigma_w2", "d", "T", "n_inits", "n_seqs", "seed"),
             "signal.fig5": ("L", "sigma_w2s", "sim_sigma_w2s", "rho0", "d", "T", "n_inits", "n_seqs", "seed")}

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        name = experiment.split(".", 1)[1]
        view = _open_mlm(experiment, arrays, summary, config) if name in MLM else \
            _open_depth(experiment, arrays, summary, config)
        if live:
            view.notes.append(f"live: last snapshot at {view.time_label} {view.times[-1]:g}")
        return view


PLUGIN = register(SignalPlugin())
