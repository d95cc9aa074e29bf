"""The HMC and NUTS samplers (hmc.py, nuts.py): exact on a Gaussian posterior, the Gibbs sampler's posterior on a
small network, per-layer widths and variances, determinism, resuming and appending; predictor draws from a U."""

import numpy as np
import pytest
import torch

from attnlab.core.config import ADDED
from attnlab.paths.configs import MarkovConfig
from attnlab.paths.experiments.common import make_sampler
from attnlab.paths.theory import kernels, predictive
from attnlab.paths.train import gibbs as train
from attnlab.paths.train import hmc

F64 = torch.float64


def _se(trace: np.ndarray) -> np.ndarray:
    """Monte-Carlo standard error of the mean of traces (C, S, k) from their effective sample size."""
    return trace.std(axis=(0, 1)) / np.sqrt(train.effective_sample_size(trace))


@pytest.mark.parametrize("kernel", ["hmc", "nuts"])
def test_hmc_matches_a_gaussian_posterior_exactly(kernel):
    """Bayesian linear regression, d = 6 (correlated posterior): mean and covariance within Monte-Carlo error."""
    g = torch.Generator().manual_seed(0)
    d, P, s2, tau = 6, 10, 1.0, 0.3
    Phi = torch.randn(P, d, generator=g, dtype=F64)
    y = torch.randn(P, generator=g, dtype=F64)
    prec = torch.eye(d, dtype=F64) / s2 + Phi.T @ Phi / tau
    cov = torch.linalg.inv(prec)
    mean = cov @ Phi.T @ y / tau

    def potential(x):
        return ((x @ Phi.T - y) ** 2).sum(-1) / (2 * tau) + (x * x).sum(-1) / (2 * s2)

    S = 1500 if kernel == "hmc" else 600
    draws, acc = hmc.sample_potential(potential, torch.zeros(8, d, dtype=F64), g, 200, S, steps=8, kernel=kernel)
    assert 0.6 < float(acc.mean()) < 0.95  # dual averaging reaches its 0.8 target roughly
    x = draws.numpy()
    z = (x.mean((0, 1)) - mean.numpy()) / _se(x)
    assert np.abs(z).max() < 4
    # covariance entries: the traces of (x_i − m_i)(x_j − m_j), their mean and its Monte-Carlo error
    xc = x - mean.numpy()
    prods = (xc[..., :, None] * xc[..., None, :]).reshape(*x.shape[:2], -1)
    zc = (prods.mean((0, 1)) - cov.numpy().ravel()) / _se(prods)
    assert np.abs(zc).max() < 4.5  # 36 entries (21 distinct)


def test_hmc_agrees_with_long_gibbs_chains_on_a_small_network(random_problem):
    """U and the mean predictor of HMC vs blocked Gibbs (same posterior, Eq. 8) within their joint MC errors;
    with per-block variances (σ_0², σ_1², σ_2², σ_a²) = (1.3, 0.7, 1.1, 0.9)."""
    base = random_problem((2, 1), P=20, P_test=6, D=8, seed=3)
    pb = kernels.Problem(base.Xi, base.y, base.Xi_test, base.y_test, base.Hs, 1.3, (1.3, 0.7, 1.1, 0.9))
    N, tau = 6, 0.2
    st_h = hmc.HMCSampler(pb, N, tau, 4, torch.Generator().manual_seed(1), steps=12).run(200, 600)
    st_g = train.GibbsSampler(pb, N, tau, 4, torch.Generator().manual_seed(2)).run(100, 1500)
    iu = np.triu_indices(pb.n)

    def traces(st):
        return np.concatenate([st.U_trace.numpy()[:, :, iu[0], iu[1]], st.f_trace.numpy()], -1)

    th, tg = traces(st_h), traces(st_g)
    z = (th.mean((0, 1)) - tg.mean((0, 1))) / np.hypot(_se(th), _se(tg))
    assert np.abs(z).max() < 4, z
    assert st_h.rhat() < 1.1


