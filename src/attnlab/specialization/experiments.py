"""One experiment per figure of paper 0 (spec §4): config in, tables and arrays out, no plotting.

Long loops checkpoint after every finished unit (an activation, a panel, a grid point), so an interrupted
run resumes where it stopped. All randomness comes from the run's named streams: ``init`` (theory inits),
``mc`` (Monte-Carlo samples of the reduced loss), ``sgd`` (spikes, keys and data of the simulation),
``eval`` (fresh samples for final losses and attention maps).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attnlab.core.experiment import Result, experiment
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import run_units
from attnlab.specialization import analysis, figures, theory, train
from attnlab.specialization.bayes import bayes_risk
from attnlab.specialization.configs import (
    ACTIVATIONS,
    AttentionMapsConfig,
    CosineGridConfig,
    FinalErrorConfig,
    McResamplingConfig,
    Panel,
    PruningConfig,
    SimVsTheoryConfig,
    TrajectoriesConfig,
    law_from,
)

STUDY = "specialization"


def _taus(tau_max: float, every: float) -> np.ndarray:
    n = round(tau_max / every)
    return np.linspace(0.0, n * every, n + 1)


def _seed(ctx: RunContext, stream: str, offset: int = 0) -> int:
    """A 31-bit seed of a named stream (the study's samplers take plain integer seeds)."""
    return (ctx.seed(stream) + offset) % 2**31


def _theory_kw(config) -> dict[str, Any]:
    return {"n_mc": config.n_mc, "solver": config.solver, "dt": config.dt, "eta": config.eta,
            "init_noise_var": config.init_noise_var, "symmetrize": config.symmetrize}


# -- Figs. 1, 9, 10: SGD against theory -----------------------------------------------------------------

_SIM_QUICK = {**SimVsTheoryConfig.scales["quick"], "tau_max": 30.0}  # D = 500: the split starts at τ ≈ 25
# Paper horizons (the paper does not print them) long enough for the split its figures show. The flow from
# random inits at D = 10^4 (split_time; 4-6 inits, N_mc = 2·10^4) gives |m_12 − m_22| > 0.5 at τ ≈ 46-81 for
# Fig. 1 (L = 10, softmax); > 0.2 at τ ≈ 52-80 (one init later than 100) for Fig. 9's softmax, 34-78 for
# softmax-1, 10-29 for B-softmax (L = 5); for Fig. 10 (softmax, H = 4) the heads split along f = 1 at τ ≈ 10-23
# (|Δm_1| from 0.2 to 1.0) and |m_h2| ≤ 0.3 at τ = 150.
Fig1Config = SimVsTheoryConfig.with_defaults(
    "Fig1Config", L=10, H=2, law="flip", nu1=2.0, nu2=2.0, activations=("softmax",), tau_max=120.0,
    scales={"quick": _SIM_QUICK, "paper": {}},
    doc="Fig. 1: SGD (D = 10^4) vs theory, softmax, flipping spike ν = (2, 2), L = 10, H = 2; to τ = 120, past the "
        "split (τ^s ≈ 35-70 at D = 10^4). Fits one GPU (the batch is streamed: 4 GB tokens per step at most).")
Fig9Config = SimVsTheoryConfig.with_defaults(
    "Fig9Config", L=5, H=2, law="flip", nu1=2.0, nu2=2.0, activations=ACTIVATIONS, tau_max=150.0,
    scales={"quick": _SIM_QUICK, "paper": {}},
    doc="Fig. 9: SGD vs theory for the three activations, flipping spike, L = 5, H = 2; to τ = 150, past the "
        "softmax split (τ^s ≈ 50-100 at D = 10^4).")
Fig10Config = SimVsTheoryConfig.with_defaults(
    "Fig10Config", L=5, H=4, law="gaussian", nu1=8.0, nu2=2.0, activations=ACTIVATIONS, tau_max=100.0,
    scales={"quick": _SIM_QUICK, "paper": {}},
    doc="Fig. 10: SGD vs theory, non-isotropic Gaussian ν = (8, 2), L = 5, H = 4; to τ = 100: the split along the "
        "strong feature (τ ≈ 10-25 at D = 10^4) and the slow start along the weak one.")


def sim_vs_theory(config: SimVsTheoryConfig, ctx: RunContext) -> Result:
    """SGD at finite D and the gradient flow (12) started from the SGD's empirical m(0), q(0), p."""
    law = config.theta_law()
    taus = _taus(config.tau_max, config.record_every)

    def compute(act: str) -> dict[str, np.ndarray]:
        with ctx.progress(round(config.tau_max / config.gamma), f"SGD {act} D={config.D}") as bar:
            sim = train.simulate_sgd(
                law, H=config.H, L=config.L, D=config.D, activation=act, tau_max=config.tau_max,
                gamma=config.gamma, eta=config.eta, batch=config.batch, seeds=[_seed(ctx, "sgd")],
                device=ctx.device, record_taus=taus, progress=lambda t, T: bar.update(t),
            ).trajectory
        th = theory.predict(
            act, law, config.L, config.H, sim.time, m0=sim["m"][0], q0=sim["q"][0], p=sim["p"][0, 0],
            mc_seed=_seed(ctx, "mc"), p_correction=config.p_correction, device=ctx.device,
            **_theory_kw(config),
        )
        return {**sim.to_arrays("sim_"), **th.to_arrays("theory_")}

    done = run_units(ctx, list(config.activations), lambda u: compute(u.key), "activations")
    arrays, frames, summary = {}, [], {}
    for act in config.activations:
        sim = Trajectory.from_arrays(done[act], "sim_", source="simulation")
        th = Trajectory.from_arrays(done[act], "theory_", source="theory")
        arrays.update({f"{act}/{k}": v for k, v in done[act].items()})
        frames += [sim.to_frame().assign(activation=act), th.to_frame().assign(activation=act)]
        summary.update({f"{k}_{act}": v for k, v in analysis.sim_theory_deviation(sim, th).items()})
        summary[f"tau_s_sim_{act}"] = analysis.specialization_time(sim["m"][:, 0], sim.time, threshold=0.2)
        summary[f"tau_s_theory_{act}"] = analysis.specialization_time(th["m"][:, 0], th.time, threshold=0.2)
        summary[f"loss_final_sim_{act}"] = float(sim["loss"][-1].mean())
        summary[f"loss_final_theory_{act}"] = float(th["loss"][-1].mean())
    summary["bayes_risk"] = bayes_risk(law, config.L, 200_000, seed=_seed(ctx, "eval"))[0]
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


experiment(STUDY, "fig1", Fig1Config, ref="Fig. 1", figure=figures.sim_vs_theory, headline=True,
           title="SGD vs theory, softmax (L=10, H=2, flip)")(sim_vs_theory)
experiment(STUDY, "fig9", Fig9Config, ref="Fig. 9", figure=figures.sim_vs_theory,
           title="SGD vs theory, three activations (flip)")(sim_vs_theory)
experiment(STUDY, "fig10", Fig10Config, ref="Fig. 10", figure=figures.sim_vs_theory,
           title="SGD vs theory, three activations (non-iso Gaussian)")(sim_vs_theory)


# -- Trajectory figures (2-4, 12-19) ------------------------------------------------------------------


def trajectories(config: TrajectoriesConfig, ctx: RunContext) -> Result:
    """Theory trajectories of the heads m_h(τ) in feature space, one panel per entry of ``panels``."""
    taus = _taus(config.tau_max, config.record_every)

    def compute(i: int) -> dict[str, np.ndarray]:
        p = config.panels[i]
        law = config.theta_law(nu=p.nu, nu1=p.nu1, nu2=p.nu2)
        tr = theory.predict(p.activation, law, config.L, p.H, taus, seed=_seed(ctx, "init", p.seed),
                            mc_seed=_seed(ctx, "mc", p.seed), device=ctx.device, **_theory_kw(config))
        return tr.to_arrays()

    done = run_units(ctx, list(range(len(config.panels))), lambda u: compute(u.key), "panels")
    arrays, frames, summary = {}, [], {}
    for i, p in enumerate(config.panels):
        tr = Trajectory.from_arrays(done[i], source="theory")
        arrays.update({f"panel{i}/{k}": v for k, v in done[i].items()})
        frames.append(tr.to_frame().assign(panel=i, activation=p.activation, H=p.H, nu1=p.nu1, nu2=p.nu2, nu=p.nu,
                                           panel_seed=p.seed))
        m = tr["m"][:, 0]
        summary[f"loss_final_{i}"] = float(tr["loss"][-1].mean())
        summary[f"sign_patterns_{i}"] = analysis.sign_patterns(m[-1])
        summary[f"head_spread_{i}"] = analysis.head_spread(m[-1])
        for f in range(m.shape[-1]):
            summary[f"tau_feature{f + 1}_{i}"] = analysis.first_time(np.linalg.norm(m[..., f], axis=-1)
                                                                     / np.sqrt(p.H), tr.time, 0.5)
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


def _panels(**grid: Any) -> tuple[Panel, ...]:
    keys = list(grid)
    rows = np.broadcast_arrays(*[np.asarray(grid[k], dtype=object) for k in keys])
    return tuple(Panel(**dict(zip(keys, vals, strict=True))) for vals in zip(*[r.ravel() for r in rows], strict=True))


_NU_GRID = (0.5, 2.0, 8.0)
# Specialization at L = 4-5 takes τ ~ 10^2-10^3 (spec §4 conventions); the adaptive solver follows the same
# flow as Euler δ = 0.02 (within rtol) at a fraction of the steps.
_TRAJ_DEFAULTS = {"tau_max": 1000.0, "record_every": 1.0, "solver": "adaptive"}
_quick = {"n_mc": 10_000, "tau_max": 400.0, "record_every": 2.0}
_TRAJ_FIGS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "fig2": ("Figs. 2, 15", "Head trajectories vs H, flipping spike, softmax",
             {"law": "flip", "L": 4, "panels": _panels(H=[2, 4, 5, 8])}),
    "fig3": ("Fig. 3", "Head trajectories, non-isotropic Gaussian, softmax (H=4, 8, 8', and ν1=ν2)",
             {"law": "gaussian", "L": 4, "panels": _panels(H=[4, 8, 8, 4], nu1=[8, 8, 8, 2], nu2=[2, 2, 2, 2],
                                                          seed=[0, 0, 1, 0])}),
    "fig4": ("Fig. 4", "Sequential and hierarchical specialization, F=3, softmax vs B-softmax",
             {"law": "gaussian", "F": 3, "L": 5, "nu1": 20.0, "nu2": 1.0,
              "panels": _panels(activation=["softmax", "bsoftmax"], H=8, nu1=20.0, nu2=1.0)}),
    "fig19": ("Figs. 19, 20", "Four runs of Fig. 4 (softmax), with the final m",
              {"law": "gaussian", "F": 3, "L": 5, "nu1": 20.0, "nu2": 1.0,
               "panels": _panels(H=8, nu1=20.0, nu2=1.0, seed=[0, 1, 2, 3])}),
    **{
        f"fig{n}": (f"Fig. {n}", f"Head trajectories over (ν1, ν2), H=2, flipping spike, {act}",
                    {"law": "flip", "L": 4, "panels": _panels(
                        activation=act, H=2, nu1=np.repeat(_NU_GRID, len(_NU_GRID)),
                        nu2=np.tile(_NU_GRID, len(_NU_GRID)))})
        for n, act in ((12, "softmax"), (13, "softmax1"), (14, "bsoftmax"))
    },
    **{
        f"fig{n}": (f"Fig. {n}", f"Head trajectories vs H, non-isotropic Gaussian, {act}",
                    {"law": "gaussian", "L": 4, "panels": _panels(
                        activation=act, H=np.tile(hs, 2), nu1=np.repeat([2.0, 8.0], len(hs)), nu2=2.0)})
        for n, act, hs in ((16, "softmax", [2, 5, 8]), (17, "softmax1", [2, 4, 5, 8]), (18, "bsoftmax", [2, 5, 8]))
    },
}

