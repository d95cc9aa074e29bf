"""Figures of paper 0 from experiment results (no computation beyond reshaping)."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure
from attnlab.core.trajectory import Trajectory

NAMES = {"softmax": "softmax", "softmax1": "softmax-1", "bsoftmax": "B-softmax", "bayes": "Bayes"}


def _bayes_line(ax, value: float | None) -> None:
    if value is not None and np.isfinite(value):
        ax.axhline(value, ls="--", color="k", lw=1, label="Bayes")


def sim_vs_theory(result: Result, config) -> object:
    """Figs. 1, 9, 10: dots SGD, lines theory; loss, m_h1, m_h2, r rᵀ (and b, v where trained)."""
    acts = list(config.activations)
    F = config.F
    ncols = 2 + F
    fig, axes = figure(ncols, len(acts), width=3.2, height=2.6)
    axes = np.asarray(axes).reshape(len(acts), ncols)
    for row, act in zip(axes, acts, strict=True):
        a = {k.split("/", 1)[1]: v for k, v in result.arrays.items() if k.startswith(act + "/")}
        sim = Trajectory.from_arrays(a, "sim_", source="simulation")
        th = Trajectory.from_arrays(a, "theory_", source="theory")
        row[0].plot(sim.time, sim["loss"][:, 0], "o", ms=2.5, alpha=0.6, color=COLORS[0], label="SGD")
        row[0].plot(th.time, th["loss"][:, 0], color=COLORS[0], label="theory")
        _bayes_line(row[0], result.summary.get("bayes_risk"))
        row[0].set_ylabel(f"{NAMES[act]}\nloss")
        for f in range(F):
            ax = row[1 + f]
            for h in range(config.H):
                c = COLORS[h % len(COLORS)]
                ax.plot(sim.time, sim["m"][:, 0, h, f], "o", ms=2.5, alpha=0.6, color=c)
                ax.plot(th.time, th["m"][:, 0, h, f], color=c, label=f"head {h + 1}")
            ax.set_title(f"$m_{{h{f + 1}}}$")
        ax = row[-1]
        pairs = [(0, 0), (0, 1), (1, 1)] if config.H > 1 else [(0, 0)]
        for k, (i, j) in enumerate(pairs):
            c = COLORS[(k + 3) % len(COLORS)]
            ax.plot(sim.time, sim["rr"][:, 0, i, j], "o", ms=2.5, alpha=0.6, color=c)
            ax.plot(th.time, th["rr"][:, 0, i, j], color=c, label=f"$(rr^T)_{{{i + 1}{j + 1}}}$")
        if act != "softmax":
            ax.plot(sim.time, sim["b"][:, 0, 0], "s", ms=2.5, alpha=0.6, color="grey")
            ax.plot(th.time, th["b"][:, 0, 0], color="grey", label="$b_1$")
        if act == "softmax1":
            ax.plot(sim.time, sim["v"][:, 0], "^", ms=2.5, alpha=0.6, color="k")
            ax.plot(th.time, th["v"][:, 0], color="k", label="v")
        ax.set_title("$r r^T$, b, v")
        ax.legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel(r"$\tau = \gamma t$")
    axes[0, 0].legend(fontsize=7)
    axes[0, 1].legend(fontsize=7)
    fig.suptitle(f"SGD (dots, D={config.D}) vs theory (lines): {config.law}, L={config.L}, H={config.H}")
    return fig


def _panel_traj(result: Result, i: int) -> Trajectory:
    pre = f"panel{i}/"
    return Trajectory.from_arrays({k[len(pre):]: v for k, v in result.arrays.items() if k.startswith(pre)},
                                  source="theory")


def trajectories(result: Result, config) -> dict[str, object]:
    """Head trajectories m_h(τ) in the feature plane (f1, f2); for F = 3 also (f1, f3) and final m heat maps."""
    n = len(config.panels)
    planes = [(0, 1)] if config.F == 2 else [(0, 1), (0, 2)] if config.F >= 3 else [(0, 0)]
    fig, axes = figure(n, len(planes), width=3.0, height=3.0)
    axes = np.asarray(axes).reshape(len(planes), n)
    for i, panel in enumerate(config.panels):
        tr = _panel_traj(result, i)
        m = tr["m"][:, 0]  # (T, H, F)
        for row, (a, b) in enumerate(planes):
            ax = axes[row, i]
            for h in range(panel.H):
                c = COLORS[h % len(COLORS)]
                ax.plot(m[:, h, a], m[:, h, b], color=c, lw=1.2)
                ax.plot(m[-1, h, a], m[-1, h, b], "o", color=c, ms=4)
            ax.axhline(0, color="grey", lw=0.5)
            ax.axvline(0, color="grey", lw=0.5)
            ax.set_xlabel(f"$k^*_{a + 1}$")
            ax.set_ylabel(f"$k^*_{b + 1}$")
            if row == 0:
                sig = f"ν={panel.nu:g}" if config.law in ("onehot", "gaussian_iso") else \
                    f"ν=({panel.nu1:g},{panel.nu2:g})"
                ax.set_title(f"{NAMES[panel.activation]}, H={panel.H}, {sig}" +
                             (f", run {panel.seed}" if panel.seed else ""), fontsize=9)
    figs = {"trajectories": fig}
    if config.F >= 3:
        fig2, axes2 = figure(n, 1, width=2.6, height=3.0)
        for i, ax in enumerate(np.atleast_1d(axes2)):
            m = _panel_traj(result, i)["m"][-1, 0]
            lim = np.abs(m).max()
            im = ax.imshow(m, cmap="RdBu_r", vmin=-lim, vmax=lim, aspect="auto")
            ax.set_xticks(range(m.shape[1]), [f"f{f + 1}" for f in range(m.shape[1])])
            ax.set_ylabel("head")
            ax.set_title(f"final m, panel {i}", fontsize=9)
            fig2.colorbar(im, ax=ax, shrink=0.8)
        figs["final_m"] = fig2
    return figs


def final_error(result: Result, config) -> object:
    """Fig. 5: final error vs H (left) and vs ν (right), per law; dashed: Bayes risk."""
    t = result.metrics
    panels = [("H", law) for law in config.laws] + ([("nu", law) for law in config.laws] if config.nus else [])
    fig, axes = figure(len(panels), width=3.6, height=3.0)
    for ax, (panel, law) in zip(np.atleast_1d(axes), panels, strict=True):
        sub = t[(t.panel == panel) & (t.law == law)]
        for k, act in enumerate(config.activations):
            s = sub[sub.activation == act].groupby("x")["final_loss"].agg(["mean", "std"]).reset_index()
            ax.errorbar(s["x"], s["mean"], yerr=s["std"].fillna(0), marker="o", ms=3, capsize=2,
                        color=COLORS[k], label=NAMES[act])
        bay = sub[sub.activation == "bayes"]
        if panel == "H":
            _bayes_line(ax, float(bay["final_loss"].mean()) if len(bay) else None)
            ax.set_xlabel("H")
            ax.set_title(f"{law}, F={config.F_H}, ν={config.nu_H:g}", fontsize=9)
        else:
            b = bay.groupby("x")["final_loss"].mean()
            ax.plot(b.index, b.values, "k--", lw=1, label="Bayes")
            ax.set_xlabel("ν")
            ax.set_title(f"{law}, F={config.F_nu}, H={config.H_nu}", fontsize=9)
        ax.set_ylabel(r"$E^\infty$")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    return fig


def attention_maps(result: Result, config) -> object:
    """Fig. 6: σ(χ, b, v; h)_ℓ for a few sequences, relevant token boxed in red."""
    acts = list(config.activations)
    fig, axes = figure(config.sequences, len(acts), width=1.9, height=1.9)
    axes = np.asarray(axes).reshape(len(acts), config.sequences)
    for row, act in zip(axes, acts, strict=True):
        maps, eps = result.arrays[f"{act}/maps"], result.arrays[f"{act}/eps"]
        vmax = maps.max()
        for j, ax in enumerate(row):
            ax.imshow(maps[j], vmin=0, vmax=vmax, cmap="magma", aspect="auto")
            ax.add_patch(Rectangle((eps[j] - 0.5, -0.5), 1, maps.shape[1], fill=False, ec="red", lw=2))
            ax.set_xticks([])
            ax.set_yticks([])
            ax.grid(False)
        row[0].set_ylabel(f"{NAMES[act]}\nheads")
    return fig


def pruning(result: Result, config) -> object:
    """Fig. 7: loss after greedily pruning H̃ heads, mean ± std over runs."""
    t = result.metrics
    fig, axes = figure(len(config.laws), width=3.8, height=3.0)
    for ax, law in zip(np.atleast_1d(axes), config.laws, strict=True):
        for k, act in enumerate(config.activations):
            s = t[(t.law == law) & (t.activation == act)].groupby("pruned")["loss"].agg(["mean", "std"])
            ax.errorbar(s.index, s["mean"], yerr=s["std"].fillna(0), marker="o", ms=3, capsize=2, color=COLORS[k],
                        label=NAMES[act])
        ax.set_xlabel("pruned heads $\\tilde H$")
        ax.set_ylabel(r"$E^\infty$")
        ax.set_title(f"{law}, H={config.H}, F={config.F}, ν={config.nu:g}", fontsize=9)
    np.atleast_1d(axes)[0].legend(fontsize=7)
    return fig


def mc_resampling(result: Result, config) -> object:
    """Fig. 8: histogram over time of m^fixed_1f − m^resampled_1f."""
    diff = result.arrays["diff_m1"]
    fig, axes = figure(diff.shape[1], width=3.2, height=2.8)
    for f, ax in enumerate(np.atleast_1d(axes)):
        ax.hist(diff[:, f], bins=30, color=COLORS[f])
        ax.set_xlabel(f"$m^{{fixed}}_{{1{f + 1}}} - m^{{resampled}}_{{1{f + 1}}}$")
    np.atleast_1d(axes)[0].set_ylabel("time steps")
    return fig


def cosine_grid(result: Result, config) -> object:
    """Fig. 11: final cosine similarity of the two heads over (ν1, ν2)."""
    a = result.arrays
    fig, ax = figure(width=4.0, height=3.4)
    im = ax.imshow(a["cos_q"], origin="lower", cmap="viridis", vmin=-1, vmax=1, aspect="auto")
    ax.set_xticks(range(len(a["nu2s"])), [f"{x:g}" for x in a["nu2s"]])
    ax.set_yticks(range(len(a["nu1s"])), [f"{x:g}" for x in a["nu1s"]])
    ax.set_xlabel("ν2 (flipping)")
    ax.set_ylabel("ν1 (constant)")
    ax.grid(False)
    fig.colorbar(im, ax=ax, label="cosine similarity of the heads")
    return fig


def phases(result: Result, config) -> object:
    """Prop. III.3: m_hf(τ) of the unspecialised phase, flip spike (E θ ≠ 0) and isotropic Gaussian (E θ = 0)."""
    fig, axes = figure(2, width=3.6, height=3.0)
    for ax, name in zip(axes, ("flip", "gaussian_iso"), strict=True):
        a = {k.split("/", 1)[1]: v for k, v in result.arrays.items() if k.startswith(name + "/")}
        tr = Trajectory.from_arrays(a)
        m = tr["m"][:, 0]
        for h in range(m.shape[1]):
            for f in range(m.shape[2]):
                ax.plot(tr.time, m[:, h, f], color=COLORS[f], ls="-" if h == 0 else "--",
                        label=f"$m_{{{h + 1}{f + 1}}}$")
        ax.set_xlabel(r"$\tau$")
        ax.set_title(f"{name}: E θ {'≠' if name == 'flip' else '='} 0", fontsize=9)
        ax.legend(fontsize=7)
    return fig


def escape(result: Result, config) -> object:
    """Prop. III.4: τ_s against D (log scale), one line per activation."""
    fig, ax = figure(width=3.8, height=3.0)
    for k, (act, sub) in enumerate(result.metrics.groupby("activation", sort=False)):
        ax.semilogx(sub["D"], sub["tau_s"], "o-", color=COLORS[k], label=act)
    ax.set_xlabel("D")
    ax.set_ylabel(r"$\tau_s$ (first $|m_{12}-m_{22}| > $" + f"{config.threshold:g})")
    ax.legend(fontsize=8)
    return fig


def split_time(result: Result, config) -> object:
    """Fig. 1 text: |m_12 − m_22| against τ for every init at D = 10^4, with the thresholds of τ^s."""
    fig, ax = figure(width=3.8, height=3.0)
    t, gap = result.arrays["time"], result.arrays["gap"]
    for s in range(gap.shape[1]):
        ax.semilogy(t, np.maximum(gap[:, s], 1e-6), color=COLORS[0], lw=0.8, alpha=0.6)
    for a in config.thresholds:
        ax.axhline(a, color="0.5", ls=":", lw=0.8)
    ax.set_xlabel(r"$\tau$")
    ax.set_ylabel(r"$|m_{12}-m_{22}|$" + f" (D = {config.D:g}, {gap.shape[1]} inits)")
    return fig