def test_nuts_agrees_with_long_gibbs_chains_on_a_small_network(random_problem):
    """As above with the No-U-Turn kernel (the paper's App. F sampler)."""
    base = random_problem((2, 1), P=20, P_test=6, D=8, seed=3)
    pb = kernels.Problem(base.Xi, base.y, base.Xi_test, base.y_test, base.Hs, 1.3, (1.3, 0.7, 1.1, 0.9))
    s = hmc.HMCSampler(pb, 6, 0.2, 4, torch.Generator().manual_seed(1), kernel="nuts")
    st_n = s.run(50, 100)
    st_g = train.GibbsSampler(pb, 6, 0.2, 4, torch.Generator().manual_seed(2)).run(100, 1500)
    iu = np.triu_indices(pb.n)

    def traces(st):
        return np.concatenate([st.U_trace.numpy()[:, :, iu[0], iu[1]], st.f_trace.numpy()], -1)

    tn, tg = traces(st_n), traces(st_g)
    z = (tn.mean((0, 1)) - tg.mean((0, 1))) / np.hypot(_se(tn), _se(tg))
    assert np.abs(z).max() < 4, z
    assert s.leapfrogs / 4 / s.sweeps > 2  # trajectories longer than one step: the tree does grow


@pytest.mark.parametrize("kernel", ["hmc", "nuts"])
def test_hmc_is_deterministic_and_resumes_exactly(random_problem, kernel):
    pb = random_problem((2, 2), P=10, D=6)

    def make(g, state=None):
        return hmc.HMCSampler(pb, 4, 0.1, 2, g, state=state, steps=4, kernel=kernel, max_depth=4)

    a = make(torch.Generator().manual_seed(5)).run(5, 4, 2)
    b = make(torch.Generator().manual_seed(5)).run(5, 4, 2)
    assert torch.equal(a.U_trace, b.U_trace) and torch.equal(a.f_mean, b.f_mean)
    g = torch.Generator().manual_seed(5)
    s = make(g)
    s.adapt_until = 5
    for _ in range(6):  # interrupted one transition after the adaptation ended
        s.sweep()
    state, gstate = s.state_dict(), g.get_state()
    g2 = torch.Generator()
    g2.set_state(gstate)
    c = make(g2, state).run(5, 4, 2)
    assert torch.equal(c.U_trace, a.U_trace)
    assert not torch.equal(a.U_trace, make(torch.Generator().manual_seed(6)).run(5, 4, 2).U_trace)


def test_per_layer_widths_sample_the_exact_prior_mean_of_U(random_problem):
    """At τ → ∞ the posterior is the prior, whose E[U] = σ_a² Π_ℓ σ_ℓ² I for any widths (N_1, N_2, N_a)."""
    base = random_problem((2, 2), P=8, P_test=5, D=5, seed=1)
    var = (1.0, 0.8, 1.5, 1.2)
    pb = kernels.Problem(base.Xi, base.y, base.Xi_test, base.y_test, base.Hs, 1.0, var)
    s = hmc.HMCSampler(pb, 5, 1e8, 4, torch.Generator().manual_seed(0), widths=(5, 9, 3), steps=6)
    st = s.run(50, 800)
    assert s.w.V0.shape == (4, 5, 5) and s.w.V[0].shape == (4, 2, 9, 5) and s.w.V[1].shape == (4, 2, 3, 9)
    iu = np.triu_indices(pb.n)
    tr = st.U_trace.numpy()[:, :, iu[0], iu[1]]
    want = (0.8 * 1.5 * 1.2 * np.eye(pb.n))[iu]
    z = (tr.mean((0, 1)) - want) / _se(tr)
    assert np.abs(z).max() < 4, z


