"""Training dynamics of paper 4 (Secs. 4.3-4.4, App. A.4): two-stage learning and per-layer gradient norms (Figs. 9,
17), loss spikes and the feed-forward mechanism behind them (Figs. 11, 12), loss spikes vs gradient-norm spikes (Figs.
13, 18) and the spike remedies of Sec. 4.4 (``remedies``; the paper gives no spike counts — every count is ours).
Config in (``configs.py``), tables and arrays out, no plotting (``figures/spikes.py``). Every trained run is stored
with ``History.to_arrays(prefix)`` (prefix = the unit name + "/"), so figures and claims reopen it.

Quick scale uses k = 2 (a 2-sparse parity escapes its plateau within ~20–60 epochs at d = 2, 3 and 64 on one
core; k = 3 mostly does not within 150 epochs at d = 2, k = 5 rarely within 1000, docs checks); paper scale the
paper's k = 5 and 1000 epochs. Spike runs use lr = 1e-2 (check D7's fallback), where spikes are frequent.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab.clustering import costs, memory, outputs
from attnlab.clustering.configs import (
    DynamicsConfig,
    Fig9Config,
    Fig11Config,
    Fig13Config,
    Fig17Config,
    Fig18Config,
    RemediesConfig,
    RemediesConfigDefault,
    SpikeConfig,
    TrainConfig,
    as_train_config,
    dim_config,
    parse_variant,
    unit_dims,
)
from attnlab.clustering.figures import spikes as spike_figures
from attnlab.clustering.keys import unit_key
from attnlab.clustering.model import forward
from attnlab.clustering.summaries import spikes as summaries
from attnlab.clustering.theory import bound, gradients
from attnlab.clustering.train import dynamics
from attnlab.clustering.train.history import History
from attnlab.clustering.train.units import epoch_frame, train_units
from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext

STUDY = "clustering"
F64 = torch.float64
# ----------------------------------------------------------------------------------------------- helpers
def _nanstat(fn: Callable, a: np.ndarray) -> float:
    a = np.asarray(a, dtype=float)
    a = a[np.isfinite(a)]
    return float(fn(a)) if a.size else math.nan


# ----------------------------------------------------------------------------------------------- Figs. 9, 17
def two_stage(h: History) -> dict[str, np.ndarray]:
    """Per-seed two-stage statistics (Sec. 4.3; docs checks): t_cluster, t_fit, the two loss drops, the D5 peak/plateau
    ratio (eligible: t_cluster ≥ 8 and the test accuracy reached 0.9), the same ratio anchored on the loss drop
    (``dynamics.drop_peak_ratio``), final CE and full-batch grad norm."""
    em, ep = h.epoch_metrics, h.epochs
    S = h.n_seeds
    tc = dynamics.t_cluster(em["cluster_score"], ep) if "cluster_score" in em else np.full(S, np.nan)
    tf = dynamics.t_fit(em["test_acc"], ep)
    ratio = dynamics.peak_plateau_ratio(em["grad_total"], tc, tf, ep)
    drop = dynamics.drop_peak_ratio(em["grad_total"], em["train_loss"], tf, ep)
    return {"t_cluster": tc, "t_fit": tf, "drops": dynamics.drop_epochs(em["train_loss"], n=2, epochs=ep),
            "ratio": ratio, "eligible": np.isfinite(ratio) & np.isfinite(tf), "drop_ratio": drop,
            "final_loss": em["train_loss"][-1], "final_grad": em["grad_total"][-1],
            "final_test_acc": em["test_acc"][-1]}


def pick_seed(st: dict[str, np.ndarray], show: int | None = None) -> int:
    """The drawn seed: ``show``, else the first eligible one (plateau + fit) still solved at the end, else the
    first eligible, else the first fitted, else the lowest final loss."""
    if show is not None:
        return show
    fitted = np.isfinite(st["t_fit"])
    for mask in (st["eligible"] & (st["final_test_acc"] >= 0.9), st["eligible"], fitted):
        if mask.any():
            return int(np.flatnonzero(mask)[0])
    return int(np.nanargmin(st["final_loss"]))


def prop4_along(h: History, seed: int, points: int = 200) -> dict[str, np.ndarray]:
    """Prop. 4 at the snapshots of one seed (float64, the probe grid as the data distribution; θ = (q, V, W, U)):
    ||∇_θ L||², 𝓔, bound_corrected and bound_paper (docs note 11, C6). Empty for non-paper models."""
    if h.spec.norm != "sphere" or set(h.snapshots) - {"E", "P", "q", "V", "W", "U"}:
        return {}
    x, _, _ = h.task.probe_grid()
    y = h.task.labels(x)
    idx = np.unique(np.linspace(0, len(h.snapshot_epochs) - 1, min(points, len(h.snapshot_epochs))).round())
    rows = []
    for i in idx.astype(int):
        p = h.params_at(i, seed, dtype=F64)
        g = gradients.autograd_grads(p, x, y, h.spec)
        rows.append((float(h.snapshot_epochs[i]), sum(float(v.pow(2).sum()) for v in g.values()),
                     bound.tv_error(p, x, y, h.spec), bound.bound_corrected(p, x, h.spec),
                     bound.bound_paper(p, x, h.spec)))
    a = np.array(rows)
    return {"epochs": a[:, 0], "grad_sq": a[:, 1], "tv": a[:, 2], "bound_corrected": a[:, 3], "bound_paper": a[:, 4]}


def dynamics_run(config: DynamicsConfig, ctx: RunContext) -> Result:
    """Train the mini-batch (and full-batch) runs of every d; per-seed two-stage statistics, Prop. 4 along the
    drawn seed's training."""
    units: dict[str, TrainConfig] = {}
    for d in unit_dims(config):
        units[f"d{d}_mini"] = dim_config(config, d)
        if config.full_batch:
            units[f"d{d}_full"] = dim_config(
                config, d, batch_size=config.n_train, lr=config.full_batch_lr or config.lr,
                epochs=config.full_batch_epochs or config.epochs, log_every=config.full_batch_log_every)
    hists = train_units(ctx, units, "dynamics")
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {}
    frames = []
    for name, h in hists.items():
        st = two_stage(h)
        i = pick_seed(st, config.show)
        p4 = prop4_along(h, i, config.prop4_points)
        arrays.update(h.to_arrays(f"{name}/"))
        arrays.update({f"{name}/stats/{k}": v for k, v in st.items()})
        arrays.update({f"{name}/prop4/{k}": v for k, v in p4.items()})
        arrays[f"{name}/shown"] = np.array(i)
        solved = st["final_loss"] < 1e-3
        unit = {
            "n_seeds": h.n_seeds, "n_fitted": int(np.isfinite(st["t_fit"]).sum()),
            "n_eligible": int(st["eligible"].sum()),
            "n_ratio_ge5": int((st["ratio"][st["eligible"]] >= 5).sum()),
            "ratio_median": _nanstat(np.median, st["ratio"][st["eligible"]]),
            "n_drop_eligible": int(np.isfinite(st["drop_ratio"]).sum()),
            "n_drop_ratio_ge5": int((st["drop_ratio"] >= 5).sum()),
            "drop_ratio_min": _nanstat(np.min, st["drop_ratio"]),
            "shown_seed": h.seeds[i], "t_cluster": float(st["t_cluster"][i]),
            "t_fit": float(st["t_fit"][i]), "drop1": float(st["drops"][i, 0]),
            "drop2": float(st["drops"][i, 1]), "n_ce_below_1e-3": int(solved.sum()),
            "max_grad_ce_below_1e-3": _nanstat(np.max, st["final_grad"][solved])}
        if p4:
            ratio = p4["grad_sq"] / (p4["bound_corrected"] * p4["tv"])
            unit["prop4_max_ratio_corrected"] = float(ratio.max())
            unit["prop4_paper_violations"] = int((p4["grad_sq"] > p4["bound_paper"] * p4["tv"]).sum())
            unit["prop4_n_epochs"] = len(ratio)
        summary.update({unit_key(name, k): v for k, v in unit.items()})
        frames.append(epoch_frame(h, unit=name))
    summary["units"] = ",".join(hists)
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


