"""Experiments of the paths study (one per paper figure): config in, tables and arrays out, no plotting.

Markov task (Sec. 4.1, App. G): ``fig2c`` (accuracy and U vs N, theory against Gibbs samples, GP lines),
``fig2d`` (kernel-PC alignment), ``fig2e`` (good + denoising network at σ⊥ = 5), ``fig5b`` (the kernels),
``fig5c`` (Fig. 2e with the denoising head made uniform) and ``generic`` (check C: random heads).
The one-shot experiments (Figs. 3, 6, 7) live in :mod:`attnlab.paths.experiments.oneshot`.

Randomness: training data from the ``data`` stream, test data from ``eval``, the random heads from
``teacher`` (each a fresh generator seeded from the run's seed, so a resumed run rebuilds the same data), the
Gibbs chains from the checkpointed ``sampler`` stream. Sampling checkpoints its chains, so an interrupted
run resumes mid-chain.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab.core import rng
from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Units
from attnlab.paths import costs, memory, outputs, summaries
from attnlab.paths.configs import HeadSpec, MarkovConfig
from attnlab.paths.data import files, public
from attnlab.paths.data import markov as data
from attnlab.paths.experiments.common import agreement, sample_widths, solve_kw
from attnlab.paths.figures import markov as figures
from attnlab.paths.keys import path_key, set_key, width_key
from attnlab.paths.theory import diagnostics, kernels, problems
from attnlab.paths.theory import saddle as theory

STUDY = "paths"
F64 = torch.float64


def markov_problem(config: MarkovConfig, ctx: RunContext, layout: str | None = None,
                   test: str = "eval") -> kernels.Problem:
    """The configured network (``heads`` or ``layout``), or the named ``layout`` (a GP reference line); the test
    set from the named stream ``test``."""
    task = data.MarkovTask(config.T, config.N0, sigma_par=config.sigma_par, sigma_perp=config.sigma_perp,
                           sigma_diff=config.sigma_diff, sigma_sum=config.sigma_sum, switch_plus=config.switch_plus,
                           switch_minus=config.switch_minus)
    net = named_layout(config, layout) if layout else config.heads if config.heads is not None else config.layout
    given = given_inputs(config, task, ctx, named=layout is not None, test=test)
    pb = problems.markov_problem(task, net, config.P, config.P_test, data=ctx.generator("data"),
                                 test=ctx.generator(test), heads=ctx.generator("teacher"), readout=config.readout,
                                 beta=config.beta, random_strength=config.random_strength, attention=config.attention,
                                 dtype=getattr(torch, config.precision), **given)
    var = config.variances if len(pb.Hs) == config.L else None  # a named 2-layer reference beside L listed layers
    return kernels.Problem(pb.Xi, pb.y, pb.Xi_test, pb.y_test, pb.Hs, config.sigma2, var)


def given_inputs(config: MarkovConfig, task: data.MarkovTask, ctx: RunContext, named: bool, test: str) -> dict:
    """Tokens and heads not drawn from the run's streams: ``tokens_file`` (its test set for the ``eval`` stream
    only), else ``streams="public"`` (the public code's seeds 27 / 59; further test sets from the run's streams);
    ``heads_file`` for the configured network (a named reference layout keeps its own heads, the public ones under
    ``preset="public"``)."""
    dev = ctx.generator("data").device
    out: dict[str, Any] = {}
    if config.tokens_file:
        z = files.read_tokens(config.tokens_file)
        out["train_set"] = data.MarkovData(torch.as_tensor(z["X_train"], device=dev),
                                           torch.as_tensor(z["y_train"], device=dev), torch.empty(0))
        if "X_test" in z and test == "eval":
            out["test_set"] = data.MarkovData(torch.as_tensor(z["X_test"], device=dev),
                                              torch.as_tensor(z["y_test"], device=dev), torch.empty(0))
    elif config.streams == "public":
        out["train_set"] = public.sample_public(task, config.P, public.TRAIN_SEED, dev)
        if test == "eval":
            out["test_set"] = public.sample_public(task, config.P_test, public.TEST_SEED, dev)
    if config.heads_file and not named:
        out["head_stacks"] = [torch.as_tensor(A, device=dev) for A in files.read_heads(config.heads_file)]
    return out


def named_layout(config: MarkovConfig, layout: str):
    """A named reference layout's heads: the public run's seeded heads under ``preset="public"``."""
    if config.preset == "public" and layout in public.PUBLIC_HEADS:
        return tuple(tuple(HeadSpec(**h) for h in lay) for lay in public.PUBLIC_HEADS[layout])
    return layout


def init_generator(config: MarkovConfig, ctx: RunContext) -> torch.Generator:
    """The perturbed start's generator: the run's ``init`` stream, or one seeded with ``init_seed`` alone (the public
    code's ``--order_parameter_seed``: the same start whatever the run's seed)."""
    if config.init_seed is None:
        return ctx.generator("init")
    return rng.generator(config.init_seed, ctx.device)


def solve_markov(config: MarkovConfig, ctx: RunContext, pb: kernels.Problem, kern: kernels.PathKernels,
                 widths, tau: float, unit=None) -> Trajectory:
    """theory.predict over ``widths`` with the config's per-layer widths, start, history and Hessian; ``unit``
    (the run's) checkpoints the solves, so an interrupted run resumes inside the one it was in."""
    act = theory.action(pb, kern, tau, max(widths), config.layer_widths)
    init = diagnostics.start(act, config.init, strength=config.init_strength, scale=config.init_scale,
                             good=config.init_good, bad_factor=config.init_bad_factor,
                             generator=init_generator(config, ctx))
    return theory.predict(pb, widths, tau, kern=kern, ratios=config.layer_widths, hessian=config.hessian,
                          init=init, history=config.history_every, checkpoint=unit, **solve_kw(config))


def solver_record(th: Trajectory, summary: dict, arrays: dict) -> pd.DataFrame:
    """Hessian eigenvalues per width (summary: the smallest) and the recorded optimiser histories (arrays, and
    metrics rows: S, energy, entropy and the largest energy / entropy gradient per step)."""
    if "hessian_min_eig" in th.observables:
        for N, e in zip(th.time, th["hessian_min_eig"], strict=True):
            summary[width_key("hessian_min_eig", N)] = float(e)
    rows = []
    for N, h in th.meta.get("history", {}).items():
        arrays.update({set_key(width_key("history", N), k): v for k, v in h.items()})
        summary[width_key("history_steps", N)] = int(h["step"][-1])
        for k in ("S", "energy", "entropy", "max_grad", "max_energy_grad", "max_entropy_grad"):
            v = h[k] if h[k].ndim == 1 else h[k].max(axis=1)
            rows.append(pd.DataFrame({"source": "history", "N": N, "step": h["step"], "name": k, "value": v}))
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame()


def _solver_summary(th: Trajectory) -> dict[str, float]:
    return {"max_grad": float(th["max_grad"].max()), "max_residual": float(th["residual"].max()),
            "all_converged": float(th["converged"].min()), "solve_seconds": th.meta["seconds"],
            "solver_iterations": th.meta["n_iter"]}


# -- Figs. 2c, 2e, 5c and check C: accuracy and U against N ---------------------------------------------


def expected_gp_accuracy(config: MarkovConfig, ctx: RunContext, layout: str = "good") -> tuple[float, float]:
    """GP accuracy of ``layout``'s network (the run's training set) averaged over ``gp_test_sets`` fresh test sets
    of P* sequences, and its standard error: the network's expected accuracy, which one test set of P* = 1000
    (Sec. 4.1) estimates to ±0.008. Built one test set at a time, so the peak memory stays that of P*."""
    accs = []
    for k in range(config.gp_test_sets):
        sub = markov_problem(config, ctx, layout, test=f"eval_{k + 1}")
        accs.append(theory.predict_gp(sub, config.tau).accuracy(sub.y_test))
    se = float(np.std(accs, ddof=1) / np.sqrt(len(accs))) if len(accs) > 1 else float("nan")
    return float(np.mean(accs)), se


def markov_sweep(config: MarkovConfig, ctx: RunContext) -> Result:
    """Theory over N, GP reference lines per sub-network, Gibbs samples at the sampled widths."""
    units = Units(ctx)
    pb = markov_problem(config, ctx)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0, config.kernel_mode, dtype=getattr(torch, config.solve_precision))
    checks = kernels.check_invertibility(kern, pb.U_gp(), config.tau, config.kernel_check)  # {} when off
    widths = sorted(set(config.widths) | {float(n) for n in config.sample_widths})
    th = units.get("theory", lambda u: solve_markov(config, ctx, pb, kern, widths, config.tau, u))
    arrays = th.to_arrays("theory_")
    summary: dict[str, Any] = {"n_paths": pb.n, **checks, **_solver_summary(th)}
    history = solver_record(th, summary, arrays)
    for i, N in enumerate(th.time):
        summary[width_key("acc_theory", N)] = float(th["accuracy"][i])
        summary[width_key("gen_error_theory", N)] = float(th["gen_error"][i])
    frames = [th.select([k for k in ("accuracy", "gen_error", "U", "hessian_min_eig") if k in th.observables])
              .to_frame(), history]
    gp = theory.predict_gp(pb, config.tau, kern)
    summary["acc_gp"], summary["gen_error_gp"] = gp.accuracy(pb.y_test), gp.gen_error(pb.y_test)
    for layout in config.gp_layouts:
        own = layout == config.layout and config.heads is None and not config.heads_file
        sub = pb if own else markov_problem(config, ctx, layout)
        gp = theory.predict_gp(sub, config.tau)
        summary[set_key("acc_gp", layout)] = gp.accuracy(sub.y_test)
        summary[set_key("gen_error_gp", layout)] = gp.gen_error(sub.y_test)
        frames.append(pd.DataFrame({"source": "gp", "name": ["accuracy", "gen_error"], "layout": layout,
                                    "value": [summary[set_key(k, layout)] for k in ("acc_gp", "gen_error_gp")]}))
    if config.gp_test_sets and "good" in config.gp_layouts:
        summary["acc_gp_good_expected"], summary["acc_gp_good_expected_se"] = expected_gp_accuracy(config, ctx)
    for a in range(pb.n):  # every path alone (Hs = [1, ..., 1]): GP accuracy of its same-path kernel
        one = kernels.Problem(pb.Xi[:, a:a + 1], pb.y, pb.Xi_test[:, a:a + 1], pb.y_test, (1,) * pb.L, pb.sigma2,
                              pb.variances)
        summary[path_key("acc_gp", a)] = theory.predict_gp(one, config.tau).accuracy(one.y_test)
    sim = sample_widths(pb, config, ctx, units, {N: config.tau for N in config.sample_widths}, kern)
    if sim is not None:
        arrays.update(sim.to_arrays("sim_"))
        frames.append(sim.select(["accuracy", "gen_error", "U", "rhat", "ess"]).to_frame())
        ag = agreement(sim, th)
        arrays.update({set_key("agree", k): v for k, v in ag.items()})
        for i, N in enumerate(sim.time):
            summary[width_key("acc_sample", N)] = float(sim["accuracy"][i])
            summary[width_key("rhat", N)] = float(sim["rhat"][i])
            summary[width_key("ess", N)] = float(sim["ess"][i])
            summary.update({width_key(k, N): float(v[i]) for k, v in ag.items()})
    arrays["y_test"] = pb.y_test.cpu().numpy()
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


