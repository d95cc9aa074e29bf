"""Experiments on the two phases of the dynamics (Props. III.3, III.4; App. A 2).

* ``phases``: the unspecialised phase from the theory init — the heads move together along E θ within
  τ = O(1), and do not move at all when E θ = 0 (Gaussian θ).
* ``escape``: the escape time from the unspecialised saddle grows like log D: the flow is started at
  m(0) = m̂/√D, r(0) = I + r̂/√D with m̂, r̂ fixed across D, on sign- and head-symmetrised MC samples so
  that only the O(D^{-1/2}) initial condition breaks the symmetry.
* ``split_time``: τ^s of Fig. 1 over many random inits at D = 10^4: the flow (12) from the empirical order
  parameters of each init (as Fig. 1's theory, which the SGD follows: Prop. III.2), the time the heads split
  and the rate at which their difference grows before it, next to the curvature of (10) that sets it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Experiment, Result
from attnlab.core.rng import generator
from attnlab.core.runs import RunContext
from attnlab.specialization import costs, figures, memory, outputs, summaries, theory
from attnlab.specialization.configs import EscapeConfig, PhasesConfig, SplitTimeConfig, law_from
from attnlab.specialization.data import sample_spikes
from attnlab.specialization.data.laws import symsqrt
from attnlab.specialization.experiments import analysis
from attnlab.specialization.model import init_keys, order_parameters
from attnlab.specialization.theory.hessian import hessian_m

STUDY = "specialization"


def escape_key(name: str, activation: str, D: float | None = None) -> str:
    """Summary key of ``escape``: ``name`` 'tau_s' (per ``D``), 'increasing' or 'slope_spread' for ``activation``."""
    return f"{name}_{activation}" + (f"_D{D:g}" if D is not None else "")


def split_key(threshold: float, stat: str) -> str:
    """Summary key of ``split_time``: τ^s(threshold)'s ``stat`` ('median', 'min', 'max') or, with ``stat='fraction'``,
    the fraction of inits that split by the horizon."""
    return f"split_fraction_{threshold:g}" if stat == "fraction" else f"tau_s_{threshold:g}_{stat}"


def phases(config: PhasesConfig, ctx: RunContext) -> Result:
    """Theory from m ~ N(0, 1e-4), r = I for the flip spike (E θ ≠ 0) and the isotropic Gaussian (E θ = 0)."""
    taus = np.linspace(0, config.tau_max, round(config.tau_max / config.record_every) + 1)
    out, frames, arrays = {}, [], {}
    for name in ("flip", "gaussian_iso"):
        law = law_from(name, config.F, config.nu, config.nu1, config.nu2)
        tr = theory.predict(config.activation, law, config.L, config.H, taus, seed=ctx.seed("init") % 2**31,
                            mc_seed=ctx.seed("mc") % 2**31, n_mc=config.n_mc, dt=config.dt, solver=config.solver,
                            eta=config.eta, init_noise_var=config.init_noise_var, device=ctx.device)
        out[name] = tr
        frames.append(tr.to_frame().assign(law=name))
        arrays.update({f"{name}/{k}": v for k, v in tr.to_arrays().items()})
    m = out["flip"]["m"][:, 0]  # (T, H, F)
    t = out["flip"].time
    mean1 = m[:, :, 0].mean(-1)
    split = np.abs(m[:, 0, 1] - m[:, 1, 1]) if config.H > 1 else np.zeros_like(t)
    g = out["gaussian_iso"]["m"][:, 0]
    summary = {
        "dm1_at_tau1": float(np.interp(1.0, t, mean1) - mean1[0]),
        "m1_at_tau5": float(np.interp(min(5.0, t[-1]), t, mean1)),
        "split_change": float(np.abs(split - split[0]).max()),
        "gaussian_norm_ratio": float(np.linalg.norm(g[-1]) / np.linalg.norm(g[0])),
    }
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


PHASES = Experiment(
    STUDY, "phases", PhasesConfig, phases,
    ref="Prop. III.3",
    title="Unspecialised phase: heads move together along E θ (flip), not at all if E θ = 0",
    figure=figures.phases,
    memory=memory.one_flow,
    cost=costs.phases,
    outputs=outputs.PHASES,
    summary=summaries.PhasesSummary,
)


def _escape_init(H: int, F: int, D: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """m(0) = m̂/√D, q(0) = m mᵀ + r rᵀ with r = I + r̂/√D; m̂, r̂ ~ N(0, 1) drawn once from ``seed``."""
    g = generator(seed)
    m_hat = torch.randn(H, F, generator=g, dtype=torch.float64)
    r_hat = torch.randn(H, H, generator=g, dtype=torch.float64)
    m = m_hat / np.sqrt(D)
    r = torch.eye(H, dtype=torch.float64) + r_hat / np.sqrt(D)
    return m, m @ m.T + r @ r.T


def escape(config: EscapeConfig, ctx: RunContext) -> Result:
    """The flow from the same O(D^{-1/2}) init direction at several D, on symmetrised MC samples (Prop. III.4)."""
    law = config.theta_law()
    taus = np.linspace(0, config.tau_max, round(config.tau_max / config.record_every) + 1)
    inits = [_escape_init(config.H, config.F, D, ctx.seed("init") % 2**31) for D in config.Ds]
    m0 = torch.stack([m for m, _ in inits])
    q0 = torch.stack([q for _, q in inits])
    rows, arrays, summary = [], {}, {}
    for act in config.activations:
        tr = theory.predict(act, law, config.L, config.H, taus, m0=m0, q0=q0, symmetrize=True, head_cyclic=True,
                            mc_seed=ctx.seed("mc") % 2**31, n_mc=config.n_mc, solver=config.solver, dt=config.dt,
                            device=ctx.device)
        arrays.update({f"{act}/{k}": v for k, v in tr.to_arrays().items()})
        for i, D in enumerate(config.Ds):
            tau_s = analysis.specialization_time(tr["m"][:, i], tr.time, config.threshold)
            rows.append({"activation": act, "D": D, "tau_s": tau_s})
            summary[escape_key("tau_s", act, D)] = tau_s
        ts = np.array([r["tau_s"] for r in rows if r["activation"] == act])
        inc = np.diff(ts) / np.diff(np.log10(config.Ds))
        summary[escape_key("increasing", act)] = float(np.all(np.diff(ts) > 0))
        spread = float((inc.max() - inc.min()) / inc.mean()) if np.all(inc > 0) else np.nan
        summary[escape_key("slope_spread", act)] = spread
    return Result(pd.DataFrame(rows), arrays, summary)


ESCAPE = Experiment(
    STUDY, "escape", EscapeConfig, escape,
    ref="Prop. III.4",
    title="Escape from the unspecialised saddle: τ_s grows like log D",
    figure=figures.escape,
    memory=memory.escape,
    cost=costs.escape,
    outputs=outputs.ESCAPE,
    summary=summaries.EscapeSummary,
)


def split_time(config: SplitTimeConfig, ctx: RunContext) -> Result:
    """The flow from the order parameters m(0) = K K*ᵀ, q(0) = K Kᵀ, p = K* K*ᵀ of ``seeds`` random inits at D
    (spikes and keys drawn as the SGD's, Eq. (1) and Sec. II), p-corrected; τ^s per seed and threshold, and the
    growth rate λ of |m_12 − m_22| while it is between 2× its start and 0.1 (log-linear fit)."""
    law = config.theta_law()
    g = generator(ctx.seed("init") % 2**31)
    ops = [order_parameters(init_keys(config.H, config.D, generator=g, eta=config.eta),
                            sample_spikes(law.F, config.D, generator=g)) for _ in range(config.seeds)]
    taus = np.linspace(0, config.tau_max, round(config.tau_max / config.record_every) + 1)
    tr = theory.predict(config.activation, law, config.L, config.H, taus, m0=torch.stack([o.m for o in ops]),
                        q0=torch.stack([o.q for o in ops]), p=torch.stack([o.p for o in ops]),
                        mc_seed=ctx.seed("mc") % 2**31, n_mc=config.n_mc, solver=config.solver, dt=config.dt,
                        device=ctx.device)
    gap = np.abs(tr["m"][:, :, 0, 1] - tr["m"][:, :, 1, 1])  # (T, S): the heads' difference along f = 2
    rows = []
    for s in range(config.seeds):
        row = {"seed": s, "gap0": float(gap[0, s]), "rate": _growth_rate(tr.time, gap[:, s])}
        row.update({f"tau_s_{a:g}": analysis.first_time(gap[:, s], tr.time, a) for a in config.thresholds})
        rows.append(row)
    table = pd.DataFrame(rows)
    summary = {"D": config.D, "seeds": config.seeds, "tau_max": config.tau_max,
               "gap0_median": float(table["gap0"].median()), "rate_median": float(table["rate"].median())}
    prep = theory.mc_samples(law, config.L, config.H, config.n_mc, seed=ctx.seed("mc") % 2**31).prepare(None)
    summary["saddle_rate"] = _split_rate(config.activation, prep, np.zeros((config.H, config.F)),
                                         np.zeros((config.H, config.H)))
    at = min(10.0, config.tau_max)
    i = int(np.argmin(np.abs(tr.time - at)))
    summary.update(plateau_tau=float(tr.time[i]), plateau_rate=_split_rate(config.activation, prep,
                                                                           tr["m"][i].mean(0), tr["rr"][i].mean(0)))
    for a in config.thresholds:
        col = table[f"tau_s_{a:g}"]
        summary[split_key(a, "fraction")] = float(np.isfinite(col).mean())
        for stat in ("median", "min", "max"):
            summary[split_key(a, stat)] = float(getattr(col, stat)()) if np.isfinite(col).any() else np.nan
    return Result(table, {**tr.to_arrays(), "gap": gap}, summary)


SPLIT_TIME = Experiment(
    STUDY, "split_time", SplitTimeConfig, split_time,
    ref="Fig. 1 text, Prop. III.4",
    figure=figures.split_time,
    title="τ^s at D = 10^4: when the heads of Fig. 1 split, over random inits",
    memory=memory.split_time,
    cost=costs.split_time,
    outputs=outputs.SPLIT_TIME,
    summary=summaries.SplitTimeSummary,
)


def _split_rate(activation: str, prep: dict, m: np.ndarray, rr: np.ndarray) -> float:
    """Linear growth rate of m_12 − m_22 under (12): −eᵀ ∇²_m Ẽ e with e = (δ_h1 − δ_h2) ⊗ e_2 / √2, at the
    head-symmetric state (m_h = mean_h m, r = symsqrt of the head-averaged r rᵀ; Lemma III.1's saddle at
    m = r = 0)."""
    H, F = m.shape
    sym = torch.as_tensor(m, dtype=torch.float64).mean(0).expand(H, F).clone()
    rr = torch.as_tensor(rr, dtype=torch.float64)
    diag, off = rr.diagonal().mean(), (rr.sum() - rr.diagonal().sum()) / max(H * (H - 1), 1)
    r = symsqrt(off * torch.ones(H, H, dtype=torch.float64) + (diag - off) * torch.eye(H, dtype=torch.float64))
    e = torch.zeros(H, F, dtype=torch.float64)
    e[0, 1], e[1, 1] = 2**-0.5, -(2**-0.5)
    return -float(torch.einsum("ab,abcd,cd->", e, hessian_m(activation, prep, H, F, m=sym, r=r), e))


def _growth_rate(t: np.ndarray, gap: np.ndarray) -> float:
    """Slope of log gap over the part of the trajectory where 2·gap(0) < gap < 0.1 (NaN if too short)."""
    keep = (gap > 2 * gap[0]) & (gap < 0.1)
    if keep.sum() < 3:
        return float("nan")
    return float(np.polyfit(t[keep], np.log(gap[keep]), 1)[0])
