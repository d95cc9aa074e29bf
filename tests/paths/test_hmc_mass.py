"""Diagonal mass-matrix adaptation of HMC / NUTS (``mass_matrix=diagonal``, numpyro's NUTS default): Stan's warm-up
windows, more effective samples per gradient on a badly scaled target, the right moments, identity unchanged."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.paths.configs import MarkovConfig
from attnlab.paths.train import gibbs as train
from attnlab.paths.train import hmc

torch.set_num_threads(1)
F64 = torch.float64
SD = torch.tensor([0.25, 1.0, 5.0], dtype=F64)  # scales 20x apart: one step size cannot suit them all


def _potential(x):
    return (x / SD).pow(2).sum(-1) / 2


def test_windows_are_stans_and_numpyros():
    """Values of numpyro's build_adaptation_schedule (numpyro 0.x, read from its run)."""
    assert hmc.adaptation_windows(10) == [(0, 9)]
    assert hmc.adaptation_windows(100) == [(0, 14), (15, 89), (90, 99)]
    assert hmc.adaptation_windows(200) == [(0, 74), (75, 99), (100, 149), (150, 199)]
    assert hmc.adaptation_windows(1000) == [(0, 74), (75, 99), (100, 149), (150, 249), (250, 449), (450, 949),
                                            (950, 999)]


def _run(seed: int, mass: str):
    rec: dict = {}
    draws, _ = hmc.sample_potential(_potential, torch.zeros(4, 3, dtype=F64), torch.Generator().manual_seed(seed),
                                    120, 120, kernel="nuts", max_depth=6, mass_matrix=mass, record=rec)
    x = draws.numpy()
    ess = train.effective_sample_size(x)
    return x, ess, float(rec["leapfrogs"].sum()), rec["inv_mass"]


def test_a_diagonal_mass_matrix_gives_more_effective_samples_per_gradient():
    """Paired over seeds: log(min ESS / gradient evaluations), adapted minus identity, has its 95% interval above 0
    (measured at d = 4, scales 0.1 … 10, max_depth 8: 60-110x more). The adapted chains' variances and means are
    the target's within Monte-Carlo error. (The adapted inverse mass of one chain is one window's variance estimate
    from 90 correlated draws: measured within a factor 2.1 of the target's variance, so only its order is asserted.)"""
    diffs = []
    for seed in range(3):
        _, ess_i, grads_i, _ = _run(seed, "identity")
        x, ess_d, grads_d, inv = _run(seed, "diagonal")
        diffs.append(np.log(ess_d.min() / grads_d) - np.log(ess_i.min() / grads_i))
        var = SD.numpy() ** 2
        assert np.all(np.abs(x.var((0, 1)) / var - 1) < 4 * np.sqrt(2 / ess_d))
        assert np.all(np.abs(x.mean((0, 1))) / SD.numpy() < 4 / np.sqrt(ess_d))
        assert np.all(np.diff(inv.numpy(), axis=1) > 0)  # each chain's metric learnt the scales' order
    d = np.asarray(diffs)
    assert d.mean() - 4.303 * d.std(ddof=1) / np.sqrt(len(d)) > 0, d  # t(2) 97.5% quantile


def test_identity_is_the_unadapted_sampler_bit_for_bit_and_gibbs_refuses_a_mass_matrix():
    a, _ = hmc.sample_potential(_potential, torch.zeros(2, 3, dtype=F64), torch.Generator().manual_seed(0), 30, 10,
                                kernel="nuts", max_depth=4)
    b, _ = hmc.sample_potential(_potential, torch.zeros(2, 3, dtype=F64), torch.Generator().manual_seed(0), 30, 10,
                                kernel="nuts", max_depth=4, mass_matrix="identity")
    assert torch.equal(a, b)
    with pytest.raises(ConfigError, match="mass_matrix"):
        resolve(MarkovConfig, "quick", {"mass_matrix": "diagonal"})
    ok = resolve(MarkovConfig, "quick", {"mass_matrix": "diagonal", "sampler": "nuts"})
    assert ok.hash("paths.fig2c") != resolve(MarkovConfig, "quick", {"sampler": "nuts"}).hash("paths.fig2c")


@pytest.mark.parametrize("kernel", ["hmc", "nuts"])
def test_an_adapting_network_sampler_resumes_mid_window_to_the_same_draws(random_problem, kernel):
    pb = random_problem((2, 1), P=8, P_test=5, D=5)

    def make(g, state=None):
        return hmc.HMCSampler(pb, 3, 0.1, 2, g, state=state, steps=3, kernel=kernel, max_depth=3,
                              mass_matrix="diagonal")

    g = torch.Generator().manual_seed(2)
    full = make(g)
    whole = full.run(40, 6).U_trace
    g = torch.Generator().manual_seed(2)
    s = make(g)
    s.adapt_until, s.mass = 40, hmc.MassAdaptation(40, s.x)
    for _ in range(20):  # inside the slow window (windows 0-5, 6-35, 36-39: 15% / 75% / 10% of 40)
        s.sweep()
    st, gs = s.state_dict(), g.get_state()
    g2 = torch.Generator().manual_seed(99)
    g2.set_state(gs)
    again = make(g2, state=st).run(40, 6).U_trace
    assert s.mass.n == 14 and full.inv_mass is not None and torch.equal(again, whole)
