"""Data model of paper 0: laws of θ (moments, Λ, validation), spikes and sequences, eqs. (1)-(2)."""

import math

import pytest
import torch

from attnlab.specialization.data import (
    DiscreteLaw,
    FlipSpike,
    GaussianLaw,
    IsoGaussian,
    NonIsoGaussian,
    OneHotSpike,
    iter_sequences,
    make_law,
    sample_sequences,
    sample_spikes,
)

torch.set_num_threads(1)
F64 = torch.float64

LAWS = [
    make_law("flip", 2, nu1=2.0, nu2=3.0),
    make_law("flip", 4, nu=10.0),
    make_law("gaussian", 3, nu1=20.0, nu2=1.0),
    make_law("gaussian_iso", 2, nu=2.0),
    make_law("discrete", 2, values=[[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]], probs=[0.5, 0.3, 0.2]),
    make_law("gaussian_general", 2, cov=[[2.0, 0.8], [0.8, 1.0]], mean=[1.0, -0.5]),
]


def test_make_law_classes_and_moments():
    assert make_law("flip", 2, nu=2.0) == FlipSpike(2.0, 2.0)
    assert isinstance(make_law("flip", 4, nu=10.0), OneHotSpike)
    assert isinstance(make_law("onehot", 2, nu=1.0), OneHotSpike)
    assert isinstance(make_law("gaussian", 2, nu1=8.0, nu2=2.0), NonIsoGaussian)
    assert isinstance(make_law("gaussian_iso", 3, nu=9.0), IsoGaussian)
    # closed-form moments of the laws of Sec. II
    flip = FlipSpike(2.0, 3.0)
    torch.testing.assert_close(flip.mean(), torch.tensor([math.sqrt(2.0), 0.0], dtype=F64))
    torch.testing.assert_close(flip.cov(), torch.diag(torch.tensor([0.0, 3.0], dtype=F64)))
    oh = OneHotSpike(4, 10.0)
    torch.testing.assert_close(oh.mean(), torch.full((4,), math.sqrt(10.0) / 4, dtype=F64))
    torch.testing.assert_close(oh.cov(), 10.0 / 4 * (torch.eye(4, dtype=F64) - 1 / 4))
    torch.testing.assert_close(
        NonIsoGaussian(3, 20.0, 1.0).variances, torch.tensor([20.0, 10.5, 1.0], dtype=F64)
    )
    assert NonIsoGaussian(1, 5.0, 1.0).variances.tolist() == [5.0]
    assert hash(FlipSpike(1.0, 2.0)) == hash(FlipSpike(1.0, 2.0))


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.name)
def test_sample_moments_match(law):
    n = 200_000
    theta = law.sample(n, generator=torch.Generator().manual_seed(1), dtype=F64)
    assert theta.shape == (n, law.F)
    cov = law.cov()
    se = (cov.diagonal().clamp(min=1e-3) / n).sqrt()
    assert ((theta.mean(0) - law.mean()).abs() < 5 * se).all()
    emp = torch.cov(theta.T, correction=0).reshape(law.F, law.F)
    scale = (cov.diagonal()[:, None] * cov.diagonal()[None, :]).sqrt().clamp(min=1e-3)
    assert ((emp - cov).abs() < 6 * scale * math.sqrt(2.0 / n) + 1e-9).all()
    if law.is_discrete:
        values, probs = law.support()
        assert values.shape == (probs.shape[0], law.F)
        assert abs(float(probs.sum()) - 1) < 1e-12
    else:
        with pytest.raises(TypeError):
            law.support()


def _grid_log_marginal(law, c, p):
    """Brute force: log ∫ exp(θᵀc − θᵀpθ/2) N(θ; μ, Σ) dθ by a trapezoid rule on a 2-D grid."""
    mu, cov = law.mean(), law.cov()
    ax = torch.linspace(-14, 14, 1401, dtype=F64)
    g = torch.stack(torch.meshgrid(ax, ax, indexing="ij"), -1).reshape(-1, 2)
    prec = torch.linalg.inv(cov)
    d = g - mu
    logdens = -0.5 * ((d @ prec) * d).sum(-1) - math.log(2 * math.pi) - 0.5 * torch.logdet(cov)
    expo = logdens[None] + c @ g.T - 0.5 * ((g @ p) * g).sum(-1)[None]
    h = float(ax[1] - ax[0])
    return torch.logsumexp(expo, -1) + 2 * math.log(h)


@pytest.mark.parametrize(
    "law", [NonIsoGaussian(2, 3.0, 1.0), GaussianLaw([[2.0, 0.8], [0.8, 1.0]], [1.0, -0.5])]
)
def test_gaussian_log_marginal_matches_quadrature(law):
    c = torch.tensor([[0.3, -1.2], [2.0, 0.5], [-1.0, 1.0]], dtype=F64)
    p = torch.tensor([[1.1, 0.05], [0.05, 0.9]], dtype=F64)
    for pp in (torch.eye(2, dtype=F64), p):
        torch.testing.assert_close(law.log_marginal(c, pp), _grid_log_marginal(law, c, pp), atol=1e-6, rtol=0)
    torch.testing.assert_close(law.log_marginal(c), law.log_marginal(c, torch.eye(2, dtype=F64)))
    if law.mean().abs().max() == 0:  # eq. (16)'s Gaussian integral: quadratic, up to −½ log det(I + Σ)
        nu = law.cov().diagonal()
        expect = (nu * c**2 / (2 * (1 + nu))).sum(-1) - 0.5 * torch.log1p(nu).sum()
        torch.testing.assert_close(law.log_marginal(c), expect)


