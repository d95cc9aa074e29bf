"""Figures of paper 1 from experiment results (no computation beyond reshaping). Colours follow the paper:
blue trainable, yellow rank collapse, red entropy collapse; lines are theory, dots simulation (± std)."""

from __future__ import annotations

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch

from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure
from attnlab.core.trajectory import Trajectory

PHASE_COLORS = ["#4C8DD6", "#F2C14E", "#D1495B"]  # trainable, rank collapse, entropy collapse
PHASE_CMAP = ListedColormap(PHASE_COLORS)
PHASE_NAMES = ("trainable", "rank collapse", "entropy collapse")


def _phase_legend(ax) -> None:
    ax.legend(handles=[Patch(color=c, label=n) for c, n in zip(PHASE_COLORS, PHASE_NAMES, strict=True)],
              loc="upper left", fontsize=8, framealpha=0.9, frameon=True)


def trainability(result: Result, config) -> object:
    """Fig. 1c: phase diagram over (β, α_SA) with β_c and α_c(L); α_c(L) curves; the simulated grid."""
    a = result.arrays
    has_sim = "sim_phase" in a
    fig, axes = figure(3 if has_sim else 2, width=4.2, height=3.6)
    ax = axes[0]
    ax.pcolormesh(a["betas"], a["alphas"], a["phase"], cmap=PHASE_CMAP, vmin=0, vmax=2, shading="auto",
                  rasterized=True)
    ax.set_xscale("log")
    ax.axvline(result.summary["beta_c"], color="k", ls="--", lw=1)
    if np.isfinite(result.summary["alpha_c"]):
        ax.axhline(result.summary["alpha_c"], color="k", ls=":", lw=1)
    ax.set_xlabel(r"$\beta$ (query/key scale)")
    ax.set_ylabel(r"$\alpha_{SA}$ (residual strength)")
    ax.set_title(f"trainability, L = {config.L}, ε = {config.eps:g}")
    ax.grid(False)
    _phase_legend(ax)
    ax = axes[1]
    for j, e in enumerate(a["eps_list"]):
        ax.plot(a["Ls"], a["alpha_c"][:, j], "o-", ms=3, label=f"ε = {e:g}")
    ax.set_xscale("log")
    ax.set_xlabel("depth L")
    ax.set_ylabel(r"$\alpha_c(L)$")
    ax.set_title(r"critical residual strength ($\beta < \beta_c$)")
    ax.legend()
    if has_sim:
        ax = axes[2]
        for k in range(3):
            m = a["sim_phase"] == k
            ax.scatter(a["sim_betas"][m], a["sim_alphas"][m], s=90, color=PHASE_COLORS[k], edgecolor="k", lw=0.5)
        wrong = a["sim_phase"] != a["sim_theory_phase"]
        if wrong.any():
            ax.scatter(a["sim_betas"][wrong], a["sim_alphas"][wrong], s=18, marker="x", color="k",
                       label="differs from theory")
            ax.legend(fontsize=8, loc="lower right")
        ax.axvline(result.summary["beta_c"], color="k", ls="--", lw=1)
        if np.isfinite(result.summary["alpha_c"]):
            ax.axhline(result.summary["alpha_c"], color="k", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(r"$\beta$")
        ax.set_ylabel(r"$\alpha_{SA}$")
        ax.set_title(f"simulated (d={config.sim_d}, T={config.sim_T}), agreement "
                     f"{100 * result.summary['sim_agreement']:.0f}%")
    return fig


def _traj(arrays, prefix: str, source: str) -> Trajectory:
    keep = {k: v for k, v in arrays.items() if k.startswith(prefix) and not k.endswith("flops")}
    return Trajectory.from_arrays(keep, prefix, time_name="layer", source=source)


def depth(result: Result, config) -> object:
    """Figs. 1d/e: mean cosine over layers, dots = simulation mean ± std, lines = theory (dashed: finite T)."""
    a = result.arrays
    sim, th = _traj(a, "sim_", "simulation"), _traj(a, "theory_", "theory")
    fin = _traj(a, "finite_", "finite") if "finite_time" in a else None
    fig, axes = figure(2, width=4.6, height=3.4)
    ax = axes[0]
    for i, (b, al) in enumerate(zip(a["betas"], a["alphas"], strict=True)):
        c = COLORS[i % len(COLORS)]
        ax.errorbar(sim.time, sim["rho"][:, i], yerr=sim["rho_std"][:, i], fmt="o", ms=3, color=c, alpha=0.75,
                    capsize=1.5, elinewidth=0.8)
        ax.plot(th.time, th["rho"][:, i], color=c, label=rf"$\beta$={b:.3g}, $\alpha_{{SA}}$={al:g}")
        if fin is not None:
            ax.plot(fin.time, fin["rho"][:, i], color=c, ls="--", lw=1)
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"mean cosine similarity $\rho_l$")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(f"theory (lines{', dashed: finite T' if fin is not None else ''}) vs simulation (dots)")
    ax.legend(fontsize=7)
    ax = axes[1]
    for i in range(len(a["betas"])):
        c = COLORS[i % len(COLORS)]
        ax.plot(sim.time[1:], sim["entropy"][1:, i], "o", ms=3, color=c, alpha=0.75)
        ax.plot(th.time[1:], th["entropy"][1:, i], color=c)
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"attention entropy $S/\log T$")
    ax.set_ylim(-0.02, 1.05)
    ax.set_title(f"d={config.d}, H={config.H}, T={config.T}; {config.n_inits} inits × {config.n_seqs} sequences")
    return fig


