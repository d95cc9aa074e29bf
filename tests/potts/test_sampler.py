"""The vectorised Gibbs sampler: exactness against enumeration, β = 0, per-chain β, colour classes, diagnostics."""

import math

import numpy as np
import pytest
import torch

from attnlab.potts.data.potts import (
    PottsModel,
    PottsSpec,
    colour_frequencies,
    exact_distribution,
    make_U,
    total_variation,
)
from attnlab.potts.data.sampler import colour_classes, gibbs, integrated_autocorrelation, rhat, tune_beta


def small_model(beta=0.7):
    J = torch.ones(3, 3) - torch.eye(3)
    U = torch.tensor(make_U(3, np.random.default_rng(0)))
    return PottsModel(J, U, beta)


@pytest.mark.parametrize("order", ["chromatic", "sequential"])
def test_gibbs_is_exact_on_an_enumerable_model(order):
    """Spec check 2: L = C = 3, all-ones J, Gaussian U, β = 0.7; 2e5 states (1000 chains × 200, thin 5) -> TV < 0.02."""
    potts = small_model()
    _, probs = exact_distribution(potts)
    run = gibbs(potts, 1000, 200, burn_in=50, thin=5, generator=torch.Generator().manual_seed(0), order=order)
    assert total_variation(run.samples, probs, 3) < 0.02


def test_chromatic_sweep_is_exact_on_a_sparse_model():
    """A chain graph 0-1-2-3 has two colour classes; the class-by-class sweep keeps the exact law."""
    J = torch.zeros(4, 4)
    for i in range(3):
        J[i, i + 1] = J[i + 1, i] = 1.0
    U = torch.tensor(make_U(3, np.random.default_rng(2)))
    potts = PottsModel(J, U, 1.1)
    assert len(colour_classes(potts.J)) == 2
    _, probs = exact_distribution(potts)
    run = gibbs(potts, 1000, 100, burn_in=20, thin=4, generator=torch.Generator().manual_seed(1))
    assert total_variation(run.samples, probs, 3) < 0.03


def test_colour_classes_are_independent_sets_covering_all_sites():
    J = PottsSpec().model().J
    groups = colour_classes(J)
    sites = torch.cat(groups).sort().values
    assert (sites == torch.arange(J.shape[0])).all()
    for g in groups:
        assert (J[g][:, g] == 0).all()
    assert len(colour_classes(J, "sequential")) == J.shape[0]


def test_beta_zero_samples_are_uniform():
    """Spec check 3: colour frequencies 1/C ± 0.01 and d_H = 1 - 1/C ± 0.01 at β = 0."""
    potts = PottsSpec(C=20).model().with_beta(0.0)
    run = gibbs(potts, 500, 20, burn_in=1, thin=1, generator=torch.Generator().manual_seed(0))
    freq = colour_frequencies(run.pooled(), 20)
    assert (freq - 1 / 20).abs().max() < 0.01
    assert abs(run.hamming_pooled() - (1 - 1 / 20)) < 0.01


def test_per_chain_beta_and_initial_state():
    potts = small_model()
    beta = torch.tensor([0.0, 0.7], dtype=torch.float64).repeat_interleave(200)
    run = gibbs(potts, 400, 200, burn_in=20, thin=2, generator=torch.Generator().manual_seed(3), beta=beta)
    _, p0 = exact_distribution(potts.with_beta(0.0))
    _, p7 = exact_distribution(potts)
    assert total_variation(run.samples[:200], p0, 3) < 0.03
    assert total_variation(run.samples[200:], p7, 3) < 0.03
    init = torch.zeros(5, 3, dtype=torch.long)
    first = gibbs(potts, 5, 1, burn_in=0, thin=1, generator=torch.Generator(), init=init)
    assert (first.samples[:, 0] == 0).all()  # burn_in = 0 saves the initial state


def test_diagnostics_and_errors():
    g = torch.Generator().manual_seed(0)
    iid = torch.randn(4, 4000, generator=g, dtype=torch.float64)
    assert (integrated_autocorrelation(iid) - 1).abs().max() < 0.2
    assert abs(float(rhat(iid)) - 1) < 0.01
    shifted = iid + torch.arange(4, dtype=torch.float64)[:, None] * 3
    assert float(rhat(shifted)) > 2
    walk = iid.cumsum(-1)
    assert float(integrated_autocorrelation(walk).min()) > 50
    with pytest.raises(ValueError, match="thin"):
        gibbs(small_model(), 2, 2, burn_in=0, thin=0, generator=g)
    with pytest.raises(ValueError, match="beta"):
        gibbs(small_model(), 2, 2, burn_in=1, thin=1, generator=g, beta=-1.0)
    with pytest.raises(ValueError, match="order"):
        colour_classes(small_model().J, "random")
    assert math.isfinite(gibbs(small_model(), 3, 5, burn_in=5, thin=1, generator=g).summary()["rhat_energy"])


@pytest.mark.parametrize("protocol", ["single", "pooled"])
def test_tune_beta_picks_the_grid_point_closest_to_the_target(protocol):
    potts = PottsSpec(L=8, C=6).model()
    g = torch.Generator().manual_seed(0)
    kw = {"generator": g, "protocol": protocol, "n_samples": 40, "n_chains": 4, "burn_in": 20, "thin": 2}
    beta, stat = tune_beta(potts, 1 - 1 / 6, [0.0, 3.0], **kw)
    assert beta == 0.0 and abs(float(stat[0]) - (1 - 1 / 6)) < 0.03
    assert float(stat[1]) < float(stat[0])
    assert tune_beta(potts, 0.05, [0.0, 3.0], **kw)[0] == 3.0
