"""Clustering-head metrics and training-dynamics detectors (paper 4 §3-4, App. A.1; docs/studies/clustering.md)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnlab.clustering.analysis import heads as A
from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, forward, init_params, select, stack
from attnlab.clustering.train import dynamics as D

TASK = Task(p=2, N=12, k=5)
SPEC = ModelSpec(p=2, N=12, d=2, h=8)
F64 = torch.float64


def ideal_head() -> dict[str, torch.Tensor]:
    """The construction's numbers for the default visual case (a = b = 1, R = 10, β = 20, λ = μ = 10)."""
    s = math.sqrt(2)
    tau = torch.tensor([-2.0, -1, 1, 2, 3, 4], dtype=F64)
    W = torch.zeros(8, 2, dtype=F64)
    W[:6, 0] = 10 * 5 * s / 2                           # λ·k·s/(2a)
    W[:6, 1] = 10 * (5 / 2 - tau) * s                   # λ·(k/2 − τ_i)·s/b
    C0 = torch.tensor([2.0, -3, 2, -2, 2, -2], dtype=F64)
    C1 = torch.tensor([-1.0, 2, -2, 2, -2, 2], dtype=F64)
    U = torch.zeros(2, 8, dtype=F64)
    U[0, :6] = 10 * (C1 - C0) / 2                       # μ(C[1,i] − C[0,i])/(2a)
    P = torch.zeros(12, 2, dtype=F64)
    P[:5, 1], P[5:, 1] = 1.0, -10.0
    prm = {"E": torch.tensor([[-1.0, 0], [1, 0]], dtype=F64), "P": P, "q": torch.tensor([0.0, 20], dtype=F64),
           "V": torch.eye(2, dtype=F64), "W": W, "U": U}
    return {k: v[None] for k, v in prm.items()}


def value_corrected_head() -> dict[str, torch.Tensor]:
    """Fig. 2 mechanism by hand: spurious tokens get attention, but their two values differ along u with
    V u = 0 and q ⊥ u, so ξ is still suffix-invariant."""
    prm = {k: v.clone() for k, v in ideal_head().items()}
    prm["P"][0, 5:] = torch.tensor([10.0, 10.0], dtype=F64)
    z0, z1 = (prm["E"][0, 0] + prm["P"][0, 5]), (prm["E"][0, 1] + prm["P"][0, 5])
    u = z1 / z1.norm() - z0 / z0.norm()
    u = u / u.norm()
    perp = torch.stack([-u[1], u[0]])
    perp = perp if perp[1] > 0 else -perp
    prm["V"][0] = torch.eye(2, dtype=F64) - torch.outer(u, u)
    prm["q"][0] = 4.0 * perp
    return prm


def close(a: torch.Tensor, b: torch.Tensor, rtol: float = 1e-7, atol: float = 1e-12, msg: str = "") -> None:
    """Elementwise |a − b| ≤ atol + rtol·|b| (torch.testing.assert_close imports torch.distributed: slow)."""
    a, b = torch.as_tensor(a), torch.as_tensor(b)
    assert a.shape == b.shape, (msg, a.shape, b.shape)
    assert torch.allclose(a.double(), b.double(), rtol=rtol, atol=atol, equal_nan=True), (msg, a, b)


def random_models(seeds: tuple[int, ...] = (0, 1, 2), spec: ModelSpec = SPEC) -> dict[str, torch.Tensor]:
    return init_params(spec, list(seeds), dtype=F64)


