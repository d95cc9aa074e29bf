"""Theory: closed forms (Eqs. 13, 14, 19), kernels (Eqs. 17-18, B.22), block map and its iteration, α_c
bisection, fixed points."""

import math

import pytest
import torch

from attnlab.signal import theory
from attnlab.signal.arch import Architecture, beta_from_std, convert_beta, std_from_beta
from attnlab.signal.theory import diagram, kernels, rem

F64 = torch.float64
BASE = Architecture(beta=0.1, sigma_v2=0.2, sigma_w2=0.2, sigma_b2=4e-4)


def test_rem_closed_forms():
    assert float(rem.beta_c(0.0)) == pytest.approx(1.414214, abs=1e-6)
    assert float(rem.beta_c(0.5)) == pytest.approx(2.0)
    assert float(rem.q_sa(3, 0)) == pytest.approx(0.528595, abs=1e-6)
    assert float(rem.q_sa(2, 0.2)) == pytest.approx(0.209431, abs=1e-6)
    assert float(rem.q_sa(5, 0.5)) == 0.6
    assert float(rem.q_sa(torch.tensor([0.5, 1.0, 1.4]), 0.0).abs().max()) == 0.0
    for (b, r), want in {(3, 0.1): 0.180902, (2, 0.2): 0.544152, (5, 0.5): 0.625, (1, 0.3): 1.0}.items():
        assert float(rem.sa_cosine(b, r)) == pytest.approx(want, abs=1e-6)
    assert float(rem.sa_cosine(0.5, 0.0)) == 1.0  # uniform attention on orthogonal tokens: the physical limit


def test_entropy_and_effective_keys():
    assert float(rem.entropy_norm(0.5)) == pytest.approx(0.875)
    assert float(rem.entropy_norm(2.0)) == 0.0
    assert float(rem.entropy_frozen(3.0)) == pytest.approx(1.25, abs=0.01)
    assert float(rem.effective_keys(3.0)) == pytest.approx(3 / (3 - math.sqrt(2)))
    assert math.isinf(float(rem.effective_keys(1.0)))
    # Eq. 15: below β_c the finite-T IPR decays as a power of T; above it Eq. 13
    assert float(rem.q_sa_finite_heuristic(1.0, 0.0, 256)) == pytest.approx(256**-0.5)
    assert float(rem.q_sa_finite_heuristic(3.0, 0.0, 256)) == pytest.approx(float(rem.q_sa(3.0, 0.0)))


def test_mc_overlaps_limits_and_table():
    g = torch.Generator().manual_seed(0)
    mc = rem.mc_overlaps(torch.tensor([1e-6, 3.0]), torch.tensor([0.3, 0.0]), 64, 2, g)
    assert float(mc["q_sa"][0]) == pytest.approx(1 / 64, rel=1e-3)  # β → 0: uniform rows
    assert float(mc["p_sa"][0]) == pytest.approx(1 / 64, rel=1e-3)
    assert float(mc["cos"][0]) == pytest.approx(1.0, abs=1e-6)
    assert float(mc["p_sa"][1]) < 0.05 < float(mc["q_sa"][1])  # frozen rows: own keys, p_sa sub-leading
    # the annealed (small-β) forms of q_sa and the sub-leading p_sa (App. B.5, Eq. 15) against the MC
    mc = rem.mc_overlaps(0.5, 0.3, 256, 4, g)
    assert float(mc["q_sa"]) == pytest.approx(float(rem.q_sa_annealed(0.5, 0.3, 256)), rel=0.1)
    assert float(mc["p_sa"]) == pytest.approx(float(rem.p_sa_annealed(0.5, 0.3, 256)), rel=0.1)
    table = rem.OverlapTable(64, betas=torch.linspace(0, 4, 9), rhos=torch.linspace(0, 1, 5), n_rep=2)
    q, _, s = table(torch.tensor(0.0), torch.tensor(0.5))
    assert float(q) == pytest.approx(1 / 64, rel=1e-3) and float(s) == pytest.approx(1.0, abs=1e-6)


def test_relu_kernel_and_quadrature():
    assert torch.allclose(kernels.relu_f(torch.tensor([0.0, 1.0, -1.0])),
                          torch.tensor([1 / math.pi, 1.0, 0.0], dtype=F64), atol=1e-12)
    c = torch.linspace(-1, 1, 21, dtype=F64)
    assert float((kernels.gauss_cross("relu", 2.0, c) - kernels.relu_f(c)).abs().max()) < 1e-4
    q2, p2, c1 = kernels.mlp_moments(torch.tensor(1.0), "relu", 2.0, 0.0)
    assert float(q2) == pytest.approx(2.0) and float(p2) == pytest.approx(2.0) and float(c1) == 1.0
    # tanh: the table used for big batches agrees with the direct quadrature
    r = torch.linspace(0, 1, 300, dtype=F64)
    big = kernels.mlp_moments(r, "tanh", 4.0, 0.0)[1]
    small = torch.cat([kernels.mlp_moments(r[i:i + 10], "tanh", 4.0, 0.0)[1] for i in range(0, 300, 10)])
    assert float(((big - small) / small.clamp(min=1e-3)).abs().max()) < 2e-5
    with pytest.raises(ValueError, match="allowed"):
        kernels.phi("sigmoid", torch.zeros(1))