_QUICK_SAMPLING = {"chains": 2, "burn_in": 1000, "samples": 500, "thin": 4}
Fig2cConfig = MarkovConfig.with_defaults(
    "Fig2cConfig", scales={"quick": _QUICK_SAMPLING, "paper": {"sample_widths": (10, 20, 50, 100)}},
    doc="Fig. 2c: all four paths, τ = 0.01: accuracy and U vs N (theory, Gibbs samples, GP lines). Paper scale: "
        "App. F's sampling at N = 10, 20, 50, 100 (10 chains, 1000 warm-up sweeps, 1000 kept one in ten; exact "
        "blocked Gibbs instead of NUTS), widths 10 … 10⁴; about 25 min on one CPU core, the theory in seconds.")
Fig2eConfig = MarkovConfig.with_defaults(
    "Fig2eConfig", layout="good_denoising", sigma_perp=5.0, gp_layouts=("good", "good_denoising"),
    sample_widths=(10,), scales={"quick": _QUICK_SAMPLING, "paper": {"sample_widths": (10, 20, 50, 100)}},
    doc="Fig. 2e: the good + denoising network (Hs = [2, 1]) on data with σ⊥ = 5. Paper scale: App. F's sampling "
        "at N = 10, 20, 50, 100, as Fig. 2c.")