def sa_layer(result: Result, config) -> object:
    """Fig. 3: Eq. (14) (left) and one simulated SA head (middle) over (β, ρ_in); IPR crossings (right)."""
    a = result.arrays
    fig, axes = figure(3, width=4.0, height=3.4)
    kw = {"cmap": "viridis", "vmin": 0, "vmax": 1, "shading": "auto", "rasterized": True}
    axes[0].pcolormesh(a["fine_betas"], a["fine_rhos"], a["heat"], **kw)
    axes[0].set_title("theory, Eq. 14")
    m = axes[1].pcolormesh(a["betas"], a["rhos"], a["sim_cos"].T, **kw)
    axes[1].set_title(f"one SA head (T={config.T}, d={config.d})")
    fig.colorbar(m, ax=axes[1], label=r"output cosine $\rho'$")
    r = np.linspace(0, 0.95, 100)
    for ax in axes[:2]:
        ax.plot(np.sqrt(2 / (1 - r)), r, color="w", ls="--", lw=1.2, label=r"$\beta_c(\rho)$")
        ax.set_xlim(min(a["betas"]), max(a["betas"]))
        ax.set_xlabel(r"$\beta$")
        ax.set_ylabel(r"input cosine $\rho$")
        ax.grid(False)
    axes[0].legend(fontsize=8, loc="lower right")
    ax = axes[2]
    for j, rho in enumerate(a["rhos"]):
        if rho in (0.0, 0.25, 0.5, 0.75):
            c = COLORS[j % len(COLORS)]
            ax.plot(a["betas"], a["sim_ipr"][:, j], "o", ms=4, color=c, label=rf"sim, $\rho$={rho:g}")
            ax.plot(a["betas"], a["mc_ipr"][:, j], ":", color=c)
            b = np.linspace(0.01, max(a["betas"]), 200)
            ax.plot(b, np.clip(1 - np.sqrt(2 / (1 - rho)) / b, 0, None), color=c)
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel(r"IPR $q_{sa}$")
    ax.set_title("IPR: Eq. 13 (lines), finite-T MC (dotted)")
    ax.legend(fontsize=7)
    return fig


def universality(result: Result, config) -> object:
    a = result.arrays
    fig, ax = figure(1, width=5.0, height=3.6)
    for i, (d, H, T) in enumerate(config.combos):
        ax.plot(a["betas"], a[f"ipr_{d}_{H}_{T}"], "o-", ms=3, color=COLORS[i % len(COLORS)],
                label=f"d={d}, H={H}, T={T}")
    b = np.linspace(0.01, max(a["betas"]), 200)
    ax.plot(b, np.clip(1 - np.sqrt(2) / b, 0, None), "k--", label="Eq. 13 (T → ∞)")
    ax.axhline(config.ipr_level, color="grey", lw=0.8)
    ax.set_xlabel(r"$\beta$ (Var s = $\beta^2 \log T$)")
    ax.set_ylabel("IPR of attention rows")
    ax.set_title(r"$\beta_c$ does not depend on d, H")
    ax.legend(fontsize=7)
    return fig