for _name, (_ref, _title, _defaults) in _TRAJ_FIGS.items():
    _cfg = TrajectoriesConfig.with_defaults(f"{_name.capitalize()}Config", scales={"quick": _quick, "paper": {}},
                                            doc=f"{_ref}: {_title}.", **{**_TRAJ_DEFAULTS, **_defaults})
    experiment(STUDY, _name, _cfg, ref=_ref, title=_title, figure=figures.trajectories)(trajectories)


# -- Fig. 5: final error vs H and vs ν ---------------------------------------------------------------


def _trained(ctx, config, act: str, law, H: int, key: Any) -> dict[str, np.ndarray]:
    """Theory run to ``tau_max`` for ``config.seeds`` inits, final parameters and fresh-MC loss."""
    tr = theory.predict(act, law, config.L, H, [0.0, config.tau_max], n_seeds=config.seeds,
                        seed=_seed(ctx, "init", hash(key) % 1000), mc_seed=_seed(ctx, "mc"), device=ctx.device,
                        **_theory_kw(config))
    final = analysis.final_params(tr)
    final["loss_eval"] = analysis.eval_loss(final, act, law, config.L, config.eval_mc, _seed(ctx, "eval"),
                                            device=ctx.device)
    final["loss_train"] = tr["loss"][-1]
    return final


