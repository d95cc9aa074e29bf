"""Multi-seed statistics of paper 4: activation sparsity vs success (Figs. 7, 19; App. A.1, A.4), transfer
p = 2 → p' (Fig. 14; App. A.2) and the hyper-parameter ablation (Fig. 16; App. A.3).
Checks D2, D3, D6 and notes 13, 15, 16 of docs/studies/clustering.md.

Every experiment is a list of *units*, each one vectorised multi-seed ``train`` call (a value of d, a bar, a
hyper-parameter setting). Finished units are checkpointed, and so is the unit in progress (its resumable training
state), so an interrupted run resumes mid-unit. Success = final test accuracy > 0.9 (App. A.1, docs note 16).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch
from pydantic import Field, model_validator

from attnlab.clustering import costs, memory, outputs
from attnlab.clustering.analysis import heads
from attnlab.clustering.configs import TrainConfig, unit_config
from attnlab.clustering.data import n_multisets
from attnlab.clustering.figures import sweeps as sweep_figures
from attnlab.clustering.keys import bar_array, bar_key, d_key
from attnlab.clustering.summaries import sweeps as summaries
from attnlab.clustering.train import dynamics
from attnlab.clustering.train.history import History
from attnlab.clustering.train.loop import train, transfer
from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit, run_units

STUDY = "clustering"
SUCCESS = 0.9        # App. A.1: "test accuracy above 0.9"
Curves = dict[str, np.ndarray]


# ----------------------------------------------------------------------------------------------- units
def curves(hist: History) -> Curves:
    """Logged epochs, test accuracy, train loss, error 𝓔 and full-batch gradient norm (E, S), final parameters
    (S, ...)."""
    return {"epochs": hist.epochs, "test_acc": hist.metric("test_acc"), "train_loss": hist.metric("train_loss"),
            "tv_error": hist.metric("tv_error"), "grad_total": hist.metric("grad_total"),
            **{f"final/{k}": v[-1] for k, v in hist.snapshots.items()}}


def first_epoch(acc: np.ndarray, epochs: np.ndarray, level: float = SUCCESS) -> np.ndarray:
    """First logged epoch with acc ≥ level, per seed (NaN if never): the saddle-escape time of Fig. 16. (S,)"""
    hit = acc >= level
    return np.where(hit.any(0), epochs[hit.argmax(0)].astype(float), np.nan)


def longest_below(acc: np.ndarray, epochs: np.ndarray, level: float = 0.6) -> np.ndarray:
    """Longest stretch (epochs between first and last logged point) each seed's test accuracy stays below
    ``level`` (D3: "stuck at chance for ≥ 100 epochs"). acc (E, S) → (S,)"""
    out = np.zeros(acc.shape[1])
    for s in range(acc.shape[1]):
        start = None
        for i, below in enumerate(acc[:, s] < level):
            if below:
                start = epochs[i] if start is None else start
                out[s] = max(out[s], epochs[i] - start)
            else:
                start = None
    return out


# ----------------------------------------------------------------------------------------------- Figs. 7, 19
class SparsityConfig(TrainConfig):
    """Figs. 7/19 (App. A.1, A.4): n_seeds models per d trained for ``epochs``, then the activation sparsity
    sparsity_ε = P(|σ(Wξ̄)| < ε) over the probe sentences (paper App. A.1) against the final test accuracy."""

    ds: tuple[int, ...] | None = Field(None, description="embedding dimensions d, one run of n_seeds models each, "
                                       "h = 4d unless h is given (None: just d)",
                                       json_schema_extra={"allowed": "distinct dimensions, at least one, each 1 to "
                                                                     "4096 (as d), or null"})

    @model_validator(mode="after")
    def _check_ds(self):
        if self.ds is not None and (not self.ds or min(self.ds) < 1 or len(set(self.ds)) != len(self.ds)):
            raise ValueError(f"key 'ds' = {list(self.ds)}: need distinct dimensions ≥ 1")
        return self

    def dims(self) -> tuple[int, ...]:
        return self.ds if self.ds is not None else (self.d,)


Fig7Config = SparsityConfig.with_defaults(
    "Fig7Config", n_seeds=20, log_every=10,
    scales={"quick": {"k": 3, "n_seeds": 16, "epochs": 300, "log_every": 5}, "paper": {}},
    doc="Fig. 7: activation sparsity vs ε of 20 models at d = 2 (k = 5, 1000 epochs). Quick = check D3 (k = 3, "
        "16 seeds, 300 epochs; 7 of 16 seeds solve, so both groups of Fig. 7 are populated): about 1 min on one "
        "core.")
Fig19Config = SparsityConfig.with_defaults(
    "Fig19Config", ds=(2, 3, 4, 8, 16, 32), n_seeds=20, log_every=10,
    scales={"quick": {"ds": (2, 8), "k": 3, "n_seeds": 16, "epochs": 200, "log_every": 5}, "paper": {}},
    doc="Fig. 19: Fig. 7 for d ∈ {2, 3, 4, 8, 16, 32}, h = 4d, 20 models each (k = 5, 1000 epochs). Quick: "
        "d ∈ {2, 8}, k = 3, 16 seeds, 200 epochs (success 6/16 at d = 2, 15/16 at d = 8): about 1.5 min on one "
        "core.")


def sparsity_unit(config: SparsityConfig, ctx: RunContext, u: Unit) -> Curves:
    hist = train(unit_config(config, d=int(u.key[1:])), device=ctx.device, state=u.resume, **u.hooks.kwargs())
    curve = heads.sparsity_curve(hist.final(torch.float64), hist.spec, hist.task.probe_grid()[0])
    return {**curves(hist), "sparsity": curve.numpy()}


def sparsity_sweep(config: SparsityConfig, ctx: RunContext) -> Result:
    """Train n_seeds models per d; sparsity curves, success, Spearman(sparsity summary, test accuracy)."""
    done = run_units(ctx, {f"d{d}": config.epochs for d in config.dims()},
                     lambda u: sparsity_unit(config, ctx, u), "sparsity sweep")
    arrays: dict[str, np.ndarray] = {"eps": heads.EPS_GRID.numpy(), "ds": np.array(config.dims())}
    rows, summary = [], {}
    for d in config.dims():
        u = done[f"d{d}"]
        acc, best = u["test_acc"][-1], u["test_acc"].max(0)
        ok = acc > SUCCESS
        sparse = heads.sparsity_summary(torch.as_tensor(u["sparsity"])).numpy()  # mean over ε ∈ [1e-3, 10]
        arrays.update({f"d{d}/{k}": v for k, v in u.items()})
        arrays[f"d{d}/sparsity_summary"] = sparse
        stuck = longest_below(u["test_acc"], u["epochs"])
        solved = u["train_loss"][-1] < 1e-3  # D8: "solved" = final train CE < 1e-3
        summary.update({d_key(k, d): v for k, v in {
            "n_models": len(acc), "n_success": int(ok.sum()), "success_rate": float(ok.mean()),
            "n_reach90": int((best >= 0.9).sum()), "n_reach99": int((best >= 0.99).sum()),
            "n_stuck100": int(((best < 0.99) & (stuck >= 100)).sum()),
            "max_final_train_loss": float(u["train_loss"][-1].max()),
            "n_ce_below_1e-3": int(solved.sum()),
            "max_grad_ce_below_1e-3": float(u["grad_total"][-1, solved].max()) if solved.any() else float("nan"),
            "mean_test_acc": float(acc.mean()),
            "sparsity_success": float(sparse[ok].mean()) if ok.any() else float("nan"),
            "sparsity_failed": float(sparse[~ok].mean()) if (~ok).any() else float("nan"),
            "spearman": dynamics.spearman(sparse, acc),
        }.items()})
        rows += [{"d": d, "seed": s, "test_acc": acc[i], "best_test_acc": best[i], "success": bool(ok[i]),
                  "sparsity_summary": sparse[i], "final_train_loss": u["train_loss"][-1, i]}
                 for i, s in enumerate(config.seeds())]
    return Result(pd.DataFrame(rows), arrays, summary)


FIG7 = Experiment(
    STUDY, "fig7", Fig7Config, sparsity_sweep,
    ref="Fig. 7",
    figure=sweep_figures.fig7,
    title="Activation sparsity vs ε: successful models are denser (d = 2)",
    memory=memory.sparsity_bytes,
    cost=costs.sparsity,
    outputs=outputs.FIG7,
    summary=summaries.SparsitySummary,
)
FIG19 = Experiment(
    STUDY, "fig19", Fig19Config, sparsity_sweep,
    ref="Fig. 19",
    figure=sweep_figures.fig19,
    title="Sparsity and success rate vs embedding dimension d",
    memory=memory.sparsity_bytes,
    cost=costs.sparsity,
    outputs=outputs.FIG19,
    summary=summaries.SparsitySummary,
)


# ----------------------------------------------------------------------------------------------- Fig. 14
class TransferSweepConfig(TrainConfig):
    """Fig. 14 (App. A.2): bars of test accuracy over n_seeds runs, (a) from scratch on each p' in ``ps`` for
    ``epochs``, (b) ``pretrain_epochs`` on p (= 2) then ``epochs`` on each p' in ``ft_ps`` via ``train.transfer``
    (new token rows N(0,1), fresh Adam, new data; docs note 15). Finetuned and scratch runs of a seed share
    their p' data and batch order, so a bar pair differs only by the initialisation."""

    ps: tuple[int, ...] = Field(tuple(range(2, 11)), description="moduli p' trained from scratch (Fig. 14a)",
                                json_schema_extra={"allowed": "distinct moduli, each 2 to 97 (as p)"})
    ft_ps: tuple[int, ...] = Field(tuple(range(3, 11)), description="moduli p' finetuned from the p model (Fig. 14b)",
                                   json_schema_extra={"allowed": "distinct moduli, each > p and ≤ 97"})
    pretrain_epochs: int | None = Field(None, ge=0, description="epochs of the p phase (None: epochs)")

    @model_validator(mode="after")
    def _check_ps(self):
        if not self.ps or min(self.ps) < 2 or len(set(self.ps)) != len(self.ps):
            raise ValueError(f"key 'ps' = {list(self.ps)}: need distinct moduli ≥ 2")
        if len(set(self.ft_ps)) != len(self.ft_ps) or any(q <= self.p for q in self.ft_ps):
            raise ValueError(f"key 'ft_ps' = {list(self.ft_ps)}: need distinct moduli > p = {self.p}")
        return self

    @property
    def phase1_epochs(self) -> int:
        return self.epochs if self.pretrain_epochs is None else self.pretrain_epochs


