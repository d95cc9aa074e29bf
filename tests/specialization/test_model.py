"""Estimator of eq. (3): forward vs naive loops, cache, init (Sec. II), pruning (Fig. 7), order params (8)-(9)."""

import math

import pytest
import torch

from attnlab.specialization.data import sample_spikes
from attnlab.specialization.model.attention import (
    SingleLocationAttention,
    attend,
    init_keys,
    order_parameters,
    prune_heads,
    symsqrt,
)

torch.set_num_threads(1)
F64 = torch.float64
ACTS = ["softmax", "softmax1", "bsoftmax"]


def _model(act, H=3, D=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    b = torch.randn(H, generator=g, dtype=F64)
    return SingleLocationAttention(H, D, act, b=b, v=1.3, eta=2.0, generator=g, dtype=F64)


def _naive(model, X):
    """ŷ of eq. (3)-(4) with explicit loops over heads and tokens."""
    K, b, v = model.K.detach(), model.b.detach(), float(model.v.detach())
    H, L = K.shape[0], X.shape[0]
    chi = [[float(X[l] @ K[h]) for l in range(L)] for h in range(H)]
    out = torch.zeros(X.shape[1], dtype=F64)
    for h in range(H):
        for l in range(L):
            e = math.exp(chi[h][l])
            if model.activation == "softmax":
                sig = e / sum(math.exp(c) for c in chi[h])
            elif model.activation == "softmax1":
                sig = v * e / (math.exp(b[h]) + sum(math.exp(c) for c in chi[h]))
            else:
                tot = sum(math.exp(chi[k][j] + b[k]) for k in range(H) for j in range(L))
                sig = math.exp(chi[h][l] + b[h]) / (tot / H)
            out += sig * X[l] / H
    return out


@pytest.mark.parametrize("act", ACTS)
def test_forward_matches_naive_loop_and_cache(act):
    model = _model(act)
    X = torch.randn(4, 5, 20, generator=torch.Generator().manual_seed(1), dtype=F64)
    with torch.no_grad():
        y_hat, cache = model.run_with_cache(X)
        assert set(cache) == {"scores", "attention", "weights", "output"}
        assert cache["scores"].shape == cache["attention"].shape == (4, 3, 5)
        assert cache["weights"].shape == (4, 5) and y_hat.shape == (4, 20)
        torch.testing.assert_close(cache["scores"], torch.einsum("nld,hd->nhl", X, model.K))
        for i in range(4):
            torch.testing.assert_close(y_hat[i], _naive(model, X[i]), rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(model(X[2]), y_hat[2])  # a single sequence (L, D)
        att_sum = cache["attention"].sum(-1)
        if act == "softmax":
            torch.testing.assert_close(att_sum, torch.ones_like(att_sum))
        if act == "bsoftmax":
            torch.testing.assert_close(att_sum.sum(-1), torch.full((4,), 3.0, dtype=F64))
        if act == "softmax1":
            assert (att_sum < 1.3).all()
    loss = model.loss(X, X[:, 0])
    assert loss.ndim == 0 and loss > 0
    loss.backward()
    assert model.K.grad is not None and model.K.grad.abs().sum() > 0


def test_softmax1_stable_at_huge_scores():
    H, D = 2, 4
    K = torch.tensor([[1e4, 0, 0, 0], [0, 1e4, 0, 0]], dtype=F64)
    model = SingleLocationAttention(H, D, "softmax1", K=K, b=torch.tensor([0.0, 3.0]), v=0.7, dtype=F64)
    X = torch.eye(D, dtype=F64)[None] * torch.tensor([1.0, 0.999, 0.5, -1.0], dtype=F64)[None, :, None]
    with torch.no_grad():
        y_hat, cache = model.run_with_cache(X)
    assert torch.isfinite(y_hat).all() and torch.isfinite(cache["attention"]).all()
    # head 0 scores (1e4, 0, 0, 0): all mass on token 0; head 1 (0, 9990, 0, 0): all on token 1
    expect = torch.zeros(1, 2, D, dtype=F64)
    expect[0, 0, 0] = expect[0, 1, 1] = 0.7
    torch.testing.assert_close(cache["attention"], expect)


def test_init_law_and_determinism():
    D, H = 4000, 3
    K = init_keys(H, D, generator=torch.Generator().manual_seed(0), eta=1.5, dtype=F64)
    assert ((K @ K.T) - 1.5**2 * torch.eye(H, dtype=F64)).abs().max() < 0.15
    K2 = init_keys(H, D, generator=torch.Generator().manual_seed(0), eta=1.5, dtype=F64)
    assert torch.equal(K, K2)
    model = SingleLocationAttention(H, 10, "softmax1", generator=torch.Generator().manual_seed(0))
    assert model.b.abs().sum() == 0 and float(model.v.detach()) == 1.0 and model.K.dtype == torch.float32
    with pytest.raises(ValueError, match="activation"):
        SingleLocationAttention(H, 10, "relu", generator=torch.Generator())
    with pytest.raises(ValueError, match="generator"):
        SingleLocationAttention(H, 10, "softmax")


@pytest.mark.parametrize("act", ACTS)
def test_pruning_rescales_over_kept_heads(act):
    model = _model(act, H=4)
    X = torch.randn(6, 5, 20, generator=torch.Generator().manual_seed(2), dtype=F64)
    keep = [3, 1]
    small = prune_heads(model, keep)
    assert small.H == 2 and small is not model and model.H == 4
    torch.testing.assert_close(small.K, model.K[keep])
    with torch.no_grad():
        y_small = small(X)
        chi = torch.einsum("nld,hd->nhl", X, model.K)[:, keep]
        if act == "softmax":
            s = torch.softmax(chi, -1).mean(1)
        elif act == "softmax1":  # keeps its trained v and b_h
            e = torch.exp(chi)
            s = (model.v * e / (torch.exp(model.b[keep])[:, None] + e.sum(-1, keepdim=True))).mean(1)
        else:  # Σ_{h∈kept} e^{χ+b} / Σ_{h'∈kept, ℓ'} e^{χ+b}
            e = torch.exp(chi + model.b[keep][:, None])
            s = e.sum(1) / e.sum((1, 2))[:, None]
    torch.testing.assert_close(y_small, torch.einsum("nl,nld->nd", s, X))
    # the full model's output differs from the pruned one (the test can fail)
    assert (model(X) - y_small).abs().max() > 1e-3
    with pytest.raises(ValueError, match="distinct"):
        prune_heads(model, [0, 0])
    with pytest.raises(ValueError):
        prune_heads(model, [4])


def test_order_parameters_on_hand_built_keys():
    g = torch.Generator().manual_seed(0)
    D, H, F = 60, 3, 2
    ks = sample_spikes(F, D, generator=g, dtype=F64)  # general p ≠ I
    A = torch.randn(H, F, generator=g, dtype=F64)
    R = torch.randn(H, D, generator=g, dtype=F64) / math.sqrt(D)
    R = R - R @ torch.linalg.pinv(ks) @ ks  # R ⊥ span K*
    K = A @ ks + R
    op = order_parameters(K, ks)
    p = ks @ ks.T
    torch.testing.assert_close(op.p, p, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(op.m, A @ p, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(op.q, K @ K.T, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(op.rr, R @ R.T, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(op.r, op.r.T)
    torch.testing.assert_close(op.r @ op.r, op.rr, rtol=1e-10, atol=1e-10)
    assert torch.linalg.eigvalsh(op.r).min() >= 0
    # keys inside span K*: r = 0; batched (seeds) input gives per-seed results; float32 input is upcast
    op0 = order_parameters(torch.stack([A @ ks, K]).float(), torch.stack([ks, ks]).float())
    assert op0.m.dtype == F64 and op0.m.shape == (2, H, F)
    assert op0.rr[0].abs().max() < 1e-5 and op0.rr[1].abs().max() > 1e-2
    # symsqrt clamps tiny negative eigenvalues
    a = torch.diag(torch.tensor([4.0, -1e-12], dtype=F64))
    torch.testing.assert_close(symsqrt(a), torch.diag(torch.tensor([2.0, 0.0], dtype=F64)))


def test_attend_batched_over_seeds():
    g = torch.Generator().manual_seed(4)
    X = torch.randn(2, 3, 4, 8, generator=g, dtype=F64)
    K = torch.randn(2, 2, 8, generator=g, dtype=F64)
    b, v = torch.randn(2, 2, generator=g, dtype=F64), torch.tensor([1.0, 0.5], dtype=F64)
    out = attend(X, K, b, v, "softmax1")["output"]
    for s in range(2):
        model = SingleLocationAttention(2, 8, "softmax1", K=K[s], b=b[s], v=v[s], dtype=F64)
        torch.testing.assert_close(out[s], model(X[s]).detach())
