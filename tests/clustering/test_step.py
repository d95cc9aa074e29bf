"""The closed-form training step (``step.py``) against autograd and torch.optim.Adam, in float64."""

import pytest
import torch

from attnlab.clustering.model import ModelSpec, forward, init_params
from attnlab.clustering.train.step import (
    Adam,
    Flat,
    chunked_tail,
    cross_entropy,
    loss_and_grads,
    one_hot,
    tail_loss_and_grads,
)

torch.set_num_threads(1)

VARIANTS = [
    dict(norm="sphere"),
    dict(norm="rmsnorm", rms_eps="outside", mlp_bias=True, n_emb=3, h=32, q_init="uniform", mlp_init="nested"),
    dict(norm="rmsnorm", rms_eps="inside", norm_gain=True, mlp_bias=True, activation="relu", n_emb=3),
    dict(norm="smooth", activation="silu", dropout=True),
    dict(norm="smooth_inf", mlp_bias=True, activation="elu"),
    dict(norm="sphere", activation="mish", d=4, h=6),
    dict(norm="rmsnorm", rms_eps="outside", norm_gain=True, activation="tanh", n_emb=4, dropout=True),
    dict(norm="sphere", activation="gelu_tanh", p=3, N=7),
]


def _model(v: dict, S: int = 3):
    v = dict(v)
    dropout = v.pop("dropout", False)
    p, N = v.pop("p", 2), v.pop("N", 12)
    spec = ModelSpec(p=p, N=N, d=v.pop("d", 3), **v)
    prm = init_params(spec, list(range(S)), dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    if spec.norm_gain:
        prm["g_attn"] = prm["g_attn"] + 0.3 * torch.randn(prm["g_attn"].shape, generator=g, dtype=torch.float64)
        prm["g_mlp"] = prm["g_mlp"] - 0.2 * torch.rand(prm["g_mlp"].shape, generator=g, dtype=torch.float64)
    if spec.norm.startswith("smooth"):   # inside the unit ball, where the smoothed normaliser differs
        prm = {k: v * (0.3 if k in "EP" else 1.0) for k, v in prm.items()}
    x = torch.randint(0, p, (S, 7, N), generator=g)
    y = torch.randint(0, p, (S, 7), generator=g)
    keep = (torch.rand(S, 7, spec.d, generator=g, dtype=torch.float64) > 0.3).double() / 0.7 if dropout else None
    return spec, prm, x, y, keep


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(f"{k}={v[k]}" for k in v))
def test_closed_form_gradients_equal_autograd(variant):
    spec, prm, x, y, keep = _model(variant)
    leaves = {k: v.clone().requires_grad_(True) for k, v in prm.items()}
    ref = cross_entropy(forward(leaves, x, spec, tokens=False, mlp_keep=keep)["logits"], y)
    expected = torch.autograd.grad(ref.sum(), list(leaves.values()))
    loss, grads = loss_and_grads(prm, one_hot(x.transpose(1, 2), spec.p, torch.float64),
                                 one_hot(y, spec.n_emb, torch.float64), spec,
                                 None if keep is None else keep.transpose(1, 2).contiguous())
    torch.testing.assert_close(loss, ref.detach(), rtol=1e-12, atol=1e-12)
    assert list(grads) == list(prm)
    for (k, g), e in zip(grads.items(), expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12, msg=k)


def test_weighted_chunked_tail_equals_one_pass():
    spec, prm, _, _, _ = _model(VARIANTS[1], S=2)
    g = torch.Generator().manual_seed(3)
    xi = torch.randn(2, spec.d, 300, generator=g, dtype=torch.float64)
    y_hot = one_hot(torch.randint(0, 2, (1, 300), generator=g), spec.n_emb, torch.float64)
    w = torch.rand(2, 300, generator=g, dtype=torch.float64)
    one = tail_loss_and_grads(prm, xi, y_hot, spec, weight=w)
    parts = chunked_tail(prm, xi, y_hot, spec, w, elements=2 * spec.h * 64)
    torch.testing.assert_close(parts.loss, one.loss, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(parts.logp, one.logp, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(parts.g_xi, one.g_xi, rtol=1e-12, atol=1e-12)
    for k in one.grads:
        torch.testing.assert_close(parts.grads[k], one.grads[k], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("mlp_factor, wd", [(1.0, 0.0), (0.25, 0.0), (1.0, 0.01)])
def test_packed_adam_equals_torch_adam(mlp_factor, wd):
    """Five steps on the packed buffer = torch.optim.Adam with the MLP in its own group at lr·factor."""
    _, prm, _, _, _ = _model(VARIANTS[1], S=2)
    flat = Flat(prm)
    adam = Adam(flat, 3e-3, mlp_factor, (0.9, 0.999), 1e-8, wd)
    leaves = {k: v.clone().requires_grad_(True) for k, v in prm.items()}
    mlp = ("W", "U", "bW", "bU")
    ref = torch.optim.Adam([{"params": [v for k, v in leaves.items() if k not in mlp], "lr": 3e-3},
                            {"params": [v for k, v in leaves.items() if k in mlp], "lr": 3e-3 * mlp_factor}],
                           weight_decay=wd)
    g = torch.Generator().manual_seed(5)
    for _ in range(5):
        grads = {k: torch.randn(v.shape, generator=g, dtype=torch.float64) for k, v in prm.items()}
        for k, v in leaves.items():
            v.grad = grads[k].clone()
        ref.step()
        adam.step(flat.data, flat.pack(grads))
    for k, v in leaves.items():
        torch.testing.assert_close(flat.views[k], v.detach(), rtol=1e-12, atol=1e-15)
    state = adam.state_dict()
    again = Adam(flat, 3e-3, mlp_factor, (0.9, 0.999), 1e-8, wd)
    again.load_state_dict(ref.state_dict(), flat)    # a torch.optim.Adam checkpoint converts
    assert again.t == state["t"] == 5
    torch.testing.assert_close(again.m, state["m"], rtol=1e-12, atol=1e-15)
    torch.testing.assert_close(again.v, state["v"], rtol=1e-12, atol=1e-15)


def test_flat_views_share_the_buffer():
    _, prm, _, _, _ = _model(VARIANTS[2], S=2)
    flat = Flat(prm)
    for k in prm:
        assert torch.equal(flat.views[k], prm[k])
    flat.data.add_(1.0)
    assert torch.equal(flat.views["W"], prm["W"] + 1)
    assert torch.equal(flat.pack(flat.views), flat.data)