Fig5cConfig = MarkovConfig.with_defaults(
    "Fig5cConfig", layout="good_uniform", sigma_perp=5.0, gp_layouts=("good", "good_uniform"), sample_widths=(),
    doc="Fig. 5c: Fig. 2e with the denoising path's random layer-1 head replaced by uniform attention.")
GenericConfig = MarkovConfig.with_defaults(
    "GenericConfig", layout="random", random_strength=0.3, readout="mean", P=60, tau=0.05, widths=(10,),
    sample_widths=(10,), gp_layouts=(), scales={"quick": {"chains": 2, "burn_in": 1000, "samples": 500, "thin": 4},
                                                 "paper": {}},
    doc="Check C (docs/studies/paths.md): random heads on both layers (Hs = [3, 3], × 0.3), mean readout, P = 60, "
        "τ = 0.05, N = 10.")

FIG2C = Experiment(
    STUDY, "fig2c", Fig2cConfig, markov_sweep, ref="Fig. 2c", figure=figures.markov_sweep, headline=True,
    title="Markov task: accuracy and U vs N, theory vs Gibbs samples",
    memory=memory.markov, cost=costs.markov_sweep, outputs=outputs.markov_outputs("fig2c"),
    summary=summaries.MarkovSummary)
FIG2E = Experiment(
    STUDY, "fig2e", Fig2eConfig, markov_sweep, ref="Fig. 2e", figure=figures.markov_sweep,
    title="Markov task: good + denoising network, σ⊥ = 5",
    memory=memory.markov, cost=costs.markov_sweep, outputs=outputs.markov_outputs("fig2e"),
    summary=summaries.MarkovSummary)
