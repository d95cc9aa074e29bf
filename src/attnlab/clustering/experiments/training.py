"""Circuit figures of paper 4 (Figs. 1-6, 8, 15; Sec. 3, Secs. 4.2-4.3, App. A.2): config in, tables and arrays out, no
plotting (``figures/training.py``); per-model measurements in ``circuits.py``. Every trained run is stored in
the arrays with ``History.to_arrays(prefix)`` (``run/``; ``pretrain/`` and ``finetune/`` for the transfer), so the
sandbox reopens it. Training checkpoints every epoch (at most every 30 s) and resumes bit-identically on CPU. Quick
scale uses k = 3 (a 3-sparse parity escapes its plateau within a few hundred epochs at d = 2; the plateau grows steeply
with k), paper scale the paper's k = 5 and 1000 epochs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from pydantic import Field, model_validator

from attnlab.clustering import costs, memory, outputs
from attnlab.clustering.configs import TrainConfig, as_train_config
from attnlab.clustering.experiments.circuits import (
    attention_change,
    choose_two_stage_seed,
    circuit_metrics,
    d4_counts,
    other_corr,
    representatives,
    run_frame,
    type_counts,
)
from attnlab.clustering.figures import training as figures
from attnlab.clustering.summaries import training as summaries
from attnlab.clustering.theory import construction
from attnlab.clustering.train import dynamics
from attnlab.clustering.train.history import History
from attnlab.clustering.train.loop import train, transfer
from attnlab.clustering.train.units import epoch_frame, train_units
from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit

STUDY = "clustering"


# ----------------------------------------------------------------------------------------------- helpers
# ----------------------------------------------------------------------------------------------- Fig. 1


# ----------------------------------------------------------------------------------------------- D9
class _Stationarity(TrainConfig):
    """Spec D9: start at the Sec. 3.2 construction with (λ, μ) = (10c, 10c), train every parameter (Adam lr 1e-3,
    bs 32, a fresh 2048-point train set) and watch accuracy and full-space CE. ≈ 10 s on one core."""

    c: float = Field(0.2, gt=0, le=10, description="construction scale: λ = μ = 10c")

    scales = {"quick": {}, "paper": {}}

    @model_validator(mode="after")
    def _buildable(self):
        construction.build_clustering_head(self.p, self.N, self.k, self.d, self.spec().h)
        return self


StationarityConfig = _Stationarity.with_defaults(
    "StationarityConfig", epochs=20, lr=1e-3, test_mode="full", dtype="float64", step_log_every=64,
    snapshot_every=1, head_metrics=True)


def stationarity(config: StationarityConfig, ctx: RunContext) -> Result:
    """Train from the construction; the head should stay correct and its full-space CE should not increase."""
    params, spec = construction.build_clustering_head(config.p, config.N, config.k, config.d, config.spec().h,
                                                lam=10 * config.c, mu=10 * config.c)
    params = {k: v.expand(config.n_seeds, *v.shape[1:]).clone() for k, v in params.items()}
    cfg = as_train_config(config)
    unit = (cfg.epochs, lambda u: train(cfg, device=ctx.device, params=params, spec=spec, state=u.resume,
                                        **u.hooks.kwargs()))
    hist = train_units(ctx, {"run": unit}, "D9 training")["run"]
    em = hist.epoch_metrics
    acc, ce = em["test_acc"], em["test_loss"]  # test_mode "full": every sentence
    summary = {"accuracy_start": float(acc[0].min()), "accuracy_min": float(acc.min()),
               "accuracy_end": float(acc[-1].min()), "ce_start": float(ce[0].max()), "ce_end": float(ce[-1].max()),
               "ce_max": float(ce.max()), "ce_increase": float((ce[-1] - ce[0]).max()),
               "grad_total_start": float(em["grad_total"][0].max()),
               "grad_total_end": float(em["grad_total"][-1].max()),
               "cluster_score_end": float(em["cluster_score"][-1].min())}
    return Result(epoch_frame(hist), hist.to_arrays("run/"), summary)


STATIONARITY = Experiment(
    STUDY, "stationarity", StationarityConfig, stationarity,
    ref="Prop. 1",
    figure=figures.stationarity,
    title="The clustering head is (nearly) stationary under Adam",
    memory=memory.stationarity_bytes,
    cost=costs.single,
    outputs=outputs.STATIONARITY,
    summary=summaries.StationaritySummary,
)


# ----------------------------------------------------------------------------------------------- Figs. 2–4
class _Circuits(TrainConfig):
    """Figs. 2–4: train S seeds at d = 2, classify every model (ideal / value_corrected / partial / fuzzy / failed,
    head metric 8) and show one representative of each type."""

    scales = {"quick": {"k": 3, "n_seeds": 128, "epochs": 200}, "paper": {}}


CircuitsConfig = _Circuits.with_defaults(
    "CircuitsConfig", n_seeds=100, epochs=1000, log_every=2, step_log_every=0, snapshot_every=10,
    doc=_Circuits.__doc__ + " Quick: k = 3, 128 seeds, 200 epochs (≈ 2 min on one core); paper: k = 5, 100 seeds, "
    "1000 epochs.")


def circuits(config: TrainConfig, ctx: RunContext) -> Result:
    """Train ``n_seeds`` models, measure the head metrics of each final model and its head type."""
    hist = train_units(ctx, {"run": as_train_config(config)}, "circuits")["run"]
    m = circuit_metrics(hist)
    reps = representatives(m)
    wrong = (m["test_acc"] < 0.9) & (m["head_type"] != "failed")
    summary: dict[str, Any] = {**type_counts(m["head_type"]), "n_models": hist.n_seeds,
                               "n_solved": int((m["test_acc"] >= 0.9).sum()),
                               "n_failed_misclassified": int(wrong.sum()),
                               **{f"rep_{t}": hist.seeds[i] for t, i in reps.items()}, **d4_counts(m)}
    solved = m["test_acc"] >= 0.9
    for key in ("attn_prefix_mass", "cluster_score", "n_clusters"):
        summary[f"{key}_solved_mean"] = float(m[key][solved].mean()) if solved.any() else float("nan")
    arrays = {**hist.to_arrays("run/"), **{f"model/{k}": v for k, v in m.items()}}
    return Result(run_frame(hist, m), arrays, summary)


CIRCUITS = Experiment(
    STUDY, "circuits", CircuitsConfig, circuits,
    ref="Figs. 2–4",
    figure=figures.circuits,
    title="Circuit taxonomy of trained heads (value-corrected, partial, fuzzy)",
    memory=memory.train_bytes,
    cost=costs.single,
    outputs=outputs.CIRCUITS,
    summary=summaries.CircuitsSummary,
)


# ----------------------------------------------------------------------------------------------- Fig. 5
class _Fig5(TrainConfig):
    """Fig. 5: attention maps of probe sentences at the start and end of training (impact of initialisation)."""

    n_probe: int = Field(12, ge=1, le=256, description="probe sentences shown per map")
    scales = {"quick": {"k": 3, "n_seeds": 128, "epochs": 200}, "paper": {}}


Fig5Config = _Fig5.with_defaults(
    "Fig5Config", n_seeds=32, epochs=1000, log_every=10, step_log_every=0, snapshot_every=0, head_metrics=False,
    doc=_Fig5.__doc__ + " Quick: k = 3, 128 seeds, 200 epochs (the circuits runs; ≈ 2 min); paper: k = 5, 32 seeds, "
    "1000 epochs.")


def fig5(config: TrainConfig, ctx: RunContext) -> Result:
    """Attention maps before and after training; their correlation per seed (head metric 10)."""
    hist = train_units(ctx, {"run": as_train_config(config)}, "fig5")["run"]
    ch = attention_change(hist)
    acc = hist.epoch_metrics["test_acc"][-1]
    solved = acc >= 0.9
    summary: dict[str, Any] = {
        "attn_corr_mean": float(ch["attn_corr"].mean()), "attn_corr_min": float(ch["attn_corr"].min()),
        "attn_corr_solved_mean": float(ch["attn_corr"][solved].mean()) if solved.any() else float("nan"),
        "attn_corr_other_solved_mean": float(other_corr(ch["attn_corr_matrix"])[solved].mean()) if solved.any()
        else float("nan"),
        "n_solved": int(solved.sum()), "attn_prefix_mass_start": float(ch["attn_prefix_mass_start"].mean()),
        "attn_prefix_mass_end": float(ch["attn_prefix_mass_end"].mean())}
    for v in range(hist.task.p):
        summary[f"attn_by_value{v}_end"] = float(np.nanmean(ch["attn_by_value_end"][:, v]))
        if solved.any():
            summary[f"attn_by_value{v}_end_solved"] = float(np.nanmean(ch["attn_by_value_end"][solved, v]))
    arrays = {**hist.to_arrays("run/"), **{f"attn/{k}": v for k, v in ch.items()}, "test_acc": acc}
    table = pd.DataFrame({"seed": hist.seeds, "final/test_acc": acc, "final/attn_corr": ch["attn_corr"],
                          "final/attn_prefix_mass_start": ch["attn_prefix_mass_start"],
                          "final/attn_prefix_mass_end": ch["attn_prefix_mass_end"]})
    table = table.melt(id_vars="seed", var_name="observable").assign(epoch=int(hist.epochs[-1]))
    return Result(pd.concat([epoch_frame(hist), table], ignore_index=True), arrays, summary)


FIG5 = Experiment(
    STUDY, "fig5", Fig5Config, fig5,
    ref="Fig. 5",
    figure=figures.fig5,
    title="Attention at initialisation vs after training",
    memory=memory.train_bytes,
    cost=costs.single,
    outputs=outputs.FIG5,
    summary=summaries.Fig5Summary,
)


# ----------------------------------------------------------------------------------------------- Figs. 6, 15
class _Transfer(TrainConfig):
    """Figs. 6, 15 (App. A.2): train on p for ``epochs``, add token rows for p_new (N(0,1)), fresh Adam and a new
    p_new training set, finetune for ``epochs_new``; attention and circuit before/after the finetuning."""

    p_new: int = Field(3, ge=2, le=97, description="modulus of the finetuning task (≥ p; = p: the same task "
                       "continued on a new training set with a fresh Adam, as pal's finetune.py allows)")
    epochs_new: int = Field(1000, ge=1, le=1_000_000, description="finetuning epochs")
    # Seeds: Fig. 6's better focus is a gain of ≈ 0.02 in attention mass against a seed-to-seed spread of ≈ 0.1;
    # 384 (quick) and 256 (paper) seeds resolve it (docs/studies/clustering.md, claims).
    scales = {"quick": {"k": 3, "n_seeds": 384, "epochs": 200, "epochs_new": 400}, "paper": {}}

    @model_validator(mode="after")
    def _larger(self):
        if self.p_new < self.p:
            raise ValueError(f"key 'p_new' = {self.p_new}: transfer needs a modulus ≥ p = {self.p}")
        return self


TransferConfig = _Transfer.with_defaults(
    "TransferConfig", n_seeds=256, epochs=1000, log_every=5, step_log_every=0, snapshot_every=10,
    doc=_Transfer.__doc__ + " Quick: k = 3, 384 seeds, 200 + 400 epochs (≈ 11 min on one CPU thread); paper: k = 5, "
    "256 seeds, 1000 + 1000 epochs (≈ 30 min on one CPU thread).")


def transfer_circuit(config: TrainConfig, ctx: RunContext) -> Result:
    """Pretrain on p, finetune on p_new from the pretrained weights (``train.transfer``)."""
    pre_cfg = as_train_config(config)
    new_cfg = as_train_config(config, p=config.p_new, epochs=config.epochs_new)

    def finetune(u: Unit) -> History:
        pre = History.from_arrays(u.done["pretrain"])
        return transfer(pre.final(new_cfg.torch_dtype), pre.spec, new_cfg, device=ctx.device, state=u.resume,
                        task=new_cfg.task(), **u.hooks.kwargs())

    runs = train_units(ctx, {"pretrain": pre_cfg, "finetune": (new_cfg.epochs, finetune)}, "pretrain, finetune")
    pre, fin = runs["pretrain"], runs["finetune"]
    m_pre, m_fin = circuit_metrics(pre), circuit_metrics(fin)
    ch = attention_change(fin)
    acc_pre, acc_fin = m_pre["test_acc"], m_fin["test_acc"]
    solved_pre = acc_pre >= 0.9
    rep = int(np.lexsort((-acc_pre, -acc_fin, ~solved_pre))[0])  # best finetuned among the solved p = 2 circuits
    ideal_clusters = m_pre["n_clusters"] == pre.task.n_classes
    summary: dict[str, Any] = {
        "rep_seed": pre.seeds[rep], "rep_test_acc_pre": float(acc_pre[rep]), "rep_test_acc_new": float(acc_fin[rep]),
        "rep_head_type_pre": str(m_pre["head_type"][rep]), "rep_head_type_new": str(m_fin["head_type"][rep]),
        "test_acc_pre_mean": float(acc_pre.mean()), "test_acc_new_mean": float(acc_fin.mean()),
        "test_acc_new_max": float(acc_fin.max()), "n_solved_pre": int(solved_pre.sum()),
        "n_solved_new": int((acc_fin >= 0.9).sum()),
        "test_acc_new_mean_solved_pre": float(acc_fin[solved_pre].mean()) if solved_pre.any() else float("nan"),
        "n_ideal_clusters_pre": int(ideal_clusters.sum()),
        "test_acc_new_mean_ideal_clusters": float(acc_fin[ideal_clusters].mean()) if ideal_clusters.any()
        else float("nan"),
        "attn_corr_new_mean": float(ch["attn_corr"].mean()), "rep_attn_corr_new": float(ch["attn_corr"][rep]),
        "attn_prefix_mass_new_start": float(ch["attn_prefix_mass_start"].mean()),
        "attn_prefix_mass_new_end": float(ch["attn_prefix_mass_end"].mean()),
        "rep_attn_prefix_mass_new_start": float(ch["attn_prefix_mass_start"][rep]),
        "rep_attn_prefix_mass_new_end": float(ch["attn_prefix_mass_end"][rep])}
    arrays = {**pre.to_arrays("pretrain/"), **fin.to_arrays("finetune/"), "rep": np.array(rep),
              **{f"model_pre/{k}": v for k, v in m_pre.items()}, **{f"model_new/{k}": v for k, v in m_fin.items()},
              **{f"attn/{k}": v for k, v in ch.items()}}
    frame = pd.concat([run_frame(pre, m_pre, phase="pretrain"), run_frame(fin, m_fin, phase="finetune")],
                      ignore_index=True)
    return Result(frame, arrays, summary)


TRANSFER_CIRCUIT = Experiment(
    STUDY, "transfer_circuit", TransferConfig, transfer_circuit,
    ref="Figs. 6, 15",
    figure=figures.transfer_circuit,
    title="Transfer of the circuit p = 2 → p = 3",
    memory=memory.transfer_bytes,
    cost=costs.transfer,
    outputs=outputs.TRANSFER_CIRCUIT,
    summary=summaries.TransferCircuitSummary,
)


# ----------------------------------------------------------------------------------------------- Fig. 8
class _Fig8(TrainConfig):
    """Fig. 8: two-stage learning — ξ at 4 snapshots chosen from t_cluster / t_fit (t_c−5, t_c+1, (t_c+t_f)/2,
    t_f+5; paper Fig. 8) next to the loss with red dashed lines. Shown seed: the first solved clustering-type seed with
    a clean two-stage profile: a plateau (t_cluster ≥ ``min_plateau``), clustering no later than fitting
    (t_cluster ≤ t_fit + 1), fitting soon after (t_fit − t_cluster ≤ ``max_gap``) and no large loss spike from
    t_cluster − 5 on (loss ≤ ``max_spike`` × its value at t_cluster − 5)."""

    min_plateau: int = Field(10, ge=0, description="the shown seed's t_cluster is at least this (a visible plateau)")
    max_gap: int = Field(50, ge=0, description="the shown seed's t_fit − t_cluster is at most this")
    max_spike: float = Field(2.0, ge=1, description="the shown seed's loss stays below this × its plateau value")
    scales = {"quick": {"k": 3, "n_seeds": 128, "epochs": 150}, "paper": {}}


Fig8Config = _Fig8.with_defaults(
    "Fig8Config", n_seeds=100, epochs=1000, log_every=1, step_log_every=0, snapshot_every=1,
    doc=_Fig8.__doc__ + " Quick: k = 3, 128 seeds, 150 epochs (≈ 2.5 min); paper: k = 5, 100 seeds, 1000 epochs.")


def fig8(config: TrainConfig, ctx: RunContext) -> Result:
    """Train seeds with per-epoch snapshots; pick the shown seed and its 4 snapshot epochs."""
    hist = train_units(ctx, {"run": as_train_config(config)}, "fig8")["run"]
    m = circuit_metrics(hist)
    i, rule = choose_two_stage_seed(m, hist.epoch_metrics["train_loss"], hist.epochs, config.min_plateau,
                                    config.max_gap, config.max_spike)
    from attnlab.clustering.render.render import strip_epochs

    idx = strip_epochs(hist, i)
    drops = dynamics.drop_epochs(hist.epoch_metrics["train_loss"][:, i], n=2, epochs=hist.epochs)
    summary: dict[str, Any] = {
        "seed_shown": hist.seeds[i], "seed_rule": rule, "t_cluster": float(m["t_cluster"][i]),
        "t_fit": float(m["t_fit"][i]), "test_acc": float(m["test_acc"][i]), "drop1": float(drops[0]),
        "drop2": float(drops[1]), "n_solved": int((m["test_acc"] >= 0.9).sum()), **d4_counts(m),
        **{f"snapshot{k + 1}": float(hist.snapshot_epochs[j]) for k, j in enumerate(idx)}}
    arrays = {**hist.to_arrays("run/"), **{f"model/{k}": v for k, v in m.items()}, "shown": np.array(i),
              "strip_epochs": hist.snapshot_epochs[idx]}
    return Result(run_frame(hist, m), arrays, summary)


FIG8 = Experiment(
    STUDY, "fig8", Fig8Config, fig8,
    ref="Fig. 8",
    figure=figures.fig8,
    headline=True,
    title="Two-stage learning: clustering first, then fitting the MLP",
    memory=memory.train_bytes,
    cost=costs.single,
    outputs=outputs.FIG8,
    summary=summaries.Fig8Summary,
)


# ----------------------------------------------------------------------------------------------- one run
TrainRunConfig = TrainConfig.with_defaults(
    "TrainRunConfig", scales={"quick": {"k": 3, "epochs": 300}, "paper": {}},
    doc="One training run of any configuration (the sandbox's unit of work): n_seeds models, every parameter at "
        "each snapshot. Quick: k = 3, 300 epochs; paper: the paper's k = 5, 1000 epochs.")


def train_run(config: TrainConfig, ctx: RunContext) -> Result:
    """Train ``n_seeds`` models with snapshots; per-seed circuit metrics and head types at the end. While it trains,
    the history so far is published under the same ``run/`` names for live viewers (``ctx.publish``: the sandbox)."""
    from attnlab.clustering.train.loop import Recorder

    cfg = as_train_config(config)

    def so_far(state: dict[str, Any]) -> dict[str, np.ndarray]:
        rec = Recorder(cfg, list(state["params"]), cfg.n_seeds, ctx.device, 0)
        rec.load(state["recorder"])
        hist = rec.history(cfg.spec(), cfg.task(), cfg.seeds())
        n = state["epoch"] * cfg.steps_per_epoch // cfg.step_log_every if cfg.step_log_every else 0
        hist.steps, hist.step_metrics = hist.steps[:n], {k: v[:n] for k, v in hist.step_metrics.items()}
        return hist.to_arrays("run/")

    def live(u: Unit) -> History:
        def publish(epoch: int, state_fn: Callable[[], dict[str, Any]]) -> None:
            u.hooks.on_epoch(epoch, state_fn)
            ctx.publish(lambda: so_far(state_fn()))

        return train(cfg, device=ctx.device, state=u.resume, on_epoch=publish, progress=u.hooks.progress)

    hist = train_units(ctx, {"run": (cfg.epochs, live)}, "train")["run"]
    m = circuit_metrics(hist)
    acc = m.get("test_acc", m["probe_acc"])
    summary: dict[str, Any] = {"n_solved": int((acc >= 0.9).sum()), "mean_test_acc": float(acc.mean()),
                               "best_test_acc": float(acc.max()), **type_counts(m["head_type"])}
    arrays = {**hist.to_arrays("run/"), **{f"model/{k}": v for k, v in m.items()}}
    return Result(run_frame(hist, m), arrays, summary)


TRAIN = Experiment(
    STUDY, "train", TrainRunConfig, train_run,
    ref="§4.1 (visual sandbox)",
    figure=figures.train_run,
    title="Train any configuration and keep its snapshots (open it in `attnlab render` or the sandbox)",
    memory=memory.train_bytes,
    cost=costs.single,
    outputs=outputs.TRAIN,
    summary=summaries.TrainSummary,
)