def alpha_critical(result: Result, config) -> object:
    a = result.arrays
    fig, axes = figure(2, width=4.4, height=3.4)
    ax = axes[0]
    for j, e in enumerate(a["eps_list"]):
        ax.plot(a["Ls"], a["alpha_c"][:, j], "o-", ms=3, label=f"ε = {e:g}")
    ax.set_xscale("log")
    ax.set_xlabel("depth L")
    ax.set_ylabel(r"$\alpha_c(L)$")
    ax.set_title(r"$\alpha_c(L)$ by bisection of Eq. 19")
    ax.legend()
    ax = axes[1]
    sim, th = _traj(a, "sim_", "simulation"), _traj(a, "theory_", "theory")
    for i, al in enumerate(a["alphas_sim"]):
        c = COLORS[i % len(COLORS)]
        ax.errorbar(sim.time, sim["rho"][:, i], yerr=sim["rho_std"][:, i], fmt="o", ms=3, color=c, capsize=1.5)
        ax.plot(th.time, th["rho"][:, i], color=c, label=rf"$\alpha_{{SA}}$={al:g}")
    ax.axhline(1 - config.sim_eps, color="k", ls=":", lw=1, label=r"$1-\epsilon$")
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"$\rho_l$")
    ax.set_title(rf"$\alpha_c$({config.sim_L}) = {result.summary['alpha_c_sim_L']:.3f} (ε={config.sim_eps:g})")
    ax.legend(fontsize=7)
    return fig


def tanh_depth(result: Result, config) -> object:
    """Fig. 5: block map F(ρ) for several σ_w² (left), ρ_l over depth (right)."""
    a = result.arrays
    fig, axes = figure(2, width=4.4, height=3.6)
    ax = axes[0]
    for i, s in enumerate(a["sigma_w2s"]):
        ax.plot(a["grid"], a[f"map_{s:g}"], color=COLORS[i % len(COLORS)], label=rf"$\sigma_w^2$={s:g}")
    ax.plot([0, 1], [0, 1], "k:", lw=1)
    ax.set_xlabel(r"$\rho_l$")
    ax.set_ylabel(r"$\rho_{l+1}$")
    ax.set_title(rf"tanh block map; $\sigma_{{w,c}}^2$ = {result.summary['sigma_w2_c']:.2f}")
    ax.legend(fontsize=7)
    ax = axes[1]
    for i, s in enumerate(a["sigma_w2s"]):
        c = COLORS[i % len(COLORS)]
        ax.plot(np.arange(len(a[f"theory_{s:g}"])), a[f"theory_{s:g}"], color=c, label=rf"$\sigma_w^2$={s:g}")
        if f"sim_{s:g}" in a:
            ls = np.arange(len(a[f"sim_{s:g}"]))
            step = max(1, len(ls) // 25)
            ax.errorbar(ls[::step], a[f"sim_{s:g}"][::step], yerr=a[f"sim_std_{s:g}"][::step], fmt="o", ms=3,
                        color=c, capsize=1.5)
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"$\rho_l$")
    ax.set_title(rf"depth propagation from $\rho_0$ = {config.rho0:g}")
    ax.legend(fontsize=7)
    return fig


