"""Factored attention = the Potts conditionals (Eqs. (4)-(6)), eq. (2) at a = 0, the closed-form gradient, the
vanilla transformer's masking and named activations, and the metrics of docs/studies/potts.md note 6."""

import numpy as np
import pytest
import torch

from attnlab.potts import metrics
from attnlab.potts.data.potts import PottsModel, PottsSpec, make_J, make_U
from attnlab.potts.model import (
    VanillaTransformer,
    attention,
    factored_logits,
    factored_loss_grad,
    mlm_loss,
    perturbed_logits,
    potts_representation,
)

F64 = torch.float64


def planted(L=8, C=5, beta=0.9, seed=0):
    rng = np.random.default_rng(seed)
    return PottsModel(torch.tensor(make_J(L, "er", rng, p=0.4)), torch.tensor(make_U(C, rng)), beta)


def data(potts, n=64, seed=0):
    return torch.randint(0, potts.C, (n, potts.L), generator=torch.Generator().manual_seed(seed))


def test_mlm_loss_is_minus_pseudo_likelihood():
    """Check 5: linear factored attention with A = βJ, V = U: logits = β Σ_j J_ij U s_j to 1e-12 and
    MLM loss = -PL to 1e-10, on any data (here with Gaussian J of both signs)."""
    rng = np.random.default_rng(1)
    G = rng.standard_normal((7, 7))
    J = (G + G.T) / 2
    np.fill_diagonal(J, 0)
    potts = PottsModel(torch.tensor(J), torch.tensor(make_U(4, rng)), 0.8)
    c = data(potts)
    W, V = potts_representation(potts, attn="linear")
    logits = factored_logits(c, W, V, "linear")
    assert (logits - potts.local_fields(c)).abs().max() < 1e-12
    assert abs(float(mlm_loss(logits, c) + potts.pseudo_loglik(c))) < 1e-10


def test_softmax_with_sink_represents_the_conditionals_exactly():
    """Check 6: κ = 1/(β max k_i), A = κβJ + sink, V = U/κ reproduces eq. (5) to 1e-8; without the sink
    (unequal degrees) the same recipe fails by more than 1e-3."""
    potts = planted()
    assert len(set(potts.degrees.tolist())) > 1
    c = data(potts)
    W, V = potts_representation(potts)
    A = attention(W)
    assert torch.allclose(A.sum(-1), torch.ones(potts.L, dtype=F64))
    lp = torch.log_softmax(factored_logits(c, W, V), -1)
    assert (lp - potts.conditional_logp(c)).abs().max() < 1e-8
    W2, V2 = potts_representation(potts, attn="softmax_nosink")
    lp2 = torch.log_softmax(factored_logits(c, W2, V2, "softmax_nosink"), -1)
    assert (lp2 - potts.conditional_logp(c)).abs().max() > 1e-3
    with pytest.raises(ValueError, match="negative couplings"):
        potts_representation(PottsModel(-potts.J, potts.U, 1.0))


def test_perturbed_attention_at_a_zero_is_factored():
    """Check 7: eq. (2) with a = 0, E = I, one-hot positions = eq. (4) with W = (QᵀK)[:L, :L]."""
    g = torch.Generator().manual_seed(0)
    L, d = 6, 9
    Q, K, V = (torch.randn(d, d, generator=g, dtype=F64) for _ in range(3))
    c = torch.randint(0, d, (30, L), generator=g)
    W = Q.T @ K
    z = perturbed_logits(c, W, V, 0.0)
    assert (z - factored_logits(c, W[:L, :L], V)).abs().max() < 1e-12
    h, A = perturbed_logits(c, W, V, 0.7, return_attention=True)
    assert torch.allclose(A.sum(-1), torch.ones_like(A[..., 0]))
    assert (h - factored_logits(c, W[:L, :L], V)).abs().max() > 1e-3
    stacked = perturbed_logits(c, torch.stack([W, W]), torch.stack([V, V]), torch.tensor([0.0, 0.7], dtype=F64))
    assert (stacked[1] - h).abs().max() < 1e-12
    with pytest.raises(ValueError, match="L <= d"):
        perturbed_logits(torch.zeros(2, 12, dtype=torch.long), W, V, 0.0)


