"""Per-model measurements of trained runs for the circuit figures of paper 4 (Figs. 2-6, 8, 15): the head metrics (docs)
and head type of every seed (``circuit_metrics``), the attention maps before and after training (Figs. 5, 6), the
seed a two-stage figure shows (Fig. 8), and the long tables an experiment returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attnlab.clustering.analysis import heads
from attnlab.clustering.train import dynamics
from attnlab.clustering.train.history import History
from attnlab.clustering.train.units import epoch_frame

TYPES = ("ideal", "value_corrected", "partial", "fuzzy", "failed")


def model_frame(h: History, m: dict[str, np.ndarray], **extra: Any) -> pd.DataFrame:
    """Long table of the per-seed final metrics of ``circuit_metrics`` (observable ``final/<name>``)."""
    rows = [pd.DataFrame({"source": "training", "observable": f"final/{k}", "time_name": "epoch",
                          "time": float(h.epochs[-1]), "value": np.asarray(v, dtype=float),
                          "seed": pd.array(m["seed"], dtype="Int64"), "head_type": m["head_type"]})
            for k, v in m.items() if k not in ("seed", "head_type")]
    return pd.concat(rows, ignore_index=True).assign(**extra)


def run_frame(h: History, m: dict[str, np.ndarray], **extra: Any) -> pd.DataFrame:
    return pd.concat([epoch_frame(h, m["head_type"], **extra), model_frame(h, m, **extra)], ignore_index=True)


def circuit_metrics(h: History, index: int = -1) -> dict[str, np.ndarray]:
    """Head metrics of every seed at snapshot ``index`` (default the last), its head type and t_cluster/t_fit."""
    params = h.params_at(index)
    spec, task = h.spec, h.task
    em = h.epoch_metrics
    row = int(np.abs(h.epochs - h.snapshot_epochs[index]).argmin())  # the epoch log at that snapshot
    x, _, _ = task.probe_grid()
    out = {k: v.numpy() for k, v in heads.head_metrics(params, spec, task).items()}
    cl = heads.clusters(params, spec, task)
    out["n_clusters"], out["cluster_purity"] = cl["n_clusters"].numpy(), cl["cluster_purity"].numpy()
    pc = heads.pos_collapse(params, spec, task)
    out["pos_collapse_in"], out["pos_collapse_out"] = pc["in"].numpy(), pc["out"].numpy()
    out["value_collapse_out"] = heads.value_collapse_out(params, spec, task).numpy()
    out["probe_acc"] = heads.accuracy(params, spec, x, task.labels(x)).numpy()
    for name in ("test_acc", "unseen_acc", "train_loss", "train_acc", "grad_total"):
        if name in em:
            out[name] = np.asarray(em[name][row], dtype=float)
    acc = out.get("test_acc", out["probe_acc"])
    out["head_type"] = np.array(heads.head_type({**out, "test_acc": acc}))
    if "cluster_score" in em:
        out["t_cluster"] = dynamics.t_cluster(em["cluster_score"], h.epochs)
    if "test_acc" in em:
        out["t_fit"] = dynamics.t_fit(em["test_acc"], h.epochs)
    out["seed"] = np.asarray(h.seeds)
    return out


def type_counts(types: np.ndarray) -> dict[str, int]:
    return {f"n_{t}": int((types == t).sum()) for t in TYPES}


def representatives(m: dict[str, np.ndarray]) -> dict[str, int]:
    """Index of the seed shown for each head type found: best test accuracy, then most invariant ξ."""
    acc = m.get("test_acc", m["probe_acc"])
    reps = {}
    for t in TYPES:
        idx = np.flatnonzero(m["head_type"] == t)
        if idx.size:
            reps[t] = int(idx[np.lexsort((m["R_suffix"][idx] + m["R_perm"][idx], -acc[idx]))[0]])
    return reps


def d4_counts(m: dict[str, np.ndarray]) -> dict[str, float]:
    """D4 counts: solved clustering-type seeds (test acc ≥ 0.9, final cluster_score ≥ 0.9) and how many of them
    have t_cluster ≤ t_fit + 1."""
    sel = (m.get("test_acc", m["probe_acc"]) >= 0.9) & (m["cluster_score"] >= 0.9)
    ok = sel & (m["t_cluster"] <= m["t_fit"] + 1)
    return {"d4_n_clustering_solved": int(sel.sum()), "d4_n_cluster_first": int(ok.sum())}


def attention_change(h: History, i0: int = 0, i1: int = -1) -> dict[str, np.ndarray]:
    """Attention-map correlations over the whole probe grid (seed i at i0 with seed j at i1: ``attn_corr_matrix``;
    its diagonal ``attn_corr``), attention mass on I and attn_by_value at two snapshots."""
    p0, p1 = h.params_at(i0), h.params_at(i1)
    x, _, _ = h.task.probe_grid()
    corr = heads.attn_corr_matrix(p0, p1, h.spec, x).numpy()
    out = {"attn_corr": np.diag(corr).copy(), "attn_corr_matrix": corr}
    for tag, prm in (("start", p0), ("end", p1)):
        out[f"attn_prefix_mass_{tag}"] = heads.attn_prefix_mass(prm, h.spec, h.task).numpy()
        out[f"attn_by_value_{tag}"] = heads.attn_by_value(prm, h.spec, h.task).numpy()  # (S, p)
    return out


def other_corr(corr: np.ndarray) -> np.ndarray:
    """For each final map j, its mean correlation with the initial maps of the other seeds i ≠ j. (S,)"""
    S = len(corr)
    return (corr.sum(0) - np.diag(corr)) / max(S - 1, 1)


def choose_two_stage_seed(m: dict[str, np.ndarray], loss: np.ndarray, epochs: np.ndarray, min_plateau: int = 10,
                          max_gap: float = 50, max_spike: float = 2.0) -> tuple[int, str]:
    """Index of the first seed with a clean two-stage profile (see ``_Fig8``), and which rule picked it; falls
    back to the first solved clustering-type seed, the first solved seed, then the best one."""
    solved = (m["test_acc"] >= 0.9) & (m["cluster_score"] >= 0.9)
    tc, tf = m["t_cluster"], m["t_fit"]
    calm = np.zeros(len(tc), dtype=bool)
    for s in np.flatnonzero(solved & np.isfinite(tc)):
        after = loss[epochs >= tc[s] - 5, s]
        calm[s] = after.size > 0 and after.max() <= max_spike * after[0]
    clean = solved & calm & (tc >= min_plateau) & (tc <= tf + 1) & (tf - tc <= max_gap)
    for rule, mask in (("clean two-stage", clean), ("solved clustering", solved), ("solved", m["test_acc"] >= 0.9)):
        if mask.any():
            return int(np.flatnonzero(mask)[0]), rule
    return int(np.argmax(m["test_acc"])), "best (none solved)"
