"""Figures of paper 2 from experiment results (no computation beyond reshaping and averaging)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter, ScalarFormatter

from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure
from attnlab.core.trajectory import Trajectory

NAMES = {"factored": "factored (1 layer)", "vanilla1": "vanilla, 1 layer", "vanilla3": "vanilla, 3 layers"}
COLOR = {"factored": COLORS[0], "vanilla1": COLORS[3], "vanilla3": COLORS[1]}


def sub_arrays(arrays: dict, prefix: str) -> dict:
    """The arrays whose names start with ``prefix``, without it."""
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


def _band(ax, x, y, color, label, log=False):
    """Mean line with a min-max band over the last axis (stacked seeds)."""
    y = np.asarray(y).reshape(len(x), -1)
    ax.plot(x, y.mean(-1), color=color, label=label)
    if y.shape[1] > 1:
        ax.fill_between(x, y.min(-1), y.max(-1), color=color, alpha=0.2, lw=0)


def _offdiag_image(ax, A, title):
    A = np.array(A, dtype=float)
    np.fill_diagonal(A, np.nan)
    ax.imshow(A, cmap="Greys", interpolation="nearest")
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.grid(False)


def fig2(result: Result, config) -> dict:
    """Fig. 2a-c: test loss vs epochs with the optimal loss (dashed), reconstruction error vs epochs, and J next to
    the attention maps (diagonal = sink, blanked; 3 layers: mean of the last two layers' maps)."""
    opt = result.summary["optimal_loss"]
    fig, (ax_a, ax_c) = figure(2, width=4.2, height=3.3)
    for model in config.models:
        tr = Trajectory.from_arrays(sub_arrays(result.arrays, f"{model}/"), "traj_", time_name="epoch")
        _band(ax_a, tr.time, tr["test_loss"], COLOR[model], NAMES[model])
        _band(ax_c, tr.time, tr["recon_err"], COLOR[model], NAMES[model])
    ax_a.axhline(opt, color="k", ls="--", lw=1.2, label="optimal (Bayes) loss")
    ax_a.set_ylim(opt - 0.1, min(ax_a.get_ylim()[1], opt + 2.5))
    ax_a.set(xlabel="epoch", ylabel="test loss", title="(a) MLM test loss")
    ax_a.legend(fontsize=8)
    ax_c.set_yscale("log")
    ax_c.set(xlabel="epoch", ylabel=r"mean$_{i\neq j}(J_{ij} - \kappa^* A_{ij})^2$", title="(c) reconstruction error")
    fig.suptitle(f"Potts data: L={config.L}, C={config.C}, M={config.M_train}, β={config.beta:g}", fontsize=10)

    models = list(config.models)
    maps, axes = figure(len(models) + 1, width=2.4, height=2.6)
    axes = np.atleast_1d(axes)
    _offdiag_image(axes[0], result.arrays["J"], "interaction J")
    for ax, model in zip(axes[1:], models, strict=True):
        A = result.arrays[f"{model}/map"][0]
        corr = result.summary.get(f"{model}_corr", float("nan"))
        _offdiag_image(ax, A, f"{NAMES[model]}\ncorr(A, J) = {corr:.2f}")
    maps.suptitle("(b) interaction matrix and attention maps", fontsize=10)
    return {"fig2": fig, "fig2b_maps": maps}


def fig2d(result: Result, config) -> object:
    """Fig. 2d: final test loss vs the mixing a of Eq. (2), mean ± std over seeds; right: corr(Ā, J)."""
    a = np.asarray(config.a_values)
    s = result.summary
    fig, (ax, ax2) = figure(2, width=3.8, height=3.1)
    mean = np.array([s[f"test_a{v:g}"] for v in a])
    std = np.array([s[f"test_a{v:g}_std"] for v in a])
    ax.errorbar(a, mean, yerr=std, marker="o", capsize=3, color=COLORS[0], label=f"eq. (2), {config.seeds} seeds")
    ax.axhline(s["optimal_loss"], color="k", ls="--", lw=1.2, label="optimal loss")
    ax.set(xlabel="perturbation a", ylabel="test loss", title="(d) test loss vs a")
    ax.legend(fontsize=8)
    ax2.plot(a, [s[f"corr_a{v:g}"] for v in a], marker="s", color=COLORS[2])
    ax2.set(xlabel="perturbation a", ylabel=r"corr($\bar A$, J)", title="attention map vs J")
    return fig


def pl_sweep(result: Result, config) -> object:
    """Fig. 3-right (and the consistency run): test loss and corr(A, J) of factored PL fits vs M, per λ."""
    df = result.metrics
    opt = result.summary["optimal_loss"]
    fig, (ax, ax2) = figure(2, width=4.0, height=3.2)
    for k, lam in enumerate(config.lams):
        sub = df[df["lam"] == lam].groupby("M")
        m, sem = sub["test"].mean(), sub["test"].sem().fillna(0)
        ax.errorbar(m.index, m.values, yerr=sem.values, marker="o", ms=4, capsize=2, color=COLORS[k],
                    label=f"λ = {lam:g} ({config.reg_form})")
        c = sub["corr"].mean()
        ax2.plot(c.index, c.values, marker="o", ms=4, color=COLORS[k], label=f"λ = {lam:g}")
    ax.axhline(opt, color="k", ls="--", lw=1, label="optimal loss")
    ax.axvline(config.L, color="grey", ls=":", lw=1)
    for a in (ax, ax2):
        a.set_xscale("log")
        a.xaxis.set_minor_formatter(NullFormatter())
        a.set_xlabel(f"number of samples M (α = M/L, L = {config.L})")
    ax.set(ylabel="test loss", title=f"factored attention, {config.n_real} realisations")
    ax2.set(ylabel="corr(A, J)", title="recovered couplings")
    ax.legend(fontsize=8)
    return fig


def equivalence(result: Result, config) -> object:
    """J beside the maps of the Adam-trained layer and the L-BFGS PLM; their couplings against each other; V vs U."""
    arr, s = result.arrays, result.summary
    fig, axes = figure(5, width=2.6, height=2.7)
    _offdiag_image(axes[0], arr["J"], "interaction J")
    _offdiag_image(axes[1], arr["adam/A"][0], f"MLM, Adam\ncorr = {s['adam_corr']:.3f}")
    _offdiag_image(axes[2], arr["lbfgs/A"][0], f"PLM, L-BFGS\ncorr = {s['lbfgs_corr']:.3f}")
    off = ~np.eye(arr["J"].shape[0], dtype=bool)
    axes[3].scatter(arr["adam/A"][0][off], arr["lbfgs/A"][0][off], s=6, c=arr["J"][off], cmap="coolwarm")
    axes[3].set(xlabel="A (MLM, Adam)", ylabel="A (PLM, L-BFGS)", title=f"corr = {s['corr_adam_lbfgs']:.3f}")
    keep = arr["freq"] >= 0.02
    V = arr["lbfgs/V"][0][np.ix_(keep, keep)]
    U = arr["U"][np.ix_(keep, keep)]
    axes[4].scatter((U - U.mean(0)).ravel(), (V - V.mean(0)).ravel(), s=5, color=COLORS[0])
    axes[4].set(xlabel="U (column-centred)", ylabel="V (column-centred)", title=f"V vs U, corr = "
                                                                             f"{s['lbfgs_value_corr']:.3f}")
    fig.suptitle("MLM with factored attention = pseudo-likelihood (Eqs. (4)-(6))", fontsize=10)
    return fig


def gibbs(result: Result, config) -> object:
    """Mean Hamming distance vs β pooled over chains and within one chain (targets 0.3 and 0.7); the energy of the
    paper-faithful chain at the tuned β."""
    df, s, arr = result.metrics, result.summary, result.arrays
    fig, (ax, ax2) = figure(2, width=4.0, height=3.2)
    ax.plot(df["beta"], df["d_pooled"], "o-", color=COLORS[0], label=f"pooled, {config.n_chains} chains")
    ax.plot(df["beta"], df["d_within_pooled_chains"], "s--", color=COLORS[0], alpha=0.6, label="within those chains")
    ax.plot(df["beta"], df["d_single_chain"], "^-", color=COLORS[3], label="one chain (paper's protocol)")
    for t, ls in ((config.target, "--"), (1 - config.target, ":")):
        ax.axhline(t, color="k", ls=ls, lw=1)
    ax.axvline(s["beta_tuned"], color=COLORS[3], lw=1, alpha=0.5)
    ax.set(xlabel="β", ylabel="mean pairwise Hamming distance", title="tuning β")
    ax.legend(fontsize=7)
    e = arr["chain/energies"]
    ax2.plot(np.arange(len(e)), e, color=COLORS[3], lw=1)
    ax2.set(xlabel=f"saved configuration ({config.chain_thin} sweeps apart)", ylabel="H(s)",
            title=f"one chain at β = {s['beta_tuned']:.3g}: d_H = {s['d_chain']:.3f}")
    return fig


# -- Fig. 3-left: the Gaussian model -------------------------------------------------------------------------------

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