def final_error(config: FinalErrorConfig, ctx: RunContext) -> Result:
    """E^∞_σ after training (theory, fresh-MC evaluation) vs H and vs ν, three activations and the Bayes risk."""
    keys = [("H", law, act, H) for law in config.laws for act in config.activations for H in config.Hs]
    keys += [("nu", law, act, nu) for law in config.laws for act in config.activations for nu in config.nus]
    keys += [("H", law, "bayes", 0) for law in config.laws]
    keys += [("nu", law, "bayes", nu) for law in config.laws for nu in config.nus]

    def law_of(panel, law, x):
        return law_from(law, config.F_H, config.nu_H, config.nu_H, config.nu_H) if panel == "H" else \
            law_from(law, config.F_nu, x, x, x)

    def compute(key):
        panel, law_name, act, x = key
        law = law_of(panel, law_name, x)
        if act == "bayes":
            risk, se = bayes_risk(law, config.L, config.bayes_mc, seed=_seed(ctx, "eval"), device=ctx.device)
            return {"loss_eval": np.array([risk]), "stderr": np.array([se])}
        return _trained(ctx, config, act, law, x if panel == "H" else config.H_nu, key)

    done = run_units(ctx, keys, lambda u: compute(u.key), "final errors")
    rows, arrays = [], {}
    for (panel, law, act, x), out in done.items():
        for s, loss in enumerate(np.atleast_1d(out["loss_eval"])):
            rows.append({"panel": panel, "law": law, "activation": act, "x": float(x), "seed": s,
                         "final_loss": float(loss)})
        arrays.update({f"{panel}/{law}/{act}/{x}/{k}": np.asarray(v) for k, v in out.items()})
    table = pd.DataFrame(rows)
    summary = {}
    for (panel, law, act, x), sub in table.groupby(["panel", "law", "activation", "x"]):
        tag = f"{law}_{act}_" + (f"H{int(x)}" if panel == "H" and act != "bayes" else
                                 "H" if panel == "H" else f"nu{x:g}")
        summary[f"E_{tag}"] = float(sub["final_loss"].mean())
        if len(sub) > 1:
            summary[f"std_{tag}"] = float(sub["final_loss"].std())
    return Result(table, arrays, summary)


