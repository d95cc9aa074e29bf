"""Theory of paper 4 (paper 4 §3, Fig. 1, App. B-C): explicit clustering head, Lemma 1/2 closed-form
gradients, Prop. 3 stationarity residuals and the Prop. 4 gradient bound. Everything in float64."""

import itertools
import math

import pytest
import torch

from attnlab.clustering.data import Task, n_multisets
from attnlab.clustering.model import ModelSpec, forward, init_params, loss_per_seed
from attnlab.clustering.theory import bound as B
from attnlab.clustering.theory import construction as H
from attnlab.clustering.theory import gradients as G
from attnlab.core.config import ConfigError

torch.set_num_threads(1)
F64 = torch.float64
CONFIGS = [(2, 12, 5, 2, 8), (2, 12, 5, 3, 12), (3, 12, 5, 4, 16), (3, 8, 3, 4, 16), (5, 8, 3, 6, 24)]


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def _joint_rel(a: dict, b: dict) -> float:
    num = sum(float((a[g] - b[g]).pow(2).sum()) for g in b)
    return math.sqrt(num / sum(float(b[g].pow(2).sum()) for g in b))


def _grad_norm2(grads: dict) -> float:
    return sum(float(g.pow(2).sum()) for g in grads.values())


def _autograd_logit_grads(params, x, spec):
    """∇_θ ζ_j(x) by autograd, one backward pass per (sentence, class)."""
    leaves = {n: t.clone().requires_grad_(n in G.GROUPS) for n, t in params.items()}
    z = forward(leaves, x, spec)["logits"][0]
    B, C = z.shape
    out = {g: torch.zeros(B, C, *params[g].shape[1:], dtype=F64) for g in G.GROUPS}
    for b in range(B):
        for j in range(C):
            grads = torch.autograd.grad(z[b, j], [leaves[g] for g in G.GROUPS], retain_graph=True)
            for g, gr in zip(G.GROUPS, grads, strict=True):
                out[g][b, j] = gr[0]
    return out