# ----------------------------------------------------------------------------------------------- ideal head
def test_ideal_head_matches_printed_numbers_and_is_ideal():
    prm = ideal_head()
    W_printed = [[35.3553, 63.6396], [35.3553, 49.4975], [35.3553, 21.2132], [35.3553, 7.0711],
                 [35.3553, -7.0711], [35.3553, -21.2132], [0, 0], [0, 0]]
    assert torch.allclose(prm["W"][0], torch.tensor(W_printed, dtype=F64), atol=1e-4)
    assert prm["U"][0, 0].tolist() == [-15, 25, -20, 20, -20, 20, 0, 0]
    x, _, _ = TASK.probe_grid()
    assert A.accuracy(prm, SPEC, x, TASK.labels(x)).item() == 1.0

    m = A.head_metrics(prm, SPEC, TASK, monitors=True)
    assert m["attn_prefix_mass"].item() > 0.9999
    assert m["cluster_score"].item() > 0.999999
    assert m["R_suffix"].item() < 1e-6 and m["R_perm"].item() < 1e-6
    assert m["margin"].item() > 50 and m["min_xi_norm"].item() > 0.5
    cl = A.clusters(prm, SPEC, TASK)
    assert cl["n_clusters"].tolist() == [6] and cl["cluster_purity"].tolist() == [1.0]
    assert A.classify_heads(prm, SPEC, TASK) == ["ideal"]
    assert A.cluster_score(prm, SPEC, TASK, project=True).item() > 0.999999
    pc = A.pos_collapse(prm, SPEC, TASK)
    assert all(float(v.abs().max()) < 1e-12 for v in pc.values())
    assert torch.allclose(A.attn_by_value(prm, SPEC, TASK), torch.full((1, 2), 0.2, dtype=F64), atol=1e-9)
    assert 0 < A.value_collapse_out(prm, SPEC, TASK).item() < 0.5
    assert A.min_token_norm(prm).item() == pytest.approx(math.sqrt(2))   # ||(±1, 1)|| at t ≤ 5
    assert A.lr_over_norm(3e-3, prm).item() == pytest.approx(3e-3 / math.sqrt(2))


def test_value_corrected_head():
    prm = value_corrected_head()
    m = A.head_metrics(prm, SPEC, TASK)
    assert m["attn_prefix_mass"].item() < 0.9
    assert m["R_suffix"].item() < 1e-10 and m["R_perm"].item() < 1e-10
    assert A.value_collapse_out(prm, SPEC, TASK).item() < 1e-8
    assert A.head_type({**m, "test_acc": 1.0}) == ["value_corrected"]
    assert A.n_clusters(prm, SPEC, TASK).tolist() == [6]
    by_value = A.attn_by_value(prm, SPEC, TASK)[0]
    assert by_value[1] > 2 * by_value[0]                                 # "focus on the 1s" (Fig. 5 remark)


def test_random_init_is_not_a_clustering_head():
    prm = random_models(tuple(range(8)))
    m = A.head_metrics(prm, SPEC, TASK)
    mass = m["attn_prefix_mass"]
    assert ((mass > 0.1) & (mass < 0.8)).all() and abs(mass.mean().item() - 5 / 12) < 0.15
    assert (m["cluster_score"] < 0.9).all() and (m["R_suffix"] > 0.05).all()
    assert (A.n_clusters(select(prm, [0, 1, 2, 3]), SPEC, TASK) != 6).any()


def test_head_type_thresholds():
    met = {"test_acc": [0.5, 1.0, 1.0, 1.0, 1.0, 0.95],
           "attn_prefix_mass": [1.0, 0.95, 0.6, 0.9, 0.9, 0.99],
           "R_suffix": [0.0, 0.01, 0.01, 0.3, 0.01, 0.1],
           "R_perm": [0.0, 0.01, 0.02, 0.01, 0.7, 0.6]}
    assert A.head_type(met) == ["failed", "ideal", "value_corrected", "partial", "fuzzy", "fuzzy"]
    assert A.head_type(met, mass_min=0.5)[2] == "ideal"
    assert A.head_type(met, acc_min=0.99)[5] == "failed"
    assert A.head_type(met, r_max=0.5)[3] == "ideal"
    with pytest.raises(ValueError, match="unknown"):
        A.head_type(met, bogus=1.0)


def test_head_type_is_failed_exactly_below_the_accuracy_threshold():
    """Head metric 8: 'failed' iff test accuracy < acc_min (0.9), whatever the head looks like (was the claim
    taxonomy_failed_models, which measured this definition)."""
    acc = np.array([0.0, 0.5, 0.8999, 0.9, 0.95, 1.0])
    one = np.ones_like(acc)
    types = A.head_type({"test_acc": acc, "attn_prefix_mass": one, "R_suffix": 0 * one, "R_perm": 0 * one})
    assert types == ["failed"] * 3 + ["ideal"] * 3
    assert A.head_type({"test_acc": [float("nan")], "attn_prefix_mass": [1.0], "R_suffix": [0.0],
                        "R_perm": [0.0]}) == ["failed"]


