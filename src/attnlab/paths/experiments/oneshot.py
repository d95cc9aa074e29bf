"""One-shot experiments (Sec. 4.2, App. H): Figs. 3b-d and 6 (accuracy vs N, U, alignment); head pruning (Figs.
3e-f and 7) is :mod:`attnlab.paths.experiments.pruning`, on the same pipeline and scales.

Every run trains its own GD model(s) from the run's seed (deterministic), so the pruning headline does not
depend on another run. Data: the bundled real digits by default (MNIST by class, rotated classes, scikit-learn's
8×8 digits OOD; at ``paper`` scale rendered letters first, then those digits: ``PAPER_OOD``; see ``OneShotConfig``);
the paper's Omniglot / FashionMNIST / MNIST with ``dataset=omniglot ood=[fashion_mnist,mnist]
class_rotations=false data_root=DIR``.

``paper`` is the paper's size (App. H, audited): 32×32 images in 3 channels, 8×8 patches (T = 48, N0 = 192),
N_gd = 512, G = 128 (H = 8: 64; L = 3: 170), 41 250 Adam steps of 128 episodes at 3e-4 (10 epochs of 528k),
validation every 1000 steps, P = 600, widths 10-10⁴ and the τ grid of App. H.2.1, 10 chains of 100 samples
thinned by 10 after 1000 sweeps, sampled at N = 10-1000 for Fig. 3b (the paper samples up to N = 1000).
Everything fits one 80 GB GPU (the H = 8 kernel blocks, 6 GB, switch to the feature form); the GD training is
the cost: 2.7 s per step on one CPU core (31 h), under 2 h on an A100 (App. H.1). ``quick`` keeps the
pipeline and shrinks it: 16×16 single-channel images, 8×8 patches (T = 12, N0 = 64), N_gd = 64, G = 16,
4000 Adam steps at lr 2e-3 (at 3e-4 nothing is learnt within a CPU-minute budget), P = 200, widths
{10, 100, 1000, 10⁴}.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Units
from attnlab.paths import costs, model, outputs, summaries
from attnlab.paths.configs import OneShotConfig, Variant
from attnlab.paths.experiments import images as oneshot
from attnlab.paths.experiments.common import agreement, sample_widths, solve_kw
from attnlab.paths.figures import oneshot as figures
from attnlab.paths.keys import net_key, set_key
from attnlab.paths.theory import kernels
from attnlab.paths.theory import scores as pruning
from attnlab.paths.train import gd

STUDY = "paths"

QUICK: dict[str, Any] = {"image_size": 16, "channels": 1, "glyph_classes": 400, "N_gd": 64, "G": 16,
                         "gd_steps": 4000, "gd_lr": 2e-3, "eval_every": 250, "P": 200, "P_val": 500,
                         "P_test": 1000, "widths": (10, 100, 1000, 10_000), "chains": 2, "burn_in": 500, "samples": 250,
                         "thin": 4}
# paper scale's OOD sets: rendered letters first (what the claims read), a class and domain shift standing in for
# FashionMNIST / MNIST, which no installed package ships; then the 8×8 digits (quick's only OOD set)
PAPER_OOD = ("letters", "digits")


def _nearest(widths, N: float) -> int:
    return int(np.argmin(np.abs(np.log(np.asarray(widths, float)) - np.log(N))))


def sign_agreement(U_ref: np.ndarray, U_other: np.ndarray, k: int = 10) -> float:
    """Fraction of the k largest off-diagonal entries of U_ref (by |·|) whose sign U_other shares (Fig. 3c)."""
    iu = np.triu_indices(U_ref.shape[0], 1)
    top = np.argsort(-np.abs(U_ref[iu]))[:k]
    return float((np.sign(U_ref[iu][top]) == np.sign(U_other[iu][top])).mean())


def block_ratio(U: np.ndarray, Hs) -> float:
    """Mean |U_ππ'| over off-diagonal pairs sharing h_1 / over pairs with different h_1 (Fig. 3c's blocks)."""
    h1 = pruning.path_heads(Hs)[:, 0]
    same = np.equal.outer(h1, h1) & ~np.eye(len(h1), dtype=bool)
    diff = ~np.equal.outer(h1, h1)
    return float(np.abs(U[same]).mean() / np.abs(U[diff]).mean()) if diff.any() and same.any() else float("nan")


def block_share(U: np.ndarray, Hs, k: int = 10) -> tuple[float, float, float]:
    """Share of the off-diagonal |U| mass in pairs sharing h_1, share of such pairs (no structure), and the
    fraction of the k largest off-diagonal entries that share h_1: "correlations mostly occur between paths
    sharing the same head h_1" (Sec. 4.2.1) reads the mass share > ½."""
    h1 = pruning.path_heads(Hs)[:, 0]
    off = ~np.eye(len(h1), dtype=bool)
    same = np.equal.outer(h1, h1) & off
    iu = np.triu_indices(len(h1), 1)
    top = np.argsort(-np.abs(U[iu]))[:k]
    return (float(np.abs(U[same]).sum() / np.abs(U[off]).sum()), float(same.sum() / off.sum()),
            float(same[iu][top].mean()))