def rem_order_parameters(result: Result, config) -> dict[str, object]:
    """Fig. B.1 (IPR and entropy vs β, several T) and Fig. B.2 (q^SA, p^SA vs β)."""
    a, B = result.arrays, result.arrays["betas"]
    fig1, axes = figure(2, len(config.rhos), width=3.6, height=2.9)
    axes = np.asarray(axes).reshape(len(config.rhos), 2)
    for row, rho in zip(axes, config.rhos, strict=True):
        for k, T in enumerate(config.Ts):
            c = COLORS[k % len(COLORS)]
            row[0].plot(B, a[f"ipr_rho{rho:g}_T{T}"], "o", ms=3, color=c, label=f"T={T}")
            row[0].plot(B, a[f"heuristic_rho{rho:g}_T{T}"], ":", color=c, lw=1)
            row[1].plot(B, a[f"entropy_rho{rho:g}_T{T}"], "o", ms=3, color=c, label=f"T={T}")
        fb = a.get("fine_betas", B)
        row[0].plot(fb, a[f"theory_ipr_rho{rho:g}"], "k-", label="Eq. 13")
        row[1].plot(fb, a[f"theory_entropy_rho{rho:g}"], "k-", label="B.18")
        row[0].set_ylabel(rf"$\rho$={rho:g}" "\n" r"IPR $q_{sa}$")
        row[1].set_ylabel(r"$S/\log T$")
    axes[0, 0].set_title("IPR (dotted: Eq. 15 heuristic)")
    axes[0, 1].set_title("row entropy")
    axes[0, 0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel(r"$\beta$")
    fig2, ax = figure(1, width=4.6, height=3.4)
    for k, rho in enumerate(config.rhos):
        c = COLORS[k % len(COLORS)]
        fb = a.get("fine_betas", B)
        q_th = rho + (1 - rho) * a[f"theory_ipr_rho{rho:g}"]
        ax.plot(fb, q_th, color=c, label=rf"$q^{{SA}}$, $\rho$={rho:g}")
        ax.plot(fb, np.full_like(fb, rho), color=c, ls="--", label=r"$p^{SA}$")
        ax.plot(B, a[f"mc_qSA_rho{rho:g}"], "o", ms=3, color=c)
        ax.plot(B, a[f"mc_pSA_rho{rho:g}"], "s", ms=3, color=c, mfc="none")
    ax.set_xlabel(r"$\beta$")
    ax.set_ylabel("SA output norm / overlap")
    ax.set_title(f"Fig. B.2: theory (lines), MC T={config.mc_T} (markers)")
    ax.legend(fontsize=7, ncol=2)
    return {"figB1": fig1, "figB2": fig2}


def spectrum(result: Result, config) -> object:
    a = result.arrays
    names = ["standard", *[f"beta{b:g}" for b in config.betas]]
    fig, axes = figure(len(names) + 1, width=3.4, height=3.3)
    t = np.linspace(0, 2 * np.pi, 200)
    for ax, name in zip(axes, names, strict=False):
        e = a[f"eig_{name}"]
        ax.plot(e.real, e.imag, ".", ms=2, color=COLORS[0])
        r = result.summary[f"bulk_radius_{name}_T{config.T_show}"]
        if r < 1.5:
            ax.plot(r * np.cos(t), r * np.sin(t), "k--", lw=1)
        ax.set_aspect("equal")
        ax.set_xlim(-1.1, 1.1)
        ax.set_ylim(-1.1, 1.1)
        ax.set_title(f"standard: σ_s = {config.sigma_std:g}" if name == "standard"
                     else rf"rescaled: $\beta$ = {name[4:]}", fontsize=9)
    ax = axes[-1]
    for i, name in enumerate(names):
        ax.loglog(a["Ts"], a[f"lambda2_{name}"], "o-", ms=3, color=COLORS[i % len(COLORS)], label=name)
        ax.loglog(a["Ts"], np.minimum(a[f"radius_{name}"], 1), ":", color=COLORS[i % len(COLORS)])
    ax.set_xlabel("T")
    ax.set_ylabel(r"$|\lambda_2|$ (dotted: bulk radius)")
    ax.set_title(f"T = {config.T_show} eigenvalues; |λ₂| vs T", fontsize=9)
    ax.legend(fontsize=7)
    return fig


def no_skip(result: Result, config) -> object:
    a = result.arrays
    fig, axes = figure(3, width=4.0, height=3.4)
    kw = {"cmap": "viridis", "vmin": 0, "vmax": 1, "shading": "auto", "rasterized": True}
    m = axes[0].pcolormesh(a["betas"], a["rhos"], a["one_block"], **kw)
    axes[0].set_xlabel(r"$\beta$")
    axes[0].set_ylabel(r"input cosine $\rho_l$")
    axes[0].set_title(r"$\rho_{l+1}$, one block, $\alpha$ = 0")
    axes[1].pcolormesh(a["betas"], np.arange(a["depth"].shape[0]), a["depth"], **kw)
    axes[1].set_xlabel(r"$\beta$")
    axes[1].set_ylabel("layer l")
    axes[1].set_title(rf"$\rho_l$ from $\rho_0$ = {config.rho0:g}")
    fig.colorbar(m, ax=axes[1])
    for ax in axes[:2]:
        ax.grid(False)
    ax = axes[2]
    sim, th = _traj(a, "sim_", "simulation"), _traj(a, "theory_", "theory")
    for i, b in enumerate(a["table_betas"]):
        c = COLORS[i % len(COLORS)]
        ax.errorbar(sim.time, sim["rho"][:, i], yerr=sim["rho_std"][:, i], fmt="o", ms=3, color=c, capsize=1.5)
        ax.plot(th.time, th["rho"][:, i], color=c, label=rf"$\beta$={b:g}")
        if "finite_time" in a:
            ax.plot(a["finite_time"], a["finite_rho"][:, i], color=c, ls="--", lw=1)
    ax.set_xlabel("layer l")
    ax.set_ylabel(r"$\rho_l$")
    ax.set_title(f"theory (dashed: finite T = {config.T}) vs simulation")
    ax.legend(fontsize=7)
    return fig


def attention_maps(result: Result, config) -> object:
    a = result.arrays
    n = len(a["betas"])
    fig, axes = figure(n, width=4.2, height=4.0)
    axes = np.atleast_1d(axes)
    toks = [str(t) for t in a["tokens"]]
    for i, ax in enumerate(axes):
        ax.imshow(a["attention"][i], cmap="magma", vmin=0, vmax=max(0.2, float(a["attention"][i].max())))
        ax.set_xticks(range(len(toks)), toks, rotation=90, fontsize=6)
        ax.set_yticks(range(len(toks)), toks, fontsize=6)
        ax.set_xlabel("key")
        ax.set_ylabel("query")
        ax.grid(False)
        b = a["betas"][i]
        ax.set_title(rf"$\beta$ = {b:g}: S/log T = {result.summary[f'entropy_beta{b:g}']:.2f}", fontsize=9)
    return fig


def _mlm_panels(axes, tr: Trajectory, betas, alphas, seeds, label) -> None:
    for i, (b, al, s) in enumerate(zip(betas, alphas, seeds, strict=True)):
        key = (b, al)
        c = COLORS[sorted(set(zip(betas, alphas, strict=True))).index(key) % len(COLORS)]
        lab = label(b, al) if s == 0 else None
        axes[0].plot(tr.time, tr["eval_loss"][:, i], color=c, alpha=0.9 if s == 0 else 0.5, label=lab)
        axes[1].plot(tr.time, tr["entropy"][:, i, 0], color=c, alpha=0.9 if s == 0 else 0.5, label=lab)
    axes[0].set_xlabel("step")
    axes[0].set_ylabel("held-out MLM loss")
    axes[1].set_xlabel("step")
    axes[1].set_ylabel(r"layer-1 attention entropy $S/\log T$")
    axes[1].set_ylim(-0.02, 1.02)
    axes[0].legend(fontsize=7)


def mlm_betas(result: Result, config) -> object:
    """Figs. 4 / C.2: held-out loss and first-layer attention entropy over training, one colour per β."""
    a = result.arrays
    tr = Trajectory.from_arrays({k: v for k, v in a.items() if not k.startswith("slot_")}, time_name="step")
    fig, axes = figure(2, width=4.4, height=3.4)
    _mlm_panels(axes, tr, a["slot_betas"], a["slot_alphas"], a["slot_seeds"],
                lambda b, al: rf"$\beta$={b:g}" + (rf", $\alpha$={al:g}" if len(config.alphas) > 1 else ""))
    if "uniform_loss" in result.summary:
        axes[0].axhline(result.summary["uniform_loss"], color="k", ls=":", lw=1, label="uniform guess")
        axes[0].legend(fontsize=7)
    axes[0].set_title(f"MLM, L={config.L}, lr={config.lr:g}, corpus={config.corpus}")
    axes[1].set_title(r"entropy collapse: $\beta > \beta_c = \sqrt{2}$")
    return fig


def deep_mlm(result: Result, config) -> object:
    a = result.arrays
    fig, axes = figure(2, 2, width=4.2, height=3.2)
    for row, arm, L in ((axes[0], "rank", config.rank_L), (axes[1], "entropy", config.entropy_L)):
        tr = Trajectory.from_arrays(a, f"{arm}_", time_name="step")
        P = tr["eval_loss"].shape[1]
        if arm == "rank":
            bs, als = [config.rank_beta] * P, list(config.rank_alphas) * config.n_seeds
        else:
            bs, als = list(config.entropy_betas) * config.n_seeds, [config.entropy_alpha] * P
        seeds = [i // (P // config.n_seeds) for i in range(P)]
        _mlm_panels(row, tr, bs, als, seeds, lambda b, al: rf"$\beta$={b:g}, $\alpha_{{SA}}$={al:g}")
        row[0].set_title(f"{arm}-collapse arm, L = {L}")
    return fig