# ----------------------------------------------------------------------------------------------- correctness
def _reference_stats(xi: np.ndarray, pre: np.ndarray, mid: np.ndarray) -> dict[str, float]:
    """Head metrics 4-6 literally, one seed, loops over groups."""
    tot = ((xi - xi.mean(0)) ** 2).sum()
    m_pre = np.stack([xi[pre == i].mean(0) for i in range(pre.max() + 1)])
    r_suf = sum(((xi[pre == i] - m_pre[i]) ** 2).sum() for i in range(len(m_pre))) / tot
    mid_pre = np.array([mid[pre == i][0] for i in range(len(m_pre))])
    within = sum(((m_pre[mid_pre == c] - m_pre[mid_pre == c].mean(0)) ** 2).sum() for c in np.unique(mid_pre))
    r_perm = within / ((m_pre - m_pre.mean(0)) ** 2).sum()
    w_mid = sum(((xi[mid == c] - xi[mid == c].mean(0)) ** 2).sum() for c in np.unique(mid))
    return {"R_suffix": r_suf, "R_perm": r_perm, "cluster_score": 1 - w_mid / tot}


@pytest.mark.parametrize("spec", [SPEC, ModelSpec(p=2, N=12, d=3, norm="rmsnorm", norm_gain=True, mlp_bias=True)])
def test_head_metrics_match_forward_and_definitions(spec):
    prm = random_models((3, 4), spec)
    if "g_attn" in prm:
        prm["g_attn"] = prm["g_attn"] + 0.3 * torch.randn_like(prm["g_attn"])
        prm["g_mlp"] = prm["g_mlp"] + 0.3 * torch.randn_like(prm["g_mlp"])
    x, pre, _ = TASK.probe_grid()
    fast = A.head_metrics(prm, spec, TASK, monitors=True)                    # prefix × suffix pass
    perm = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    table = A.head_metrics(prm, spec, TASK, x[perm], monitors=True)          # generic token-table pass
    ref = A.xi_invariance(prm, spec, TASK)                                   # through model.forward
    acts = forward(prm, x, spec)
    for name in ("R_suffix", "R_perm", "cluster_score"):
        close(fast[name], ref[name], rtol=1e-9, atol=1e-12)
        close(table[name], ref[name], rtol=1e-9, atol=1e-12)
        for s in range(2):
            lit = _reference_stats(acts["xi"][s].numpy(), pre.numpy(), TASK.multiset_id(x).numpy())
            assert fast[name][s].item() == pytest.approx(lit[name], rel=1e-9, abs=1e-12)
    mass = A.attn_prefix_mass(prm, spec, TASK)
    close(fast["attn_prefix_mass"], mass, rtol=1e-12, atol=0)
    close(table["attn_prefix_mass"], mass, rtol=1e-12, atol=0)
    close(fast["margin"], A.decision_margin(prm, spec, x, TASK.labels(x)))
    close(table["min_xi_norm"], A.min_xi_norm(prm, spec, x))


def _clusters(prm: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    cl = A.clusters(prm, SPEC, TASK)
    return {"n": cl["n_clusters"], "pur": cl["cluster_purity"]}


def test_vectorised_over_seeds_and_chunked():
    prm = random_models((0, 1, 2))
    x, _, _ = TASK.probe_grid()
    y = TASK.labels(x)
    full = {**A.head_metrics(prm, SPEC, TASK, monitors=True), "by_value": A.attn_by_value(prm, SPEC, TASK),
            **{f"pc_{k}": v for k, v in A.pos_collapse(prm, SPEC, TASK).items()},
            "vc": A.value_collapse_out(prm, SPEC, TASK), **_clusters(prm), "sp": A.sparsity_curve(prm, SPEC, x),
            "tok": A.min_token_norm(prm), "marg": A.decision_margin(prm, SPEC, x, y),
            "proj": A.cluster_score(prm, SPEC, TASK, project=True)}
    chunked = A.head_metrics(prm, SPEC, TASK, monitors=True, max_elements=1)
    for k, v in chunked.items():
        close(v, full[k], rtol=0, atol=0)
    for s in range(3):
        one = select(prm, s)
        alone = {**A.head_metrics(one, SPEC, TASK, monitors=True), "by_value": A.attn_by_value(one, SPEC, TASK),
                 **{f"pc_{k}": v for k, v in A.pos_collapse(one, SPEC, TASK).items()},
                 "vc": A.value_collapse_out(one, SPEC, TASK), **_clusters(one), "sp": A.sparsity_curve(one, SPEC, x),
                 "tok": A.min_token_norm(one), "marg": A.decision_margin(one, SPEC, x, y),
                 "proj": A.cluster_score(one, SPEC, TASK, project=True)}
        for k, v in alone.items():
            close(v[0], full[k][s], rtol=1e-10, atol=1e-12, msg=k)
    corr = A.attn_init_final_corr(prm, stack([select(prm, [0, 1]), ideal_head()]), SPEC, x[:64])
    assert corr[:2].tolist() == pytest.approx([1.0, 1.0])
    assert -1 <= corr[2].item() < 0.99


def test_cluster_labels_equal_connected_components():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(7, 3)) * 5
    pts = np.concatenate([c + 0.01 * rng.normal(size=(25, 3)) for c in centres])
    pts = np.concatenate([pts, rng.normal(size=(30, 3)) * 6])               # plus scattered points
    xi = torch.tensor(pts[None].repeat(2, 0))
    xi[1] = xi[1] @ torch.tensor(np.linalg.qr(rng.normal(size=(3, 3)))[0]) * 3  # rotated, scaled: same clusters
    lab = A.cluster_labels(xi)
    d = np.linalg.norm(pts[:, None] - pts[None], axis=-1)
    adj = d <= 0.02 * d.max()
    comp, n = -np.ones(len(pts), int), 0                                     # BFS reference
    for i in range(len(pts)):
        if comp[i] < 0:
            stack_, comp[i] = [i], n
            while stack_:
                j = stack_.pop()
                for k in np.flatnonzero(adj[j] & (comp < 0)):
                    comp[k] = n
                    stack_.append(k)
            n += 1
    for s in range(2):
        same = lab[s].numpy()[:, None] == lab[s].numpy()[None]
        assert (same == (comp[:, None] == comp[None])).all()
    assert A.cluster_labels(torch.ones(1, 5, 2, dtype=F64)).unique().numel() == 1