FIG5C = Experiment(
    STUDY, "fig5c", Fig5cConfig, markov_sweep, ref="Fig. 5c", figure=figures.markov_sweep,
    title="Markov task: Fig. 2e with a uniform denoising head",
    memory=memory.markov, cost=costs.markov_sweep, outputs=outputs.markov_outputs("fig5c"),
    summary=summaries.MarkovSummary)
GENERIC = Experiment(
    STUDY, "generic", GenericConfig, markov_sweep, ref="check C", figure=figures.markov_sweep,
    title="Solver and sampler on random heads (Hs = [3, 3])",
    memory=memory.markov, cost=costs.markov_sweep, outputs=outputs.markov_outputs("generic"),
    summary=summaries.MarkovSummary)


# -- Figs. 2d and 5b: alignment and kernels ------------------------------------------------------------

Fig2dConfig = MarkovConfig.with_defaults("Fig2dConfig", sample_widths=(), doc="Fig. 2d: kernel PCs vs labels.")


def _class_order(y: torch.Tensor) -> torch.Tensor:
    return torch.argsort(-y, stable=True)  # class +1 first


def fig2d(config: MarkovConfig, ctx: RunContext) -> Result:
    """Cosine overlap of the training kernel's PCs with Y: finite width (N = 10) vs the GP limit."""
    pb = markov_problem(config, ctx)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0, config.kernel_mode)
    sp = theory.sweep(pb, [config.alignment_width], config.tau, kern=kern, ratios=config.layer_widths,
                      **solve_kw(config))[0]
    fw, gp = kernels.alignment(kern.K(sp.U), pb.y), kernels.alignment(kern.K(pb.U_gp()), pb.y)
    k = min(config.n_pcs, pb.P)
    arrays = {"overlap_fw": fw["overlaps"][:k].cpu().numpy(), "overlap_gp": gp["overlaps"][:k].cpu().numpy(),
              "eig_fw": fw["eigenvalues"][:k].cpu().numpy(), "eig_gp": gp["eigenvalues"][:k].cpu().numpy(),
              "U": sp.U.cpu().numpy()}
    summary = {"top5_overlap_fw": fw["top_overlap"], "top5_overlap_gp": gp["top_overlap"], "kta_fw": fw["kta"],
               "kta_gp": gp["kta"], "top5_ratio": fw["top_overlap"] / gp["top_overlap"], "max_grad": sp.max_grad}
    rows = [{"source": s, "pc": i + 1, "overlap": float(v)} for s in ("fw", "gp") for i, v in
            enumerate(arrays[set_key("overlap", s)])]
    return Result(pd.DataFrame(rows), arrays, summary)


