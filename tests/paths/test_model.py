"""The network: layer recursion = path sum (A1), the path-feature tree (A10), the prior covariance (A2)."""

import math

import pytest
import torch

from attnlab.paths import model

F64 = torch.float64


def _heads(Hs, D, g, scale=1.0):
    return [scale * torch.randn(H, D, D, generator=g, dtype=F64) / D for H in Hs]


@pytest.mark.parametrize("Hs", [[1], [2, 3], [2, 2, 2], [3, 1]])
@pytest.mark.parametrize("readout", ["mean", 0, 3, -1])
def test_layer_recursion_equals_path_sum(Hs, readout):
    """A1: Eqs. (1)-(4) and Eqs. (5)-(7) give the same f (relative error < 1e-10)."""
    g = torch.Generator().manual_seed(len(Hs) * 10 + sum(Hs))
    P, T, D, N = 5, 6, 7, 8
    X = torch.randn(P, T, D, generator=g, dtype=F64)
    heads = _heads(Hs, D, g, scale=3.0)
    w = model.Weights.prior(3, N, D, Hs, g)
    f1 = model.forward(X, heads, w, readout)
    f2 = model.forward_paths(model.path_features(X, heads, readout), w)
    assert float((f1 - f2).abs().max() / f1.abs().max()) < 1e-10


@pytest.mark.parametrize("Hs", [[2], [2, 3], [3, 2, 2]])
def test_tree_equals_naive_path_features(Hs):
    """A10: the right-to-left tree equals the path-by-path Eq. (7) product (< 1e-12)."""
    g = torch.Generator().manual_seed(7)
    X = torch.randn(4, 5, 6, generator=g, dtype=F64)
    heads = _heads(Hs, 6, g, scale=4.0)
    for readout in ("mean", 2):
        a = model.path_features(X, heads, readout, chunk=3)
        b = model.path_features_naive(X, heads, readout)
        assert float((a - b).abs().max()) < 1e-12


def test_prior_covariance_is_the_gp_kernel():
    """A2: E_prior[f(x^μ) f(x^ν)] = (σ^{2(L+2)}/n) Σ_π C_ππ and N⁻¹E[V_eff V_effᵀ] = σ^{2(L+1)} I, σ² = 1.3 (< 3%)."""
    g = torch.Generator().manual_seed(0)
    P, T, D, N, Hs, s2 = 4, 5, 6, 16, [2, 2], 1.3
    X = torch.randn(P, T, D, generator=g, dtype=F64)
    heads = _heads(Hs, D, g, scale=3.0)
    Xi = model.path_features(X, heads, "mean")
    draws = 20_000
    w = model.Weights.prior(draws, N, D, Hs, g, sigma2=s2)
    f = model.forward_paths(Xi, w)  # (draws, P)
    emp = f.T @ f / draws
    n, L = Xi.shape[1], len(Hs)
    K_gp = s2 ** (L + 2) / n * torch.einsum("pad,qad->pq", Xi, Xi) / D
    assert float((emp - K_gp).abs().max() / K_gp.abs().max()) < 0.03
    U = model.order_parameter(w).mean(0)
    assert float((U - s2 ** (L + 1) * torch.eye(n, dtype=F64)).abs().max()) < 0.03 * s2 ** (L + 1)


def test_named_activations_and_input_errors():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(3, 4, 5, generator=g, dtype=F64)
    heads = _heads([2, 1], 5, g)
    w = model.Weights.prior(1, 6, 5, [2, 1], g)
    f, cache = model.run_with_cache(lambda hook: model.forward(X, heads, w, "mean", hook))
    assert list(cache) == ["hook_embed", "blocks.0.attn.hook_pattern", "blocks.0.hook_resid_post",
                           "blocks.1.attn.hook_pattern", "blocks.1.hook_resid_post", "hook_readout"]
    assert cache["blocks.0.attn.hook_pattern"].sum(dim=-2).allclose(torch.ones(3, 2, 4, dtype=F64))
    assert torch.equal(f, model.forward(X, heads, w, "mean"))  # a hook that returns None changes nothing
    # a hook's return value replaces the activation: layer 2's pattern zeroed leaves f = 0
    zero = model.forward(X, heads, w, "mean", lambda name, t: 0 * t if name == "blocks.1.attn.hook_pattern" else None)
    assert torch.equal(zero, torch.zeros_like(f)) and not torch.equal(f, zero)
    with pytest.raises(ValueError, match="width"):
        model.path_features(torch.randn(3, 4, 7, dtype=F64), heads, "mean")
    with pytest.raises(ValueError, match="Hs"):
        model.forward(X, heads, model.Weights.prior(1, 6, 5, [2, 2], g), "mean")
    with pytest.raises(ValueError, match="readout"):
        model.readout_vector(4, 9)