FIG9 = Experiment(
    STUDY, "fig9", Fig9Config, dynamics_run,
    ref="Fig. 9",
    figure=spike_figures.dynamics,
    title="Escaping saddle points: loss drops and per-layer gradient-norm peaks (d = 2)",
    memory=memory.dynamics_bytes,
    cost=costs.dynamics,
    outputs=outputs.FIG9,
    summary=summaries.DynamicsSummary,
)
FIG17 = Experiment(
    STUDY, "fig17", Fig17Config, dynamics_run,
    ref="Fig. 17 (App. A.4)",
    figure=spike_figures.dynamics,
    title="Loss drops and gradient-norm peaks for d = 3 and d = 64",
    memory=memory.dynamics_bytes,
    cost=costs.dynamics,
    outputs=outputs.FIG17,
    summary=summaries.DynamicsSummary,
)


# ----------------------------------------------------------------------------------------------- Fig. 10


# ----------------------------------------------------------------------------------------------- spikes
def spike_stats(h: History) -> dict[str, np.ndarray]:
    """Loss spikes of every seed (the detector of docs note 17, on the full-batch train loss; onsets ≥ 10 epochs apart,
    docs checks) with, per onset, the D7 ratio (full-batch grad norm over its trailing 20-epoch median), the loss jump
    and whether a mini-batch grad-norm spike (3× trailing-50-step median) falls within ±1 epoch; per seed the
    chance rate of that co-occurrence (fraction of epochs with a grad spike within ±1 epoch)."""
    em = h.epoch_metrics
    loss, g = em["train_loss"], em["grad_total"]
    E, S = loss.shape
    mask = dynamics.loss_spikes(loss)
    onsets = dynamics.spike_onsets(mask)
    ratios = dynamics.onset_grad_ratio(g, onsets)
    below = loss < 0.5 * loss[:1]
    first = np.where(below.any(0), below.argmax(0), E - 1)
    every = float(h.epochs[1] - h.epochs[0]) if E > 1 else 1.0
    idx = np.concatenate([np.asarray(o, int) for o in onsets])
    seed = np.concatenate([np.full(len(o), s) for s, o in enumerate(onsets)]).astype(int)
    out = {"onset_seed": seed, "onset_index": idx, "onset_epoch": h.epochs[idx].astype(float),
           "onset_ratio": np.concatenate(ratios) if ratios else np.zeros(0),
           "onset_jump": loss[idx, seed] - loss[np.maximum(idx - 1, 0), seed],
           "n_onsets": np.array([len(o) for o in onsets]), "n_spike_epochs": mask.sum(0),
           "eligible_epochs": (E - 1 - first) * every, "epochs_total": np.full(S, float(h.epochs[-1]))}
    if "grad_total" in h.step_metrics:
        gm = dynamics.grad_spikes(h.step_metrics["grad_total"])
        step_epoch = 1 + (np.asarray(h.steps) - 1) // h.steps_per_epoch
        hit = np.zeros((int(h.epochs[-1]) + 3, S), dtype=bool)   # epochs with a grad spike, dilated by ±1
        for s in range(S):
            ep = np.unique(step_epoch[gm[:, s]])
            for shift in (-1, 0, 1):
                hit[np.clip(ep + shift, 0, len(hit) - 1), s] = True
        logged = h.epochs[1:].astype(int)
        out["onset_cooc"] = hit[out["onset_epoch"].astype(int), seed]
        out["base_rate"] = hit[logged].mean(0) if len(logged) else np.full(S, np.nan)
        out["grad_spike_steps"] = gm.sum(0)
    return out