experiment(STUDY, "fig5", FinalErrorConfig, ref="Fig. 5", figure=figures.final_error, headline=True,
           title="Final error vs H and vs signal: softmax ≥ softmax-1 ≥ B-softmax ≥ Bayes")(final_error)


# -- Fig. 6: attention maps ----------------------------------------------------------------------------


@experiment(STUDY, "fig6", AttentionMapsConfig, ref="Fig. 6", figure=figures.attention_maps,
            title="Attention maps of trained softmax, softmax-1 and B-softmax")
def attention_maps(config: AttentionMapsConfig, ctx: RunContext) -> Result:
    """Train each activation (theory), then draw a few sequences and record σ(χ, b, v) (H × L each)."""
    law = config.theta_law()

    def compute(act: str) -> dict[str, np.ndarray]:
        tr = theory.predict(act, law, config.L, config.H, [0.0, config.tau_max], seed=_seed(ctx, "init"),
                            mc_seed=_seed(ctx, "mc"), device=ctx.device, **_theory_kw(config))
        final = analysis.final_params(tr)
        maps, eps = analysis.attention_maps(final, act, law, config.L, config.sequences, _seed(ctx, "eval"))
        off = analysis.off_target_mass(final, act, law, config.L, config.eval_mc, _seed(ctx, "eval"))
        return {**final, "maps": maps, "eps": eps, "off_target": off}

    done = run_units(ctx, list(config.activations), lambda u: compute(u.key), "activations")
    arrays = {f"{act}/{k}": v for act, out in done.items() for k, v in out.items()}
    summary = {f"off_target_{act}": float(np.mean(out["off_target"])) for act, out in done.items()}
    summary.update({f"loss_train_{act}": float(np.mean(out["loss"])) for act, out in done.items()})
    table = pd.DataFrame([{"activation": a, "name": "off_target_mass", "value": summary[f"off_target_{a}"]}
                          for a in config.activations])
    return Result(table, arrays, summary)