def _random_cases(n=20, N=6):
    """n random (model, x) pairs, p ∈ {2,3,5}, d ∈ {2,4,8}, h = 4d; some with V shrunk so that ||ξ|| ≪ 1."""
    for i in range(n):
        p, d = (2, 3, 5)[i % 3], (2, 4, 8)[(i // 3) % 3]
        spec = ModelSpec(p=p, N=N, d=d)
        params = init_params(spec, [1000 + i], dtype=F64)
        if i % 4 == 1:
            params["V"] = params["V"] * 0.1
        x = torch.randint(0, p, (3, N), generator=torch.Generator().manual_seed(i))
        yield spec, params, x


# ----------------------------------------------------------------------------------------------- C1, C2
def test_c1_lemma2_logit_gradients_match_autograd():
    for spec, params, x in _random_cases():
        cf, ag = G.logit_grads(params, x, spec), _autograd_logit_grads(params, x, spec)
        for g in G.GROUPS:
            assert cf[g].shape == ag[g].shape
            assert _rel(cf[g], ag[g]) < 1e-10, (spec, g)


def test_c1_printed_factor_is_wrong_when_xi_not_unit():
    """Documentation: the printed M = (I − ξ̄ξ̄ᵀ)/||ξ̄|| only agrees with autograd when ||ξ|| = 1. Its error in
    (I + Qᵀ)E(j) is (||ξ|| − 1)·QᵀE(j), so it is > 1 % per model as soon as some |‖ξ‖ − 1| > 0.1, but a single
    (x, j) can fall below 1 % when QᵀE(j) is small."""
    for spec, params, x in _random_cases():
        xi_norm = forward(params, x, spec)["xi"][0].norm(dim=-1)
        assert float((xi_norm - 1).abs().max()) > 0.1
        printed, ag = G.logit_grads(params, x, spec, printed=True), _autograd_logit_grads(params, x, spec)
        assert max(_rel(printed[g], ag[g]) for g in ("q", "V")) > 0.01
        assert max(_rel(printed[g], ag[g]) for g in ("W", "U")) < 1e-10   # W, U gradients do not involve M
    # rescaling V moves ξ along itself: with ||ξ|| = 1 the printed form is exact
    spec, params, x = next(_random_cases())
    x = x[:1]
    params = dict(params, V=params["V"] / forward(params, x, spec)["xi"][0].norm())
    printed, ag = G.logit_grads(params, x, spec, printed=True), _autograd_logit_grads(params, x, spec)
    assert all(_rel(printed[g], ag[g]) < 1e-10 for g in G.GROUPS)


def test_c2_lemma1_loss_gradient_is_reweighted_logit_gradients():
    for spec, params, _ in _random_cases(n=6):
        task = Task(spec.p, spec.N, 3)
        x = task.sample(64, torch.Generator().manual_seed(7))
        y = task.labels(x)
        p_hat = torch.softmax(forward(params, x, spec)["logits"][0], -1)
        weight = p_hat - torch.nn.functional.one_hot(y, spec.p).to(F64)            # p̂_j − 1{y = j}
        lg = G.logit_grads(params, x, spec)
        lemma1 = {g: torch.einsum("bc,bc...->...", weight, lg[g]) / len(x) for g in G.GROUPS}
        ag = G.autograd_grads(params, x, y, spec)
        for g in G.GROUPS:
            assert _rel(lemma1[g], ag[g]) < 1e-10


# ----------------------------------------------------------------------------------------------- C3
def test_construction_concrete_numbers():
    params, spec = H.build_clustering_head(2, 12, 5, 2, 8)
    assert spec == ModelSpec(p=2, N=12, d=2, h=8) and all(t.shape[0] == 1 and t.dtype == F64 for t in params.values())
    r2 = math.sqrt(2)
    assert torch.equal(params["E"][0], torch.tensor([[-1.0, 0.0], [1.0, 0.0]], dtype=F64))
    assert torch.equal(params["P"][0], torch.tensor([[0.0, 1.0]] * 5 + [[0.0, -10.0]] * 7, dtype=F64))
    assert torch.equal(params["q"][0], torch.tensor([0.0, 20.0], dtype=F64))
    assert torch.equal(params["V"][0], torch.eye(2, dtype=F64))
    W = torch.tensor([[35.3553, 63.6396], [35.3553, 49.4975], [35.3553, 21.2132], [35.3553, 7.0711],
                      [35.3553, -7.0711], [35.3553, -21.2132], [0, 0], [0, 0]], dtype=F64)
    assert torch.allclose(params["W"][0], W, atol=1e-4)
    assert math.isclose(float(params["W"][0, 0, 1]), 10 * 4.5 * r2, rel_tol=1e-14)
    U = torch.tensor([[-15, 25, -20, 20, -20, 20, 0, 0], [0] * 8], dtype=F64)
    assert torch.allclose(params["U"][0], U, atol=1e-12)
    assert torch.equal(H._interpolation_coefficients(2, 5),
                       torch.tensor([[2, -3, 2, -2, 2, -2], [-1, 2, -2, 2, -2, 2]], dtype=F64))


def _cluster_metrics(xi, pre_id, mset_id, n_pre, n_suf):
    """R_suffix, R_perm, cluster_score (head metrics 4-6) computed directly (probe grid, prefix-major)."""
    grid = xi.view(n_pre, n_suf, -1)
    total = float((xi - xi.mean(0)).pow(2).sum())
    pre_mean = grid.mean(1)                                                              # ξ̄_pre
    r_suffix = float((grid - pre_mean[:, None]).pow(2).sum()) / total
    mset_of_pre = mset_id.view(n_pre, n_suf)[:, 0]
    within_pre, within_all = 0.0, 0.0
    for m in mset_of_pre.unique():
        sel = mset_of_pre == m
        within_pre += float((pre_mean[sel] - pre_mean[sel].mean(0)).pow(2).sum())
        pts = xi[mset_id == m]
        within_all += float((pts - pts.mean(0)).pow(2).sum())
    r_perm = within_pre / float((pre_mean - pre_mean.mean(0)).pow(2).sum())
    return r_suffix, r_perm, 1 - within_all / total


@pytest.mark.parametrize("cfg", CONFIGS)
def test_c3_construction_is_an_ideal_clustering_head(cfg):
    p, N, k, d, h = cfg
    params, spec = H.build_clustering_head(p, N, k, d, h)
    task = Task(p, N, k)
    x = task.enumerate() if p**N <= 8192 else task.sample(20_000, torch.Generator().manual_seed(0))
    y = task.labels(x)
    acts = forward(params, x, spec)
    assert bool((acts["logits"][0].argmax(-1) == y).all())
    assert float(loss_per_seed(params, x, y, spec)[0]) < 1e-8
    assert math.sqrt(_grad_norm2(G.autograd_grads(params, x, y, spec))) < 1e-8
    assert float(acts["attn"][0][:, :k].sum(-1).mean()) > 0.9999
    # clusters on the probe grid: one ξ per multiset of prefix values
    xg, pre_id, _ = task.probe_grid()
    xi = forward(params, xg, spec)["xi"][0]
    mset = task.multiset_id(xg)
    n_c = n_multisets(p, k)
    assert len(torch.unique(torch.round(xi, decimals=5), dim=0)) == n_c
    centres = torch.stack([xi[mset == m].mean(0) for m in range(n_c)])
    spread = max(float((xi[mset == m] - centres[m]).norm(dim=-1).max()) for m in range(n_c))
    assert spread < 1e-6 and float(torch.pdist(centres).min()) > 1e-2
    n_pre = p**k
    r_suffix, r_perm, score = _cluster_metrics(xi, pre_id, mset, n_pre, len(xg) // n_pre)
    assert r_suffix < 1e-6 and r_perm < 1e-6 and score > 0.999999
    # head_type "ideal" (head metric 8): solved, R_suffix, R_perm ≤ 0.02 and attention mass ≥ 0.9 — all hold


def test_construction_general_informative_set():
    informative = (1, 4, 6, 9, 11)
    params, spec = H.build_clustering_head(2, 12, 5, 2, 8, informative=informative)
    task = Task(2, 12, 5, informative)
    x = task.enumerate()
    acts = forward(params, x, spec)
    assert bool((acts["logits"][0].argmax(-1) == task.labels(x)).all())
    assert float(acts["attn"][0][:, list(informative)].sum(-1).min()) > 0.9999


def test_construction_errors():
    with pytest.raises(ConfigError, match="'h' = 5"):
        H.build_clustering_head(2, 12, 5, 2, 5)                   # needs h ≥ 6
    with pytest.raises(ConfigError, match="'h' = 10"):
        H.build_clustering_head(3, 12, 5, 4, 10)                  # needs h ≥ 11
    with pytest.raises(ConfigError, match="'d' = 3"):
        H.build_clustering_head(3, 12, 5, 3, 16)                  # p = 3 needs d ≥ 4
    with pytest.raises(ConfigError, match="'d' = 2"):
        H.build_clustering_head(3, 12, 5, 2, 16)                  # p = 3, d = 2 is not covered
    with pytest.raises(ConfigError, match="'d' = 1"):
        H.build_clustering_head(2, 12, 5, 1, 8)
    with pytest.raises(ConfigError, match="'k'"):
        H.build_clustering_head(2, 12, 13, 2, 20)


def test_theory_rejects_variants_and_ensembles():
    task = Task(2, 6, 3)
    x = task.sample(8, torch.Generator().manual_seed(0))
    y = task.labels(x)
    for spec in (ModelSpec(p=2, N=6, d=2, norm="rmsnorm"), ModelSpec(p=2, N=6, d=2, mlp_bias=True)):
        params = init_params(spec, [0], dtype=F64)
        for fn, args in ((G.closed_form_grads, (x, y)), (B.bound_corrected, (x,)), (B.bound_paper, (x,)),
                         (G.logit_grads, (x,)), (G.stationarity_residuals, (x, y))):
            with pytest.raises(ConfigError, match="paper's"):
                fn(params, *args, spec)
    spec = ModelSpec(p=2, N=6, d=2)
    with pytest.raises(ConfigError, match="S = 2"):
        G.closed_form_grads(init_params(spec, [0, 1], dtype=F64), x, y, spec)


# ----------------------------------------------------------------------------------------------- C4, C5
def test_c4_gradient_vanishes_as_construction_scales_up():
    task = Task(2, 12, 5)
    x = task.enumerate()
    y = task.labels(x)
    norms = []
    for c in (0.2, 0.3, 0.5, 1.0):
        params, spec = H.build_clustering_head(2, 12, 5, 2, 8, lam=10 * c, mu=10 * c)
        assert bool((forward(params, x, spec)["logits"][0].argmax(-1) == y).all())
        norms.append(math.sqrt(_grad_norm2(G.autograd_grads(params, x, y, spec))))
    assert norms[0] > 1e-3                                   # λ = μ = 2: still correct, visibly non-stationary
    assert all(a > b for a, b in itertools.pairwise(norms))


def test_c5_stationarity_residuals_equal_autograd():
    for spec, params, _ in _random_cases(n=8, N=12):
        task = Task(spec.p, 12, 5)
        x = task.sample(128, torch.Generator().manual_seed(3))
        y = task.labels(x)
        cf, ag = G.closed_form_grads(params, x, y, spec), G.autograd_grads(params, x, y, spec)
        assert all(_rel(cf[g], ag[g]) < 1e-10 for g in G.GROUPS)
    task = Task(2, 12, 5)
    x = task.enumerate()
    y = task.labels(x)
    for c in (0.2, 0.3, 0.5, 1.0):   # near-stationary: compare on the joint gradient (q alone is ~1e-6 of it)
        params, spec = H.build_clustering_head(2, 12, 5, 2, 8, lam=10 * c, mu=10 * c)
        assert _joint_rel(G.closed_form_grads(params, x, y, spec), G.autograd_grads(params, x, y, spec)) < 1e-10
    res = G.stationarity_residuals(params, x, y, spec)
    assert set(res) == {"q", "V", "W", "U", "total"}
    assert res["total"] < 1e-8
    assert math.isclose(res["total"] ** 2, sum(res[g] ** 2 for g in G.GROUPS), rel_tol=1e-12)


# ----------------------------------------------------------------------------------------------- C6, C7
def _check_bounds(params, x, y, spec, record):
    g2 = _grad_norm2(G.autograd_grads(params, x, y, spec))
    err = B.tv_error(params, x, y, spec)
    corrected, paper = B.bound_corrected(params, x, spec), B.bound_paper(params, x, spec)
    assert g2 <= corrected * err, (g2, corrected * err)
    record.append((g2, paper * err))


def test_c6_corrected_gradient_bound_holds(record_property):
    task = Task(2, 12, 5)
    record: list[tuple[float, float]] = []
    for i in range(20):
        d = (2, 8)[i % 2]
        spec = ModelSpec(p=2, N=12, d=d)
        params = init_params(spec, [i], dtype=F64)
        if (i // 2) % 2:
            params["V"] = params["V"] * 0.05
        x = task.sample(512, torch.Generator().manual_seed(i))
        _check_bounds(params, x, task.labels(x), spec, record)
    # along a short training run (d = 2, k = 3, Adam lr 1e-2, bs 256, float32 training, float64 checks)
    task = Task(2, 12, 3)
    spec = ModelSpec(p=2, N=12, d=2)
    leaves = {n: t.requires_grad_() for n, t in init_params(spec, [3]).items()}
    x = task.sample(2048, torch.Generator().manual_seed(0))
    y = task.labels(x)
    opt = torch.optim.Adam(leaves.values(), lr=1e-2)
    batches = torch.Generator().manual_seed(1)
    for epoch in range(30):
        if epoch % 5 == 0:
            _check_bounds({n: t.detach().double() for n, t in leaves.items()}, x, y, spec, record)
        for idx in torch.randperm(2048, generator=batches).split(256):
            opt.zero_grad()
            loss_per_seed(leaves, x[idx], y[idx], spec).sum().backward()
            opt.step()
    violations = sum(g2 > paper for g2, paper in record)
    record_property("paper_bound_violations", f"{violations}/{len(record)}")


def test_paper_bound_fails_for_small_xi():
    """Documentation (docs note 11 flaw (1)): with V shrunk, ||M||op = 1/||ξ|| is large and B̂ of eq. (33) is
    exceeded; the corrected bound still holds."""
    task = Task(2, 12, 5)
    spec = ModelSpec(p=2, N=12, d=2)
    params = init_params(spec, [6], dtype=F64)
    params["V"] = params["V"] * 1e-3
    x = task.sample(512, torch.Generator().manual_seed(6))
    y = task.labels(x)
    g2, err = _grad_norm2(G.autograd_grads(params, x, y, spec)), B.tv_error(params, x, y, spec)
    assert B.bound_paper(params, x, spec) * err < g2 <= B.bound_corrected(params, x, spec) * err


def test_c7_tv_identity():
    task = Task(3, 8, 3)
    x = task.sample(256, torch.Generator().manual_seed(0))
    y = task.labels(x)
    for spec, params, _ in _random_cases(n=6, N=8):
        if spec.p != 3:
            continue
        e1, e2 = B.tv_error(params, x, y, spec), B.tv_error(params, x, y, spec, form="l1")
        assert 0 < e1 < 1 and abs(e1 - e2) < 1e-12
    with pytest.raises(ConfigError, match="'form'"):
        B.tv_error(params, x, y, spec, form="l2")
