"""Plumbing shared by the study's experiments: solver options, sampler runs (blocked Gibbs or HMC) at the
sampled widths and the sampling-vs-theory agreement measures (checks B9, B10, C)."""

from __future__ import annotations

from typing import Any

import numpy as np

from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, Units
from attnlab.paths.theory import kernels
from attnlab.paths.train import gibbs as train


def solve_kw(config) -> dict[str, Any]:
    """The solver keys of ``theory.solve``; Adam's plateau schedule only when ``adam_patience`` is set."""
    kw = {"method": config.solver, "tol": config.tol, "max_iter": config.max_iter, "lr": config.adam_lr}
    if getattr(config, "adam_patience", None) is not None:
        kw["schedule"] = (config.adam_patience, config.adam_lr_factor, config.adam_min_lr)
    return kw


def sampling_tau(config, tau: float) -> float:
    """The temperature the chains sample at: max(τ, ``sample_min_tau``) (the public code's minimum)."""
    return max(float(tau), float(getattr(config, "sample_min_tau", 0.0)))


def sample_widths(pb: kernels.Problem, config, ctx: RunContext, units: Units, taus: dict[float, float],
                  kern: kernels.PathKernels, tag: str = "") -> Trajectory | None:
    """Gibbs runs at ``config.sample_widths`` (τ per width from ``taus``), resumable mid-chain."""
    if not config.sample_widths:
        return None
    obs: dict[str, list] = {k: [] for k in ("U", "accuracy", "gen_error", "f_mean", "f_var", "rhat", "ess",
                                            "train_mse", "tau")}
    total = config.burn_in + config.samples * config.thin
    for N in config.sample_widths:
        def compute(u: Unit, N=N):
            s = make_sampler(config, pb, N, sampling_tau(config, taus[N]), ctx.rng("sampler"), kern, state=u.resume)
            with ctx.progress(total, f"{config.sampler} N={N} ({config.chains} chains)") as bar:
                return s.run(config.burn_in, config.samples, config.thin, progress=bar.update,
                             checkpoint=lambda: u.save(s.state_dict))

        stats = units.get(f"{tag}{config.sampler}_N{N}", compute)
        train.add_stats(obs, stats, pb.y_test, sampling_tau(config, taus[N]))
    return Trajectory(np.asarray(config.sample_widths, float), {k: np.asarray(v) for k, v in obs.items()},
                      time_name="N", source="simulation")


def make_sampler(config, pb: kernels.Problem, N: int, tau: float, generator, kern: kernels.PathKernels | None = None,
                 state: dict | None = None) -> train.GibbsSampler:
    """The sampler ``config.sampler`` names: blocked Gibbs, or HMC / NUTS (per-layer widths round(N·r_ℓ))."""
    if getattr(config, "sampler", "gibbs") == "gibbs":
        return train.GibbsSampler(pb, N, tau, config.chains, generator, kern, state=state)
    from attnlab.paths.train.hmc import HMCSampler

    ratios = getattr(config, "layer_widths", None)
    widths = None if ratios is None else [round(N * r) for r in ratios]
    return HMCSampler(pb, N, tau, config.chains, generator, kern, state=state, widths=widths, kernel=config.sampler,
                      steps=config.hmc_steps, target_accept=config.hmc_accept, max_depth=config.nuts_depth,
                      mass_matrix=getattr(config, "mass_matrix", "identity"))


def agreement(sim: Trajectory, th: Trajectory) -> dict[str, np.ndarray]:
    """Sampling vs theory at the sampled widths: the quantities of checks B9, B10 and C."""
    out: dict[str, list] = {k: [] for k in ("acc_diff", "pearson", "f_rel_err", "U_rel_fro", "U_corr", "var_ratio",
                                            "U_gate_b9", "U_gate_b10")}
    for i, N in enumerate(sim.time):
        j = int(np.argmin(np.abs(th.time - N)))
        fs, ft = sim["f_mean"][i], th["f_mean"][j]
        Us, Ut = sim["U"][i], th["U"][j]
        out["acc_diff"].append(abs(sim["accuracy"][i] - th["accuracy"][j]))
        out["pearson"].append(np.corrcoef(fs, ft)[0, 1])
        out["f_rel_err"].append(np.linalg.norm(fs - ft) / np.linalg.norm(ft))
        out["U_rel_fro"].append(np.linalg.norm(Us - Ut) / np.linalg.norm(Ut))
        out["U_corr"].append(np.corrcoef(Us.ravel(), Ut.ravel())[0, 1])
        out["var_ratio"].append(sim["f_var"][i].mean() / th["f_var"][j].mean())
        # ≤ 1 passes the checks' elementwise gates |U_s − U_th| ≤ a|U_th| + b
        out["U_gate_b9"].append(np.max(np.abs(Us - Ut) / (0.15 * np.abs(Ut) + 0.15)))
        out["U_gate_b10"].append(np.max(np.abs(Us - Ut) / (0.07 * np.abs(Ut) + 0.05)))
    return {k: np.asarray(v) for k, v in out.items()}


