"""Figures of paper 4's circuit experiments (Figs. 1–6, 8, 15) from stored results, drawn with the sandbox renderer
(``sandbox/render.py``): no computation beyond re-reading the stored parameters and evaluating panels."""

from __future__ import annotations

import numpy as np
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec
from attnlab.clustering.train.history import History
from attnlab.core.experiment import Result
from attnlab.core.plotting import COLORS, figure

TYPE_COLORS = {"ideal": COLORS[2], "value_corrected": COLORS[0], "partial": COLORS[1], "fuzzy": COLORS[4],
               "failed": COLORS[3]}
TYPE_FIGS = {"ideal": "trained_ideal", "value_corrected": "fig2_value_corrected", "partial": "fig3_partial",
             "fuzzy": "fig4_fuzzy", "failed": "failed_example"}
CIRCUIT_PANELS = ("normalized", "value", "xi", "levels")
NO_HISTORY = ("tokens", "positions", "embeddings", "normalized", "attention", "value", "xi", "psi", "levels", "mlp",
              "output", "sparsity")


def _render():
    from attnlab.clustering.render import render  # matplotlib-heavy; loaded when a figure is drawn

    return render


def _draw_panel(ax, name: str, data: dict) -> None:
    from attnlab.clustering.render.draw import draw_panel  # matplotlib-heavy; loaded when a figure is drawn

    draw_panel(ax, name, data)


def _panel(ax, name: str, params: dict, spec: ModelSpec, task: Task, **opts) -> None:
    from attnlab.clustering.render.panels import PANELS

    _draw_panel(ax, name, PANELS[name].compute(params, spec, task, **opts))


def _ideal(result: Result, config) -> tuple[dict, ModelSpec, Task]:
    params = {k.split("/", 1)[1]: torch.as_tensor(v)[None] for k, v in result.arrays.items() if k.startswith("ideal/")}
    return params, ModelSpec(p=config.p, N=config.N, d=config.d, h=config.h), Task(config.p, config.N, config.k)


# ----------------------------------------------------------------------------------------------- Fig. 1
def fig1(result: Result, config) -> dict[str, object]:
    """Fig. 1 (E, P, Z with q, ξ, ψ of the construction), every panel of the sandbox, and the C4 scaling."""
    render = _render()
    params, spec, task = _ideal(result, config)
    s = result.summary
    note = (f" · acc {s['accuracy']:.3g}, ‖∇L‖ = {s['grad_norm']:.1e}, {s['n_clusters']} clusters "
            f"(C(k+p−1,k) = {s['n_multisets']})")
    head = render.render_snapshot(params, spec, task, panels=("tokens", "positions", "normalized", "xi", "psi"),
                                  ncols=5, title="ideal clustering head (Fig. 1)" + note)
    every = render.render_snapshot(params, spec, task, panels=NO_HISTORY, ncols=4,
                                   title="ideal clustering head, all sandbox panels" + note)
    scaled = result.metrics[result.metrics["kind"] == "scaled"].sort_values("c")
    fig, (ax, ax2) = figure(2, width=3.8, height=3.0)
    ax.semilogy(scaled["c"], scaled["grad_norm"], "o-", color=COLORS[0])
    ax.set_xlabel(r"scale $c$ of $(\lambda, \mu) = (10c, 10c)$")
    ax.set_ylabel(r"$\|\nabla_{q,V,W,U} L\|$")
    ax.set_title("Prop. 1 caveat: ‖∇L‖ → 0 as λ, μ grow")
    ax2.plot(scaled["c"], scaled["accuracy"], "o-", color=COLORS[2])
    ax2.set_ylim(0.45, 1.05)
    ax2.set_ylabel("accuracy", color=COLORS[2])
    ax2.set_xlabel(r"scale $c$")
    ax2.set_title("accuracy and CE on all sentences")
    twin = ax2.twinx()
    ce = scaled["ce"].to_numpy()
    twin.semilogy(scaled["c"], np.where(ce > 0, ce, np.nan), "s--", color=COLORS[3])
    twin.set_ylabel("cross-entropy (log)", color=COLORS[3])
    twin.grid(False)
    return {"fig1": head, "fig1_all_panels": every, "fig1_scaling": fig}


