"""Theory trajectories of paper 0: the heads m_h(τ) in feature space (Figs. 2-4, 12-19) and the flow with fixed
vs resampled Monte-Carlo samples (Fig. 8, App. B).

Randomness: the run's named streams ``init`` (the theory's init, App. B: m ~ N(0, 10^-4), r = ηI + noise) and
``mc`` (Monte-Carlo samples), offset by each panel's seed. Each panel is one unit of work (resumable).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, run_units
from attnlab.specialization import costs, figures, memory, outputs, summaries, theory
from attnlab.specialization.configs import McResamplingConfig, Panel, TrajectoriesConfig, record_times
from attnlab.specialization.experiments import analysis

STUDY = "specialization"


def feature_time_key(feature: int, panel: int) -> str:
    """Summary key of τ_f(0.5) (first τ with ||m_{:,f}||/√H > 0.5) of ``feature`` (1-based) in ``panel``."""
    return f"tau_feature{feature}_{panel}"


# -- Trajectory figures (2-4, 12-19) ------------------------------------------------------------------


def trajectories(config: TrajectoriesConfig, ctx: RunContext) -> Result:
    """Theory trajectories of the heads m_h(τ) in feature space, one panel per entry of ``panels``."""
    taus = record_times(config.tau_max, config.record_every)

    def compute(u: Unit) -> dict[str, np.ndarray]:
        i = u.key
        p = config.panels[i]
        law = config.theta_law(nu=p.nu, nu1=p.nu1, nu2=p.nu2)
        tr = theory.predict(p.activation, law, config.L, p.H, taus, seed=ctx.seed("init", p.seed) % 2**31,
                            mc_seed=ctx.seed("mc", p.seed) % 2**31, device=ctx.device, **config.theory_kwargs())
        return tr.to_arrays()

    done = run_units(ctx, list(range(len(config.panels))), compute, "panels")
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
            summary[feature_time_key(f + 1, i)] = analysis.first_time(np.linalg.norm(m[..., f], axis=-1)
                                                                     / np.sqrt(p.H), tr.time, 0.5)
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


def _panels(**grid: Any) -> tuple[Panel, ...]:
    keys = list(grid)
    rows = np.broadcast_arrays(*[np.asarray(grid[k], dtype=object) for k in keys])
    return tuple(Panel(**dict(zip(keys, vals, strict=True))) for vals in zip(*[r.ravel() for r in rows], strict=True))


_NU_GRID = (0.5, 2.0, 8.0)
# Specialization at L = 4-5 takes τ ~ 10^2-10^3 (Figs. 2-4); the adaptive solver follows the same
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



def _trajectory_figure(name: str, ref: str, title: str, defaults: dict[str, Any]) -> Experiment:
    """One trajectory figure: :func:`trajectories` under its own config (the figure's panels and law as defaults)."""
    config = TrajectoriesConfig.with_defaults(f"{name.capitalize()}Config", scales={"quick": _quick, "paper": {}},
                                              doc=f"{ref}: {title}.", **{**_TRAJ_DEFAULTS, **defaults})
    return Experiment(STUDY, name, config, trajectories, ref=ref, title=title, figure=figures.trajectories,
                      memory=memory.panels, cost=costs.trajectories,
                      outputs=outputs.TRAJECTORY[name], summary=summaries.TrajectorySummary)


#: Figs. 2-4, 19, 12-14, 16-18 by name (``TRAJECTORY_FIGURES["fig2"]``), in the order of :data:`_TRAJ_FIGS`
TRAJECTORY_FIGURES: dict[str, Experiment] = {name: _trajectory_figure(name, *spec) for name, spec in _TRAJ_FIGS.items()}


# -- Fig. 8: fixed vs resampled Monte Carlo ------------------------------------------------------------


def mc_resampling(config: McResamplingConfig, ctx: RunContext) -> Result:
    """The same flow twice from the same init: fixed MC samples, and fresh samples at every Euler step."""
    law = config.theta_law()
    taus = record_times(config.tau_max, config.record_every)
    kw = {**config.theory_kwargs(), "solver": "euler"}

    def compute(u: Unit) -> dict[str, np.ndarray]:
        mode = u.key
        tr = theory.predict(config.activation, law, config.L, config.H, taus, seed=ctx.seed("init") % 2**31,
                            mc_seed=ctx.seed("mc") % 2**31, resample=(mode == "resampled"), device=ctx.device, **kw)
        return tr.to_arrays()

    done = run_units(ctx, ["fixed", "resampled"], compute, "flows")
    fixed = Trajectory.from_arrays(done["fixed"], source="fixed")
    res = Trajectory.from_arrays(done["resampled"], source="resampled")
    diff = fixed["m"][:, 0, 0] - res["m"][:, 0, 0]  # head 1, all features, (T, F)
    arrays = {**{f"fixed/{k}": v for k, v in done["fixed"].items()},
              **{f"resampled/{k}": v for k, v in done["resampled"].items()}, "diff_m1": diff}
    summary = {f"max_abs_diff_m1{f + 1}": float(np.abs(diff[:, f]).max()) for f in range(diff.shape[1])}
    frames = [fixed.to_frame(), res.to_frame()]
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


FIG8 = Experiment(
    STUDY, "fig8", McResamplingConfig, mc_resampling,
    ref="Fig. 8",
    figure=figures.mc_resampling,
    title="Fixed vs resampled Monte-Carlo samples along the flow",
    memory=memory.one_flow,
    cost=costs.mc_resampling,
    outputs=outputs.FIG8,
    summary=summaries.McResamplingSummary,
)