Fig14Config = TransferSweepConfig.with_defaults(
    "Fig14Config", n_seeds=250, log_every=50,
    scales={"quick": {"d": 2, "k": 3, "ps": (2, 3, 4), "ft_ps": (3, 4), "n_seeds": 128, "pretrain_epochs": 200,
                      "epochs": 200, "log_every": 10}, "paper": {}},
    doc="Fig. 14: 250 runs per bar, 1000 (+1000) epochs, p ∈ [2, 10], d = 2, k = 5. Quick: d = 2, k = 3, p ∈ {2, 3, "
        "4}, 128 runs, 200 + 200 epochs (mean accuracy falls from 0.80 at p = 2 to 0.32 at p = 4 from scratch; "
        "finetuning gains +0.10 at p' = 3 and +0.05 at p' = 4, which 16 runs could not resolve): about 7 min on "
        "one core.")


def transfer_unit(config: TransferSweepConfig, ctx: RunContext, u: Unit) -> Curves:
    """"pre": the p-phase (+ its cluster count); "scratch_pQ": from scratch on Q; "ft_pQ": finetuned from "pre"."""
    key, state, hooks = u.key, u.resume, u.hooks.kwargs()
    phase1 = unit_config(config, epochs=config.phase1_epochs)
    if key == "pre":
        hist = train(phase1, device=ctx.device, state=state, **hooks)
        n_cl = heads.n_clusters(hist.final(torch.float64), hist.spec, hist.task)
        return {**curves(hist), "n_clusters": n_cl.numpy()}
    q = int(key.rsplit("_p", 1)[1])
    cfg = unit_config(config, p=q)
    if key.startswith("scratch"):
        return curves(train(cfg, device=ctx.device, state=state, **hooks))
    params = {k[len("final/"):]: torch.as_tensor(v) for k, v in u.done["pre"].items() if k.startswith("final/")}
    return curves(transfer(params, phase1.spec(), cfg, device=ctx.device, state=state, **hooks))


