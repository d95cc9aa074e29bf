"""The Markov task (check B1, B2) and its heads."""

import pytest
import torch

from attnlab.paths import model
from attnlab.paths.data import markov as data


def test_switch_rates_and_noise_variances():
    """B1: mean switch rate 0.3 / 0.7 per class (± 0.02); noise variance σ∥² in the plane, σ⊥² out of it (± 5%)."""
    task = data.MarkovTask(sigma_par=1.0, sigma_perp=2.0)
    d = data.sample(task, 4000, torch.Generator().manual_seed(0))
    switches = (d.states[:, 1:] != d.states[:, :-1]).double().mean(1)
    assert abs(switches[d.y > 0].mean() - 0.3) < 0.02
    assert abs(switches[d.y < 0].mean() - 0.7) < 0.02
    vp, vm = task.state_vectors()
    feats = d.X[:, 1:, : task.N0]
    noise = feats - torch.where(d.states[..., None] > 0, vp, vm)
    e = torch.stack([vp, vm]) / vp.norm()
    par = noise @ e.T  # coordinates in the plane: variance σ∥² each
    perp = noise - par @ e
    assert abs(par.var() - 1.0) < 0.05
    assert abs(perp.pow(2).sum(-1).mean() / (task.N0 - 2) - 4.0) < 0.05 * 4.0
    assert d.X.shape == (4000, task.T + 1, task.D) and task.D == 231
    assert torch.all(d.X[:, 0, : task.N0] == 0)  # the bos token carries no features
    assert torch.equal(d.X[0, :, task.N0:], torch.eye(task.T + 1, dtype=torch.float64))
    assert abs(float((d.y > 0).double().mean()) - 0.5) < 1e-9  # balanced classes


def test_good_head_attends_previous_same_state_else_bos():
    """B2: on noise-free inputs the good head's argmax is the previous token iff it is in the same state, else the
    bos, for ≥ 90% of queries; the uniform head is exactly uniform."""
    task = data.MarkovTask(sigma_par=0.0, sigma_perp=0.0)
    d = data.sample(task, 200, torch.Generator().manual_seed(1))
    om = model.attention(d.X, data.good_head(task)[None])[:, 0]  # (P, s, t)
    arg = om.argmax(dim=1)[:, 2:]  # queries t = 2..T (token t is state index t-1)
    same = d.states[:, 1:] == d.states[:, :-1]
    want = torch.where(same, torch.arange(1, task.T).expand_as(same), torch.zeros_like(same, dtype=torch.long))
    assert float((arg == want).double().mean()) >= 0.9
    uni = model.attention(d.X[:5], data.uniform_head(task)[None])
    assert torch.allclose(uni, torch.full_like(uni, 1.0 / (task.T + 1)), atol=1e-15)


def test_layouts_share_random_heads_and_have_the_paper_shapes():
    task = data.MarkovTask()
    all4 = data.markov_heads(task, "all", torch.Generator().manual_seed(3))
    gd = data.markov_heads(task, "good_denoising", torch.Generator().manual_seed(3))
    assert [h.shape[0] for h in all4] == [2, 2] and [h.shape[0] for h in gd] == [2, 1]
    assert torch.equal(all4[0][1], gd[0][1])  # the same random layer-1 head
    assert [h.shape[0] for h in data.markov_heads(task, "random", torch.Generator().manual_seed(3))] == [3, 3]
    with pytest.raises(ValueError, match="layout"):
        data.markov_heads(task, "bogus", torch.Generator())


def test_errors_name_the_key():
    with pytest.raises(ValueError, match="'P' = 0"):
        data.sample(data.MarkovTask(), 0, torch.Generator())
    with pytest.raises(ValueError, match="'N0'"):
        data.MarkovTask(N0=7)
    with pytest.raises(ValueError, match="sigma_perp"):
        data.MarkovTask(sigma_perp=-1.0)
