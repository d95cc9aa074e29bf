"""The Gibbs chain (gibbs; paper 2, the data generation with the exact conditionals of Eq. (5); frames = saved
configurations of the paper-faithful chain): the last configurations as a raster, energy and Hamming distance
between successive configurations, and the β scan that tuned β."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.potts.views.common import OPTIMUM, hline, need
from attnlab.sandbox import traces as T
from attnlab.sandbox.plugin import Figure, MethodView, PanelSpec, View


@dataclass
class ChainView(MethodView):
    samples: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))  # (N, L) colours
    energies: np.ndarray = field(default_factory=lambda: np.zeros(0))
    hamming: np.ndarray = field(default_factory=lambda: np.zeros(0))  # to the previous configuration
    C: int = 2
    scan: dict[str, np.ndarray] = field(default_factory=dict)
    summary: dict[str, float] = field(default_factory=dict)
    rows: int = 20

    def _frame_chain(self, index: int, variant: int) -> Figure:
        lo = max(0, index + 1 - self.rows)
        z = self.samples[lo: index + 1]
        data = [{"type": "heatmap", "z": z, "x": np.arange(z.shape[1]), "y": np.arange(lo, index + 1),
                 "zmin": 0, "zmax": self.C - 1, "colorscale": "Turbo", "showscale": False,
                 "hovertemplate": "configuration %{y}, site %{x}: colour %{z}<extra></extra>"}]
        lay = T.layout(f"the last {len(z)} configurations up to {index} (rows), sites (columns)", xlabel="site i",
                       ylabel="configuration", yaxis={"range": [index - self.rows + 0.5, index + 0.5]})
        return {"data": data, "layout": lay}

    def _frame_beta(self, index: int, variant: int) -> Figure:
        b, s = self.scan["betas"], self.summary
        data = [T.line(b, self.scan[k], name=label, color=c, mode="lines+markers", dash=d)
                for k, label, c, d in (("pooled/d_pooled", "pooled chains", T.COLORS[0], None),
                                       ("pooled/d_within", "within those chains", T.COLORS[0], "dash"),
                                       ("single/d_single", "one chain (paper)", T.COLORS[3], None))
                if k in self.scan]
        if "target" in s:
            data.append(T.line([b[0], b[-1]], [s["target"]] * 2, name="target", color=OPTIMUM, dash="dash", width=1))
        if "beta_tuned" in s:
            data.append(T.line([s["beta_tuned"]] * 2, [0, 1], name="tuned β", color=T.COLORS[3], width=1))
        lay = T.layout("Hamming distance vs β (the scan that tuned β)", xlabel="β", ylabel="mean Hamming distance",
                       showlegend=True, legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}

    def _series_energy(self, variant: int) -> Figure:
        data = [T.line(self.times, self.energies, name="H(s)", color=T.COLORS[3], width=1.2)]
        lay = T.layout("energy H(s) along the chain", xlabel="saved configuration", ylabel="H(s)", hovermode="x")
        return {"data": data, "layout": lay}

    def _series_hamming(self, variant: int) -> Figure:
        data = [T.line(self.times[1:], self.hamming[1:], name="d(s_k, s_k-1)", color=T.COLORS[0], width=1.2)]
        if "d_chain" in self.summary:
            data.append(hline(self.times, self.summary["d_chain"], "mean pairwise d_H of the chain"))
        if "target" in self.summary:
            data.append(hline(self.times, self.summary["target"], "target", color="#888", dash="dot"))
        lay = T.layout("Hamming distance to the previous configuration", xlabel="saved configuration",
                       ylabel="fraction of sites changed", showlegend=True, hovermode="x",
                       legend={"font": {"size": 9}})
        return {"data": data, "layout": lay}


def open_gibbs(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> View:
    need(arrays, ("chain/samples", "chain/energies"), experiment)
    s = np.asarray(arrays["chain/samples"])
    if s.ndim != 2 or len(s) == 0:
        raise ConfigError(f"this {experiment} run's chain holds no configuration (samples shape {s.shape})")
    ham = np.concatenate([[np.nan], (s[1:] != s[:-1]).mean(1)])
    scan = {k: np.asarray(v, float) for k, v in arrays.items()
            if k in ("betas", "pooled/d_pooled", "pooled/d_within", "single/d_single")}
    keep = {k: float(summary[k]) for k in ("target", "beta_tuned", "d_chain") if summary.get(k) is not None}
    panels = [PanelSpec("chain", "configurations of the chain")]
    if "betas" in scan and len(scan) > 1:
        panels.append(PanelSpec("beta", "Hamming distance vs β", default=False))
    panels += [PanelSpec("energy", "energy along the chain", "series"),
               PanelSpec("hamming", "change between configurations", "series")]
    beta = f" at β = {keep['beta_tuned']:.3g}" if "beta_tuned" in keep else ""
    thin = config.get("chain_thin")
    return ChainView(times=np.arange(len(s), dtype=float), time_label="configuration", variants=[f"one chain{beta}"],
                     panels=panels, notes=[f"saved configurations {thin} sweeps apart" if thin else "one chain"],
                     samples=s, energies=np.asarray(arrays["chain/energies"], float).ravel(), hamming=ham,
                     C=int(config.get("C", int(s.max()) + 1)), scan=scan, summary=keep)