def transfer_sweep(config: TransferSweepConfig, ctx: RunContext) -> Result:
    """Pretrain-only bars, finetuned bars, and the p-phase cluster count of every finetuned run."""
    reuse = config.phase1_epochs == config.epochs  # the scratch bar at p is the p phase itself
    units = {"pre": config.phase1_epochs}
    units |= {f"scratch_p{q}": config.epochs for q in config.ps if not (q == config.p and reuse)}
    units |= {f"ft_p{q}": config.epochs for q in config.ft_ps}
    done = run_units(ctx, units, lambda u: transfer_unit(config, ctx, u), "transfer bars")
    bars = {("scratch", q): done["pre" if q == config.p and reuse else f"scratch_p{q}"] for q in config.ps}
    bars |= {("finetune", q): done[f"ft_p{q}"] for q in config.ft_ps}
    n_cl = done["pre"]["n_clusters"]
    ideal = n_multisets(config.p, config.k)
    arrays: dict[str, np.ndarray] = {"n_clusters_pre": n_cl, "pre/test_acc": done["pre"]["test_acc"],
                                     "pre/epochs": done["pre"]["epochs"]}
    rows, summary = [], {"n_ideal_clusters_pre": int((n_cl == ideal).sum()), "ideal_clusters": ideal,
                         "pre_success_rate": float((done["pre"]["test_acc"][-1] > SUCCESS).mean())}
    for (kind, q), u in bars.items():
        acc = u["test_acc"][-1]
        bar = {"kind": kind, "q": q}
        arrays[bar_array("test_acc", **bar)], arrays[bar_array("epochs", **bar)] = u["test_acc"], u["epochs"]
        summary |= {bar_key("mean_acc", **bar): float(acc.mean()), bar_key("max_acc", **bar): float(acc.max()),
                    bar_key("n_success", **bar): int((acc > SUCCESS).sum())}
        rows += [{"kind": kind, "p": q, "seed": s, "test_acc": acc[i],
                  "n_clusters_pre": int(n_cl[i]) if kind == "finetune" else None}
                 for i, s in enumerate(config.seeds())]
        if kind == "finetune":
            six, perfect = n_cl == ideal, acc >= 1.0
            nan = float("nan")
            summary |= {bar_key("mean_acc", **bar) + "_ideal": float(acc[six].mean()) if six.any() else nan,
                        bar_key("mean_acc", **bar) + "_other": float(acc[~six].mean()) if (~six).any() else nan,
                        bar_key("n_perfect", **bar): int(perfect.sum()),
                        bar_key("n_perfect_not_ideal", **bar): int((perfect & ~six).sum())}
    common = [q for q in config.ft_ps if q in config.ps]
    if common:
        summary["min_gain_finetune"] = min(summary[bar_key("mean_acc", "finetune", q)]
                                           - summary[bar_key("mean_acc", "scratch", q)] for q in common)
    return Result(pd.DataFrame(rows), arrays, summary)