def _spike_summary(name: str, st: dict[str, np.ndarray], h: History) -> dict[str, Any]:
    n = len(st["onset_index"])
    fin_loss, fin_grad = h.epoch_metrics["train_loss"][-1], h.epoch_metrics["grad_total"][-1]
    solved = fin_loss < 1e-3
    out = {"n_onsets": n, "n_ratio_ge2": int((st["onset_ratio"] >= 2).sum()),
           "frac_ratio_ge2": float((st["onset_ratio"] >= 2).mean()) if n else math.nan,
           "n_spike_epochs": int(st["n_spike_epochs"].sum()),
           "n_seeds_spiking": int((st["n_onsets"] > 0).sum()),
           "shown_seed": h.seeds[int(np.argmax(st["n_onsets"]))],
           "n_ce_below_1e-3": int(solved.sum()),
           "max_grad_ce_below_1e-3": _nanstat(np.max, fin_grad[solved])}
    if "onset_cooc" in st:
        out["cooccurrence"] = float(st["onset_cooc"].mean()) if n else math.nan
        out["cooccurrence_chance"] = _nanstat(np.mean, st["base_rate"][st["n_onsets"] > 0]) if n else math.nan
    return {unit_key(name, k): v for k, v in out.items()}


def spike_run(config: SpikeConfig, ctx: RunContext) -> Result:
    """Mini-batch runs (one per d); loss-spike onsets, their gradient-norm ratios and co-occurrence."""
    hists = train_units(ctx, {f"d{d}": dim_config(config, d) for d in unit_dims(config)}, "spikes")
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {"units": ",".join(hists)}
    for name, h in hists.items():
        st = spike_stats(h)
        arrays.update(h.to_arrays(f"{name}/"))
        arrays.update({f"{name}/spikes/{k}": v for k, v in st.items()})
        summary.update(_spike_summary(name, st, h))
    frame = pd.concat([epoch_frame(h, unit=n) for n, h in hists.items()], ignore_index=True)
    return Result(frame, arrays, summary)