def oneshot_theory(config: OneShotConfig, ctx: RunContext) -> Result:
    """Per variant: GD model, Bayesian theory over (τ, N) with τ*(N) on validation, GP, GD empirical U; for the
    first variant also Gibbs samples at ``sample_widths`` and the kernel-PC alignment at ``score_width``."""
    units = Units(ctx)
    d = oneshot.load_data(config, ctx)
    sets = oneshot.episode_sets(config, ctx, d)
    test_names = ["id", *d.ood]
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {}
    rows = []
    for vi, var in enumerate(config.variants):
        v = var.name
        net, info = oneshot.train_model(config, ctx, units, d, var, sets["val"])
        summary[net_key(v, "gd_best_val")] = info["best_val"]
        for k in test_names:
            summary[net_key(v, "gd_acc", k)] = gd.accuracy(net, *sets[k])
        arrays[net_key(v, "gd_val_curve")] = np.asarray([info["history"]["step"], info["history"]["val_acc"]])
        pb, slices = oneshot.problem(net, sets, config.sigma2, ctx.device)
        kern = kernels.PathKernels(pb.Xi, pb.sigma2, config.kernel_mode)
        grid = oneshot.theory_grid(pb, slices, config.widths, config.taus, kern, units, f"{v}/", solve_kw(config))
        arrays.update({net_key(v, k): np.asarray(x) for k, x in grid.items()})
        U_gd = model.order_parameter(net.weights())[0].cpu().numpy()
        arrays[net_key(v, "U_gd")] = U_gd
        j = _nearest(config.widths, config.score_width)
        U_n = grid["U_star"][j]
        U_gp = pb.U_gp().cpu().numpy()
        for i, N in enumerate(config.widths):
            U_i = grid["U_star"][i]
            scale = float(np.trace(U_i)) / len(U_i)  # App. H.2.1: the overall magnitude grows as N falls
            summary[net_key(v, "U_dev_from_gp", N=N)] = float(np.abs(U_i - U_gp).max())
            summary[net_key(v, "U_scale", N=N)] = scale
            summary[net_key(v, "U_shape_dev", N=N)] = float(np.abs(U_i / scale - U_gp / U_gp[0, 0]).max())
        summary[net_key(v, "sign_agreement_gd")] = sign_agreement(U_n, U_gd)
        summary[net_key(v, "block_ratio_theory")] = block_ratio(U_n, var.Hs)
        summary[net_key(v, "block_ratio_gd")] = block_ratio(U_gd, var.Hs)
        (summary[net_key(v, "block_share_theory")], summary[net_key(v, "block_share_chance")],
         summary[net_key(v, "block_top10_theory")]) = block_share(U_n, var.Hs)
        summary[net_key(v, "block_share_gd")] = block_share(U_gd, var.Hs)[0]
        for k in test_names:
            summary[net_key(v, "acc_gp", k)] = float(grid[set_key("acc_gp", k)])
            for i, N in enumerate(config.widths):
                summary[net_key(v, "acc_fw", k, N=N)] = float(grid[set_key("acc_fw", k)][i])
                rows.append({"variant": v, "set": k, "N": N, "tau": float(grid["tau_star"][i]),
                             "accuracy": float(grid[set_key("acc_fw", k)][i]), "source": "theory"})
            rows.append({"variant": v, "set": k, "N": np.inf, "tau": float(grid["tau_gp"]),
                         "accuracy": float(grid[set_key("acc_gp", k)]), "source": "gp"})
        summary[net_key(v, "fw_minus_gp_id", N=config.widths[j])] = float(grid["acc_fw_id"][j] - grid["acc_gp_id"])
        if vi > 0:
            continue
        # Gibbs samples at τ*(N), compared with the theory at the same (N, τ*)
        taus = {N: float(grid["tau_star"][_nearest(config.widths, N)]) for N in config.sample_widths}
        sim = sample_widths(pb, config, ctx, units, taus, kern, tag=f"{v}/")
        if sim is not None:
            th_f = np.stack([grid["f_star"][_nearest(config.widths, N)] for N in sim.time])
            th_U = np.stack([grid["U_star"][_nearest(config.widths, N)] for N in sim.time])
            th_v = np.stack([grid["fvar_star"][_nearest(config.widths, N)] for N in sim.time])
            yt = pb.y_test.cpu().numpy()
            th = Trajectory(sim.time, {"f_mean": th_f, "U": th_U, "f_var": th_v,
                                       "accuracy": (np.sign(th_f) == yt).mean(-1)}, time_name="N")
            arrays.update(sim.to_arrays(f"{v}/sim_"))
            for key, val in agreement(sim, th).items():
                summary.update({net_key(v, key, N=N): float(x) for N, x in zip(sim.time, val, strict=True)})
            for i, N in enumerate(sim.time):
                for k in test_names:
                    s = slices[k]
                    summary[net_key(v, "acc_sample", k, N=N)] = float((np.sign(sim["f_mean"][i][s]) == yt[s]).mean())
                summary[net_key(v, "rhat", N=N)] = float(sim["rhat"][i])
        # kernel-PC alignment at score_width (τ*) vs GP (Fig. 3d)
        fw = kernels.alignment(kern.K(torch.as_tensor(U_n, device=pb.Xi.device)), pb.y)
        gpk = kernels.alignment(kern.K(pb.U_gp()), pb.y)
        k = min(config.n_pcs, pb.P)
        arrays[net_key(v, "overlap_fw")] = fw["overlaps"][:k].cpu().numpy()
        arrays[net_key(v, "overlap_gp")] = gpk["overlaps"][:k].cpu().numpy()
        summary[net_key(v, "top5_overlap_fw")] = fw["top_overlap"]
        summary[net_key(v, "top5_overlap_gp")] = gpk["top_overlap"]
    return Result(pd.DataFrame(rows), arrays, summary)


