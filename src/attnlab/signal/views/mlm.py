"""The signal MLM runs in the sandbox (Figs. 4, C.2, 1f): time = training step, variants = seeds (and the two arms
of Fig. 1f); series of the held-out loss (training loss dotted) and the layer-1 attention entropy per (β, α_SA),
frames of loss and entropy across the swept parameter at a step (β_c = √2 of Eq. (13) dashed: entropy collapse above
it) and of the entropy per layer."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec


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
class MLMView(MethodView):
    """An MLM run: one variant per seed (and arm), one frame per logged step."""

    groups: list[tuple[Arm, list[int]]] = field(default_factory=list)  # per variant: arm and its slot indices
    uniform_loss: float | None = None
    beta_c: float | None = None  # β_c = √2 in the run's β convention

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


def open_mlm(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
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
        beta_c = math.sqrt(2.0) * arch.beta / arch.beta_theory  # Eq. (13) at ρ = 0, in the run's β convention
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