FIG2D = Experiment(
    STUDY, "fig2d", Fig2dConfig, fig2d, ref="Fig. 2d", figure=figures.fig2d,
    title="Markov task: kernel-PC overlap with the labels, N = 10 vs GP",
    memory=memory.markov, cost=costs.markov_kernels, outputs=outputs.FIG2D, summary=summaries.Fig2dSummary)

Fig5bConfig = MarkovConfig.with_defaults("Fig5bConfig", sample_widths=(), doc="Fig. 5b: the kernels.")


def class_contrast(K: np.ndarray, y: np.ndarray) -> float:
    """(mean same-class − mean other-class off-diagonal entry) / std of the off-diagonal entries."""
    off = ~np.eye(len(y), dtype=bool)
    same = np.equal.outer(y, y) & off
    return float((K[same].mean() - K[~np.equal.outer(y, y)].mean()) / K[off].std())


def fig5b(config: MarkovConfig, ctx: RunContext) -> Result:
    """Same-path kernels C_ππ, total GP kernel and total renormalised kernel (N = 10), sorted by class."""
    pb = markov_problem(config, ctx)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0, config.kernel_mode)
    sp = theory.sweep(pb, [config.alignment_width], config.tau, kern=kern, ratios=config.layer_widths,
                      **solve_kw(config))[0]
    order = _class_order(pb.y)
    y = pb.y[order].cpu().numpy()
    arrays: dict[str, np.ndarray] = {"y_sorted": y}
    summary: dict[str, float] = {}
    for a in range(pb.n):
        C = kern.block(a, a)[order][:, order].cpu().numpy()
        arrays[f"C{a}"] = C
        summary[path_key("contrast", a)] = class_contrast(C, y)
        offd = C[~np.eye(len(y), dtype=bool)]
        summary[path_key("relative_spread", a)] = float(offd.std() / abs(offd.mean()))
    for name, U in (("gp", pb.U_gp()), ("fw", sp.U)):
        K = kern.K(U)[order][:, order].cpu().numpy()
        arrays[set_key("K", name)] = K
        summary[set_key("contrast", name)] = class_contrast(K, y)
    return Result(pd.DataFrame([{"name": k, "value": v} for k, v in summary.items()]), arrays, summary)


FIG5B = Experiment(
    STUDY, "fig5b", Fig5bConfig, fig5b, ref="Fig. 5b", figure=figures.fig5b,
    title="Markov task: same-path kernels, GP and renormalised kernels",
    memory=memory.markov, cost=costs.markov_kernels, outputs=outputs.FIG5B, summary=summaries.Fig5bSummary)
