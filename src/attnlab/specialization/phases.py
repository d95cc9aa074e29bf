"""Experiments on the two phases of the dynamics (Props. III.3, III.4; spec §3.6, checks T10, T12).

* ``phases``: the unspecialised phase from the theory init — the heads move together along E θ within
  τ = O(1), and do not move at all when E θ = 0 (Gaussian θ).
* ``escape``: the escape time from the unspecialised saddle grows like log D: the flow is started at
  m(0) = m̂/√D, r(0) = I + r̂/√D with m̂, r̂ fixed across D, on sign- and head-symmetrised MC samples so
  that only the O(D^{-1/2}) initial condition breaks the symmetry.
* ``split_time``: τ^s of Fig. 1 over many random inits at D = 10^4: the flow (12) from the empirical order
  parameters of each init (as Fig. 1's theory, which the SGD follows: Prop. III.2), the time the heads split
  and the rate at which their difference grows before it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from attnlab.core.experiment import Result, experiment
from attnlab.core.plotting import COLORS, figure
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.specialization import analysis, theory
from attnlab.specialization.configs import Activation, LawConfig, law_from


class PhasesConfig(LawConfig):
    """Unspecialised phase (Prop. III.3): flip spike and isotropic Gaussian, theory from the paper's init."""

    activation: Activation = "softmax"
    H: int = Field(2, ge=1)
    L: int = Field(10, ge=2)
    tau_max: float = Field(5.0, gt=0)
    record_every: float = Field(0.1, gt=0)
    scales = {"quick": {"n_mc": 20_000}, "paper": {}}


class EscapeConfig(LawConfig):
    """Escape time from the saddle vs D (Prop. III.4)."""

    activations: tuple[Activation, ...] = Field(("softmax", "bsoftmax"), min_length=1)
    H: int = Field(2, ge=2)
    L: int = Field(10, ge=2)
    Ds: tuple[float, ...] = Field((1e2, 1e3, 1e4, 1e5), min_length=2)
    threshold: float = Field(0.2, gt=0, description="τ_s: first τ with |m_12 − m_22| above this")
    tau_max: float = Field(300.0, gt=0)
    record_every: float = Field(0.25, gt=0)
    solver: Literal["euler", "adaptive"] = "adaptive"
    scales = {"quick": {"n_mc": 10_000, "tau_max": 100.0, "record_every": 0.5}, "paper": {}}


class SplitTimeConfig(LawConfig):
    """τ^s of Fig. 1 (flip ν = (2, 2), softmax, L = 10, H = 2) at D = 10^4 over ``seeds`` random inits."""

    activation: Activation = "softmax"
    H: int = Field(2, ge=2)
    L: int = Field(10, ge=2)
    D: int = Field(10_000, ge=8, le=10**9, description="dimension of the random inits (only m(0), q(0), p)")
    seeds: int = Field(32, ge=1, le=1000)
    thresholds: tuple[float, ...] = Field((0.05, 0.2, 0.5), min_length=1,
                                          description="τ^s(a): first τ with |m_12 − m_22| > a")
    tau_max: float = Field(150.0, gt=0)
    record_every: float = Field(0.5, gt=0)
    solver: Literal["euler", "adaptive"] = "adaptive"
    scales = {"quick": {"seeds": 6, "n_mc": 20_000, "tau_max": 100.0}, "paper": {}}


def _phases_figure(result: Result, config: PhasesConfig):
    fig, axes = figure(2, width=3.6, height=3.0)
    for ax, name in zip(axes, ("flip", "gaussian_iso"), strict=True):
        a = {k.split("/", 1)[1]: v for k, v in result.arrays.items() if k.startswith(name + "/")}
        tr = Trajectory.from_arrays(a)
        m = tr["m"][:, 0]
        for h in range(m.shape[1]):
            for f in range(m.shape[2]):
                ax.plot(tr.time, m[:, h, f], color=COLORS[f], ls="-" if h == 0 else "--",
                        label=f"$m_{{{h + 1}{f + 1}}}$")
        ax.set_xlabel(r"$\tau$")
        ax.set_title(f"{name}: E θ {'≠' if name == 'flip' else '='} 0", fontsize=9)
        ax.legend(fontsize=7)
    return fig


@experiment("specialization", "phases", PhasesConfig, ref="Prop. III.3",
            title="Unspecialised phase: heads move together along E θ (flip), not at all if E θ = 0",
            figure=_phases_figure)
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


