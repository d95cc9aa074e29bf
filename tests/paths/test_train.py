"""The blocked Gibbs sampler (A9, a small B9/C analogue), its diagnostics and resuming."""

import numpy as np
import torch

from attnlab.core.trajectory import compare
from attnlab.paths.theory import kernels
from attnlab.paths.theory import saddle as theory
from attnlab.paths.train import gibbs as train

F64 = torch.float64


def test_bcm_block_sampler_matches_the_bayesian_linear_regression_posterior():
    """A9: d = 50, P = 20: 1e4 draws vs the closed-form posterior mean and covariance (z-scores < 4)."""
    g = torch.Generator().manual_seed(0)
    d, P, s2, tau, S = 50, 20, 1.3, 0.2, 10_000
    Phi = torch.randn(P, d, generator=g, dtype=F64)
    y = torch.randn(P, generator=g, dtype=F64)
    draws = train.bcm_sample(Phi.expand(S, P, d), y, tau, s2, g)  # S independent draws, one per "chain"
    prec = torch.eye(d, dtype=F64) / s2 + Phi.T @ Phi / tau
    cov = torch.linalg.inv(prec)
    mean = cov @ Phi.T @ y / tau
    sd = torch.sqrt(torch.diagonal(cov))
    z_mean = (draws.mean(0) - mean) / (sd / S**0.5)
    assert float(z_mean.abs().max()) < 4
    emp = torch.cov(draws.T)
    # standard error of a covariance entry: sqrt((Σ_ii Σ_jj + Σ_ij²)/S)
    se = torch.sqrt((torch.outer(sd**2, sd**2) + cov**2) / S)
    assert float(((emp - cov) / se).abs().max()) < 4.5  # 1275 distinct entries: max |z| of Gaussians ~ 3.5-4


def test_rhat_and_ess_on_known_chains():
    rng = np.random.default_rng(0)
    iid = rng.standard_normal((4, 2000, 3))
    assert abs(train.split_rhat(iid) - 1).max() < 0.01
    assert (abs(train.effective_sample_size(iid) / 8000 - 1) < 0.15).all()
    phi = 0.8
    ar = np.zeros((4, 4000, 1))
    for t in range(1, 4000):
        ar[:, t] = phi * ar[:, t - 1] + rng.standard_normal((4, 1))
    want = 16000 * (1 - phi) / (1 + phi)
    assert abs(train.effective_sample_size(ar)[0] / want - 1) < 0.3
    shifted = iid + np.array([0, 0, 0, 2.0])[:, None, None]
    assert train.split_rhat(shifted).min() > 1.1


def test_gibbs_agrees_with_theory_on_a_small_problem(random_problem):
    """Sampled mean predictor and U against the saddle point (N = 10, random features, P = 30): a fast check; the
    gated comparisons (checks B9, B10, C) are claims."""
    pb = random_problem((2, 1), P=30, P_test=40, D=12, seed=3)
    kern = kernels.PathKernels(pb.Xi)
    th = theory.predict(pb, [10.0], 0.1, kern=kern)
    sim = train.simulate(pb, [10], 0.1, chains=2, burn_in=300, samples=400, thin=2,
                         generator=torch.Generator().manual_seed(0), kern=kern)
    assert np.corrcoef(sim["f_mean"][0], th["f_mean"][0])[0, 1] > 0.97
    U_s, U_t = sim["U"][0], th["U"][0]
    assert np.linalg.norm(U_s - U_t) / np.linalg.norm(U_t) < 0.25
    assert sim["rhat"][0] < 1.2 and sim["ess"][0] > 20
    assert set(th.names) >= {"U", "accuracy", "gen_error", "f_mean", "f_var"} <= set(sim.names)
    table = compare(sim, th, ["accuracy", "U"])  # the paired API: one call
    assert set(table["observable"]) == {"accuracy", "U"} and table["abs_diff"].max() < 2.0


def test_thinning_and_resume(random_problem):
    pb = random_problem((2, 2), P=10, D=6)
    g = torch.Generator().manual_seed(5)
    s = train.GibbsSampler(pb, 4, 0.1, 2, g)
    st = s.run(burn_in=3, samples=5, thin=3)
    assert st.sweeps == 18 and st.U_trace.shape[:2] == (2, 5)  # only every third sweep after burn-in is kept
    # interrupted after 7 sweeps and resumed gives the uninterrupted result
    g1 = torch.Generator().manual_seed(9)
    ref = train.GibbsSampler(pb, 4, 0.1, 2, g1).run(2, 6, 2)
    g2 = torch.Generator().manual_seed(9)
    a = train.GibbsSampler(pb, 4, 0.1, 2, g2)
    for _ in range(7):
        a.sweep()
        if a.sweeps > 2 and (a.sweeps - 2) % 2 == 0:
            a.record()
    state, gstate = a.state_dict(), g2.get_state()
    g3 = torch.Generator()
    g3.set_state(gstate)
    b = train.GibbsSampler(pb, 4, 0.1, 2, g3, state=state)
    res = b.run(2, 6, 2)
    assert torch.equal(res.f_mean, ref.f_mean) and torch.equal(res.U, ref.U)