def stationarity(result: Result, config) -> object:
    """D9: full-space CE, accuracy and full-batch gradient norm while training from the construction."""
    h = History.from_arrays(result.arrays, "run/")
    fig, axes = figure(3, width=3.4, height=2.8)
    for ax, (name, label) in zip(axes, (("test_loss", "full-space CE"), ("test_acc", "full-space accuracy"),
                                        ("grad_total", "full-batch ‖∇L‖")), strict=True):
        ax.plot(h.epochs, h.epoch_metrics[name], "o-", ms=3)
        ax.set_xlabel("epoch")
        ax.set_title(label)
    axes[1].set_ylim(min(0.9, float(h.epoch_metrics["test_acc"].min()) - 0.02), 1.01)
    axes[2].set_yscale("log")
    fig.suptitle(f"Adam from the clustering head (D9): c = {config.c} (λ = μ = {10 * config.c:g}), lr {config.lr:g}, "
                 f"batch {config.batch_size}")
    return fig


# ----------------------------------------------------------------------------------------------- Figs. 2–4
def _models(result: Result, prefix: str = "model/") -> dict[str, np.ndarray]:
    return {k[len(prefix):]: v for k, v in result.arrays.items() if k.startswith(prefix)}


def _rep_index(m: dict[str, np.ndarray], seed: int) -> int:
    return int(np.flatnonzero(m["seed"] == seed)[0])


def _row_label(ax, text: str) -> None:
    ax.annotate(text, (-0.32, 0.5), xycoords="axes fraction", rotation=90, ha="center", va="center", fontsize=11,
                fontweight="bold")


def circuits(result: Result, config) -> dict[str, object]:
    """One row of planar panels (Z with q, V Z, ξ, level lines) per head type found, a taxonomy table, and the
    full sandbox grid of each representative (the paper's Figs. 2, 3, 4)."""
    hist = History.from_arrays(result.arrays, "run/")
    m = _models(result)
    reps = {t: _rep_index(m, result.summary[f"rep_{t}"]) for t in TYPE_COLORS if result.summary.get(f"rep_{t}")
            is not None}
    figs: dict[str, object] = {}
    if reps:
        fig, axes = figure(len(CIRCUIT_PANELS), len(reps), width=3.3, height=3.2)
        axes = np.asarray(axes, dtype=object).reshape(len(reps), len(CIRCUIT_PANELS))
        for row, (t, i) in zip(axes, reps.items(), strict=True):
            params = hist.params_at(-1, i)
            for ax, name in zip(row, CIRCUIT_PANELS, strict=True):
                _panel(ax, name, params, hist.spec, hist.task)
            _row_label(row[0], t.replace("_", " "))
            row[0].set_title(f"seed {hist.seeds[i]} · test acc {m['test_acc'][i]:.2f}\n{row[0].get_title()}",
                             fontsize=9)
        fig.suptitle(f"circuits found after {int(hist.epochs[-1])} epochs (p={hist.task.p}, k={hist.task.k}, "
                     f"d={hist.spec.d})")
        figs["circuits"] = fig
    figs["taxonomy"] = _taxonomy(result, m, hist.task.n_classes)
    render = _render()
    for t, i in reps.items():
        figs[TYPE_FIGS[t]] = render.render_snapshot(hist, panels="default", seed=i,
                                                    title=f"{t.replace('_', ' ')} head")
    return figs