# ----------------------------------------------------------------------------------------------- sparsity
def test_sparsity_curve():
    prm = random_models((0, 1, 2, 3))
    x, _, _ = TASK.probe_grid()
    curve = A.sparsity_curve(prm, SPEC, x)
    assert curve.shape == (4, 50)
    assert (curve.diff(dim=1) >= 0).all()
    assert (curve[:, 0] < 0.01).all() and (curve[:, -1] == 1).all()
    keep = (A.EPS_GRID >= 1e-3 * (1 - 1e-9)) & (A.EPS_GRID <= 10 * (1 + 1e-9))
    close(A.sparsity_summary(curve), curve[:, keep].mean(1))
    hidden = forward(prm, x, SPEC)["hidden"].abs()
    eps = torch.tensor([0.05, 0.2])
    direct = (hidden[..., None] < eps).double().mean((1, 2))
    close(A.sparsity_curve(prm, SPEC, x, eps), direct)


def test_spearman():
    a = np.array([1.0, 2, 3, 4, 5])
    assert D.spearman(a, a**3) == pytest.approx(1.0)
    assert D.spearman(a, -a) == pytest.approx(-1.0)
    assert math.isnan(D.spearman(a, np.ones(5)))
    assert D.spearman([1, np.nan, 3, 2], [1, 5, 3, 2]) == pytest.approx(1.0)
    assert D.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))  # average ranks on ties
    rng = np.random.default_rng(1)
    u, v = rng.normal(size=40), rng.normal(size=40)
    ru, rv = u.argsort().argsort(), v.argsort().argsort()
    assert D.spearman(torch.tensor(u), v) == pytest.approx(np.corrcoef(ru, rv)[0, 1], abs=1e-12)