FIG14 = Experiment(
    STUDY, "fig14", Fig14Config, transfer_sweep,
    ref="Fig. 14",
    figure=sweep_figures.fig14,
    title="Transfer: finetuning from p = 2 beats training from scratch",
    memory=memory.fig14_bytes,
    cost=costs.fig14,
    outputs=outputs.FIG14,
    summary=summaries.TransferSummary,
)


# ----------------------------------------------------------------------------------------------- Fig. 16
AXES = {"batch_size": "batch_sizes", "h": "hs", "lr": "lrs", "mlp_lr_factor": "mlp_lr_factors"}


class AblationConfig(TrainConfig):
    """Fig. 16 (App. A.3): test accuracy after ``epochs`` along one-dimensional sweeps around the defaults
    (the paper's grid); every setting is one vectorised n_seeds run. Seeds draw init, data and batches from their own
    streams, so seed ``seed`` has the same E, P, q, V, data and batch order in every setting: (a) = that seed,
    (b) = mean ± s.e. over the seeds."""

    batch_sizes: tuple[int, ...] = Field((8, 16, 32, 64, 128, 256, 512, 1024, 2048),
                                         description="mini-batch sizes swept (Fig. 16, batch-size axis)",
                                         json_schema_extra={"allowed": "each 1 to n_train"})
    hs: tuple[int, ...] = Field((2, 4, 8, 16, 32, 64), description="MLP widths h swept (Fig. 16, width axis)",
                                json_schema_extra={"allowed": "each 1 to 65536 (as h)"})
    lrs: tuple[float, ...] = Field((1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1),
                                   description="Adam learning rates swept (Fig. 16, learning-rate axis)",
                                   json_schema_extra={"allowed": "each > 0 and ≤ 10 (as lr)"})
    mlp_lr_factors: tuple[float, ...] = Field((0.01, 0.03, 0.1, 0.3, 1.0),
                                              description="MLP learning-rate factors γ_mlp swept (Fig. 16)",
                                              json_schema_extra={"allowed": "each > 0 and ≤ 100 (as mlp_lr_factor)"})

    @model_validator(mode="after")
    def _check_grid(self):
        for key in AXES.values():
            vals = getattr(self, key)
            if any(v <= 0 for v in vals):
                raise ValueError(f"key '{key}' = {list(vals)}: values must be > 0")
        if any(b > self.n_train for b in self.batch_sizes):
            raise ValueError(f"key 'batch_sizes' = {list(self.batch_sizes)}: larger than n_train = {self.n_train}")
        return self

    def settings(self) -> dict[str, dict[str, Any]]:
        """Unit key → the hyper-parameters it changes; the default setting appears once, shared by all axes."""
        out: dict[str, dict[str, Any]] = {}
        for name, key in AXES.items():
            for v in getattr(self, key):
                change = {} if v == self.default(name) else {name: v}
                out[setting_key(change)] = change
        return out

    def default(self, name: str) -> Any:
        return self.spec().h if name == "h" else getattr(self, name)