def _taxonomy(result: Result, m: dict[str, np.ndarray], n_ideal: int) -> object:
    fig, (ax, ax2, ax3) = figure(3, width=3.6, height=3.2)
    counts = [result.summary.get(f"n_{t}", 0) for t in TYPE_COLORS]
    ax.bar(range(len(counts)), counts, color=list(TYPE_COLORS.values()))
    ax.set_xticks(range(len(counts)), [t.replace("_", "\n") for t in TYPE_COLORS], fontsize=8)
    for x, c in enumerate(counts):
        ax.annotate(str(c), (x, c), ha="center", va="bottom", fontsize=9)
    ax.set_title(f"head types of {result.summary['n_models']} models")
    for t, c in TYPE_COLORS.items():
        sel = m["head_type"] == t
        ax2.scatter(m["attn_prefix_mass"][sel], np.maximum(m["R_suffix"][sel], 1e-6), color=c, s=22, label=t)
        ax3.scatter(m["test_acc"][sel], m["n_clusters"][sel], color=c, s=22)
    ax2.set_yscale("log")
    ax2.axhline(0.02, color="0.5", ls="--", lw=1)
    ax2.axvline(0.9, color="0.5", ls="--", lw=1)
    ax2.set_xlabel("attention mass on $t \\leq k$")
    ax2.set_ylabel("$R_{suffix}$")
    ax2.legend(fontsize=7)
    ax2.set_title("suffix invariance vs attention")
    ax3.axhline(n_ideal, color="0.5", ls="--", lw=1)
    ax3.axvline(0.9, color="0.5", ls="--", lw=1)
    ax3.set_yscale("log")
    ax3.set_xlabel("test accuracy")
    ax3.set_ylabel("number of ξ clusters")
    ax3.set_title(f"ξ clusters (ideal: C(k+p−1,k) = {n_ideal})")
    return fig


# ----------------------------------------------------------------------------------------------- Figs. 5, 6
def _attention_rows(hist: History, seeds: list[int], n_probe: int, title: str, acc: np.ndarray) -> object:
    """Fig. 5 layout, one row per seed: input tokens | attention at the first snapshot | at the last."""
    from attnlab.clustering.render.panels import PANELS

    fig, axes = figure(3, len(seeds), width=3.2, height=0.22 * n_probe + 1.4)
    axes = np.asarray(axes, dtype=object).reshape(len(seeds), 3)
    for row, i in zip(axes, seeds, strict=True):
        d0, d1 = (PANELS["attention"].compute(hist.params_at(j, i), hist.spec, hist.task, n_attention=n_probe)
                  for j in (0, -1))
        toks = d0["tokens"]
        row[0].imshow(toks, cmap="Pastel1", vmin=0, vmax=8, aspect="auto", interpolation="nearest")
        for (r, c), v in np.ndenumerate(toks):
            row[0].text(c, r, str(v), ha="center", va="center", fontsize=7)
        row[0].set_xticks(range(toks.shape[1]), [str(t + 1) for t in range(toks.shape[1])], fontsize=7)
        row[0].set_yticks([])
        row[0].grid(False)
        row[0].axvline(hist.task.k - 0.5, color="#D62728", lw=1, ls="--")
        row[0].set_title(f"seed {hist.seeds[i]} (test acc {acc[i]:.2f}): input $x$", fontsize=10)
        _draw_panel(row[1], "attention", d0)
        _draw_panel(row[2], "attention", d1)
        e0, e1 = hist.snapshot_epochs[0], hist.snapshot_epochs[-1]
        for ax, d, e in ((row[1], d0, e0), (row[2], d1, e1)):
            ax.set_title(f"attention, epoch {e:g}\nmass on $t\\leq k$: {d['prefix_mass']:.2f}", fontsize=9)
            ax.set_yticks([])
    fig.suptitle(title)
    return fig


def _shown_seeds(acc: np.ndarray, n: int = 3) -> list[int]:
    order = np.lexsort((np.arange(len(acc)), -(acc >= 0.9).astype(int)))
    return [int(i) for i in order[:n]]


