"""Multi-seed experiments of paper 4 (Figs 7, 14, 16, 19) at a tiny size through the run store, with their
figures; unit resume; config errors; the claims' measuring code on tiny results."""

import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnlab.clustering.analysis.heads import EPS_GRID
from attnlab.clustering.claims import sweeps as sweep_claims
from attnlab.clustering.experiments import sweeps
from attnlab.clustering.outputs import STRAIN as TINY
from attnlab.clustering.outputs import TINY as OUT
from attnlab.core.config import ConfigError, resolve
from attnlab.core.experiment import Result
from attnlab.core.metrics import wide
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result

torch.set_num_threads(1)

CASES = {**{name: OUT[name] for name in ("fig7", "fig19", "fig14")}, "fig16": {**OUT["fig16"], "lrs": [3e-3, 1e-2]}}


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One store for the module: tests asking for the same tiny config reuse its finished run."""
    return tmp_path_factory.mktemp("sweeps_store")


def _run(root, name, **extra):
    exp = get(f"clustering.{name}")
    rec = RunStore(root).run(exp, resolve(exp.config, "quick", {**TINY, **CASES[name], **extra}))
    assert rec.status == "done"
    assert list((rec.run_dir / "figures").glob("*.png"))
    _, result = load_result(rec.run_dir)
    assert all(v is None or isinstance(v, int | float) for v in result.summary.values())
    return result


def test_fig7_sparsity_curves(tmp_path):
    r = _run(tmp_path, "fig7")
    curve = r.arrays["d2/sparsity"]
    assert curve.shape == (4, len(EPS_GRID))
    assert (np.diff(curve, axis=1) >= 0).all()                     # non-decreasing in ε
    assert (curve[:, 0] < 0.2).all() and (curve[:, -1] == 1).all()  # ≈ 0 at 1e-5, 1 at 1e2
    s = r.summary
    assert s["n_models_d2"] == 4 and 0 <= s["n_success_d2"] <= 4
    assert len(wide(r.metrics)) == 4 and set(wide(r.metrics)["seed"]) == {0, 1, 2, 3}
    acc = r.arrays["d2/test_acc"]
    assert acc.shape == (4, 4) and ((acc >= 0) & (acc <= 1)).all()  # epochs 0..3 logged


def test_fig19_one_unit_per_d(tmp_path):
    r = _run(tmp_path, "fig19")
    assert list(r.arrays["ds"]) == [2, 3]
    assert r.arrays["d3/final/W"].shape == (2, 12, 3)  # h = 4d
    assert {"success_rate_d2", "success_rate_d3", "spearman_d3"} <= set(r.summary)


def test_fig14_bars_and_transfer(shared):
    r = _run(shared, "fig14")
    t = wide(r.metrics)
    assert sorted(set(zip(t.kind, t.p, strict=True))) == [("finetune", 3), ("scratch", 2), ("scratch", 3)]
    assert r.arrays["pre/epochs"][-1] == 3 and r.arrays["finetune_p3/epochs"][-1] == 2
    n_cl = r.arrays["n_clusters_pre"]
    assert n_cl.shape == (3,) and (n_cl >= 1).all()
    assert r.summary["ideal_clusters"] == 4  # C(k+1, k) at the quick k = 3
    assert t[t.kind == "finetune"]["n_clusters_pre"].notna().all()
    assert "min_gain_finetune" in r.summary


def test_fig14_transfer_starts_from_the_p2_models(tmp_path, monkeypatch):
    """The finetuned unit gets the phase-1 final parameters (p = 2 rows) and a p = 3 config."""
    seen = {}
    real = sweeps.transfer

    def spy(params, spec, cfg, **kw):
        seen.update(E=params["E"].shape, p_old=spec.p, p_new=cfg.p, epochs=cfg.epochs)
        return real(params, spec, cfg, **kw)

    monkeypatch.setattr(sweeps, "transfer", spy)
    _run(tmp_path, "fig14", seed=5)
    assert seen == {"E": (3, 2, 2), "p_old": 2, "p_new": 3, "epochs": 2}


def test_fig16_settings_share_the_default(tmp_path):
    cfg = resolve(get("clustering.fig16").config, "quick", {**TINY, **CASES["fig16"]})
    assert sorted(cfg.settings()) == ["batch_size=16", "default", "lr=0.01"]  # h = 8 = 4d is the default
    r = _run(tmp_path, "fig16")
    t = wide(r.metrics)
    assert len(t) == 3 * (2 + 1 + 2 + 1)  # seeds × points on the four axes
    d = t[(t.param == "batch_size") & (t.value == 32)].test_acc.to_numpy()
    assert np.array_equal(d, t[(t.param == "h") & (t.value == 8)].test_acc.to_numpy())  # same default unit
    assert {"roughness_seed0", "roughness_mean", "mean_acc_lr=0.01", "seed0_acc_batch_size=16"} <= set(r.summary)


def test_interrupted_sweep_resumes_mid_unit(tmp_path, monkeypatch):
    """Interrupt fig19 inside its second unit; the resumed run equals an uninterrupted one bit for bit."""
    monkeypatch.setenv("ATTNLAB_CHECKPOINT_EVERY", "0")
    exp = get("clustering.fig19")
    cfg = resolve(exp.config, "quick", {**TINY, **CASES["fig19"], "epochs": 4})
    real = sweeps.train
    calls = []

    def flaky(cfg_, **kw):
        on_epoch = kw["on_epoch"]

        def stop(e, f):
            on_epoch(e, f)
            if cfg_.d == 3 and e == 2 and not calls:
                calls.append(e)
                raise KeyboardInterrupt

        return real(cfg_, **{**kw, "on_epoch": stop})

    monkeypatch.setattr(sweeps, "train", flaky)
    store = RunStore(tmp_path / "a")
    with pytest.raises(KeyboardInterrupt):
        store.run(exp, cfg)
    assert calls == [2]
    resumed = load_result(store.run(exp, cfg).run_dir)[1]
    monkeypatch.setattr(sweeps, "train", real)
    fresh = load_result(RunStore(tmp_path / "b").run(exp, cfg).run_dir)[1]
    for k, v in fresh.arrays.items():
        assert np.array_equal(v, resumed.arrays[k]), k


@pytest.mark.parametrize("name, overrides, key", [
    ("fig19", {"ds": [2, 2]}, "ds"), ("fig14", {"ft_ps": [2, 3]}, "ft_ps"), ("fig14", {"ps": [1]}, "ps"),
    ("fig16", {"batch_sizes": [4096]}, "batch_sizes"), ("fig16", {"lrs": [0.0]}, "lrs"),
])
def test_bad_configs_are_rejected(name, overrides, key):
    with pytest.raises(ConfigError) as e:
        resolve(get(f"clustering.{name}").config, "quick", overrides)
    assert f"'{key}'" in str(e.value) and "\n" not in str(e.value)


def test_longest_below_and_first_epoch():
    acc = np.array([[0.5, 0.5], [0.55, 0.95], [0.7, 0.96], [0.5, 0.97], [0.5, 0.99]])
    ep = np.array([0, 50, 100, 150, 200])
    assert list(sweeps.longest_below(acc, ep)) == [50.0, 0.0]
    t = sweeps.first_epoch(acc, ep)
    assert np.isnan(t[0]) and t[1] == 50


# -- claims: the measuring functions on tiny results and on hand-made summaries --------------------------------
def test_claims_are_registered():
    from attnlab.core.claims import claims

    ids = {c.id: c for c in claims("clustering")}
    for name in ("learnability_d2_k3", "learnability_d8_k5", "sparsity_denser_success", "sparsity_spearman",
                 "success_rises_with_d", "all_succeed_from_d8", "transfer_beats_scratch",
                 "no_scratch_learning_p_gt_4", "transfer_perfect_needs_clusters"):
        assert f"clustering.{name}" in ids, name
    assert ids["clustering.all_succeed_from_d8"].scales == ("paper",)
    for name in ("learnability_d2_k3", "learnability_d8_k5", "learnability_d8_k5_loss", "sparsity_denser_success",
                 "sparsity_spearman", "sparsity_denser_success_d8_k5", "sparsity_spearman_d8_k5"):
        assert ids[f"clustering.{name}"].relation != "report" and "quick" in ids[f"clustering.{name}"].scales


def _sparsity(**units):
    """A typed Figs. 7/19 summary: ``units`` maps d to its values, every other statistic None."""
    from attnlab.clustering.summaries.sweeps import SparsitySummary, SparsityUnit

    empty = {f.name: None for f in dataclasses.fields(SparsityUnit)}
    return SparsitySummary(d={int(d[1:]): SparsityUnit(**{**empty, **v}) for d, v in units.items()})


def test_sparsity_measures():
    s = _sparsity(d2={"success_rate": 0.0}, d8={"n_success": 3, "n_models": 6, "sparsity_success": 0.2,
                                                 "sparsity_failed": 0.5, "spearman": -0.7, "success_rate": 0.5})
    assert sweep_claims.sparsity_gap(s, 8) == pytest.approx(-0.3)
    assert sweep_claims.sparsity_spearman(s, 8) == -0.7
    assert sweep_claims.success_rate_slope(s) == 0.5
    few = _sparsity(d8={"n_success": 2, "n_models": 6, "sparsity_success": 0.2, "sparsity_failed": 0.5,
                        "spearman": -0.7})
    assert np.isnan(sweep_claims.sparsity_gap(few, 8)) and np.isnan(sweep_claims.sparsity_spearman(few, 8))


def test_sparsity_measures_on_a_tiny_run(tmp_path):
    """The tiny fig7 run: recompute the D6 gap and Spearman from its arrays."""
    from attnlab.clustering.train.dynamics import spearman

    r = _run(tmp_path, "fig7", n_seeds=6)
    acc, sparse = r.arrays["d2/test_acc"][-1], r.arrays["d2/sparsity_summary"]
    ok = acc > 0.9
    assert r.summary["n_success_d2"] == ok.sum()
    assert r.summary["spearman_d2"] == pytest.approx(spearman(sparse, acc), nan_ok=True)
    exp = get("clustering.fig7")
    cfg = resolve(exp.config, "quick", {**TINY, **CASES["fig7"], "n_seeds": 6})
    gap = sweep_claims.sparsity_gap(exp.summary.from_summary(r.summary, cfg), 2)
    assert np.isnan(gap) if min(ok.sum(), (~ok).sum()) < 3 else gap == pytest.approx(
        sparse[ok].mean() - sparse[~ok].mean())


def test_transfer_measures(shared):
    from attnlab.clustering.summaries.sweeps import Bar, FinetuneBar, TransferSummary

    r = _run(shared, "fig14")
    exp = get("clustering.fig14")
    s = exp.summary.from_summary(r.summary, resolve(exp.config, "quick", {**TINY, **CASES["fig14"]}))
    assert sweep_claims.scratch_successes_above(s, 2) == r.summary["n_success_scratch_p3"]
    assert sweep_claims.perfect_without_ideal(s) == r.summary["n_perfect_not_ideal_finetune_p3"]
    assert s.gain is not None and s.gain.min_gain_finetune == pytest.approx(
        r.summary["mean_acc_finetune_p3"] - r.summary["mean_acc_scratch_p3"])
    made = TransferSummary(ideal_clusters=4, n_ideal_clusters_pre=0, pre_success_rate=0.0,
                           scratch={q: Bar(0.0, 0.0, n) for q, n in ((4, 2), (5, 1), (10, 3))},
                           finetune={q: FinetuneBar(0.0, 0.0, 0, 0, n) for q, n in ((3, 1), (4, 0))},
                           finetune_mean_ideal={}, finetune_mean_other={})
    assert sweep_claims.scratch_successes_above(made) == 4
    assert sweep_claims.perfect_without_ideal(made) == 1
    assert sweep_claims.min_success_from(_sparsity(d2={"n_success": 1}, d8={"n_success": 19})) == 19


def test_roughness():
    import pandas as pd

    t = pd.DataFrame({"param": "lr", "value": [1, 1, 2, 2, 3, 3], "seed": [0, 1] * 3,
                      "test_acc": [0.5, 1.0, 1.0, 0.5, 0.5, 1.0]})
    r = sweeps.roughness(t)
    assert r == {"roughness_seed0": 0.5, "roughness_mean": 0.0}


@pytest.mark.slow
def test_quick_claims_hold(tmp_path):
    """Every claim of this module registered at quick scale (≈ 10 min on one core): none fails."""
    from attnlab.core.claims import check, claims, failed

    mine = [c.id for c in claims("clustering", "quick") if c.measure.__module__ == sweep_claims.__name__]
    results = check("clustering", "quick", RunStore(tmp_path), only=mine)
    assert len(results) == len(mine) >= 8
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]


def test_d8_gradient_exponent_over_sweep_units(tmp_path):
    """D8 pools every d unit's curves: ||∇L|| = c·𝓔 in each seed gives slope 1; units carry 𝓔 as tv_error."""
    e = np.logspace(-1, -5, 30)[:, None] * np.array([1.0, 2.0])
    a = Result(None, {"ds": np.array([2]), "d2/grad_total": 50 * e, "d2/tv_error": e,
                                   "d2/train_loss": e}, {}, config=SimpleNamespace(dims=lambda: (2,)))
    out = sweep_claims.gradient_exponent(sweep_claims.sweep_curves([a]))
    assert out.value == pytest.approx(1.0) and "2 seeds" in out.detail
    assert "≤ 0.001 (||∇L||/CE = 50 to 50)" in out.detail
    r = _run(tmp_path, "fig7", n_seeds=3)
    solved = r.arrays["d2/train_loss"][-1] < 1e-3
    assert r.summary["n_ce_below_1e-3_d2"] == solved.sum() and r.arrays["d2/grad_total"].shape == (
        len(r.arrays["d2/epochs"]), 3) == r.arrays["d2/tv_error"].shape
