"""Figures of the one-shot experiments: Figs. 3b-d and 6 (accuracy vs N, U, alignment), Figs. 3e-f and 7 (pruning)."""

from __future__ import annotations

import numpy as np

from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure
from attnlab.paths.figures.common import BLUE, ORANGE, RED
from attnlab.paths.keys import net_key

SET_NAME = {"id": "in-distribution", "glyphs_blocks": "OOD (block glyphs)", "mnist": "OOD (MNIST)",
            "fashion_mnist": "OOD (FashionMNIST)", "digits": "OOD (8×8 digits)", "mnist_5k": "OOD (MNIST 5k)"}


def _sets(config) -> list[str]:
    return ["id", *config.ood]


def _acc_panel(ax, a: dict, v: str, k: str) -> None:
    ax.plot(a[net_key(v, "widths")], a[net_key(v, "acc_fw", k)], "-x", color=BLUE, label="theory (τ* per N)")
    ax.axhline(float(a[net_key(v, "acc_gp", k)]), color=RED, label="GP limit")
    ax.set_xscale("log")
    ax.set_xlabel("width N")
    ax.set_ylabel("accuracy")
    ax.set_title(SET_NAME.get(k, k))


def _heat(fig, ax, U: np.ndarray, title: str, Hs) -> None:
    """U as a heat map with its h_1 blocks outlined (paths ordered with h_1 most significant)."""
    lim = np.abs(U).max()
    im = ax.imshow(U, cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_title(title)
    block = int(np.prod(Hs[1:])) if len(Hs) > 1 else 1
    if block > 1:
        for e in np.arange(block, U.shape[0], block) - 0.5:
            ax.axhline(e, color="k", lw=0.5)
            ax.axvline(e, color="k", lw=0.5)
    centres = np.arange(Hs[0]) * block + (block - 1) / 2
    ax.set_xticks(centres, [f"h₁={h + 1}" for h in range(Hs[0])], fontsize=7)
    ax.set_yticks(centres, [f"h₁={h + 1}" for h in range(Hs[0])], fontsize=7)
    ax.grid(False)
    fig.colorbar(im, ax=ax, shrink=0.75)


def fig3(result: Result, config) -> object:
    """Fig. 3b-d: accuracy vs N (ID, OOD; theory, samples, GP), U at N = 10 (theory, sampled, GD), PC overlaps."""
    a, s = result.arrays, result.summary
    var = config.variants[0]
    v = var.name
    sets = _sets(config)
    fig, axes = figure(max(len(sets), 1) + 1, 2, width=3.5, height=3.0)
    for ax, k in zip(axes[0], sets, strict=False):
        _acc_panel(ax, a, v, k)
        for N in a.get(net_key(v, "sim_time"), []):
            val = s.get(net_key(v, "acc_sample", k, N=N))
            if val is not None:
                ax.plot([N], [val], "o", color="k", label="samples (Gibbs)")
    axes[0][0].legend(fontsize=7)
    ax = axes[0][len(sets)]
    k = np.arange(1, len(a[net_key(v, "overlap_fw")]) + 1)
    ax.bar(k - 0.2, a[net_key(v, "overlap_gp")], width=0.4, color=ORANGE, label="GP limit")
    ax.bar(k + 0.2, a[net_key(v, "overlap_fw")], width=0.4, color=BLUE, label=f"FW, N = {config.score_width:g}")
    ax.set_xlabel("kernel PC")
    ax.set_ylabel("overlap with Y")
    ax.legend(fontsize=7)
    j = int(np.argmin(np.abs(np.log(a[net_key(v, "widths")]) - np.log(config.score_width))))
    panels = [(a[net_key(v, "U_star")][j], f"theory, N = {a[net_key(v, 'widths')][j]:g}")]
    if net_key(v, "sim_U") in a:
        panels.append((a[net_key(v, "sim_U")][0], f"sampled, N = {a[net_key(v, 'sim_time')][0]:g}"))
    panels.append((a[net_key(v, "U_gd")], f"gradient descent, N = {config.N_gd}"))
    for ax, (U, title) in zip(axes[1], panels, strict=False):
        _heat(fig, ax, U, title, var.Hs)
    for ax in axes[1][len(panels):]:
        ax.axis("off")
    fig.suptitle(f"one-shot task ({config.dataset}), L = {var.L}, Hs = {list(var.Hs)}, P = {config.P}")
    return fig


def fig6(result: Result, config) -> object:
    """Fig. 6: accuracy vs N per network and test set; U of the last network at N = 10."""
    a = result.arrays
    sets = _sets(config)
    nv = len(config.variants)
    fig, axes = figure(len(sets) + 1, nv, width=3.4, height=2.9)
    axes = np.asarray(axes).reshape(nv, len(sets) + 1)
    for row, var in zip(axes, config.variants, strict=True):
        for ax, k in zip(row, sets, strict=False):
            _acc_panel(ax, a, var.name, k)
            ax.set_title(f"{var.name}: {SET_NAME.get(k, k)}", fontsize=9)
        j = int(np.argmin(np.abs(np.log(a[f"{var.name}/widths"]) - np.log(config.score_width))))
        _heat(fig, row[-1], a[f"{var.name}/U_star"][j], f"U, N = {a[f'{var.name}/widths'][j]:g}", var.Hs)
    axes[0][0].legend(fontsize=7)
    return fig


def pruning(result: Result, config) -> object:
    """Figs. 3e-f / 7: normalised head score vs accuracy drop per head; accuracy after pruning k heads."""
    a, s = result.arrays, result.summary
    sets = _sets(config)
    nv = len(config.variants)
    fig, axes = figure(2, nv, width=4.6, height=3.0)
    axes = np.asarray(axes).reshape(nv, 2)
    for row, var in zip(axes, config.variants, strict=True):
        v = var.name
        sc = a[net_key(v, "scores", config.score_mode)]
        labels = [f"{ell + 1}.{h + 1}" for ell, H in enumerate(var.Hs) for h in range(H)]
        x = np.arange(len(sc))
        ax = row[0]
        ax.bar(x - 0.2, sc, width=0.4, color=BLUE, label="head score")
        ax2 = ax.twinx()
        ax2.bar(x + 0.2, a[net_key(v, "drop_id")], width=0.4, color=RED, label="accuracy drop (ID)")
        ax2.set_ylabel("accuracy drop", color=RED)
        ax2.grid(False)
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_xlabel("head (layer.head)")
        ax.set_ylabel("normalised score", color=BLUE)
        rho = s.get(net_key(v, "spearman_score_drop_id"))
        ax.set_title(f"{v}: Spearman(score, drop) = " + ("n/a" if rho is None else f"{rho:.2f}"), fontsize=9)
        ax = row[1]
        frac = s[net_key(v, "param_fraction_per_head")]
        for c, k in enumerate(sets):
            curve = a[net_key(v, "curve", k)]
            ax.plot(np.arange(len(curve)), curve, "-o", ms=4, color=COLORS[c], label=SET_NAME.get(k, k))
        ax.set_xlabel(f"heads pruned in score order ({100 * frac:.1f}% of parameters each)")
        ax.set_ylabel("accuracy")
        ax.legend(fontsize=7)
    return fig
