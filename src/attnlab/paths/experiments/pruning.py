"""Head-pruning experiments (Sec. 4.2 "Application", App. H.2.3): Figs. 3e-f and 7, the gradient-descent model's
heads pruned, without retraining, in the order of their scores from the theory's U at N = ``score_width``.

The pipeline (data, GD model, theory grid) and the scales are the one-shot experiments'
(:mod:`attnlab.paths.experiments.oneshot`); each run trains its own GD model(s) from the run's seed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.units import Units
from attnlab.paths import costs, outputs, summaries
from attnlab.paths.configs import OneShotConfig, Variant
from attnlab.paths.experiments import images as oneshot
from attnlab.paths.experiments.common import solve_kw
from attnlab.paths.experiments.oneshot import PAPER_OOD, QUICK, STUDY
from attnlab.paths.figures import oneshot as figures
from attnlab.paths.keys import net_key, pruned_key
from attnlab.paths.theory import kernels
from attnlab.paths.theory import scores as pruning
from attnlab.paths.train import gd


def head_parameters(config: OneShotConfig, var: Variant) -> tuple[int, int]:
    """(parameters of one head, parameters of the model): a head holds V (N×N), W_Q and W_K (G×N0)."""
    N, G, N0 = config.N_gd, var.G or config.G, config.width
    head = N * N + 2 * G * N0
    return head, N * N0 + sum(var.Hs) * head + N


def head_pruning(config: OneShotConfig, ctx: RunContext) -> Result:
    """Per variant: GD model; theory U at N = score_width and its validation-selected τ; head scores (both
    modes); accuracy drop of every single head; accuracy after pruning 0, 1, ... heads in score order."""
    from scipy.stats import spearmanr

    units = Units(ctx)
    d = oneshot.load_data(config, ctx)
    sets = oneshot.episode_sets(config, ctx, d)
    evals = oneshot.pruning_sets(config, ctx, d)
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {}
    rows = []
    for var in config.variants:
        v = var.name
        net, info = oneshot.train_model(config, ctx, units, d, var, sets["val"])
        summary[net_key(v, "gd_best_val")] = info["best_val"]
        pb, slices = oneshot.problem(net, sets, config.sigma2, ctx.device)
        kern = kernels.PathKernels(pb.Xi, pb.sigma2, config.kernel_mode)
        grid = oneshot.theory_grid(pb, slices, [config.score_width], config.taus, kern, units, f"{v}/",
                                   solve_kw(config))
        U = grid["U_star"][0]
        arrays[net_key(v, "U")] = U
        summary[net_key(v, "tau_star")] = float(grid["tau_star"][0])
        scores = {m: pruning.head_scores(U, var.Hs, m) for m in ("both", "either")}
        for m, sc in scores.items():
            arrays[net_key(v, "scores", m)] = np.concatenate(sc)
        order = pruning.pruning_order(scores[config.score_mode])
        arrays[net_key(v, "order")] = np.asarray(order)
        drops = gd.single_head_drops(net, evals, config.rescale)
        max_k = len(order)
        curve = gd.pruning_curve(net, order, evals, max_k, config.rescale)
        per_head, total = head_parameters(config, var)
        flat = arrays[net_key(v, "scores", config.score_mode)]
        for k in evals:
            arrays[net_key(v, "drop", k)] = np.asarray(drops[k])
            arrays[net_key(v, "curve", k)] = np.asarray(curve[k])
            summary[net_key(v, "acc_full", k)] = curve[k][0]
            for n_pruned in range(1, max_k + 1):
                summary[pruned_key(v, n_pruned, k)] = curve[k][n_pruned]
            ok = np.isfinite(drops[k])  # a layer's only head cannot be pruned alone
            rho = spearmanr(flat[ok], np.asarray(drops[k])[ok]).statistic
            summary[net_key(v, "spearman_score_drop", k)] = float(rho)
            lo, hi = int(np.argmin(np.where(ok, flat, np.inf))), int(np.argmax(np.where(ok, flat, -np.inf)))
            summary[net_key(v, "drop_lowest_score", k)] = float(drops[k][lo])
            summary[net_key(v, "drop_highest_score", k)] = float(drops[k][hi])
            summary[net_key(v, "drop_min", k)] = float(np.nanmin(drops[k]))
            summary[net_key(v, "drop_max", k)] = float(np.nanmax(drops[k]))
        both, either = arrays[net_key(v, "scores", "both")], arrays[net_key(v, "scores", "either")]
        summary[net_key(v, "scores_max")] = float(max(both.max(), either.max()))
        summary[net_key(v, "scores_min")] = float(min(both.min(), either.min()))
        summary[net_key(v, "rankings_agree")] = float(np.array_equal(np.argsort(both), np.argsort(either)))
        summary[net_key(v, "param_fraction_per_head")] = per_head / total
        for i, (ell, h) in enumerate(order):
            rows.append({"variant": v, "rank": i, "layer": ell + 1, "head": h + 1,
                         "score": float(scores[config.score_mode][ell][h])})
    return Result(pd.DataFrame(rows), arrays, summary)


Fig3efConfig = OneShotConfig.with_defaults(
    "Fig3efConfig", sample_widths=(),
    scales={"quick": {**QUICK, "P": 600, "widths": (10,), "taus": (0.25, 0.5, 0.75, 1.0, 1.5)},
            "paper": {"ood": PAPER_OOD}},
    doc="Figs. 3e-f: head scores from U (N = 10, τ*), single-head accuracy drops and pruning in score order. quick "
        "keeps the paper's P = 600 for the U behind the scores (at P = 200 they ranked the drops with Spearman "
        "−0.05) and the upper half of its τ grid, where N = 10's τ* lies (paper: 0.5).")
Fig7Config = OneShotConfig.with_defaults(
    "Fig7Config", sample_widths=(), variants=(Variant(L=2, Hs=(4, 4), G=128), Variant(L=2, Hs=(8, 8), G=64)),
    scales={"quick": {**QUICK, "variants": (Variant(L=2, Hs=(4, 4)), Variant(L=2, Hs=(8, 8), G=8)),
                      "taus": (0.1, 0.25, 0.5, 1.0)}, "paper": {"ood": PAPER_OOD}},
    doc="Fig. 7: head pruning for H = 4 and H = 8 heads per layer.")

FIG3EF = Experiment(
    STUDY, "fig3ef", Fig3efConfig, head_pruning, ref="Fig. 3e-f", figure=figures.pruning, headline=True,
    title="Head pruning of the GD model by scores from the theory's U",
    cost=costs.head_pruning, outputs=outputs.pruning_outputs("fig3ef"), summary=summaries.PruningSummary)
FIG7 = Experiment(
    STUDY, "fig7", Fig7Config, head_pruning, ref="Fig. 7", figure=figures.pruning,
    title="Head pruning for H = 4 and H = 8",
    cost=costs.head_pruning, outputs=outputs.pruning_outputs("fig7"), summary=summaries.PruningSummary)