def fig5(result: Result, config) -> object:
    hist = History.from_arrays(result.arrays, "run/")
    corr = result.arrays["attn/attn_corr"]
    acc = result.arrays["test_acc"]
    seeds = _shown_seeds(acc)
    title = "attention at the start vs the end of training (Fig. 5) · " + ", ".join(
        f"seed {hist.seeds[i]}: corr {corr[i]:.2f}" for i in seeds)
    return _attention_rows(hist, seeds, config.n_probe, title, acc)


def transfer_circuit(result: Result, config) -> dict[str, object]:
    """Fig. 6 (attention at the start / end of the p_new phase), Fig. 15 (circuit before / after finetuning) and the
    accuracy curves of both phases."""
    pre, fin = History.from_arrays(result.arrays, "pretrain/"), History.from_arrays(result.arrays, "finetune/")
    rep = int(result.arrays["rep"])
    acc = result.arrays["model_new/test_acc"]
    seeds = [rep, *[i for i in _shown_seeds(acc, 3) if i != rep][:1]]
    corr = result.arrays["attn/attn_corr"]
    fig6 = _attention_rows(fin, seeds, 12, f"finetuning p = {pre.task.p} → {fin.task.p} (Fig. 6) · "
                           + ", ".join(f"seed {fin.seeds[i]}: corr {corr[i]:.2f}" for i in seeds), acc)
    names = ("tokens", "normalized", "value", "xi", "levels")
    fig15, axes = figure(len(names), 2, width=3.2, height=3.2)
    for row, (j, label) in zip(axes, ((0, "(a) transferred"), (-1, "(b) finetuned")), strict=True):
        params = fin.params_at(j, rep)
        for ax, name in zip(row, names, strict=True):
            _panel(ax, name, params, fin.spec, fin.task)
        _row_label(row[0], label)
    fig15.suptitle(f"transfer of the circuit, seed {fin.seeds[rep]} (Fig. 15): test acc p={pre.task.p} "
                   f"{result.arrays['model_pre/test_acc'][rep]:.2f} → p={fin.task.p} {acc[rep]:.2f}")
    fig, (ax, ax2) = figure(2, width=4.0, height=3.0)
    for i in range(pre.n_seeds):
        c = COLORS[i % len(COLORS)]
        ax.plot(pre.epochs, pre.epoch_metrics["test_acc"][:, i], color=c, lw=1)
        ax.plot(pre.epochs[-1] + fin.epochs, fin.epoch_metrics["test_acc"][:, i], color=c, lw=1)
        ax2.plot(fin.epochs, fin.epoch_metrics["train_loss"][:, i], color=c, lw=1)
    ax.axvline(pre.epochs[-1], color="0.4", ls="--", lw=1)
    ax.set_xlabel("epoch (pretrain, then finetune)")
    ax.set_ylabel("test accuracy")
    ax.set_title(f"p = {pre.task.p} then p = {fin.task.p}")
    ax2.set_xlabel("finetuning epoch")
    ax2.set_ylabel("train loss")
    ax2.set_title("finetuning loss")
    return {"fig6": fig6, "fig15": fig15, "transfer_accuracy": fig}