@pytest.mark.parametrize("attn", ["softmax", "softmax_nosink", "linear"])
def test_closed_form_gradient_matches_finite_differences(attn):
    """Check 8: the hand-written gradient of the MLM loss (rel. err. < 1e-6) and autograd agree."""
    g = torch.Generator().manual_seed(2)
    W = torch.randn(2, 5, 5, generator=g, dtype=F64)
    V = torch.randn(2, 4, 4, generator=g, dtype=F64)
    c = torch.randint(0, 4, (2, 12, 5), generator=g)
    w = torch.rand(2, 12, generator=g, dtype=F64)
    loss, gW, gV = factored_loss_grad(c, W, V, w, attn)
    assert torch.allclose(loss, mlm_loss(factored_logits(c, W, V, attn), c, w), atol=1e-14)
    eps = 1e-6
    for P, grad in ((W, gW), (V, gV)):
        num = torch.zeros_like(P)
        for idx in np.ndindex(*P.shape):
            old = float(P[idx])
            P[idx] = old + eps
            up = factored_loss_grad(c, W, V, w, attn)[0][idx[0]]
            P[idx] = old - eps
            down = factored_loss_grad(c, W, V, w, attn)[0][idx[0]]
            P[idx] = old
            num[idx] = (up - down) / (2 * eps)
        assert float((num - grad).norm() / grad.norm()) < 1e-6


def test_vanilla_transformer_masks_and_caches():
    g = torch.Generator().manual_seed(0)
    model = VanillaTransformer(C=5, L=6, d=8, n_layers=2, generator=g).double()
    c = torch.randint(0, 5, (3, 6), generator=g)
    x = model.all_masked(c)
    assert x.shape == (18, 6, 5)
    assert (x.reshape(3, 6, 6, 5).diagonal(dim1=1, dim2=2) == 0).all()  # copy i has site i masked
    logits, maps = model.mlm_logits(c, with_maps=True)
    assert logits.shape == (3, 6, 5) and maps.shape == (2, 3, 6, 6)
    assert torch.allclose(maps.sum(-1), torch.ones(2, 3, 6, dtype=maps.dtype))
    one = model(model.masked_inputs(c, torch.full((3,), 2)))[:, 2]
    assert torch.allclose(one, logits[:, 2], atol=1e-12)  # exact MLM reads site i in the copy masking site i
    _, cache = model.run_with_cache(x)
    assert set(cache) == {"hook_embed", "blocks.0.attn.hook_pattern", "blocks.0.hook_resid_post",
                          "blocks.1.attn.hook_pattern", "blocks.1.hook_resid_post"}
    assert torch.equal(model(x), _) and not cache["hook_embed"].requires_grad
    uniform = model(x, hook=lambda name, t: torch.full_like(t, 1 / 6) if name.endswith("hook_pattern") else None)
    assert not torch.allclose(uniform, model(x))  # a hook's returned tensor replaces the activation
    with pytest.raises(ValueError, match="head"):
        VanillaTransformer(5, 6, head="mlp")


def test_metrics_are_gauge_invariant():
    J = torch.tensor(make_J(12, "er", np.random.default_rng(0), p=0.3))
    A = 0.2 * J + torch.diag(torch.rand(12, dtype=F64))  # any sink, any scale
    assert abs(float(metrics.corr_offdiag(A, J)) - 1) < 1e-12
    assert float(metrics.recon_error(A, J)) < 1e-20
    assert float(metrics.topk_precision(A, J)) == 1.0
    assert float(metrics.roc_auc(A, J)) == 1.0
    noise = torch.rand(3, 12, 12, generator=torch.Generator().manual_seed(0), dtype=F64)
    assert metrics.corr_offdiag(noise, J).shape == (3,) and (metrics.corr_offdiag(noise, J).abs() < 0.5).all()
    U = torch.tensor(make_U(6, np.random.default_rng(1)))
    shifted = 3 * U + torch.arange(6, dtype=F64)[None, :]  # scale and column shifts
    assert abs(float(metrics.value_corr(shifted, U)) - 1) < 1e-12
    lp = torch.log_softmax(torch.randn(4, 5, 6, dtype=F64), -1)
    assert float(metrics.mean_kl(lp, lp)) == 0.0


def test_cpu_fig2_structure_has_an_isolated_site():
    """The seeded `cpu_fig2` J (docs, 'The default data set') has one site of degree 0: its conditional is uniform."""
    potts = PottsSpec().model()
    iso = (potts.degrees == 0).nonzero().flatten()
    assert len(iso) >= 1
    c = data(potts, 10)
    lp = potts.conditional_logp(c)[:, iso]
    assert torch.allclose(lp, torch.full_like(lp, -np.log(potts.C)))
