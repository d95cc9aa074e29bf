"""The public code's Adam options: ``--scheduler_patience`` / ``--lr_reduce_factor`` (torch's ReduceLROnPlateau on
max|∂S/∂U|, min_lr 0.001) as ``adam_patience`` / ``adam_lr_factor`` / ``adam_min_lr``, and ``--order_parameter_seed``
as ``init_seed``; each new key at its default keeps the run id."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from attnlab.core.config import resolve
from attnlab.core.context import RunContext
from attnlab.core.rng import Streams
from attnlab.paths.configs import MarkovConfig
from attnlab.paths.experiments.common import solve_kw
from attnlab.paths.experiments.markov import init_generator
from attnlab.paths.theory import kernels
from attnlab.paths.theory import saddle as theory
from attnlab.paths.theory.optimizers import Plateau

torch.set_num_threads(1)


def test_new_keys_at_their_defaults_keep_the_run_id_and_the_solver_call():
    ref = MarkovConfig()
    same = MarkovConfig(adam_patience=None, adam_lr_factor=0.1, adam_min_lr=1e-3, init_seed=None, sample_min_tau=0.0)
    assert same.hash("paths.fig2c") == ref.hash("paths.fig2c")
    assert "schedule" not in solve_kw(ref)
    sched = MarkovConfig(solver="adam", adam_patience=1000, adam_lr_factor=0.5)
    assert sched.hash("paths.fig2c") != ref.hash("paths.fig2c")
    assert solve_kw(sched)["schedule"] == (1000, 0.5, 1e-3)


def test_plateau_follows_torchs_reduce_lr_on_plateau():
    """The same rates as torch's scheduler (the public code's, factor, patience, min_lr 0.001) on a metric that
    falls, stalls, creeps by less than the 1e-4 relative threshold and falls again."""
    rng = np.random.default_rng(0)
    metric = np.concatenate([np.geomspace(1, 1e-2, 30), np.full(25, 1e-2), 1e-2 * (1 - 5e-5 * np.arange(20)),
                             np.geomspace(1e-2, 1e-5, 40), 1e-5 * (1 + rng.random(60))])
    for patience, factor in ((3, 0.5), (0, 0.1), (7, 0.3)):
        p = torch.nn.Parameter(torch.zeros(1))
        opt = torch.optim.Adam([p], lr=0.1)
        ref = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=factor, patience=patience, min_lr=0.001)
        ours = Plateau(0.1, patience, factor, 0.001)
        got, want = [], []
        for m in metric:
            ref.step(float(m))
            want.append(opt.param_groups[0]["lr"])
            got.append(ours.step(float(m)))
        assert got == want, (patience, factor)
        assert got[0] == 0.1 and min(got) < 0.1 * factor and min(got) >= 0.001  # cut more than once, floored


def test_a_long_patience_is_the_constant_rate_and_a_short_one_changes_the_path(markov_problem):
    pb = markov_problem("all", P=40, P_test=20)
    kern = kernels.PathKernels(pb.Xi, pb.sigma0)
    act = theory.action(pb, kern, 0.01, 10)
    const = theory.solve(act, method="adam", tol=1e-6, lr=0.1)
    long = theory.solve(act, method="adam", tol=1e-6, lr=0.1, schedule=(100_000, 0.1, 1e-3))  # the LOOP_RUN value
    short = theory.solve(act, method="adam", tol=1e-6, lr=0.1, schedule=(10, 0.5, 1e-3), max_iter=20_000)
    assert long.n_iter == const.n_iter and torch.equal(long.U, const.U)
    assert short.converged and short.n_iter != const.n_iter  # measured: 7673 against 517 steps
    assert torch.allclose(short.U, const.U, atol=1e-4)


def test_init_seed_draws_the_perturbed_start_whatever_the_runs_seed(tmp_path):
    def draws(seed: int, init_seed):
        cfg = resolve(MarkovConfig, "quick", {"seed": seed, "init_seed": init_seed})
        ctx = RunContext(Path(tmp_path), cfg, torch.device("cpu"), Streams(cfg.seed))
        return torch.randn(5, generator=init_generator(cfg, ctx), dtype=torch.float64)

    assert torch.equal(draws(0, 10), draws(3, 10))
    assert not torch.equal(draws(0, 10), draws(0, 11))
    assert not torch.equal(draws(0, None), draws(3, None))  # without it, the run's init stream