# ----------------------------------------------------------------------------------------------- Fig. 8
def fig8(result: Result, config) -> dict[str, object]:
    """Fig. 8 strip (ξ over level lines at 4 snapshots + loss with red dashed lines) and the phase monitors."""
    hist = History.from_arrays(result.arrays, "run/")
    i = int(result.arrays["shown"])
    shown = [float(e) for e in result.arrays["strip_epochs"]]
    strip = _render().render_strip(hist, epochs=shown, seed=i)
    _zoom_loss(next(ax for ax in strip.axes if ax.get_title() == "loss profile"), hist, i, shown)
    m = _models(result)
    fig, (ax, ax2) = figure(2, width=4.0, height=3.1)
    em = hist.epoch_metrics
    for name, c in (("train_loss", COLORS[0]), ("cluster_score", COLORS[2]), ("test_acc", COLORS[1])):
        ax.plot(hist.epochs, em[name][:, i], color=c, label=name.replace("_", " "))
    for t, ls in (("t_cluster", "--"), ("t_fit", ":")):
        if np.isfinite(m[t][i]):
            ax.axvline(m[t][i], color="k", ls=ls, lw=1, label=t)
    ax.set_xlabel("epoch")
    ax.set_title(f"seed {hist.seeds[i]}: clustering, then fitting")
    ax.legend(fontsize=7)
    solved = (m["test_acc"] >= 0.9) & (m["cluster_score"] >= 0.9)
    ax2.scatter(m["t_fit"][solved], m["t_cluster"][solved], color=COLORS[0], s=24)
    if solved.any():
        hi = float(np.nanmax([m["t_fit"][solved].max(), m["t_cluster"][solved].max()]))
        ax2.plot([0, hi], [0, hi], color="0.5", ls="--", lw=1)
        ax2.plot([0, hi], [1, hi + 1], color="0.5", ls=":", lw=1)
    ax2.set_xlabel("$t_{fit}$ (test acc ≥ 0.9)")
    ax2.set_ylabel("$t_{cluster}$ (cluster score ≥ 0.9)")
    ax2.set_title(f"D4: {int(solved.sum())} solved clustering-type seeds")
    return {"fig8": strip, "fig8_phases": fig}


def _zoom_loss(ax, hist: History, seed: int, shown: list[float]) -> None:
    """Inset of the loss around the four snapshots when they crowd a small part of the run."""
    lo, hi = min(shown), max(shown)
    span = float(hist.epochs[-1] - hist.epochs[0])
    if hi - lo > 0.4 * span:
        return
    pad = max(5.0, 0.5 * (hi - lo))
    sel = (hist.epochs >= lo - pad) & (hist.epochs <= hi + pad)
    inset = ax.inset_axes([0.1, 0.3, 0.5, 0.45])
    inset.plot(hist.epochs[sel], hist.epoch_metrics["train_loss"][sel, seed], color=COLORS[0], lw=1.2)
    for k, e in enumerate(shown):
        inset.axvline(e, color="#D62728", ls="--", lw=1)
        inset.annotate(f"({k + 1})", (e, 1.0), xycoords=("data", "axes fraction"), xytext=(1, -9),
                       textcoords="offset points", fontsize=7, color="#D62728")
    inset.set_ylim(bottom=0)
    inset.tick_params(labelsize=6)
    inset.set_title("zoom", fontsize=7)


def train_run(result: Result, config) -> dict[str, object]:
    """The sandbox grid of the best seed at its last snapshot, and every seed's loss and accuracy curves."""
    hist = History.from_arrays(result.arrays, "run/")
    m = _models(result)
    acc = m.get("test_acc", m["probe_acc"])
    best = int(np.argmax(acc))
    figs: dict[str, object] = {"snapshot": _render().render_snapshot(
        hist, panels="default", seed=best, title=f"best of {hist.n_seeds} seeds · test acc {acc[best]:.2f}")}
    fig, (ax, ax2) = figure(2, width=4.0, height=3.1)
    em = hist.epoch_metrics
    for s in range(hist.n_seeds):
        color = TYPE_COLORS[str(m["head_type"][s])]
        ax.plot(hist.epochs, em["train_loss"][:, s], color=color, lw=1, alpha=0.7)
        if "test_acc" in em:
            ax2.plot(hist.epochs, em["test_acc"][:, s], color=color, lw=1, alpha=0.7)
    for t, c in TYPE_COLORS.items():
        if (m["head_type"] == t).any():
            ax.plot([], [], color=c, label=t.replace("_", " "))
    ax.set(xlabel="epoch", ylabel="train loss", title=f"{hist.n_seeds} seeds, coloured by head type")
    ax.legend(fontsize=7)
    ax2.set(xlabel="epoch", ylabel="test accuracy", ylim=(0, 1.02), title="test accuracy")
    figs["curves"] = fig
    return figs