FIG13 = Experiment(
    STUDY, "fig13", Fig13Config, spike_run,
    ref="Fig. 13, §4.4",
    figure=spike_figures.spike_grads,
    title="Loss spikes and gradient-norm spikes (mini-batch, d = 2)",
    memory=memory.spike_bytes,
    cost=costs.spikes,
    outputs=outputs.FIG13,
    summary=summaries.SpikesSummary,
)
FIG18 = Experiment(
    STUDY, "fig18", Fig18Config, spike_run,
    ref="Fig. 18 (App. A.4)",
    figure=spike_figures.spike_grads,
    title="Loss spikes and gradient-norm spikes for d = 3 and d = 64",
    memory=memory.spike_bytes,
    cost=costs.spikes,
    outputs=outputs.FIG18,
    summary=summaries.SpikesSummary,
)


def choose_spike(h: History, st: dict[str, np.ndarray], rank: int = 0) -> tuple[int, int, str]:
    """(seed index, epoch entry, rule) of the spike to dissect: among the onsets, transient ones first (the loss
    falls back by half the jump within 20 epochs), the ``rank``-th largest loss jump; without onsets the largest
    one-epoch loss increase of the run."""
    loss = h.epoch_metrics["train_loss"]
    n = len(st["onset_index"])
    if n:
        back = np.array([loss[e + 1:e + 21, s].min(initial=np.inf) < loss[e, s] - 0.5 * j
                         for e, s, j in zip(st["onset_index"], st["onset_seed"], st["onset_jump"], strict=True)])
        k = np.lexsort((-st["onset_jump"], ~back))[min(rank, n - 1)]
        kind = "transient spike" if back[k] else "spike without recovery"
        entry = int(st["onset_index"][k])
        return int(st["onset_seed"][k]), entry, f"{kind} at epoch {h.epochs[entry]:g}"
    jump = np.diff(loss, axis=0)
    e, s = np.unravel_index(int(np.argmax(jump)), jump.shape)
    return int(s), int(e) + 1, "largest loss increase (no detected spike)"


def anatomy(h: History, seed: int, before: int, after: int) -> dict[str, np.ndarray]:
    """Figs. 11/12 quantities at two snapshots on the probe grid: ξ, MLP output and margin moves, assemblers
    u_i (columns of U): norms and pairwise cosines, receptor norms (float64)."""
    x, _, _ = h.task.probe_grid()
    y = h.task.labels(x)
    out: dict[str, np.ndarray] = {}
    acts = {}
    for tag, i in (("before", before), ("after", after)):
        p = h.params_at(i, seed, dtype=F64)
        with torch.no_grad():
            a = {k: v[0] for k, v in forward(p, x, h.spec, tokens=False).items()}
        acts[tag] = a
        z = a["logits"][:, : h.task.p]
        true = z.gather(1, y[:, None]).squeeze(1)
        other = z.scatter(1, y[:, None], -math.inf).amax(1)
        u = p["U"][0].T.numpy()                                           # (h, d): assembler u_i per row
        nu = np.linalg.norm(u, axis=1)
        cos = (u @ u.T) / np.maximum(np.outer(nu, nu), 1e-300)
        off = ~np.eye(len(u), dtype=bool)
        out.update({f"{tag}/u": u, f"{tag}/u_norm": nu, f"{tag}/u_cos": cos,
                    f"{tag}/w_norm": np.linalg.norm(p["W"][0].numpy(), axis=1),
                    f"{tag}/margin": float((true - other).min()),
                    f"{tag}/acc": float((z.argmax(1) == y).double().mean()),
                    f"{tag}/u_abs_cos_mean": float(np.abs(cos[off]).mean()) if off.any() else math.nan,
                    f"{tag}/min_xi_norm": float(a["xi"].norm(dim=-1).min())})
    dxi = (acts["after"]["xi"] - acts["before"]["xi"]).norm(dim=-1)
    dmlp = (acts["after"]["mlp_out"] - acts["before"]["mlp_out"]).norm(dim=-1)
    out.update({"dxi_mean": float(dxi.mean()), "dxi_rel": float(dxi.mean() / acts["before"]["xi"].norm(dim=-1).mean()),
                "dmlp_mean": float(dmlp.mean()), "amplification": float(dmlp.mean() / max(float(dxi.mean()), 1e-300))})
    return out


