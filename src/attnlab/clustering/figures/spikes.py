"""Figures of the training-dynamics experiments (paper 4 Figs. 9–13, 17, 18 and the spike remedies).

Each function takes the stored ``Result`` (and its config) and returns a matplotlib figure in the house style
(``core.plotting``); runs are reopened with ``History.from_arrays(result.arrays, prefix)``. Geometry panels of
Figs. 11/12 are the sandbox's (``sandbox.PANELS``) computed from the stored snapshots.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from attnlab.clustering.keys import unit_key
from attnlab.clustering.train.history import History
from attnlab.core.plotting import COLORS, figure

GROUPS = ("E", "P", "q", "V", "W", "U")
RED, GREEN, GREY = "#D62728", "#009E73", "0.55"


def _unit_label(name: str) -> str:
    d, _, kind = name.partition("_")
    return f"{d.replace('d', 'd = ')}" + {"mini": ", mini-batch", "full": ", full batch", "": ""}[kind]


def _binned(y: np.ndarray, n: int = 1500, how: Any = np.mean) -> tuple[np.ndarray, np.ndarray]:
    """(bin centres in entries, ``how`` of each bin): at most ``n`` points of a long per-step curve."""
    y = np.asarray(y, dtype=float)
    k = max(1, math.ceil(len(y) / n))
    m = len(y) // k * k
    if m == 0:
        return np.arange(len(y), dtype=float), y
    return np.arange(m // k) * k + (k - 1) / 2, how(y[:m].reshape(-1, k), axis=1)


def _step_epochs(h: History, centres: np.ndarray) -> np.ndarray:
    steps = np.asarray(h.steps, dtype=float)
    return np.interp(centres, np.arange(len(steps)), steps) / h.steps_per_epoch


def _vlines(ax, xs, **kw) -> None:
    for x in np.atleast_1d(xs):
        if np.isfinite(x):
            ax.axvline(x, **kw)


def _marks(ax, st: dict[str, np.ndarray], i: int) -> None:
    _vlines(ax, st["drops"][i], color=GREY, ls=":", lw=1.2)
    _vlines(ax, st["t_cluster"][i], color=GREEN, ls="--", lw=1.1)
    _vlines(ax, st["t_fit"][i], color=RED, ls="--", lw=1.1)


# ----------------------------------------------------------------------------------------------- Figs. 9, 17
def dynamics(result, config) -> Figure:
    """Fig. 9 / 17: per run (row) loss, accuracy, per-layer mini-batch grad norms (log), full-batch per-layer grad
    norms (linear) and Prop. 4 along training; dotted = detected loss drops, dashed green/red = t_cluster / t_fit."""
    a = result.arrays
    units = str(result.summary["units"]).split(",")
    fig, axes = figure(5, len(units), width=3.3, height=2.7)
    axes = np.asarray(axes, dtype=object).reshape(len(units), 5)
    for row, name in zip(axes, units, strict=True):
        h = History.from_arrays(a, f"{name}/")
        st = {k[len(f"{name}/stats/"):]: v for k, v in a.items() if k.startswith(f"{name}/stats/")}
        i = int(a[f"{name}/shown"])
        em, ep = h.epoch_metrics, h.epochs
        ax = row[0]
        ax.plot(ep, em["train_loss"][:, i], color=COLORS[0], label="train")
        ax.plot(ep, em["test_loss"][:, i], color=COLORS[1], label="test", alpha=0.8)
        ax.set_ylim(0, max(1.0, min(3.0, float(np.nanmax(em["test_loss"][:, i])) * 1.05)))
        ax.set_ylabel(f"{_unit_label(name)} · seed {h.seeds[i]}\nloss")
        ax = row[1]
        ax.plot(ep, em["train_acc"][:, i], color=COLORS[0], label="train")
        ax.plot(ep, em["test_acc"][:, i], color=COLORS[1], label="test", alpha=0.8)
        ax.set_ylim(0.3, 1.03)
        ax.set_ylabel("accuracy")
        ax = row[2]
        for g, c in zip(GROUPS, COLORS, strict=False):
            if f"grad_{g}" in h.step_metrics:
                x, y = _binned(h.step_metrics[f"grad_{g}"][:, i])
                ax.plot(_step_epochs(h, x), np.where(y > 0, y, np.nan), color=c, lw=0.9, label=g)
        ax.set_yscale("log")
        ax.set_ylabel("grad norm (mini-batch)" if h.steps_per_epoch > 1 else "grad norm (per step)")
        ax = row[3]
        for g, c in zip(GROUPS, COLORS, strict=False):
            ax.plot(ep, em[f"grad_{g}"][:, i], color=c, lw=1.1, label=g)
        ax.set_ylabel("grad norm (full batch)")
        for ax in row[:4]:
            _marks(ax, st, i)
            ax.set_xlabel("epoch")
        ax = row[4]
        if f"{name}/prop4/grad_sq" in a:
            p4 = {k: a[f"{name}/prop4/{k}"] for k in ("epochs", "grad_sq", "tv", "bound_corrected", "bound_paper")}
            mk = "o" if len(p4["epochs"]) < 10 else None
            ax.plot(p4["epochs"], np.sqrt(p4["grad_sq"]), color="k", marker=mk, label=r"$\|\nabla_{qVWU}L\|$")
            ax.plot(p4["epochs"], np.sqrt(p4["bound_corrected"] * p4["tv"]), color=COLORS[2],
                    label=r"$\sqrt{\mathrm{bound}_{corr}\,\mathcal{E}}$")
            ax.plot(p4["epochs"], np.sqrt(p4["bound_paper"] * p4["tv"]), color=COLORS[4], ls="--",
                    label=r"$\sqrt{\hat B\,\mathcal{E}}$ (printed)")
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_ylabel("Prop. 4 (probe grid, f64)")
        else:
            ax.text(0.5, 0.5, "Prop. 4: paper model only", ha="center", va="center", transform=ax.transAxes)
            ax.set_axis_off()
    axes[0, 0].legend(fontsize=7, loc="upper right")
    axes[0, 2].legend(fontsize=7, ncols=3, loc="lower left")
    if f"{units[0]}/prop4/grad_sq" in a:
        axes[0, 4].legend(fontsize=7, loc="best")
    axes[0, 0].set_title("loss (dotted: detected drops)", fontsize=9)
    axes[0, 1].set_title("accuracy (dashed: t_cluster, t_fit)", fontsize=9)
    axes[0, 2].set_title("per-layer gradient norms, log", fontsize=9)
    axes[0, 3].set_title("per-layer gradient norms, linear", fontsize=9)
    axes[0, 4].set_title(r"$\|\nabla L\|$ vs Prop. 4 bounds", fontsize=9)
    dims = sorted({n.split("_")[0] for n in units})
    fig.suptitle(f"Escaping saddle points (Figs 9/17): {', '.join(d.replace('d', 'd = ') for d in dims)}, "
                 f"k = {config.k}, lr = {config.lr:g}", fontsize=11)
    return fig


# ----------------------------------------------------------------------------------------------- Fig. 10
def _picture(ax, pts: np.ndarray, title: str) -> None:
    x0, x1, f0, f1 = pts
    t = np.linspace(0, 2 * np.pi, 300)
    ax.plot(np.cos(t), np.sin(t), color=GREY, lw=1)
    a0, a1 = math.atan2(f0[1], f0[0]), math.atan2(f1[1], f1[0])
    da = (a1 - a0 + np.pi) % (2 * np.pi) - np.pi
    arc = a0 + np.linspace(0, da, 60)
    ax.plot(np.cos(arc), np.sin(arc), color=RED, lw=3, alpha=0.7, label="change of x/||x||")
    for p, f, c, lab in ((x0, f0, COLORS[0], "x"), (x1, f1, COLORS[1], "x + δ")):
        ax.plot([0, f[0]], [0, f[1]], color=c, ls=":", lw=1)
        ax.plot(*p, "o", color=c, ms=3.5, label=lab)
        ax.plot(*f, "*", color=c, ms=12)
    ax.annotate("", xy=x1, xytext=x0, arrowprops={"arrowstyle": "-|>", "color": "k", "lw": 1.2, "mutation_scale": 8,
                                                  "shrinkA": 0, "shrinkB": 0})
    ax.plot(0, 0, "k+", ms=8)
    ax.set_xlim(-1.35, 1.35)
    ax.set_ylim(-1.35, 1.35)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)


def curvature(result, config) -> Figure:
    """Fig. 10: curvature of x ↦ x/||x|| (Jacobian norm 1/||x||) and what one update does near / far from 0."""
    a, s = result.arrays, result.summary
    fig, axes = figure(4, width=3.4, height=3.2)
    ax = axes[0]
    r = a["r"]
    labels = {"sphere": "x/||x|| (paper)", "smooth": "smooth (C¹)", "smooth_inf": r"smooth ($C^\infty$)",
              "rmsnorm": "RMSNorm, eps 1e-5"}
    for (norm, lab), c in zip(labels.items(), COLORS, strict=False):
        ax.plot(r, a[f"jac/{norm}"], color=c, label=lab, lw=1.6 if norm == "sphere" else 1.2)
    ax.plot(r, 1 / r, color="k", ls=":", lw=1, label="1/r")
    ax.axhline(1.5, color=GREY, ls="--", lw=0.8)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-2, 2 / r.min())
    ax.set_xlabel("r = ||x||")
    ax.set_ylabel("||Jacobian||")
    ax.set_title("curvature of the normaliser", fontsize=9)
    ax.legend(fontsize=7)
    for ax, tag in ((axes[1], "near"), (axes[2], "far")):
        pts = a[f"picture/{tag}"]
        _picture(ax, pts, f"same update δ (|δ| = {s['eta']:g}) at ||x|| = {np.linalg.norm(pts[0]):.2g}:\n"
                          f"x/||x|| turns by {s[f'angle_deg_{tag}']:.0f}°")
    axes[1].legend(fontsize=7, loc="lower left")
    axes[2].text(0.02, 0.02, "stars: x/||x|| on the unit circle", transform=axes[2].transAxes, fontsize=7)
    ax = axes[3]
    for norm, c in (("sphere", COLORS[0]), ("smooth", COLORS[1])):
        ax.plot(r, a[f"move_back/{norm}"], color=c, label=f"{norm}: δ = −η x/||x||")
        ax.plot(r, a[f"move_side/{norm}"], color=c, ls="--", label=f"{norm}: δ ⊥ x")
    ax.axvline(s["eta"], color=GREY, ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlabel("r = ||x||")
    ax.set_ylabel("||f(x+δ) − f(x)||")
    ax.set_title(f"effect of a step of size η = {s['eta']:g}\n(flip when η > ||x||)", fontsize=9)
    ax.legend(fontsize=7)
    fig.suptitle("High-curvature normalisation (Fig. 10, §4.4)", fontsize=11)
    return fig


# ----------------------------------------------------------------------------------------------- Figs. 11, 12
def _spike_run(result) -> tuple[History, int, int, int, int]:
    h = History.from_arrays(result.arrays, "run/")
    seed, entry, before, after = (int(v) for v in result.arrays["spike"])
    return h, seed, entry, before, after


def _panel(ax, name: str, h: History, index: int, seed: int, **kw: Any) -> dict:
    from attnlab.clustering.render import PANELS

    data = PANELS[name].compute(h.params_at(index, seed), h.spec, h.task, **kw)
    PANELS[name].draw(ax, data)
    return data


def spike_levels(result, config) -> Figure:
    """Fig. 11: the loss around a spike, ξ over the decision level lines just before and just after it, the
    minimum decision margin and the min-norm monitor over time."""
    h, seed, _entry, before, after = _spike_run(result)
    s, em, ep = result.summary, h.epoch_metrics, h.epochs
    eb, ea = h.snapshot_epochs[before], h.snapshot_epochs[after]
    fig, axes = figure(5, width=3.3, height=3.2)
    ax = axes[0]
    ax.plot(ep, em["train_loss"][:, seed], color=COLORS[0], label="train loss")
    on = result.arrays["run/spikes/onset_seed"] == seed
    ax.plot(result.arrays["run/spikes/onset_epoch"][on], em["train_loss"][result.arrays["run/spikes/onset_index"][on],
            seed], "v", color=RED, ms=6, label="spike onsets")
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_title(f"seed {h.seeds[seed]}: loss {s['loss_before']:.3g} → {s['loss_after']:.3g}", fontsize=9)
    ax.legend(fontsize=7)
    for k, (ax, idx, e) in enumerate(((axes[1], before, eb), (axes[2], after, ea))):
        _panel(ax, "levels", h, idx, seed, grid=120)
        ax.set_title(f"{'before' if k == 0 else 'after'}: epoch {e:g}", fontsize=9)
    ax = axes[3]
    ax.plot(ep, em["margin"][:, seed], color=COLORS[2])
    ax.axhline(0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_xlabel("epoch")
    ax.set_title(r"min decision margin $\zeta_y-\max_{j\ne y}\zeta_j$", fontsize=9)
    ax = axes[4]
    ax.plot(ep, em["min_token_norm"][:, seed], color=COLORS[0], label="min ||E(x)+P(t)||")
    ax.plot(ep, em["min_xi_norm"][:, seed], color=COLORS[3], label=r"min $\|\xi\|$")
    ax.axhline(config.lr, color=GREY, ls=":", lw=1, label=f"lr = {config.lr:g}")
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_title("min-norm monitor (η < ||x|| test)", fontsize=9)
    ax.legend(fontsize=7)
    for ax in (axes[0], axes[3], axes[4]):
        _vlines(ax, [eb, ea], color=RED, ls="--", lw=0.9)
    fig.suptitle(f"High-curvature feed-forward (Fig. 11): {s['rule']}, d = {h.spec.d}, k = {h.task.k}, "
                 f"lr = {config.lr:g}", fontsize=11)
    return fig


def _moved(ax, p0: np.ndarray, p1: np.ndarray, colors: Any, title: str) -> None:
    for a, b in zip(p0, p1, strict=True):
        ax.plot([a[0], b[0]], [a[1], b[1]], color=GREY, lw=0.6, zorder=1)
    ax.scatter(p0[:, 0], p0[:, 1], c=colors, s=14, alpha=0.35, marker="o", zorder=2, label="before")
    ax.scatter(p1[:, 0], p1[:, 1], c=colors, s=22, marker="o", edgecolors="k", linewidths=0.3, zorder=3,
               label="after")
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)


def spike_mlp(result, config) -> Figure:
    """Fig. 12: ξ moves a little across the spike while the MLP response moves a lot; the assemblers u_i before and
    after (norms) and their pairwise cosines (lower triangle before, upper after)."""
    from attnlab.clustering.render import PANELS

    h, seed, _entry, before, after = _spike_run(result)
    s, a = result.summary, result.arrays
    fig, axes = figure(4, width=3.4, height=3.3)
    xs = [PANELS["xi"].compute(h.params_at(i, seed), h.spec, h.task) for i in (before, after)]
    ps = [PANELS["psi"].compute(h.params_at(i, seed), h.spec, h.task) for i in (before, after)]
    _moved(axes[0], xs[0]["raw"][:, :2], xs[1]["raw"][:, :2], xs[1]["colors"],
           rf"$\xi$: mean move {s['dxi_mean']:.2g} ({100 * s['dxi_rel']:.0f}% of $\|\xi\|$)")
    ax = axes[1]
    u0, u1 = a["anatomy/before/u"], a["anatomy/after/u"]
    for j in range(len(u0)):
        c = COLORS[j % len(COLORS)] if len(u0) <= len(COLORS) else None
        ax.annotate("", xy=u0[j, :2], xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": c, "alpha": 0.35})
        ax.annotate("", xy=u1[j, :2], xytext=(0, 0), arrowprops={"arrowstyle": "->", "color": c, "lw": 1.5})
    lim = 1.1 * max(np.abs(u0[:, :2]).max(), np.abs(u1[:, :2]).max(), 1e-3)
    ax.set_xlim(-lim, lim)
    ax.set_ylim(-lim, lim)
    ax.set_aspect("equal")
    ax.set_title(f"assemblers $u_i$ (faint: before)\nmax norm {a['anatomy/before/u_norm'].max():.2g} → "
                 f"{a['anatomy/after/u_norm'].max():.2g}", fontsize=9)
    ax = axes[2]
    c0, c1 = a["anatomy/before/u_cos"], a["anatomy/after/u_cos"]
    mat = np.where(np.tril(np.ones_like(c0, dtype=bool), -1), c0, c1)
    im = ax.imshow(mat, cmap="RdBu_r", vmin=-1, vmax=1)
    ax.grid(False)
    ax.set_xlabel("neuron j")
    ax.set_ylabel("neuron i")
    rand = f", random: {2 / np.pi:.2f}" if h.spec.d == 2 else ""
    ax.set_title(f"cos($u_i,u_j$): lower before, upper after\nmean |cos| {s['before/u_abs_cos_mean']:.2f} → "
                 f"{s['after/u_abs_cos_mean']:.2f}{rand}", fontsize=9)
    fig.colorbar(im, ax=ax, shrink=0.8)
    mlp0 = ps[0]["raw"][:, :2] - xs[0]["raw"][:, :2]
    mlp1 = ps[1]["raw"][:, :2] - xs[1]["raw"][:, :2]
    _moved(axes[3], mlp0, mlp1, xs[1]["colors"],
           rf"MLP response $U\sigma(W\bar\xi)$: mean move {s['dmlp_mean']:.2g}" + f"\n(×{s['amplification']:.1f} "
           r"the move of $\xi$)")
    fig.suptitle(f"Small change of ξ, big MLP response (Fig. 12): seed {h.seeds[seed]}, epochs "
                 f"{h.snapshot_epochs[before]:g} → {h.snapshot_epochs[after]:g}, margin {s['before/margin']:.2g} → "
                 f"{s['after/margin']:.2g}", fontsize=11)
    return fig


# ----------------------------------------------------------------------------------------------- Figs. 13, 18
def spike_grads(result, config) -> Figure:
    """Fig. 13 / 18: per d, the loss (mini-batch per step, full batch per epoch) and the total gradient norm of the
    seed with most spike onsets (red: onsets), and the D7 ratio of every onset of every seed."""
    a, s = result.arrays, result.summary
    units = str(s["units"]).split(",")
    fig, axes = figure(3, len(units), width=3.8, height=2.9)
    axes = np.asarray(axes, dtype=object).reshape(len(units), 3)
    for row, name in zip(axes, units, strict=True):
        h = History.from_arrays(a, f"{name}/")
        sp = {k[len(f"{name}/spikes/"):]: v for k, v in a.items() if k.startswith(f"{name}/spikes/")}
        i = h.seeds.index(int(s[unit_key(name, "shown_seed")]))
        em, ep = h.epoch_metrics, h.epochs
        on = sp["onset_epoch"][sp["onset_seed"] == i]
        for ax, step_key, epoch_key, lab in ((row[0], "loss", "train_loss", "loss"),
                                             (row[1], "grad_total", "grad_total", "total grad norm")):
            if step_key in h.step_metrics:
                x, y = _binned(h.step_metrics[step_key][:, i], how=np.max)
                ax.plot(_step_epochs(h, x), y, color=GREY, lw=0.6, label="mini-batch (max per bin)")
            ax.plot(ep, em[epoch_key][:, i], color=COLORS[0], lw=1.4, label="full batch")
            _vlines(ax, on, color=RED, ls="--", lw=0.9)
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_ylabel(lab)
        row[0].set_ylabel(f"{_unit_label(name)} · seed {h.seeds[i]}\nloss")
        row[0].legend(fontsize=7, loc="lower left")
        ax = row[2]
        n = len(sp["onset_ratio"])
        if n:
            jitter = np.random.default_rng(0).uniform(-0.2, 0.2, n)
            ax.scatter(sp["onset_seed"] + jitter, sp["onset_ratio"], s=18, color=COLORS[3], zorder=3)
            ax.set_yscale("log")
            ax.set_ylim(0.5, max(4.0, 2 * float(np.nanmax(sp["onset_ratio"]))))
        ax.axhline(2, color="k", ls="--", lw=0.8)
        ax.set_xlim(-0.5, h.n_seeds - 0.5)
        ax.set_xlabel("seed index")
        ax.set_ylabel("grad norm / trailing median")
        cooc = s.get(unit_key(name, "cooccurrence"))
        extra = "" if cooc is None else (f"\nmini-batch grad spike within ±1 epoch: {cooc:.0%} "
                                         f"(chance {s[f'{name}_cooccurrence_chance'] or 0:.0%})")
        ax.set_title(f"{s[f'{name}_n_ratio_ge2']}/{n} onsets at ≥ 2× the trailing median" + extra, fontsize=8)
    axes[0, 0].set_title("loss (red: spike onsets)", fontsize=9)
    axes[0, 1].set_title("gradient norm", fontsize=9)
    fig.suptitle(f"Loss spikes and gradient norms (Figs 13/18): k = {config.k}, lr = {config.lr:g}, "
                 f"{config.n_seeds} seeds", fontsize=11)
    return fig


# ----------------------------------------------------------------------------------------------- remedies
def remedies(result, config) -> Figure:
    """Spike onsets per 1000 epochs (mean ± s.e. over seeds) per variant: over all epochs, and over the epochs
    after the loss first fell below half its initial value (the spike detector is armed; seeds that got there);
    and the final test accuracy. Our counts: the paper gives none."""
    a = result.arrays
    names = [str(v) for v in a["variants"]]
    fig, axes = figure(3, width=0.5 * len(names) + 2.2, height=3.4)
    x = np.arange(len(names))
    panels = (("rate", "onsets / 1000 epochs", "all seeds, all epochs"),
              ("rate_eligible", "onsets / 1000 armed epochs", "seeds with L < L(0)/2 (n on bars)"),
              ("test_acc_final", "final test accuracy", "final test accuracy"))
    for ax, (key, lab, title) in zip(axes, panels, strict=True):
        vals = [a[f"v{i}/{key}"][np.isfinite(a[f"v{i}/{key}"])] for i in range(len(names))]
        mean = np.array([v.mean() if len(v) else np.nan for v in vals])
        se = np.array([v.std(ddof=1) / math.sqrt(len(v)) if len(v) > 1 else 0.0 for v in vals])
        ax.bar(x, mean, yerr=se, capsize=3, color=[COLORS[0]] + [COLORS[1]] * (len(names) - 1))
        ax.set_xticks(x, names, rotation=40, ha="right", fontsize=8)
        ax.set_ylabel(lab)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="x", visible=False)
        if key == "rate_eligible":
            for i, v in enumerate(vals):
                ax.annotate(f"{len(v)}", (i, 0), xytext=(0, 2), textcoords="offset points", ha="center", fontsize=7)
    axes[2].set_ylim(0, 1.02)
    fig.suptitle(f"Loss-spike remedies around d = {config.d}, k = {config.k}, lr = {config.lr:g} "
                 f"({config.n_seeds} seeds × {config.epochs} epochs; mean ± s.e.) — our counts, the paper reports "
                 "none", fontsize=10)
    return fig