# -- Fig. 7: head pruning ----------------------------------------------------------------------------


@experiment(STUDY, "fig7", PruningConfig, ref="Fig. 7", figure=figures.pruning,
            title="Greedy head pruning of trained models (H=8, F=4, ν=10)")
def pruning(config: PruningConfig, ctx: RunContext) -> Result:
    """Train H heads (theory), then remove heads greedily (spec §5.6), loss on fresh MC after each removal."""
    keys = [(law, act) for law in config.laws for act in config.activations]

    def compute(key):
        law_name, act = key
        law = law_from(law_name, config.F, config.nu, config.nu, config.nu)
        final = _trained(ctx, config, act, law, config.H, key)
        curves = analysis.greedy_pruning(final, act, law, config.L, config.eval_mc, _seed(ctx, "eval"),
                                         device=ctx.device)
        return {**final, "curves": curves}

    done = run_units(ctx, keys, lambda u: compute(u.key), "pruning")
    rows, arrays, summary = [], {}, {}
    for (law, act), out in done.items():
        curves = out["curves"]  # (S, H) loss after pruning 0..H-1 heads
        arrays.update({f"{law}/{act}/{k}": v for k, v in out.items()})
        for s, curve in enumerate(curves):
            rows += [{"law": law, "activation": act, "seed": s, "pruned": k, "loss": float(c)}
                     for k, c in enumerate(curve)]
        for k in range(curves.shape[1]):
            summary[f"E_{law}_{act}_pruned{k}"] = float(curves[:, k].mean())
    return Result(pd.DataFrame(rows), arrays, summary)


# -- Fig. 8: fixed vs resampled Monte Carlo ------------------------------------------------------------


