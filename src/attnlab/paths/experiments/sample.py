"""``paths.sample``: posterior samples of a stored run's network (Eqs. (8)/(19)), or more samples for a stored
sampling run.

The public code samples a stored result with ``SAMPLE_posterior.py -f RESULT`` and concatenates new samples to the
ones stored (App. F). Here the config names a stored run by its id, ``source`` (16 hex digits, in the same store):

* a Markov run (``paths.fig2c``, ``fig2e``, ``fig5c``, ``generic``, ``fig2d``, ``fig5b``): its problem — tokens,
  heads and τ, rebuilt bit for bit from its stored config and seed — is sampled at ``sample_widths`` by fresh chains
  (``sampler``, ``chains``, ``burn_in``, ``samples``, ``thin`` of this config);
* a ``paths.sample`` run: its chains go on. Their full state (weights, the sampler's adaptation, the kept samples'
  traces and running sums, and each width's random stream) is stored in its arrays (``state_N<N>/…``); ``samples``
  more kept samples per chain are appended to the stored ones, at its widths, with its sampler keys (``sampler``,
  ``chains``, ``thin``, ``hmc_*``, ``nuts_depth``, ``mass_matrix``, ``sample_min_tau``: this config's are not used).
  The result is bit for bit the one run of the summed length gives (:meth:`GibbsSampler.extend`).

Without ``source`` the problem is the one this config's Markov keys describe (a first sampling run); with a source,
the problem keys of this config are not used (the source's are). Each width draws from its own stream
``sampler_N<N>``, so a width's chains do not depend on the other widths. ``sample_min_tau`` floors the sampling
temperature as the public code's ``--minimum_sampling_temperature``.

The run finds the store from its own directory (``<store>/runs/<experiment>/<id>``).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import torch
from pydantic import Field

from attnlab.core.config import ConfigError, resolve_from
from attnlab.core.context import RunContext
from attnlab.core.experiment import Experiment, Result
from attnlab.core.registry import get
from attnlab.core.rng import Streams
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Units
from attnlab.paths import costs, memory, outputs, summaries
from attnlab.paths.configs import MarkovConfig
from attnlab.paths.experiments.common import make_sampler, sampling_tau
from attnlab.paths.experiments.markov import STUDY, markov_problem
from attnlab.paths.keys import width_key
from attnlab.paths.theory import kernels
from attnlab.paths.train import gibbs as train

KEY = f"{STUDY}.sample"
CHAIN_KEYS = ("sampler", "chains", "thin", "hmc_steps", "hmc_accept", "nuts_depth", "mass_matrix", "sample_min_tau")
TRACES = ("U_tr", "f_tr", "mse_tr")  # lists of per-sample tensors (C, …), stored stacked along axis 1
SCALARS = ("sweeps", "adapt_until", "leapfrogs", "da.t", "mass.n")


class SampleConfig(MarkovConfig):
    """Posterior samples of a stored run's network (``source`` = its id), more samples for a stored paths.sample
    run's chains (appended, the same draws as one longer run), or, without a source, of this config's Markov task."""

    source: str | None = Field(None, pattern=r"^[0-9a-f]{16}$", description="id of the stored run whose network "
                               "is sampled (a Markov run) or whose chains go on (a paths.sample run); null: this "
                               "config's problem", json_schema_extra={"allowed": "null, or the 16-hex id of a "
                                                                      "finished run in the same store"})
    sample_widths: tuple[int, ...] = Field((10,), min_length=1, description="widths N sampled (a continued run "
                                           "keeps its own)", json_schema_extra={"allowed": "one or more integers "
                                                                                "each > 0"})
    scales = {"quick": {"chains": 2, "burn_in": 1000, "samples": 500, "thin": 4}, "paper": {}}


# -- the store ---------------------------------------------------------------------------------------------------


def stored_run(ctx: RunContext, run_id: str) -> tuple[dict[str, Any], Result]:
    """(config.json, result) of the finished, intact run ``run_id`` of the store this run is in."""
    from attnlab.core.runs import RunStore, load_result

    root = Path(ctx.run_dir).resolve().parents[2]  # <store>/runs/<experiment>/<id>
    if not (root / "index.sqlite").exists():
        raise ConfigError(f"key 'source' = {run_id!r}: this run is not in a run store ({root}), so no run to read")
    store = RunStore(root)
    row = store.status(run_id)
    if row is None:
        raise ConfigError(f"key 'source' = {run_id!r}: no run with that id in the store {root}")
    if store.reusable(row) is None:
        raise ConfigError(f"key 'source' = {run_id!r}: run {row['experiment']} is {row['status']}, not a finished, "
                          "intact run")
    return load_result(store.dir_of(row))


def problem_source(config: SampleConfig, ctx: RunContext) -> tuple[MarkovConfig, dict | None]:
    """The config whose Markov problem is sampled, and the previous sampling run's arrays (None: fresh chains)."""
    if config.source is None:
        return config, None
    meta, result = stored_run(ctx, config.source)
    exp = get(meta["experiment"])
    src = resolve_from(exp.config, meta["config"])
    if meta["experiment"] == KEY:
        base, _ = problem_source(src, ctx)
        return base, {"config": src, "arrays": result.arrays}
    if not isinstance(src, MarkovConfig):
        raise ConfigError(f"key 'source' = {config.source!r}: run of {meta['experiment']}, not of the Markov task "
                          f"(paths.fig2c, fig2e, fig5c, generic, fig2d, fig5b) or {KEY}")
    return src, None


# -- a sampler's state as arrays -----------------------------------------------------------------------------------


