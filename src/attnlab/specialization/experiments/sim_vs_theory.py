"""Figs. 1, 9, 10 of paper 0: online SGD at finite D against the gradient flow (12) (Prop. III.2).

The flow starts from the SGD's empirical order parameters m(0) = K K*ᵀ, q(0) = K Kᵀ, p = K* K*ᵀ (App. B), and is
p-corrected at finite D (docs/studies/specialization.md, Notes on the paper). Randomness: the run's named streams
``sgd`` (spikes, keys and data of the simulation), ``mc`` (the flow's Monte-Carlo samples), ``eval`` (the Bayes
risk). Each activation is one unit of work, and its SGD saves its state every ``SAVE_EVERY`` steps (the run's
checkpoint, written at most every 30 s): an interrupted run skips the finished activations and resumes the SGD
where it stopped, to the same result bit for bit (at D = 10^4 one activation's SGD is longer than a slice).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, run_units
from attnlab.specialization import costs, figures, memory, outputs, summaries, theory, train
from attnlab.specialization.configs import ACTIVATIONS, SimVsTheoryConfig, record_times
from attnlab.specialization.experiments import analysis
from attnlab.specialization.theory.bayes import bayes_risk

STUDY = "specialization"
SAVE_EVERY = 50  # SGD steps between offers of its state to the run's checkpoint (which writes at most every 30 s)


def tau_s_key(source: str, activation: str) -> str:
    """Summary key of τ^s (|m_12 − m_22| > 0.2) of ``source`` ('sim' or 'theory') for ``activation``."""
    return f"tau_s_{source}_{activation}"


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
    taus = record_times(config.tau_max, config.record_every)

    def compute(u: Unit) -> dict[str, np.ndarray]:
        act = u.key
        with ctx.progress(round(config.tau_max / config.gamma), f"SGD {act} D={config.D}") as bar:
            sim = train.simulate_sgd(
                law, H=config.H, L=config.L, D=config.D, activation=act, tau_max=config.tau_max,
                gamma=config.gamma, eta=config.eta, batch=config.batch, seeds=[ctx.seed("sgd") % 2**31],
                device=ctx.device, record_taus=taus, progress=lambda t, T: bar.update(t),
                noise_method=None if config.noise_method == "auto" else config.noise_method,
                state=u.resume, on_step=lambda t, state_fn: u.save(state_fn), checkpoint_every=SAVE_EVERY,
            ).trajectory
        th = theory.predict(
            act, law, config.L, config.H, sim.time, m0=sim["m"][0], q0=sim["q"][0], p=sim["p"][0, 0],
            mc_seed=ctx.seed("mc") % 2**31, p_correction=config.p_correction, device=ctx.device,
            **config.theory_kwargs(),
        )
        return {**sim.to_arrays("sim_"), **th.to_arrays("theory_")}

    done = run_units(ctx, list(config.activations), compute, "activations")
    arrays, frames, summary = {}, [], {}
    for act in config.activations:
        sim = Trajectory.from_arrays(done[act], "sim_", source="simulation")
        th = Trajectory.from_arrays(done[act], "theory_", source="theory")
        arrays.update({f"{act}/{k}": v for k, v in done[act].items()})
        frames += [sim.to_frame().assign(activation=act), th.to_frame().assign(activation=act)]
        summary.update({f"{k}_{act}": v for k, v in analysis.sim_theory_deviation(sim, th).items()})
        summary[tau_s_key("sim", act)] = analysis.specialization_time(sim["m"][:, 0], sim.time, threshold=0.2)
        summary[tau_s_key("theory", act)] = analysis.specialization_time(th["m"][:, 0], th.time, threshold=0.2)
        summary[f"loss_final_sim_{act}"] = float(sim["loss"][-1].mean())
        summary[f"loss_final_theory_{act}"] = float(th["loss"][-1].mean())
    summary["bayes_risk"] = bayes_risk(law, config.L, 200_000, seed=ctx.seed("eval") % 2**31)[0]
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


FIG1 = Experiment(
    STUDY, "fig1", Fig1Config, sim_vs_theory,
    ref="Fig. 1",
    figure=figures.sim_vs_theory,
    headline=True,
    title="SGD vs theory, softmax (L=10, H=2, flip)",
    memory=memory.sim_vs_theory,
    cost=costs.sim_vs_theory,
    outputs=outputs.FIG1,
    summary=summaries.SimVsTheorySummary,
)
FIG9 = Experiment(
    STUDY, "fig9", Fig9Config, sim_vs_theory,
    ref="Fig. 9",
    figure=figures.sim_vs_theory,
    title="SGD vs theory, three activations (flip)",
    memory=memory.sim_vs_theory,
    cost=costs.sim_vs_theory,
    outputs=outputs.FIG9,
    summary=summaries.SimVsTheorySummary,
)
FIG10 = Experiment(
    STUDY, "fig10", Fig10Config, sim_vs_theory,
    ref="Fig. 10",
    figure=figures.sim_vs_theory,
    title="SGD vs theory, three activations (non-iso Gaussian)",
    memory=memory.sim_vs_theory,
    cost=costs.sim_vs_theory,
    outputs=outputs.FIG10,
    summary=summaries.SimVsTheorySummary,
)