# ----------------------------------------------------------------------------------------------- dynamics
def _sig(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def test_two_stage_detectors():
    e = np.arange(200.0)
    loss = 0.693 - 0.4 * _sig((e - 60) / 2) - 0.28 * _sig((e - 100) / 2)
    flat = np.full(200, 0.693)
    drops = D.drop_epochs(np.stack([loss, flat], 1), n=2)
    assert drops[0].tolist() == [60, 100] and np.isnan(drops[1]).all()
    assert D.drop_epochs(loss, n=1).tolist() == [60]
    score = np.stack([np.where(e >= 58, 0.95, 0.1), np.full(200, 0.2)], 1)
    acc = np.stack([np.where(e >= 61, 1.0, 0.5), np.where(e >= 30, 1.0, 0.5)], 1)
    tc, tf = D.t_cluster(score), D.t_fit(acc)
    assert tc[0] == 58 and np.isnan(tc[1]) and tf.tolist() == [61, 30]
    assert D.t_cluster(score[:, 0], epochs=e + 10) == 68
    grad = np.full((200, 2), 0.1)
    grad[60] = 1.0
    ratio = D.peak_plateau_ratio(grad, tc, tf)
    assert ratio[0] == pytest.approx(10.0) and np.isnan(ratio[1])
    assert np.isnan(D.peak_plateau_ratio(grad[:, 0], 5.0, 20.0))           # t_cluster < 8: undefined
    grad[40, 0] = 1.0                                                        # inside the plateau: median unchanged
    assert D.peak_plateau_ratio(grad[:, 0], 58.0, 61.0) == pytest.approx(10.0)


def test_drop_peak_ratio_is_anchored_on_the_loss():
    """The drop starts where the loss is 5 % below its epoch-5 value (t_0 = 57 here); the plateau window ends 2
    epochs before it, so a slow descent's rising gradient is not counted as plateau."""
    e = np.arange(200.0)
    loss = 0.693 - 0.6 * _sig((e - 60) / 2)
    grad = np.full((200, 2), 0.1)
    grad[55:70, 0] = 1.0                                                    # the drop's gradient, 10× the plateau
    tf = np.array([65.0, np.nan])
    ratio = D.drop_peak_ratio(grad, np.stack([loss, loss], 1), tf)
    assert ratio[0] == pytest.approx(10.0) and np.isnan(ratio[1])          # seed 1 never fitted
    early = 0.693 - 0.6 * _sig((e - 10) / 2)                               # the loss falls before epoch 15
    assert np.isnan(D.drop_peak_ratio(grad[:, 0], early, 20.0))


def test_gradient_error_exponent():
    err = np.logspace(-1, -5, 50)[:, None] * np.ones(2)
    grad = 3.0 * err ** 0.75 * np.array([1.0, 10.0])
    slope, per = D.gradient_error_exponent([(grad, err)])
    assert slope == pytest.approx(0.75) and per == pytest.approx([0.75, 0.75])
    assert np.isnan(D.gradient_error_exponent([(grad, np.full_like(err, 0.5))])[0])   # never below 1e-2


def test_loss_spikes_and_onsets():
    e = np.arange(200.0)
    loss = 0.7 * np.exp(-e / 10) + 0.01
    loss[2] = 1.2                                      # before L < 0.5·L(0): ignored
    loss[150], loss[151], loss[155], loss[180] = 0.3, 0.1, 0.2, 0.2
    spikes = D.loss_spikes(loss)
    assert np.flatnonzero(spikes).tolist() == [150, 151, 155, 180]
    loss2 = loss.copy()
    loss2[180] = 0.04                                  # 4× the minimum but only +0.03 nats: not a spike
    both = D.loss_spikes(np.stack([loss, loss2], 1))
    assert both.shape == (200, 2) and np.flatnonzero(both[:, 1]).tolist() == [150, 151, 155]
    onsets = D.spike_onsets(both)
    assert [o.tolist() for o in onsets] == [[150, 180], [150]]
    grad = np.ones((200, 2))
    grad[150] = 5.0
    ratios = D.onset_grad_ratio(grad, onsets)
    assert ratios[0].tolist() == [5.0, 1.0] and ratios[1].tolist() == [5.0]


def test_grad_spikes_and_cooccurrence():
    rng = np.random.default_rng(0)
    g = 1 + 0.1 * rng.random((2000, 2))
    g[5, 0] = g[700, 0] = g[1500, 1] = 10.0
    sp = D.grad_spikes(g)
    assert np.flatnonzero(sp[:, 0]).tolist() == [700] and np.flatnonzero(sp[:, 1]).tolist() == [1500]
    heavy = rng.lognormal(sigma=1.5, size=(600, 2))
    ref = np.zeros_like(heavy, dtype=bool)
    for t in range(10, 600):
        ref[t] = heavy[t] > 3 * np.median(heavy[max(0, t - 50):t], 0)
    assert (D.grad_spikes(heavy, block=100) == ref).all()

    spe = 64
    lm = np.zeros((200, 2), dtype=bool)
    lm[[150, 180], 0] = True
    gm = np.zeros((200 * spe, 2), dtype=bool)
    gm[149 * spe + 10, 0] = True                        # a step of epoch 150
    gm[190 * spe, 1] = True
    rate = D.cooccurrence_rate(lm, gm, spe)
    assert rate[0] == 0.5 and np.isnan(rate[1])
    assert D.cooccurrence_rate(lm[:, 0], gm[:, 0], spe, tol=0) == 0.5