def test_discrete_log_marginals_match_spec_closed_forms():
    c = torch.randn(50, 2, generator=torch.Generator().manual_seed(0), dtype=F64) * 3
    nu1, nu2 = 2.0, 3.0
    want = math.sqrt(nu1) * c[:, 0] + torch.log(torch.cosh(math.sqrt(nu2) * c[:, 1])) - (nu1 + nu2) / 2
    torch.testing.assert_close(FlipSpike(nu1, nu2).log_marginal(c), want)
    c4 = torch.randn(50, 4, dtype=F64, generator=torch.Generator().manual_seed(1)) * 3
    spec4 = torch.logsumexp(math.sqrt(10.0) * c4, -1) - math.log(4) - 5.0
    torch.testing.assert_close(OneHotSpike(4, 10.0).log_marginal(c4), spec4)
    # general discrete law with a finite-D p: explicit sum over the support
    law = DiscreteLaw([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]], [0.5, 0.3, 0.2])
    p = torch.tensor([[1.1, 0.05], [0.05, 0.9]], dtype=F64)
    brute = torch.zeros(c.shape[0], dtype=F64)
    for th, pr in zip(law.values, law.probs, strict=True):
        th = torch.tensor(th, dtype=F64)
        brute += pr * torch.exp(c @ th - th @ p @ th / 2)
    brute = torch.log(brute)
    torch.testing.assert_close(law.log_marginal(c, p), brute)
    # float32 and large arguments stay finite
    assert torch.isfinite(FlipSpike(2.0, 2.0).log_marginal(torch.full((3, 2), 1e4))).all()


@pytest.mark.parametrize(
    ("name", "F", "params", "words"),
    [
        ("flip", 2, {"nu": -1.0}, ["nu=-1.0", "> 0"]),
        ("flip", 2, {"nu1": 1.0, "nu2": 0.0}, ["nu2=0.0"]),
        ("flip", 1, {"nu": 1.0}, ["F=1"]),
        ("flip", 3, {"nu1": 1.0, "nu2": 1.0}, ["nu1/nu2"]),
        ("onehot", 1, {"nu": 1.0}, ["F=1"]),
        ("gaussian", 2, {"nu1": 1.0, "nu2": 2.0}, ["nu1=1.0", "nu2=2.0"]),
        ("gaussian_iso", 2, {"nu": float("nan")}, ["nu=nan"]),
        ("gaussian_iso", 2, {"sigma": 1.0}, ["'sigma'", "allowed: nu"]),
        ("gaussian", 2, {"nu1": 1.0}, ["missing", "'nu2'"]),
        ("discrete", 3, {"values": [[1.0, 0.0]], "probs": [1.0]}, ["F=3", "F=2"]),
        ("discrete", 2, {"values": [[1.0, 0.0]], "probs": [0.5]}, ["probs"]),
        ("gaussian_general", 2, {"cov": [[1.0, 2.0], [2.0, 1.0]]}, ["positive semi-definite"]),
        ("potts", 2, {}, ["unknown law 'potts'", "flip"]),
    ],
)
def test_make_law_rejects_bad_values_with_one_line(name, F, params, words):
    with pytest.raises(ValueError) as err:
        make_law(name, F, **params)
    msg = str(err.value)
    assert "\n" not in msg
    for w in words:
        assert w in msg, msg


def test_spikes_and_sequences():
    g = torch.Generator().manual_seed(0)
    D, L, n = 400, 5, 3000
    ks = sample_spikes(2, D, generator=g, dtype=F64)
    assert ks.shape == (2, D)
    assert ((ks @ ks.T) - torch.eye(2, dtype=F64)).abs().max() < 0.3  # p ≈ I, O(D^-1/2)
    ortho = sample_spikes(3, 50, generator=g, orthonormal=True, dtype=F64)
    torch.testing.assert_close(ortho @ ortho.T, torch.eye(3, dtype=F64))
    law = FlipSpike(2.0, 2.0)
    batch = sample_sequences(law, ks, n, L=L, generator=g, dtype=F64)
    assert batch.X.shape == (n, L, D) and batch.y.shape == (n, D) and batch.theta.shape == (n, 2)
    assert torch.equal(batch.y, batch.X[torch.arange(n), batch.eps])
    assert set(batch.eps.tolist()) == set(range(L))
    # projections on the spikes: N(θ p, p) at the relevant token, N(0, p) elsewhere
    p = ks @ ks.T
    proj = batch.X @ ks.T  # (n, L, F)
    relevant = torch.zeros(n, L, dtype=torch.bool)
    relevant[torch.arange(n), batch.eps] = True
    z_rel = proj[relevant] - batch.theta @ p
    z_other = proj[~relevant]
    for z in (z_rel, z_other):
        assert (z.mean(0).abs() < 5 / math.sqrt(z.shape[0])).all()
        assert ((z.var(0) - p.diagonal()).abs() < 0.1).all()
    # chunked stream: at most `chunk` sequences per piece, same ε and θ as unchunked with the same seed
    pieces = list(iter_sequences(law, ks, 10, L=L, generator=torch.Generator().manual_seed(3), chunk=4))
    assert [pc.X.shape[0] for pc in pieces] == [4, 4, 2]
    whole = sample_sequences(law, ks, 10, L=L, generator=torch.Generator().manual_seed(3))
    assert torch.equal(torch.cat([pc.eps for pc in pieces]), whole.eps)
    assert torch.equal(torch.cat([pc.theta for pc in pieces]), whole.theta)
    with pytest.raises(ValueError, match="F=2"):
        sample_sequences(law, ortho, 3, L=L, generator=g)
