"""Fig. 3-right (fig3right, consistency; frames = sample sizes M, variants = λ): L-BFGS fits of the factored
pseudo-likelihood. Test and train loss vs M with the optimal loss, corr(A, J) vs M, both on a log M axis as in the
paper; per frame, every realisation at M (converged: dots, not: crosses)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.potts.views.common import OPTIMUM, hline, need, pad
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec, View

M_AXIS = {"type": "log"}  # M on a log axis, as in the paper's Fig. 3-right (and figures.pl_sweep)


@dataclass
class SampleView(MethodView):
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
            data.append(hline(self.times, self.optimal, "optimal loss"))
        lay = T.layout(f"loss vs M, λ = {self.lams[variant]:g}" + (f" (M = L = {self.L}: α = 1)" if self.L else ""),
                       xlabel="number of samples M", ylabel="loss", showlegend=True, hovermode="x",
                       xaxis=M_AXIS, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_corr(self, variant: int) -> Figure:
        m, sem = self._mean_sem("corr", variant)
        conv = self.fits["converged"][:, variant].mean(1)
        data = [T.line(self.times, m, name="corr(A, J)", color=T.COLORS[2], mode="lines+markers",
                       error_y={"type": "data", "array": sem, "visible": True, "thickness": 1},
                       hovertext=[f"M = {M:g}: corr {c:.3f}, {100 * f:.0f} % converged"
                                  for M, c, f in zip(self.times, m, conv, strict=True)], hoverinfo="text")]
        lay = T.layout(f"recovered couplings vs M, λ = {self.lams[variant]:g}", xlabel="number of samples M",
                       ylabel="corr(A, J)", hovermode="x", xaxis=M_AXIS)
        return {"data": data, "layout": lay}


def open_sweep(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> View:
    Ms = [int(M) for M in np.asarray(arrays.get("Ms", config.get("Ms", ()))).ravel()]
    Ms = [M for M in Ms if f"M{M}/test" in arrays]
    if not Ms:
        raise ConfigError(f"this {experiment} run stores no fit at any sample size ('M<M>/test')")
    keys = ("test", "train", "corr", "converged", "n_iter")
    need(arrays, [f"M{M}/{k}" for M in Ms for k in keys], experiment)
    fits = {k: np.stack([np.asarray(arrays[f"M{M}/{k}"], float) for M in Ms]) for k in keys}
    lams = np.asarray(arrays.get("lams", config.get("lams", [np.nan] * fits["test"].shape[1])), float).ravel()
    if len(lams) != fits["test"].shape[1]:
        raise ConfigError(f"this {experiment} run stores {fits['test'].shape[1]} λ per M but names {len(lams)}")
    losses = np.concatenate([fits["test"].ravel(), fits["train"].ravel()])
    losses = losses[np.isfinite(losses)]
    optimal = summary.get("optimal_loss")
    lo = min(float(losses.min(initial=0.0)), float(optimal) if optimal is not None else np.inf)
    corr = fits["corr"][np.isfinite(fits["corr"])]
    ranges = (pad(float(corr.min(initial=0.0)), float(corr.max(initial=1.0))),
              pad(lo, float(losses.max(initial=1.0))))
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