Fig3Config = OneShotConfig.with_defaults(
    "Fig3Config",
    scales={"quick": QUICK, "paper": {"sample_widths": (10, 20, 50, 100, 200, 500, 1000), "ood": PAPER_OOD}},
    doc="Figs. 3b-d: one-shot accuracy vs N (ID, OOD), U at N = 10 (theory, sampled, GD), kernel-PC alignment.")
Fig6Config = OneShotConfig.with_defaults(
    "Fig6Config", variants=(Variant(L=2, Hs=(4, 4), G=128), Variant(L=3, Hs=(3, 3, 3), G=170)), sample_widths=(),
    scales={"quick": {**QUICK, "variants": (Variant(L=2, Hs=(4, 4)), Variant(L=3, Hs=(3, 3, 3))),
                      "taus": (0.05, 0.1, 0.25, 0.5, 1.0)}, "paper": {"ood": PAPER_OOD}},
    doc="Fig. 6: accuracy vs N for (L, H) = (2, 4) and (3, 3), ID and OOD; U of the (3, 3) network at N = 10.")

FIG3 = Experiment(
    STUDY, "fig3", Fig3Config, oneshot_theory, ref="Fig. 3b-d", figure=figures.fig3,
    title="One-shot task: accuracy vs N, U (theory / sampled / GD), kernel alignment",
    cost=costs.oneshot_theory, outputs=outputs.oneshot_outputs("fig3"), summary=summaries.OneShotSummary)
FIG6 = Experiment(
    STUDY, "fig6", Fig6Config, oneshot_theory, ref="Fig. 6", figure=figures.fig6,
    title="One-shot task: (L, H) = (2, 4) and (3, 3)",
    cost=costs.oneshot_theory, outputs=outputs.oneshot_outputs("fig6"), summary=summaries.OneShotSummary)