def test_sampler_keys_are_added_fields_that_keep_run_ids():
    """The sampler keys stay out of the run id at their defaults (core.config.added), so stored runs keep ids."""
    fields = MarkovConfig.model_fields
    assert all((fields[k].json_schema_extra or {}).get(ADDED) for k in ("sampler", "hmc_steps", "hmc_accept"))
    ref = MarkovConfig().hash("paths.fig2c")
    assert MarkovConfig(sampler="gibbs", hmc_steps=16, hmc_accept=0.8).hash("paths.fig2c") == ref
    assert MarkovConfig(sampler="hmc").hash("paths.fig2c") != ref


def test_layer_widths_need_hmc_and_integer_widths(random_problem):
    with pytest.raises(ValueError, match="sampler=hmc"):
        MarkovConfig(layer_widths=(1.0, 2.0, 0.5), sample_widths=(10,))
    with pytest.raises(ValueError, match="integers"):
        MarkovConfig(layer_widths=(1.0, 2.0, 0.25), sample_widths=(10,), sampler="hmc")
    cfg = MarkovConfig(layer_widths=(1.0, 2.0, 0.5), sample_widths=(10,), sampler="hmc", variances=(1, 1, 1, 2),
                       chains=2, hmc_steps=3)
    MarkovConfig(variances=(1, 1, 1, 2), sample_widths=(10,))  # Gibbs draws per-block variances
    pb = random_problem((2, 2), P=8, D=5)
    s = make_sampler(cfg, pb, 10, 0.1, torch.Generator().manual_seed(0))
    assert isinstance(s, hmc.HMCSampler) and s.widths == (10, 20, 5) and s.steps == 3
    assert type(make_sampler(MarkovConfig(chains=2), pb, 10, 0.1, torch.Generator().manual_seed(0))) is \
        train.GibbsSampler
    nuts = make_sampler(MarkovConfig(chains=2, sampler="nuts", nuts_depth=5), pb, 10, 0.1,
                        torch.Generator().manual_seed(0))
    assert nuts.kernel == "nuts" and nuts.max_depth == 5


def test_extend_appends_the_draws_of_a_longer_run(random_problem):
    """Appending samples to finished chains (Gibbs and HMC) gives exactly the longer run's chains."""
    pb = random_problem((2, 2), P=10, D=6)
    for make in (lambda g: train.GibbsSampler(pb, 4, 0.1, 2, g), lambda g: hmc.HMCSampler(pb, 4, 0.1, 2, g, steps=3)):
        ref = make(torch.Generator().manual_seed(3)).run(4, 7, 2)
        s = make(torch.Generator().manual_seed(3))
        s.run(4, 3, 2)
        st = s.extend(4, 2)
        assert st.sweeps == ref.sweeps == 18 and torch.equal(st.U_trace, ref.U_trace)
        assert torch.equal(st.f_mean, ref.f_mean)


def test_predictor_samples_from_a_stored_U_match_the_theory(random_problem):
    """Draws of f* from a saved U: mean and variance those of kernels.predict (z < 4.5 over 2·7 entries)."""
    pb = random_problem((2, 2), P=12, P_test=7, D=9)
    kern = kernels.PathKernels(pb.Xi)
    A = torch.randn(4, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    U = (A @ A.T / 4 + torch.eye(4, dtype=F64)).numpy()  # as stored in a run's arrays
    S = 20_000
    f = predictive.sample_predictor(kern, U, pb.y, 0.1, pb.Xi_test, S, torch.Generator().manual_seed(0))
    ref = kernels.predict(kern, torch.as_tensor(U), pb.y, 0.1, pb.Xi_test)
    sd = ref.var.sqrt()
    assert float(((f.mean(0) - ref.mean) / (sd / S**0.5)).abs().max()) < 4.5
    assert float(((f.var(0) - ref.var) / (ref.var * (2 / S) ** 0.5)).abs().max()) < 4.5
    again = predictive.sample_predictor(kern, U, pb.y, 0.1, pb.Xi_test, S, torch.Generator().manual_seed(0))
    assert torch.equal(f, again)