def pack(state: dict, generator: torch.Generator) -> dict[str, np.ndarray]:
    """A sampler's ``state_dict`` and its generator's state as flat numpy arrays (names ``V#0``, ``da.mu``, …)."""
    out: dict[str, np.ndarray] = {"rng": generator.get_state().numpy()}
    for k, v in state.items():
        if v is None:
            continue
        if k in TRACES:
            out[k] = torch.stack(v, 1).cpu().numpy()
        elif isinstance(v, list):
            out.update({f"{k}#{i}": t.cpu().numpy() for i, t in enumerate(v)})
        elif isinstance(v, dict):
            out.update({f"{k}.{s}": np.asarray(t.cpu() if torch.is_tensor(t) else t) for s, t in v.items()})
        else:
            out[k] = np.asarray(v.cpu() if torch.is_tensor(v) else v)
    return out


def unpack(arrays: dict[str, np.ndarray], device: torch.device) -> tuple[dict, torch.Tensor]:
    """Inverse of :func:`pack`: (state_dict, generator state)."""
    state: dict[str, Any] = {"b1": None}
    lists: dict[str, dict[int, torch.Tensor]] = {}
    for k, a in arrays.items():
        if k == "rng":
            continue
        if k in SCALARS:
            value: Any = a.item()
        else:
            value = torch.from_numpy(np.array(a)).to(device)
        if k in TRACES:
            state[k] = list(value.unbind(1))
        elif "#" in k:
            name, i = k.split("#")
            lists.setdefault(name, {})[int(i)] = value
        elif "." in k:
            name, sub = k.split(".")
            state.setdefault(name, {})[sub] = value
        else:
            state[k] = value
    state.update({name: [d[i] for i in sorted(d)] for name, d in lists.items()})
    return state, torch.from_numpy(np.array(arrays["rng"]))


def _state_arrays(arrays: dict[str, np.ndarray], N: int) -> dict[str, np.ndarray]:
    prefix = f"state_N{N}/"
    return {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}


# -- the experiment ------------------------------------------------------------------------------------------------


def sample(config: SampleConfig, ctx: RunContext) -> Result:
    """Chains at every sampled width: fresh on the source's problem, or the previous sampling run's, continued."""
    base, prev = problem_source(config, ctx)
    src_ctx = RunContext(ctx.run_dir, base, ctx.device, Streams(base.seed, ctx.device))  # the source's streams
    pb = markov_problem(base, src_ctx)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0, base.kernel_mode, dtype=getattr(torch, base.solve_precision))
    chain_from = prev["config"] if prev is not None else config
    chain = SimpleNamespace(**{k: getattr(chain_from, k) for k in CHAIN_KEYS}, layer_widths=base.layer_widths)
    widths = prev["config"].sample_widths if prev is not None else config.sample_widths
    tau = sampling_tau(chain, base.tau)
    units = Units(ctx)
    obs: dict[str, list] = {k: [] for k in ("U", "accuracy", "gen_error", "f_mean", "f_var", "rhat", "ess",
                                            "train_mse", "tau")}
    arrays: dict[str, np.ndarray] = {}
    summary: dict[str, Any] = {"n_paths": pb.n, "tau_sampled": tau, "continued": float(prev is not None)}
    for N in widths:
        g = ctx.rng(f"sampler_N{N}")

        def compute(u, N=N, g=g):
            state = u.resume
            if prev is not None:
                old, rng = unpack(_state_arrays(prev["arrays"], N), ctx.device)
                kept = len(old.get("U_tr", []))
                burn_in, total = old["sweeps"] - kept * chain.thin, kept + config.samples
                if state is None:  # a resumed run's stream was restored with its checkpoint
                    g.set_state(rng)
                    state = old
            else:
                burn_in, total = config.burn_in, config.samples
            s = make_sampler(chain, pb, N, tau, g, kern, state=state)
            with ctx.progress(burn_in + total * chain.thin, f"{chain.sampler} N={N} ({chain.chains} chains)") as bar:
                stats = s.run(burn_in, total, chain.thin, progress=bar.update, checkpoint=lambda: u.save(s.state_dict))
            return stats, pack(s.state_dict(), g)

        stats, packed = units.get(f"{chain.sampler}_N{N}", compute)
        train.add_stats(obs, stats, pb.y_test, tau)
        arrays.update({f"state_N{N}/{k}": v for k, v in packed.items()})
        summary[width_key("kept", N)] = int(stats.U_trace.shape[1])
        summary[width_key("sweeps", N)] = int(stats.sweeps)
    sim = Trajectory(np.asarray(widths, float), {k: np.asarray(v) for k, v in obs.items()}, time_name="N",
                     source="simulation")
    arrays.update(sim.to_arrays("sim_"))
    arrays["y_test"] = pb.y_test.cpu().numpy()
    for i, N in enumerate(sim.time):
        for k, name in (("acc_sample", "accuracy"), ("gen_error_sample", "gen_error"), ("rhat", "rhat"),
                        ("ess", "ess")):
            summary[width_key(k, N)] = float(sim[name][i])
    frames = sim.select(["accuracy", "gen_error", "U", "rhat", "ess"]).to_frame()
    return Result(pd.DataFrame(frames), arrays, summary)


SAMPLE = Experiment(
    STUDY, "sample", SampleConfig, sample, ref="App. F",
    title="Posterior samples of a stored run's network, appended to a stored sampling run",
    memory=memory.markov, cost=costs.sample, outputs=outputs.SAMPLE, summary=summaries.SampleSummary)
