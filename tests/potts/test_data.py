"""Potts model (eqs. (1), (5), (6)), planted structures, enumeration, Hamming statistics, validation."""

import math

import numpy as np
import pytest
import torch

from attnlab.potts.data.potts import (
    PottsModel,
    PottsSpec,
    colour_frequencies,
    enumerate_states,
    exact_distribution,
    make_J,
    make_U,
    mean_pairwise_hamming,
    state_index,
    total_variation,
)

F64 = torch.float64


def random_model(L=6, C=4, beta=0.7, seed=0):
    rng = np.random.default_rng(seed)
    G = rng.standard_normal((L, L))
    J = (G + G.T) / 2
    np.fill_diagonal(J, 0)
    return PottsModel(torch.tensor(J), torch.tensor(make_U(C, rng)), beta)


def test_conditional_equals_energy_difference():
    """Check 1: log p(α|.) - log p(γ|.) = -β [H(c_i=α) - H(c_i=γ)] to 1e-12, all i, α, γ."""
    potts = random_model()
    c = torch.randint(0, potts.C, (20, potts.L), generator=torch.Generator().manual_seed(1))
    logp = potts.conditional_logp(c)  # (n, L, C)
    for i in range(potts.L):
        states = c.unsqueeze(1).repeat(1, potts.C, 1)
        states[:, :, i] = torch.arange(potts.C)
        E = potts.energy(states)  # (n, C)
        lhs = logp[:, i, :, None] - logp[:, i, None, :]
        rhs = -potts.beta * (E[:, :, None] - E[:, None, :])
        assert (lhs - rhs).abs().max() < 1e-12


def test_conditional_matches_enumeration():
    potts = random_model(L=3, C=3)
    states, probs = exact_distribution(potts)
    assert abs(float(probs.sum()) - 1) < 1e-12
    P = probs.reshape(3, 3, 3)
    logp = potts.conditional_logp(states)[:, 1]  # (27, C): p(c_1 | c_0, c_2), eq. (5)
    for c0 in range(3):
        for c2 in range(3):
            row = P[c0, :, c2] / P[c0, :, c2].sum()
            k = int(state_index(torch.tensor([c0, 0, c2]), 3))
            assert torch.allclose(logp[k].exp(), row, atol=1e-12)


def test_pseudo_likelihood_and_beta_zero():
    potts = random_model(beta=0.0)
    c = torch.randint(0, potts.C, (50, potts.L))
    assert abs(potts.optimal_loss(c) - math.log(potts.C)) < 1e-14  # check 3: log C exactly
    p2 = random_model(beta=1.3)
    assert float(p2.pseudo_loglik(c)) < 0


@pytest.mark.parametrize("kind", ["er", "contact", "block"])
def test_planted_J_is_symmetric_binary_zero_diagonal(kind):
    J = make_J(20, kind, np.random.default_rng(3))
    assert (J == J.T).all() and (np.diag(J) == 0).all() and set(np.unique(J)) <= {0.0, 1.0}
    assert J.sum() > 0


def test_make_J_min_degree_and_U():
    J = make_J(20, "er", np.random.default_rng(0), p=0.2, min_degree=1)
    assert J.sum(1).min() >= 1
    U = make_U(7, np.random.default_rng(0))
    assert np.allclose(U, U.T)
    spec = PottsSpec()
    J1, U1 = spec.structure()
    J2, U2 = spec.structure()
    assert (J1 == J2).all() and (U1 == U2).all()  # the seeded cpu_fig2 structure is reproducible


@pytest.mark.parametrize(
    "J, U, beta, words",
    [
        (torch.zeros(1, 1), torch.eye(3), 1.0, "L = 1"),
        (torch.zeros(3, 3), torch.eye(1), 1.0, "C = 1"),
        (torch.tensor([[0.0, 1.0], [0.0, 0.0]]), torch.eye(3), 1.0, "J must be symmetric"),
        (torch.ones(2, 2), torch.eye(3), 1.0, "zero diagonal"),
        (torch.zeros(2, 2), torch.tensor([[1.0, 2.0], [0.0, 1.0]]), 1.0, "U must be symmetric"),
        (torch.zeros(2, 2), torch.eye(2), -0.5, "beta"),
    ],
)
def test_invalid_models_are_rejected_with_a_clear_message(J, U, beta, words):
    with pytest.raises(ValueError, match=words):
        PottsModel(J, U, beta)


def test_hamming_formula_matches_brute_force():
    c = torch.randint(0, 5, (40, 8), generator=torch.Generator().manual_seed(0))
    brute = np.mean([(c[a] != c[b]).double().mean().item() for a in range(40) for b in range(40) if a != b])
    assert abs(float(mean_pairwise_hamming(c, 5)) - brute) < 1e-12
    assert float(mean_pairwise_hamming(c[:1].repeat(5, 1), 5)) == 0.0


def test_enumeration_helpers():
    st = enumerate_states(3, 2)
    assert st.shape == (8, 3)
    assert (state_index(st, 2) == torch.arange(8)).all()
    probs = torch.full((8,), 1 / 8, dtype=F64)
    assert total_variation(st, probs, 2) < 1e-12
    assert abs(float(colour_frequencies(st, 2).sum()) - 1) < 1e-12
