"""Attention activations, eqs. (3)-(4) and (17)."""

import pytest
import torch

from attnlab.specialization.model.activations import (
    ACTIVATIONS,
    TRAINABLE,
    bsoftmax,
    get_activation,
    head_average,
    softmax,
    softmax1,
    softmax1_fixed,
)

torch.set_num_threads(1)
F64 = torch.float64


@pytest.fixture
def chi_b():
    g = torch.Generator().manual_seed(0)
    chi = 2.0 * torch.randn(7, 3, 5, generator=g, dtype=F64)
    b = torch.randn(7, 3, generator=g, dtype=F64)
    return chi, b


def test_softmax_rows_sum_to_one(chi_b):
    chi, b = chi_b
    assert torch.allclose(softmax(chi, b, 1.3).sum(-1), torch.ones(7, 3, dtype=F64), atol=1e-12)


def test_softmax1_matches_naive_and_row_sums(chi_b):
    chi, b = chi_b
    v = 1.3
    out = softmax1(chi, b, v)
    e = chi.exp()
    naive = v * e / (b.exp()[..., None] + e.sum(-1, keepdim=True))
    assert torch.allclose(out, naive, atol=1e-12, rtol=0)
    S = e.sum(-1)
    assert torch.allclose(out.sum(-1), v * S / (b.exp() + S), atol=1e-12, rtol=0)


def test_softmax1_stable_and_limits(chi_b):
    chi, _ = chi_b
    big = softmax1(torch.full((2, 3, 5), 800.0, dtype=F64), torch.zeros(2, 3, dtype=F64), 1.0)
    assert torch.isfinite(big).all() and torch.allclose(big, torch.full_like(big, 0.2))
    huge_b = softmax1(chi, torch.full((7, 3), 800.0, dtype=F64), 1.0)
    assert torch.isfinite(huge_b).all() and huge_b.abs().max() < 1e-300
    low = softmax1(chi, torch.full((7, 3), -50.0, dtype=F64), 1.3)
    assert torch.allclose(low, 1.3 * softmax(chi), atol=1e-12, rtol=0)
    # gradient is finite at huge scores
    x = torch.full((1, 2, 5), 900.0, dtype=F64, requires_grad=True)
    softmax1(x, torch.zeros(1, 2, dtype=F64), 2.0)[..., 0].sum().backward()
    assert torch.isfinite(x.grad).all()


def test_softmax1_fixed_ignores_b_v(chi_b):
    chi, b = chi_b
    assert torch.allclose(softmax1_fixed(chi, b, 3.0), softmax1(chi, None, None))


def test_bsoftmax_normalisation_and_shift_invariance(chi_b):
    chi, b = chi_b
    out = bsoftmax(chi, b)
    assert torch.allclose(out.sum((-1, -2)), torch.full((7,), 3.0, dtype=F64), atol=1e-12, rtol=0)
    assert torch.allclose(bsoftmax(chi, b + 2.7), out, atol=1e-12, rtol=0)
    assert torch.allclose(bsoftmax(chi, b, 5.0), out)  # ignores v
    assert torch.allclose(head_average(out).sum(-1), torch.ones(7, dtype=F64), atol=1e-12)


def test_bsoftmax_output_equals_eq17(chi_b):
    chi, b = chi_b
    X = torch.randn(7, 5, 11, dtype=F64)  # (n, L, D)
    y4 = torch.einsum("nhl,nld->nd", bsoftmax(chi, b), X) / 3  # eqs. (3)+(4)
    w = (chi + b[..., None]).exp()
    y17 = torch.einsum("nl,nld->nd", w.sum(1) / w.sum((1, 2))[:, None], X)  # eq. (17)
    assert torch.allclose(y4, y17, atol=1e-12, rtol=0)


def test_batched_parameters_broadcast():
    chi = torch.randn(4, 6, 3, 5, dtype=F64)  # (S, N, H, L)
    b = torch.randn(4, 3, dtype=F64)
    v = torch.rand(4, dtype=F64) + 0.5
    out = softmax1(chi, b[:, None, :], v[:, None])
    for s in range(4):
        assert torch.allclose(out[s], softmax1(chi[s], b[s], float(v[s])), atol=1e-14)
    out = bsoftmax(chi, b[:, None, :])
    assert torch.allclose(out[2], bsoftmax(chi[2], b[2]), atol=1e-14)


def test_registry():
    assert set(ACTIVATIONS) == {"softmax", "softmax1", "bsoftmax"} == set(TRAINABLE)
    assert get_activation("bsoftmax") is bsoftmax
    with pytest.raises(ValueError, match="softmax, softmax1, bsoftmax"):
        get_activation("relu")