@experiment(STUDY, "fig8", McResamplingConfig, ref="Fig. 8", figure=figures.mc_resampling,
            title="Fixed vs resampled Monte-Carlo samples along the flow")
def mc_resampling(config: McResamplingConfig, ctx: RunContext) -> Result:
    """The same flow twice from the same init: fixed MC samples, and fresh samples at every Euler step."""
    law = config.theta_law()
    taus = _taus(config.tau_max, config.record_every)
    kw = {**_theory_kw(config), "solver": "euler"}

    def compute(mode: str) -> dict[str, np.ndarray]:
        tr = theory.predict(config.activation, law, config.L, config.H, taus, seed=_seed(ctx, "init"),
                            mc_seed=_seed(ctx, "mc"), resample=(mode == "resampled"), device=ctx.device, **kw)
        return tr.to_arrays()

    done = run_units(ctx, ["fixed", "resampled"], lambda u: compute(u.key), "flows")
    fixed = Trajectory.from_arrays(done["fixed"], source="fixed")
    res = Trajectory.from_arrays(done["resampled"], source="resampled")
    diff = fixed["m"][:, 0, 0] - res["m"][:, 0, 0]  # head 1, all features, (T, F)
    arrays = {**{f"fixed/{k}": v for k, v in done["fixed"].items()},
              **{f"resampled/{k}": v for k, v in done["resampled"].items()}, "diff_m1": diff}
    summary = {f"max_abs_diff_m1{f + 1}": float(np.abs(diff[:, f]).max()) for f in range(diff.shape[1])}
    frames = [fixed.to_frame(), res.to_frame()]
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


# -- Fig. 11: cosine similarity of two heads over (ν1, ν2) ----------------------------------------------


@experiment(STUDY, "fig11", CosineGridConfig, ref="Fig. 11", figure=figures.cosine_grid,
            title="Final cosine similarity of two heads over (ν1, ν2), softmax")
def cosine_grid(config: CosineGridConfig, ctx: RunContext) -> Result:
    """Train H = 2 heads (theory) at each (ν1, ν2) of the grid; final cosine similarity of the keys and of m."""
    keys = [(a, b) for a in config.nu1s for b in config.nu2s]

    def compute(key):
        law = config.theta_law(nu1=key[0], nu2=key[1])
        tr = theory.predict(config.activation, law, config.L, config.H, [0.0, config.tau_max],
                            seed=_seed(ctx, "init"), mc_seed=_seed(ctx, "mc"), device=ctx.device,
                            **_theory_kw(config))
        q, m = tr["q"][-1, 0], tr["m"][-1, 0]
        return {"cos_q": np.array(q[0, 1] / np.sqrt(q[0, 0] * q[1, 1])),
                "cos_m": np.array(m[0] @ m[1] / (np.linalg.norm(m[0]) * np.linalg.norm(m[1]))),
                "m": m, "q": q}

    done = run_units(ctx, keys, lambda u: compute(u.key), "(ν1, ν2) grid")
    rows = [{"nu1": a, "nu2": b, "cos_q": float(o["cos_q"]), "cos_m": float(o["cos_m"])} for (a, b), o in done.items()]
    table = pd.DataFrame(rows)
    grid = table.pivot(index="nu1", columns="nu2", values="cos_q").to_numpy()
    arrays = {"nu1s": np.asarray(config.nu1s), "nu2s": np.asarray(config.nu2s), "cos_q": grid,
              "cos_m": table.pivot(index="nu1", columns="nu2", values="cos_m").to_numpy()}
    summary = {"monotone_up_in_nu1": analysis.monotone_fraction(grid, axis=0, increasing=True),
               "monotone_down_in_nu2": analysis.monotone_fraction(grid, axis=1, increasing=False),
               "cos_min": float(grid.min()), "cos_max": float(grid.max())}
    return Result(table, arrays, summary)


from attnlab.specialization import phases  # noqa: E402,F401  (registers the Prop. III.3 / III.4 experiments)