def setting_key(change: dict[str, Any]) -> str:
    return ",".join(f"{k}={v:g}" for k, v in change.items()) or "default"


Fig16Config = AblationConfig.with_defaults(
    "Fig16Config", n_seeds=100, log_every=10,
    scales={"quick": {"d": 8, "k": 3, "n_seeds": 32, "epochs": 60, "log_every": 5, "batch_sizes": (16, 32, 128),
                      "hs": (8, 32, 128), "lrs": (1e-3, 3e-3, 1e-2), "mlp_lr_factors": (0.1, 0.3, 1.0)},
            "paper": {}},
    doc="Fig. 16: 24 distinct settings × 100 seeds × 1000 epochs (the paper's grid, d = 2, k = 5). Quick: d = 8, "
        "k = 3, 3 values per axis (9 distinct settings), 32 seeds (with 8 the seed mean was itself too noisy to "
        "look smoother than one seed), 60 epochs: a few minutes on one core.")


def ablation(config: AblationConfig, ctx: RunContext) -> Result:
    """Final test accuracy and saddle-escape time of every seed for each hyper-parameter setting."""
    settings = config.settings()
    done = run_units(ctx, {k: config.epochs for k in settings},
                     lambda u: curves(train(unit_config(config, **settings[u.key]), device=ctx.device,
                                            state=u.resume, **u.hooks.kwargs())), "ablation settings")
    rows, arrays, summary = [], {}, {}
    for name, key in AXES.items():
        for v in getattr(config, key):
            u = done[setting_key({} if v == config.default(name) else {name: v})]
            acc, t_fit = u["test_acc"][-1], first_epoch(u["test_acc"], u["epochs"])
            tag = f"{name}={v:g}"
            arrays[f"{tag}/test_acc"] = acc
            summary |= {f"seed0_acc_{tag}": float(acc[0]), f"mean_acc_{tag}": float(acc.mean()),
                        f"se_acc_{tag}": float(acc.std(ddof=1) / np.sqrt(len(acc))) if len(acc) > 1 else 0.0}
            rows += [{"param": name, "value": float(v), "seed": s, "test_acc": acc[i], "t_fit": t_fit[i]}
                     for i, s in enumerate(config.seeds())]
    table = pd.DataFrame(rows)
    summary |= roughness(table)
    return Result(table, arrays, summary)


def roughness(table: pd.DataFrame) -> dict[str, float]:
    """Mean |Δ accuracy| between neighbouring settings along each axis, for seed 0 (Fig. 16a) and for the seed
    mean (Fig. 16b): the paper's "high variability for one seed, more regular when averaged"."""
    seed0, mean = [], []
    for _, sub in table.groupby("param"):
        first = sub[sub.seed == sub.seed.min()].sort_values("value")["test_acc"].to_numpy()
        avg = sub.groupby("value")["test_acc"].mean().sort_index().to_numpy()
        seed0 += list(np.abs(np.diff(first)))
        mean += list(np.abs(np.diff(avg)))
    return {"roughness_seed0": float(np.mean(seed0)) if seed0 else float("nan"),
            "roughness_mean": float(np.mean(mean)) if mean else float("nan")}


FIG16 = Experiment(
    STUDY, "fig16", Fig16Config, ablation,
    ref="Fig. 16",
    figure=sweep_figures.fig16,
    title="Hyper-parameter ablation: test accuracy vs batch size, h, lr, MLP-lr factor",
    memory=memory.fig16_bytes,
    cost=costs.fig16,
    outputs=outputs.FIG16,
    summary=summaries.AblationSummary,
)
