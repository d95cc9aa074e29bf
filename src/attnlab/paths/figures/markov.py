"""Figures of the Markov task (Figs. 2c-e, 5b-c) from experiment results (no computation beyond reshaping)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from attnlab.core.experiment import Result
from attnlab.core.plotting import figure
from attnlab.core.trajectory import Trajectory
from attnlab.paths.figures.common import BLUE, GP_NAME, GP_STYLE, ORANGE, RED, _labels, _U_entries


def markov_sweep(result: Result, config) -> object:
    """Figs. 2c, 2e, 5c: accuracy, generalisation error and U vs N (theory, samples, GP lines)."""
    th = Trajectory.from_arrays(result.arrays, "theory_", time_name="N", source="theory")
    sim = Trajectory.from_arrays(result.arrays, "sim_", time_name="N") if "sim_time" in result.arrays else None
    fig, axes = figure(3, width=3.9, height=3.2)
    for ax, key, label in ((axes[0], "accuracy", "accuracy"), (axes[1], "gen_error", r"$\epsilon_g$ (MSE)")):
        ax.plot(th.time, th[key], "-x", color=BLUE, label="theory")
        if sim is not None:
            ax.plot(sim.time, sim[key], "o", color="k", ms=5, label="samples (Gibbs)")
        for layout in config.gp_layouts:
            v = result.summary.get(("acc_gp_" if key == "accuracy" else "gen_error_gp_") + layout)
            if v is not None:
                ax.axhline(v, color=RED, ls=GP_STYLE.get(layout, "-"), lw=1.3, label=GP_NAME.get(layout, layout))
        ax.set_xscale("log")
        ax.set_xlabel("width N")
        ax.set_ylabel(label)
    axes[0].legend(fontsize=7)
    labels = _labels(th["U"].shape[-1], config)
    ax = axes[2]
    tab = plt.get_cmap("tab10")
    for k, (i, j) in enumerate(_U_entries(th["U"])):
        c = tab(k % 10)
        ax.plot(th.time, th["U"][:, i, j], ls="-" if i == j else "--", color=c,
                label=f"{labels[i]} · {labels[j]}" if i != j else labels[i])
        if sim is not None:
            ax.plot(sim.time, sim["U"][:, i, j], "o", color=c, ms=4)
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_title("U (lines: theory, dots: samples)")
    ax.legend(fontsize=6, ncol=2)
    net = "listed heads" if getattr(config, "heads", None) else config.layout
    fig.suptitle(f"{net} paths, σ⊥ = {config.sigma_perp:g}, τ = {config.tau:g}, P = {config.P}")
    return fig


def fig2d(result: Result, config) -> object:
    """Fig. 2d: cosine overlap of the kernel PCs with Y, finite width vs GP."""
    fig, ax = figure(1, width=4.6, height=3.2)
    a = result.arrays
    k = np.arange(1, len(a["overlap_fw"]) + 1)
    ax.bar(k - 0.2, a["overlap_gp"], width=0.4, color=ORANGE, label="GP limit")
    ax.bar(k + 0.2, a["overlap_fw"], width=0.4, color=BLUE, label=f"FW, N = {config.alignment_width:g}")
    ax.set_xlabel("kernel PC (by eigenvalue)")
    ax.set_ylabel(r"$|\phi_k \cdot Y| / \|Y\|$")
    s = result.summary
    ax.set_title(f"top-5 squared overlap: FW {s['top5_overlap_fw']:.2f}, GP {s['top5_overlap_gp']:.2f}")
    ax.legend()
    return fig


def fig5b(result: Result, config) -> object:
    """Fig. 5b: the same-path kernels, the total GP kernel and the total renormalised kernel, sorted by class."""
    a = result.arrays
    n = len([k for k in a if k.startswith("C") and k[1:].isdigit()])
    names = _labels(n, config)
    panels = [(f"C{i}", f"path: {names[i]}") for i in range(n)] + [("K_gp", "total, GP"),
                                                                   ("K_fw", f"total, N = {config.alignment_width:g}")]
    ncols = 3
    fig, axes = figure(ncols, int(np.ceil(len(panels) / ncols)), width=3.0, height=2.9)
    axes = np.atleast_1d(axes).reshape(-1)
    split = int((a["y_sorted"] > 0).sum()) - 0.5
    for ax, (key, title) in zip(axes, panels, strict=False):
        K = a[key]
        lim = np.percentile(np.abs(K), 99)
        im = ax.imshow(K, cmap="RdBu_r", vmin=-lim, vmax=lim)
        ax.axhline(split, color="k", lw=0.6)
        ax.axvline(split, color="k", lw=0.6)
        ax.set_title(title)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.grid(False)
        fig.colorbar(im, ax=ax, shrink=0.8)
    for ax in axes[len(panels):]:
        ax.axis("off")
    fig.suptitle("kernels on training examples sorted by class (y = +1 first)")
    return fig