def test_block_regressions_and_iteration():
    assert float(theory.block(0.05, BASE)["rho"]) == pytest.approx(0.065841, abs=1e-6)
    assert float(theory.block(0.05, BASE.replace(beta=3.0))["rho"]) == pytest.approx(0.060603, abs=1e-6)
    he = Architecture(beta=2.0, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0)
    assert float(theory.block(0.3, he)["rho"]) == pytest.approx(0.515784, abs=1e-6)
    assert float(theory.block(0.3, he.replace(beta=0.5))["rho"]) == pytest.approx(0.542930, abs=1e-6)
    # iteration = repeated single blocks, broadcast over a configuration axis
    it = theory.iterate(0.05, BASE, L=10, alpha_sa=torch.tensor([0.5, 1.0, 2.0]))
    rho = torch.full((3,), 0.05, dtype=F64)
    for _ in range(10):
        rho = theory.block(rho, BASE, alpha_sa=torch.tensor([0.5, 1.0, 2.0]))["rho"]
    assert torch.allclose(it["rho"][-1], rho, atol=1e-12)
    assert math.isnan(float(it["ipr"][0, 0]))
    traj = theory.predict(BASE, 0.05, L=5)
    assert traj.time_name == "layer" and traj["rho"].shape == (6,)


def test_pre_ln_tracks_norm():
    pre = BASE.replace(ln_position="pre")
    out = theory.iterate(0.05, pre, L=12)
    assert float(out["q"][-1]) > 1.5  # the residual stream grows without a final LN
    assert torch.all(torch.diff(out["rho"]) > 0)


def test_rho_L_monotone_in_alpha_and_alpha_c_bisection():
    alphas = torch.linspace(0.0, 5.0, 200, dtype=F64)
    r = diagram.rho_L(BASE, alphas, [24], rho0=0.05)[0]
    assert torch.all(torch.diff(r) <= 1e-12)
    fine = torch.linspace(0.0, 2.0, 20001, dtype=F64)
    for L, eps in ((12, 1e-2), (24, 1e-1)):
        ac = float(diagram.alpha_c(BASE, [L], [eps], rho0=0.05)[0, 0])
        scan = diagram.rho_L(BASE, fine, [L], rho0=0.05)[0]
        first = float(fine[torch.nonzero(scan < 1 - eps)[0, 0]])
        assert abs(ac - first) < 0.005, (L, eps, ac, first)
    he = Architecture(beta=0.1, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0)
    acs = diagram.alpha_c(he, [6, 12, 24], [1e-2], rho0=0.05)[:, 0]
    assert torch.all(torch.diff(acs) > 0)
    # with σ_w² = 2 the MLP alone collapses 200 layers: no α_SA can help (α_c = ∞)
    assert float(diagram.rho_L(he, torch.tensor([1e6]), [200], rho0=0.05)[0, 0]) > 0.99


def test_trainability_diagram_phases():
    d = diagram.trainability(BASE.replace(L=60), [0.1, 1.0, 2.0], [0.5, 1.0, 4.0])
    ph = d["phase"]
    assert ph.shape == (3, 3)
    assert torch.all(ph[:, 2] == diagram.ENTROPY_COLLAPSE)  # β = 2 > √2
    assert ph[0, 0] == diagram.RANK_COLLAPSE and ph[2, 0] == diagram.TRAINABLE


def test_fixed_points_relu_vs_tanh():
    assert theory.fixed_points(BASE) == []
    assert theory.slope_at_one(BASE) < 1
    tanh = Architecture(beta=0.1, sigma_v2=1.0, sigma_b2=0.0, activation="tanh")
    sc = theory.critical_sigma_w2(tanh)
    assert 4 < sc < 16
    assert theory.slope_at_one(tanh.replace(sigma_w2=sc)) == pytest.approx(1.0, abs=1e-6)
    assert theory.fixed_points(tanh.replace(sigma_w2=4.0)) == []
    (star,) = theory.fixed_points(tanh.replace(sigma_w2=16.0))
    assert 0.5 < star < 0.95
    assert float(theory.iterate(0.1, tanh.replace(sigma_w2=16.0), L=300)["rho"][-1]) == pytest.approx(star, abs=1e-4)


def test_beta_conventions():
    assert beta_from_std(0.02, 768, 12, 512, "authors_dk") == pytest.approx(0.01025, abs=1e-4)
    assert beta_from_std(0.02, 768, 12, 512) == pytest.approx(0.1230, abs=1e-4)
    assert std_from_beta(beta_from_std(0.03, 720, 6, 512), 720, 6, 512) == pytest.approx(0.03)
    assert convert_beta(0.5, 4, to="per_head_score", frm="authors_dk") == 2.0
    a = Architecture(d=64, H=4, beta=0.5, beta_convention="authors_dk", T=128, T_init=512)
    assert a.beta_score == 2.0
    assert a.beta_theory == pytest.approx(2.0 * math.sqrt(math.log(512) / math.log(128)))
