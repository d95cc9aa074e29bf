"""Figures of the multi-seed experiments of paper 4 (Figs. 7, 14, 16, 19) from stored results (no training)."""

from __future__ import annotations

import numpy as np
from matplotlib import colormaps
from matplotlib.colors import Normalize

from attnlab.clustering.keys import d_key
from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure

BLUE, RED = "#1f5fbf", "#d62728"  # the paper's success / failure colours
SUCCESS = 0.9


def _band(ax) -> None:
    ax.axvspan(1e-3, 10, color="0.85", alpha=0.5, lw=0, zorder=0)
    ax.set_xscale("log")
    ax.set_xlabel(r"$\varepsilon$")
    ax.set_ylim(-0.02, 1.02)


def _success_curves(ax, eps: np.ndarray, curve: np.ndarray, acc: np.ndarray, title: str) -> None:
    """Sparsity curves, blue = success (final test acc > 0.9), red = failure (Fig. 7 left)."""
    _band(ax)
    ok = acc > SUCCESS
    for i in np.argsort(ok):  # successes drawn on top
        ax.plot(eps, curve[i], color=BLUE if ok[i] else RED, alpha=0.75, lw=1.2)
    ax.plot([], [], color=BLUE, label=f"success ({ok.sum()})")
    ax.plot([], [], color=RED, label=f"failure ({(~ok).sum()})")
    ax.set_title(title)
    ax.set_ylabel("activation sparsity")
    ax.legend(loc="upper left", fontsize=8)


def fig7(result: Result, config) -> object:
    """Fig. 7: sparsity vs ε coloured by success (left) and by test accuracy (middle); sparsity summary over
    ε ∈ [1e-3, 10] vs test accuracy with the Spearman correlation (right)."""
    d = int(result.arrays["ds"][0])
    eps, curve = result.arrays["eps"], result.arrays[f"d{d}/sparsity"]
    acc = result.arrays[f"d{d}/test_acc"][-1]
    fig, (left, mid, right) = figure(3, width=3.8, height=3.2)
    _success_curves(left, eps, curve, acc, f"success vs failure (d = {d})")
    cmap, norm = colormaps["magma"], Normalize(min(0.4, acc.min()), 1.0)
    _band(mid)
    for i in np.argsort(acc):
        mid.plot(eps, curve[i], color=cmap(norm(acc[i])), lw=1.2)
    fig.colorbar(_mappable(cmap, norm), ax=mid, label="test accuracy")
    mid.set_title("coloured by test accuracy (lighter = better)")
    sparse = result.arrays[f"d{d}/sparsity_summary"]
    ok = acc > SUCCESS
    right.scatter(sparse[ok], acc[ok], color=BLUE, s=22, label="success")
    right.scatter(sparse[~ok], acc[~ok], color=RED, s=22, label="failure")
    right.axhline(SUCCESS, ls="--", color="0.5", lw=1)
    right.set_ylim(min(0.4, acc.min()) - 0.03, 1.03)
    rho = result.summary.get(d_key("spearman", d))
    right.set_title(f"Spearman ρ = {rho:.2f}" if rho is not None else "Spearman ρ undefined")
    right.set_xlabel(r"mean sparsity over $\varepsilon\in[10^{-3},10]$")
    right.set_ylabel("final test accuracy")
    right.legend(fontsize=8)
    fig.suptitle(f"Activation sparsity of {len(acc)} models (d={d}, k={config.k}, {config.epochs} epochs)")
    return fig


def _mappable(cmap, norm):
    from matplotlib.cm import ScalarMappable

    return ScalarMappable(norm=norm, cmap=cmap)


