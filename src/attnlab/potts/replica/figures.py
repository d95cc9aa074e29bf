"""Figures of the Gaussian model of paper 2 (Fig. 3-left, the finite-L check, the replica theory) from experiment
results (no computation beyond reshaping)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure
from attnlab.core.trajectory import Trajectory
from attnlab.potts.figures import sub_arrays


def fig3left(result: Result, config) -> object:
    """Fig. 3-left: replica ε_g(α) (solid: paper's teacher weight, dashed: exact Gaussian conditional) and ridge
    simulations (mean ± SEM over realisations); right: training error."""
    arr = result.arrays
    x = arr["dense_alpha"]
    fig, (ax, ax2) = figure(2, width=4.2, height=3.4)
    for k, lam in enumerate(config.lams):
        c = COLORS[k]
        sim = Trajectory.from_arrays(sub_arrays(arr, f"lam{lam:g}/sim_"), time_name="alpha")
        ax.plot(x, arr[f"lam{lam:g}/theory_paper"], color=c, label=f"replica, λ = {lam:g}")
        ax.plot(x, arr[f"lam{lam:g}/theory_exact"], color=c, ls="--", lw=1)
        ax.errorbar(sim.time, sim["eps_g"], yerr=sim["eps_g_sem"], fmt="o", ms=4, capsize=2, color=c,
                    label=f"ridge, L = {config.L}, λ = {lam:g}")
        ax2.plot(x, arr[f"lam{lam:g}/theory_paper_train"], color=c)
        ax2.errorbar(sim.time, sim["eps_train"], yerr=sim["eps_train_sem"], fmt="o", ms=4, capsize=2, color=c)
    ax.plot([], [], color="grey", ls="--", lw=1, label="exact teacher weight")
    ax.axvline(1.0, color="grey", ls=":", lw=1)
    ax.set_yscale("log")
    ax.set(xlabel=r"$\alpha = M/L$", ylabel=r"test loss $\epsilon_g$",
           title=f"ν = {config.nu:g}, {config.n_real} realisations")
    ax.legend(fontsize=7)
    ax2.set(xlabel=r"$\alpha = M/L$", ylabel="training error", title="training error")
    return fig


def finite_l(result: Result, config) -> object:
    """One problem: simulations (mean ± SEM over training draws) vs its finite-L theory (solid) and L → ∞ (dashed)."""
    arr = result.arrays
    sim = Trajectory.from_arrays(sub_arrays(arr, "sim_"), time_name="alpha")
    x = arr["dense_alpha"]
    fig, ax = figure(1, width=4.4, height=3.4)
    ax.plot(x, arr["finite_eps_g"], color=COLORS[0], label=f"finite-L theory (this Ω, L = {config.L})")
    ax.plot(x, arr["inf_eps_g"], color="grey", ls="--", lw=1, label="L → ∞")
    ax.plot(x, arr["finite_eps_train"], color=COLORS[1], label="training error (theory)")
    ax.errorbar(sim.time, sim["eps_g"], yerr=sim["eps_g_sem"], fmt="o", color=COLORS[0], capsize=2,
                label=f"simulation, {config.n_draws} draws")
    ax.errorbar(sim.time, sim["eps_train"], yerr=sim["eps_train_sem"], fmt="s", color=COLORS[1], capsize=2)
    ax.set_yscale("log")
    ax.set(xlabel=r"$\alpha = M/L$", ylabel="error", title=f"one fixed problem, λ = {config.lam:g}, ν = {config.nu:g}")
    ax.legend(fontsize=7)
    return fig


def replica(result: Result, config) -> object:
    """ε_g(α) for several λ (ν fixed) and several ν (λ = 1e-3 or the nearest); peak position vs λ; the large-α
    excess ε_g - Δ against α^-1 (theory) and the paper's α^-1/2."""
    arr, df = result.arrays, result.metrics
    a, lams = arr["alpha"], arr["lams"]
    fig, axes = figure(4, width=3.4, height=3.0)
    eps = arr.get(f"nu{config.nu:g}_{config.weight}/eps_g")
    if eps is not None:
        for k, lam in enumerate(lams):
            axes[0].plot(a, eps[:, k], color=COLORS[k % len(COLORS)], label=f"λ = {lam:g}")
        axes[0].set(yscale="log", xlabel=r"$\alpha$", ylabel=r"$\epsilon_g$", title=f"ν = {config.nu:g}")
        axes[0].legend(fontsize=7)
    k_lam = int(np.argmin(np.abs(np.log(lams) - np.log(1e-3))))
    for j, nu in enumerate(arr["nus"]):
        axes[1].plot(a, arr[f"nu{nu:g}_{config.weight}/eps_g"][:, k_lam], color=COLORS[j], label=f"ν = {nu:g}")
    axes[1].set(yscale="log", xlabel=r"$\alpha$", title=f"λ = {lams[k_lam]:g}")
    axes[1].legend(fontsize=7)
    for j, nu in enumerate(arr["nus"]):
        sub = df[(df["nu"] == nu) & (df["weight"] == config.weight)]
        axes[2].plot(sub["lam"], sub["peak_alpha"], "o-", color=COLORS[j], label=f"ν = {nu:g}")
    axes[2].set(xscale="log", xlabel="λ", ylabel="argmax α of ε_g", title="the peak moves right with λ")
    axes[2].legend(fontsize=7)
    if eps is not None:
        delta = 1 / config.nu
        big = a > 1.5
        axes[3].loglog(a[big], eps[big, k_lam] - delta, color=COLORS[0], label=r"$\epsilon_g - \Delta$")
        ref = eps[big, k_lam][-1] - delta
        axes[3].loglog(a[big], ref * a[big][-1] / a[big], "k--", lw=1, label=r"$\propto\alpha^{-1}$")
        axes[3].loglog(a[big], ref * np.sqrt(a[big][-1] / a[big]), "k:", lw=1, label=r"$\propto\alpha^{-1/2}$ (paper)")
        axes[3].loglog(arr["big_alpha"], arr["big_eps_g"] - delta, "o", color=COLORS[0], ms=4)
        axes[3].set(xlabel=r"$\alpha$", title=f"slope 16→64: {result.summary['excess_slope_16_64']:.3f}")
        axes[3].xaxis.set_major_formatter(ScalarFormatter())
        axes[3].xaxis.set_minor_formatter(NullFormatter())
        axes[3].legend(fontsize=7)
    return fig