def test_trainable_model_matches_the_fixed_attention_network():
    """The GD model (learned Q/K) is the same network as the theory's: its logit matrices A = W_KᵀW_Q/(D√G)
    and its value weights give the same f through :func:`model.forward`; pruning drops heads with rescaling."""
    g = torch.Generator().manual_seed(2)
    net = model.AttentionPathNet(D=6, N=5, G=3, Hs=[2, 3], readout="mean", generator=g).double()
    X = torch.randn(4, 5, 6, generator=g, dtype=F64)
    with torch.no_grad():
        f_net = net(X)
        f_ref = model.forward(X, net.logit_matrices(), net.weights(), "mean")[0]
    assert torch.allclose(f_net, f_ref, atol=1e-10)
    with torch.no_grad():
        f_cached, cache = net.run_with_cache(X)
    assert torch.equal(f_cached, f_net) and cache["blocks.1.attn.hook_pattern"].shape == (4, 3, 5, 5)
    _, ref = model.run_with_cache(lambda hook: model.forward(X, net.logit_matrices(), net.weights(), "mean", hook))
    assert list(cache) == list(ref)  # the same names in the same order as the fixed-attention network
    assert torch.allclose(cache["blocks.1.hook_resid_post"], ref["blocks.1.hook_resid_post"][0], atol=1e-10)
    net.prune([[True, False], [True, True, True]])
    with torch.no_grad():
        heads = net.logit_matrices()
        w = net.weights()
        w1 = model.Weights(w.V0, [w.V[0][:, :1], w.V[1]], w.a)
        f_pruned = model.forward(X, [heads[0][:1], heads[1]], w1, "mean")[0]
        assert torch.allclose(net(X), f_pruned, atol=1e-10)  # rescaled by (N·1)^{-1/2}: a 1-head layer
    with pytest.raises(ValueError, match="every head"):
        net.prune([[False, False], [True, True, True]])
    U = model.order_parameter(net.weights())
    assert U.shape == (1, 6, 6) and torch.allclose(U, U.mT)
    assert math.isclose(float(U[0].trace()), float((model.effective_weights(net.weights())[0] ** 2).sum() / 5))


@pytest.mark.parametrize("nonlinearity", ["softmax", "hardmax"])
@pytest.mark.parametrize("readout", ["mean", 0, 3, -1])
def test_readout_attention_is_the_readout_column(nonlinearity, readout):
    """The last layer's Ω r computed from the readout column alone equals the full Ω times r; a zero head
    (uniform attention under softmax, the first key under hardmax) takes the GEMM-free path and agrees too."""
    g = torch.Generator().manual_seed(3)
    X = torch.randn(4, 6, 7, generator=g, dtype=F64)
    A = torch.cat([torch.randn(2, 7, 7, generator=g, dtype=F64), torch.zeros(1, 7, 7, dtype=F64)])
    om = model.attention(X, A, nonlinearity)
    full = om @ model.readout_vector(6, readout)
    assert float((model.readout_attention(X, A, readout, nonlinearity) - full).abs().max()) < 1e-14
    logits = torch.einsum("psd,hde,pte->phst", X, A, X)
    want = torch.softmax(logits, dim=-2) if nonlinearity == "softmax" else torch.nn.functional.one_hot(
        logits.argmax(dim=-2), 6).transpose(-1, -2).to(F64)
    assert float((om - want).abs().max()) < 1e-13


def test_hardmax_is_the_large_beta_limit():
    """Hardmax attention is softmax at β → ∞ (distinct logits): path features at β = 1e4 agree with hardmax."""
    g = torch.Generator().manual_seed(4)
    X = torch.randn(3, 5, 6, generator=g, dtype=F64)
    heads = _heads([2, 2], 6, g, scale=3.0)
    hard = model.path_features(X, heads, -1, nonlinearity="hardmax")
    soft = model.path_features(X, [1e4 * A for A in heads], -1)
    assert float((hard - soft).abs().max()) < 1e-8
    with pytest.raises(ValueError, match="key 'attention' = 'relu'"):
        model.attention(X, heads[0], "relu")