def fig19(result: Result, config) -> object:
    """Fig. 19: one Fig. 7-left panel per d, plus the success rate vs d."""
    ds = [int(d) for d in result.arrays["ds"]]
    n = len(ds) + 1
    ncols = min(n, 4)
    nrows = -(-n // ncols)
    fig, axes = figure(ncols, nrows, width=3.2, height=2.8)
    axes = np.atleast_1d(axes).reshape(-1)
    eps = result.arrays["eps"]
    rates = []
    for ax, d in zip(axes, ds, strict=False):
        acc = result.arrays[f"d{d}/test_acc"][-1]
        rates.append((acc > SUCCESS).mean())
        _success_curves(ax, eps, result.arrays[f"d{d}/sparsity"], acc,
                        f"d = {d}: {int((acc > SUCCESS).sum())}/{len(acc)} succeed")
    ax = axes[len(ds)]
    ax.plot(ds, rates, "o-", color=COLORS[0])
    ax.set_xscale("log", base=2)
    ax.set_xticks(ds, [str(d) for d in ds])
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("embedding dimension d")
    ax.set_ylabel("success rate (test acc > 0.9)")
    ax.set_title("success rate vs d")
    for extra in axes[n:]:
        extra.set_visible(False)
    fig.suptitle(f"Activation sparsity vs d (k={config.k}, {config.n_seeds} models each, {config.epochs} epochs)")
    return fig


def fig14(result: Result, config) -> object:
    """Fig. 14: mean (left) and max (right) test accuracy per p, pretrain-only vs finetuned from p = 2; right-most:
    finetuned accuracy vs the number of ξ clusters after the p = 2 phase."""
    t = result.metrics
    fig, axes = figure(3, width=3.8, height=3.2)
    ps = sorted(t["p"].unique())
    x = np.arange(len(ps))
    for ax, stat in zip(axes[:2], ("mean", "max"), strict=True):
        for j, (kind, label) in enumerate((("scratch", "pretrain only"), ("finetune", "finetuned from p = 2"))):
            vals = t[t.kind == kind].groupby("p")["test_acc"].agg(stat)
            ax.bar(x[[ps.index(q) for q in vals.index]] + (j - 0.5) * 0.38, vals.to_numpy(), 0.38,
                   color=COLORS[j], label=label)
        ax.plot(x, [1 / q for q in ps], "k_", ms=14, mew=1.5, label="chance 1/p")
        ax.set_xticks(x, [str(q) for q in ps])
        ax.set_xlabel("p")
        ax.set_ylim(0, 1.05)
        ax.set_title(f"{stat} test accuracy over {config.n_seeds} runs")
    axes[0].set_ylabel("test accuracy")
    axes[0].legend(fontsize=8, loc="upper right")
    ax = axes[2]
    ft = t[t.kind == "finetune"]
    ideal = result.summary.get("ideal_clusters")
    for j, q in enumerate(sorted(ft["p"].unique())):
        sub = ft[ft.p == q]
        jitter = (j - 0.5) * 0.15
        ax.scatter(sub["n_clusters_pre"] + jitter, sub["test_acc"], s=18, color=COLORS[j % len(COLORS)],
                   alpha=0.8, label=f"p = {q}")
    if ideal is not None:
        ax.axvline(ideal, ls="--", color="0.4", lw=1, label=f"{ideal} clusters")
    ax.set_xlabel("ξ clusters after the p = 2 phase")
    ax.set_ylabel("finetuned test accuracy")
    ax.set_title("finetuned runs by their p = 2 circuit")
    ax.legend(fontsize=8)
    fig.suptitle(f"Transfer p = {config.p} → p' (d={config.d}, k={config.k}, "
                 f"{config.phase1_epochs} + {config.epochs} epochs)")
    return fig


def fig16(result: Result, config) -> object:
    """Fig. 16: test accuracy vs each hyper-parameter, (a) one seed (same init and batches across settings),
    (b) mean ± s.e. over the seeds; the default value is marked."""
    t = result.metrics
    params = ["batch_size", "h", "lr", "mlp_lr_factor"]
    labels = {"batch_size": "batch size", "h": "hidden neurons h", "lr": "learning rate",
              "mlp_lr_factor": "MLP lr discount γ"}
    fig, axes = figure(len(params), 2, width=3.0, height=2.6)
    seed0 = t.seed.min()
    for j, name in enumerate(params):
        sub = t[t.param == name]
        one = sub[sub.seed == seed0].sort_values("value")
        stats = sub.groupby("value")["test_acc"].agg(["mean", "sem"]).reset_index()
        default = config.spec().h if name == "h" else getattr(config, name)
        titles = (f"(a) seed {seed0}", f"(b) mean ± s.e., {sub.seed.nunique()} seeds")
        for row, (ax, title) in enumerate(zip(axes[:, j], titles, strict=True)):
            if row == 0:
                ax.plot(one["value"], one["test_acc"], "o-", color=COLORS[0])
            else:
                ax.errorbar(stats["value"], stats["mean"], yerr=stats["sem"].fillna(0), fmt="o-", capsize=3,
                            color=COLORS[1])
            ax.axvline(default, ls=":", color="0.5", lw=1)
            ax.set_xscale("log", base=2 if name in ("batch_size", "h") else 10)
            if name in ("batch_size", "h"):
                ax.set_xticks(one["value"], [f"{v:g}" for v in one["value"]])
                ax.minorticks_off()
            ax.set_ylim(0.3, 1.03)
            ax.set_xlabel(labels[name])
            if j == 0:
                ax.set_ylabel(f"{title}\ntest accuracy")
    fig.suptitle(f"Hyper-parameter ablation (d={config.d}, k={config.k}, {config.epochs} epochs; dotted = default)")
    return fig