def _escape_init(H: int, F: int, D: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """m(0) = m̂/√D, q(0) = m mᵀ + r rᵀ with r = I + r̂/√D; m̂, r̂ ~ N(0, 1) drawn once from ``seed``."""
    g = torch.Generator().manual_seed(seed)
    m_hat = torch.randn(H, F, generator=g, dtype=torch.float64)
    r_hat = torch.randn(H, H, generator=g, dtype=torch.float64)
    m = m_hat / np.sqrt(D)
    r = torch.eye(H, dtype=torch.float64) + r_hat / np.sqrt(D)
    return m, m @ m.T + r @ r.T


def _escape_figure(result: Result, config: EscapeConfig):
    fig, ax = figure(width=3.8, height=3.0)
    for k, (act, sub) in enumerate(result.metrics.groupby("activation", sort=False)):
        ax.semilogx(sub["D"], sub["tau_s"], "o-", color=COLORS[k], label=act)
    ax.set_xlabel("D")
    ax.set_ylabel(r"$\tau_s$ (first $|m_{12}-m_{22}| > $" + f"{config.threshold:g})")
    ax.legend(fontsize=8)
    return fig


@experiment("specialization", "escape", EscapeConfig, ref="Prop. III.4",
            title="Escape from the unspecialised saddle: τ_s grows like log D", figure=_escape_figure)
def escape(config: EscapeConfig, ctx: RunContext) -> Result:
    """The flow from the same O(D^{-1/2}) init direction at several D, on symmetrised MC samples (spec T12)."""
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
            summary[f"tau_s_{act}_D{D:g}"] = tau_s
        ts = np.array([r["tau_s"] for r in rows if r["activation"] == act])
        inc = np.diff(ts) / np.diff(np.log10(config.Ds))
        summary[f"increasing_{act}"] = float(np.all(np.diff(ts) > 0))
        summary[f"slope_spread_{act}"] = float((inc.max() - inc.min()) / inc.mean()) if np.all(inc > 0) else np.nan
    return Result(pd.DataFrame(rows), arrays, summary)


def _split_figure(result: Result, config: SplitTimeConfig):
    fig, ax = figure(width=3.8, height=3.0)
    t, gap = result.arrays["time"], result.arrays["gap"]
    for s in range(gap.shape[1]):
        ax.semilogy(t, np.maximum(gap[:, s], 1e-6), color=COLORS[0], lw=0.8, alpha=0.6)
    for a in config.thresholds:
        ax.axhline(a, color="0.5", ls=":", lw=0.8)
    ax.set_xlabel(r"$\tau$")
    ax.set_ylabel(r"$|m_{12}-m_{22}|$" + f" (D = {config.D:g}, {gap.shape[1]} inits)")
    return fig


@experiment("specialization", "split_time", SplitTimeConfig, ref="Fig. 1 text, Prop. III.4", figure=_split_figure,
            title="τ^s at D = 10^4: when the heads of Fig. 1 split, over random inits")
def split_time(config: SplitTimeConfig, ctx: RunContext) -> Result:
    """The flow from the order parameters m(0) = K K*ᵀ, q(0) = K Kᵀ, p = K* K*ᵀ of ``seeds`` random inits at D
    (spikes and keys drawn as the SGD's, eqs. (1) and §2.3), p-corrected; τ^s per seed and threshold, and the
    growth rate λ of |m_12 − m_22| while it is between 2× its start and 0.1 (log-linear fit)."""
    from attnlab.specialization.data import sample_spikes
    from attnlab.specialization.model import init_keys, order_parameters

    law = config.theta_law()
    g = torch.Generator().manual_seed(ctx.seed("init") % 2**31)
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
    for a in config.thresholds:
        col = table[f"tau_s_{a:g}"]
        summary[f"split_fraction_{a:g}"] = float(np.isfinite(col).mean())
        for stat in ("median", "min", "max"):
            summary[f"tau_s_{a:g}_{stat}"] = float(getattr(col, stat)()) if np.isfinite(col).any() else np.nan
    return Result(table, {**tr.to_arrays(), "gap": gap}, summary)


def _growth_rate(t: np.ndarray, gap: np.ndarray) -> float:
    """Slope of log gap over the part of the trajectory where 2·gap(0) < gap < 0.1 (NaN if too short)."""
    keep = (gap > 2 * gap[0]) & (gap < 0.1)
    if keep.sum() < 3:
        return float("nan")
    return float(np.polyfit(t[keep], np.log(gap[keep]), 1)[0])
