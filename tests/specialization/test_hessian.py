"""Saddle analysis: Lemma A.4 (softmax-1 fixed point), Hessian constants c1-c4 (Lemma III.1 / A.5) and
escape rates (Lemmas A.4, A.5)."""

import math

import pytest
import torch

from attnlab.specialization import theory as T
from attnlab.specialization.data import make_law, symsqrt
from attnlab.specialization.theory import hessian as Hs

torch.set_num_threads(1)
F64 = torch.float64
ACTS = ("softmax", "softmax1", "bsoftmax")


@pytest.mark.parametrize("act", ACTS)
@pytest.mark.parametrize("L,H", [(5, 2), (4, 3), (10, 2), (3, 4)])
def test_constants_closed_form_equal_definition(act, L, H):
    b = 0.7 if act == "softmax1" else 0.0
    v = Hs.softmax1_fixed_point_v(L, b) if act == "softmax1" else 1.0
    cf, ad = Hs.constants_closed_form(act, L, H, b), Hs.constants_autodiff(act, L, H, b, v)
    for k in ("c1", "c2", "c3", "c4"):
        assert abs(cf[k] - ad[k]) < 1e-12, (k, cf[k], ad[k])
    assert cf["c1"] > 0 and cf["c2"] > 0 and cf["c3"] > 0 and cf["c4"] >= 0


@pytest.mark.parametrize("L,H,b,v", [(5, 2, 0.0, 1.0), (4, 3, 0.7, 1.4), (10, 8, -1.0, 0.9)])
def test_lemma_a4_softmax1_gradients(L, H, b, v):
    """Lemma A.4: autodiff at m = 0, r = 0, b = b̃1 vs (A16), (A17) (exact: σ is constant there)."""
    prep = T.mc_samples(make_law("flip", 2, nu1=2.0, nu2=2.0), L, H, 200).prepare()
    m, r = torch.zeros(1, H, 2, dtype=F64), torch.zeros(1, H, H, dtype=F64)
    bb, vv = torch.full((1, H), b, dtype=F64), torch.full((1,), v, dtype=F64)
    loss, (_, _, gb, gv) = T.autograd_loss_and_grad(m, r, bb, vv, prep, "softmax1")
    ref = Hs.softmax1_unspecialised(L, H, b, v)
    assert abs(float(loss[0]) - ref["loss"]) < 1e-12
    assert torch.allclose(gb, torch.full_like(gb, ref["grad_b"]), rtol=1e-10, atol=0)
    assert abs(float(gv[0]) / ref["grad_v"] - 1) < 1e-10
    if (b, v) == (0.0, 1.0):
        assert ref["grad_b"] > 0 and ref["grad_v"] < 0  # (A18), (A19)


@pytest.mark.parametrize("L,H,b", [(5, 2, 0.0), (4, 3, 0.7)])
def test_softmax1_fixed_point_and_b_hessian(L, H, b):
    v = Hs.softmax1_fixed_point_v(L, b)
    prep = T.mc_samples(make_law("flip", 2, nu1=2.0, nu2=2.0), L, H, 200).prepare()
    m, r = torch.zeros(H, 2, dtype=F64), torch.zeros(H, H, dtype=F64)

    def f(bb, vv):
        return T.reduced_loss(m, r, bb, vv, prep, "softmax1")

    bb = torch.full((H,), b, dtype=F64, requires_grad=True)
    vv = torch.tensor(v, dtype=F64, requires_grad=True)
    gb, gv = torch.autograd.grad(f(bb, vv), [bb, vv])
    assert gb.abs().max() < 1e-12 and abs(float(gv)) < 1e-12
    hb = torch.autograd.functional.hessian(lambda x: f(x, vv.detach()), bb.detach())
    expect = Hs.softmax1_unspecialised(L, H, b, v)["hess_b"]
    assert torch.allclose(hb, torch.full((H, H), expect, dtype=F64), rtol=1e-8, atol=0)


def _whiten(s):
    """Make the empirical (weighted) second moments of the noise (u, z_1..z_{L-1}) exactly the identity: at
    m = 0, r = 0 the Hessian in m only involves these moments, so Lemma A.5 then holds to round-off."""
    F, N, L = s.z.shape
    x = torch.cat([s.u[:, None, :], s.z[:, :, 1:].permute(0, 2, 1)], 1).reshape(F * L, N)
    x = torch.linalg.inv(symsqrt((x * s.w) @ x.T)) @ x
    x = x.reshape(F, L, N)
    s.u = x[:, 0]
    s.z = torch.cat([s.z[:, :, :1], x[:, 1:].permute(0, 2, 1)], 2)
    return s


@pytest.mark.parametrize("act", ACTS)
def test_mc_hessian_matches_lemma_a5(act):
    """Lemma A.5: Gaussian θ, ν̃ = (3, 1), m = 0, r = 0: the autodiff Hessian in m equals
    2[1 1ᵀ ⊗ (c1 I + (c2+c4) Cov θ) - (c3+c4) I ⊗ Cov θ] — to 1e-9 with moment-matched samples,
    within 5% of max |entry| on raw MC samples (N = 10^5)."""
    law = make_law("gaussian", 2, nu1=3.0, nu2=1.0)
    cov = law.cov()
    for L, H in [(5, 2), (4, 3), (10, 2)]:
        b = 0.7 if act == "softmax1" else 0.0
        v = Hs.softmax1_fixed_point_v(L, b) if act == "softmax1" else 1.0
        c = Hs.constants_closed_form(act, L, H, b)
        want = Hs.predicted_hessian_m(c, cov, H)
        raw = T.mc_samples(law, L, H, 100_000 if (L, H) == (5, 2) else 10_000, seed=1)
        if (L, H) == (5, 2):
            hs_raw = Hs.hessian_m(act, raw.prepare(), H, 2, b, v)
            assert (hs_raw - want).abs().max() < 0.05 * want.abs().max()
        hs = Hs.hessian_m(act, _whiten(raw).prepare(), H, 2, b, v)
        assert (hs - want).abs().max() < 1e-9, (L, H, hs - want)
        # the blocks of (13)
        cross, diff = hs[0, :, 1, :] / 2, (hs[0, :, 1, :] - hs[0, :, 0, :]) / 2
        assert torch.allclose(cross, c["c1"] * torch.eye(2, dtype=F64) + (c["c2"] + c["c4"]) * cov, atol=1e-9)
        assert torch.allclose(diff, (c["c3"] + c["c4"]) * cov, atol=1e-9)


def test_escape_rates():
    """Lemma III.1, Prop. III.4: flip (2,2), softmax, L = 10, H = 2: λ = 2(c3+c4)ν2 = 0.144 along the
    flipping direction."""
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    lam = Hs.escape_rates("softmax", 10, 2, law.mean(), law.cov())
    assert abs(float(lam[0]) - 0.144) < 1e-12 and abs(float(lam[1])) < 1e-12
    assert abs(Hs.escape_time(0.144, 1e4) - math.log(1e4) / 0.288) < 1e-12
    # B-softmax escapes faster than softmax (c4 > 0 and larger c3)
    assert Hs.escape_rates("bsoftmax", 10, 2, law.mean(), law.cov())[0] > lam[0]