def spike_anatomy(config: SpikeConfig, ctx: RunContext) -> Result:
    """Train one d run with per-epoch snapshots and dissect one loss spike (just before / just after)."""
    h = train_units(ctx, {"run": dim_config(config, unit_dims(config)[0])}, "spike anatomy")["run"]
    st = spike_stats(h)
    seed, entry, rule = choose_spike(h, st, config.spike_rank)
    before, after = h.snapshot_index(h.epochs[entry - 1]), h.snapshot_index(h.epochs[entry])
    an = anatomy(h, seed, before, after)
    arrays = {**h.to_arrays("run/"), **{f"run/spikes/{k}": v for k, v in st.items()},
              **{f"anatomy/{k}": np.asarray(v) for k, v in an.items()},
              "spike": np.array([seed, entry, before, after])}
    em = h.epoch_metrics
    summary: dict[str, Any] = {
        "rule": rule, "seed_shown": h.seeds[seed], "epoch_before": float(h.snapshot_epochs[before]),
        "epoch_after": float(h.snapshot_epochs[after]), "loss_before": float(em["train_loss"][entry - 1, seed]),
        "loss_after": float(em["train_loss"][entry, seed]), "lr_over_min_token_norm":
        config.lr / float(em["min_token_norm"][entry - 1, seed]),
        **{k: float(v) for k, v in an.items() if np.ndim(v) == 0}, **_spike_summary("run", st, h)}
    return Result(epoch_frame(h), arrays, summary)


FIG11 = Experiment(
    STUDY, "fig11", Fig11Config, spike_anatomy,
    ref="Fig. 11, §4.4",
    figure=spike_figures.spike_levels,
    title="High-curvature feed-forward: a loss spike as ξ crosses the decision lines",
    memory=memory.spike_bytes,
    cost=costs.anatomy,
    outputs=outputs.FIG11,
    summary=summaries.AnatomySummary,
)
FIG12 = Experiment(
    STUDY, "fig12", Fig11Config, spike_anatomy,
    ref="Fig. 12, §4.4",
    figure=spike_figures.spike_mlp,
    title="Small ξ change, big MLP response: heavy or correlated assemblers",
    memory=memory.spike_bytes,
    cost=costs.anatomy,
    outputs=outputs.FIG12,
    summary=summaries.AnatomySummary,
)


# ----------------------------------------------------------------------------------------------- remedies
def remedies(config: RemediesConfig, ctx: RunContext) -> Result:
    """One run of the same seeds per variant; spike onsets per 1000 epochs (all epochs, and per 1000 epochs
    after the loss first fell below half its initial value, where the spike detector is armed)."""
    hists = train_units(ctx, {v: as_train_config(config, **parse_variant(v)) for v in config.variants}, "remedies")
    arrays: dict[str, np.ndarray] = {"variants": np.array(config.variants)}
    summary: dict[str, Any] = {}
    rows = []
    for i, (v, h) in enumerate(hists.items()):
        st = spike_stats(h)
        acc = h.epoch_metrics["test_acc"]
        rate = 1000 * st["n_onsets"] / st["epochs_total"]
        with np.errstate(divide="ignore", invalid="ignore"):
            rate_el = np.where(st["eligible_epochs"] > 0, 1000 * st["n_onsets"] / st["eligible_epochs"], np.nan)
        per = {"rate": rate, "rate_eligible": rate_el, "eligible": st["eligible_epochs"] > 0,
               "test_acc_final": acc[-1], "fitted": acc.max(0) >= 0.9}
        arrays.update({f"v{i}/{k}": val for k, val in per.items()})
        arrays[f"v{i}/train_loss"] = h.epoch_metrics["train_loss"]
        arrays[f"v{i}/epochs"] = h.epochs
        S = h.n_seeds
        summary.update({
            f"{v}:rate_mean": float(rate.mean()), f"{v}:rate_se": float(rate.std(ddof=1) / math.sqrt(S)) if S > 1
            else math.nan, f"{v}:rate_eligible_mean": _nanstat(np.mean, rate_el),
            f"{v}:n_eligible": int(per["eligible"].sum()), f"{v}:n_fitted": int(per["fitted"].sum()),
            f"{v}:test_acc_final_mean": float(acc[-1].mean())})
        rows += [{"variant": v, "seed": sd, **{k: float(val[j]) for k, val in per.items()}}
                 for j, sd in enumerate(h.seeds)]
    return Result(pd.DataFrame(rows), arrays, summary)


REMEDIES = Experiment(
    STUDY, "remedies", RemediesConfigDefault, remedies,
    ref="§4.4 remedies (§4.4)",
    figure=spike_figures.remedies,
    title="Loss-spike remedies: spikes per 1000 epochs (our counts)",
    memory=memory.remedies_bytes,
    cost=costs.remedies,
    outputs=outputs.REMEDIES,
    summary=summaries.RemediesSummary,
)
