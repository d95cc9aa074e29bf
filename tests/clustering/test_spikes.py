"""Training-dynamics experiments of paper 4 (Figs 9–13, 17, 18, remedies) at a tiny size through the run store,
with their figures; the measuring code behind the claims (D5, D7, D8, Prop. 4 along training, spike rates) on
tiny runs and synthetic curves; config errors."""

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnlab.clustering.claims import spikes as C
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.experiments import spikes as K
from attnlab.clustering.outputs import CTRAIN, TINY
from attnlab.clustering.summaries.spikes import DynamicsArrays
from attnlab.clustering.train.history import History
from attnlab.clustering.train.loop import train
from attnlab.core.config import ConfigError, resolve
from attnlab.core.metrics import wide
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result

torch.set_num_threads(1)
TRAIN = {**CTRAIN, "k": 2}
CASES = {**{name: TINY[name] for name in ("fig9", "fig17", "fig10", "fig11", "fig12", "fig13", "fig18")},
         "remedies": {**TINY["remedies"], "variants": ["baseline", "norm=smooth", "lr=3e-2,h=16"]}}


@pytest.fixture(scope="module")
def runs(run_cases):
    """Every experiment once, tiny, through one store: name -> (config, run record)."""
    return run_cases("clustering", CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_small_with_figure(runs, name):
    _cfg, rec = runs[name]
    assert rec.status == "done"
    assert [p.stem for p in (rec.run_dir / "figures").glob("*.png")] == [name]
    _, result = load_result(rec.run_dir)
    assert len(result.metrics) > 0 and result.arrays
    assert all(v is None or isinstance(v, int | float | str) for v in result.summary.values())


def test_dynamics_units_and_prop4(runs):
    _cfg, rec = runs["fig9"]
    a = load_result(rec.run_dir)[1].arrays
    s = rec.summary
    assert s["units"] == "d2_mini,d2_full"
    full = History.from_arrays(a, "d2_full/")
    assert full.steps_per_epoch == 1 and list(full.epochs) == [0, 2, 4, 6]
    assert History.from_arrays(a, "d2_mini/").steps_per_epoch == 4
    # Prop. 4 (corrected) holds at every checked snapshot, the drawn seed is stored
    assert s["d2_mini_prop4_n_epochs"] == 5 and s["d2_mini_prop4_max_ratio_corrected"] <= 1.0
    p4 = {k: a[f"d2_mini/prop4/{k}"] for k in ("grad_sq", "tv", "bound_corrected")}
    assert np.all(p4["grad_sq"] <= p4["bound_corrected"] * p4["tv"]) and np.all(p4["tv"] > 0)
    _, r17 = runs["fig17"]
    assert r17.summary["units"] == "d3_mini,d16_mini"
    h16 = History.from_arrays(load_result(r17.run_dir)[1].arrays, "d16_mini/")
    assert h16.spec.d == 16 and h16.spec.h == 64 and len(h16.snapshot_epochs) == 2  # first + last above d = 8


def test_curvature_matches_theory(runs):
    _, rec = runs["fig10"]
    s = rec.summary
    assert s["max_rel_err_sphere_vs_1_over_r"] < 1e-6          # ||D(x/||x||)|| = 1/||x||
    assert s["max_jac_smooth"] <= 1.5 + 1e-6 and s["max_jac_smooth_inf"] < 10
    assert s["angle_deg_near"] > 5 * s["angle_deg_far"]


def test_spike_anatomy_and_remedies(runs):
    _, rec = runs["fig11"]
    _seed, _entry, before, after = load_result(rec.run_dir)[1].arrays["spike"]
    assert after == before + 1 and rec.summary["epoch_after"] == rec.summary["epoch_before"] + 1
    assert rec.summary["amplification"] >= 0 and math.isfinite(rec.summary["dxi_mean"])
    _, rem = runs["remedies"]
    res = load_result(rem.run_dir)[1]
    assert list(res.arrays["variants"]) == ["baseline", "norm=smooth", "lr=3e-2,h=16"]
    assert set(res.metrics["variant"]) == set(res.arrays["variants"]) and len(wide(res.metrics)) == 6


def _history(loss: np.ndarray, grad: np.ndarray, step_grad: np.ndarray | None = None, spe: int = 1) -> History:
    """A fake History with given epoch curves (E, S) and per-step grad norms (T, S)."""
    h = train(TrainConfig(n_train=32, n_test=32, batch_size=32, epochs=0, head_metrics=False,
                          n_seeds=loss.shape[1]))
    h.epochs = np.arange(len(loss))
    h.epoch_metrics = {"train_loss": loss, "grad_total": grad, "test_acc": np.full(loss.shape, 0.5)}
    if step_grad is not None:
        h.steps = np.arange(1, len(step_grad) + 1)
        h.step_metrics = {"grad_total": step_grad}
        h.steps_per_epoch = spe
    return h


def test_spike_stats_on_synthetic_curves():
    E = 80
    loss = np.full((E, 2), 0.01)
    loss[0] = 0.7
    loss[40, 0] = 0.5                                      # one spike onset on seed 0, none on seed 1
    grad = np.full((E, 2), 0.1)
    grad[40, 0] = 1.0                                      # 10× its trailing median
    step = np.full((E * 4, 2), 1.0)
    step[39 * 4 + 2, 0] = 10.0                             # a mini-batch grad spike during epoch 40
    st = K.spike_stats(_history(loss, grad, step, spe=4))
    assert list(st["n_onsets"]) == [1, 0] and st["onset_epoch"].tolist() == [40.0]
    assert st["onset_ratio"][0] == pytest.approx(10.0) and st["onset_cooc"].tolist() == [True]
    assert st["eligible_epochs"].tolist() == [E - 2, E - 2]
    assert 0 < st["base_rate"][0] < 0.1 and st["base_rate"][1] == 0


def _drop(**values):
    """A typed drop unit: ``values``, every other statistic None (not measured)."""
    from attnlab.clustering.summaries.spikes import DropUnit

    return DropUnit(**{f.name: values.get(f.name) for f in dataclasses.fields(DropUnit)})


def test_claim_measures_on_summaries():
    from attnlab.clustering.summaries.spikes import DynamicsSummary, SpikesSummary, SpikeUnit

    s9 = DynamicsSummary(units="d2_mini,d2_full", unit={
        (2, "mini"): _drop(n_drop_eligible=3, n_drop_ratio_ge5=3, drop_ratio_min=7.0, n_eligible=2, n_ratio_ge5=1),
        (2, "full"): _drop(n_drop_eligible=2, n_drop_ratio_ge5=1, drop_ratio_min=2.0)})
    mini, full = C.d5_fraction([s9]), C.d5_fraction([s9], "full")
    assert mini.value == 1.0 and full.value == pytest.approx(1 / 2)
    assert "smallest ratio 7.0" in mini.detail and "instead 1 of 2" in mini.detail and "instead 0 of 0" in full.detail
    one = DynamicsSummary(units="d2_mini", unit={(2, "mini"): _drop(n_drop_eligible=1, n_drop_ratio_ge5=1)})
    assert math.isnan(C.d5_fraction([one]).value)
    spikes = SpikeUnit(**{f.name: None for f in dataclasses.fields(SpikeUnit)})
    s13 = SpikesSummary(units="d2", unit={2: dataclasses.replace(spikes, n_onsets=6, n_ratio_ge2=5)})
    assert C.d7_counts([s13]) == (5, 6)


def test_gradient_exponent_reads_the_rate_of_prop2():
    """||∇L|| = c·𝓔^a within each seed (c differs between seeds) gives the pooled slope a; seeds that never get
    below 1e-2 over half a decade do not count, and without any the claim is NaN with a reason."""
    e = np.logspace(-1, -4, 40)[:, None] * np.ones(3)
    g = np.sqrt(e) * np.array([1.0, 30.0, 5.0])
    g[:, 2], e[:, 2] = 0.3, 0.5                               # a failed seed on the plateau
    out = C.gradient_exponent([{"grad_total": g, "tv_error": e, "train_loss": e}])
    assert out.value == pytest.approx(0.5) and "over 2 seeds" in out.detail and "0.50 to 0.50" in out.detail
    none = C.gradient_exponent([{"grad_total": g[:, 2:], "tv_error": e[:, 2:], "train_loss": e[:, 2:]}])
    assert math.isnan(none.value) and "nothing to measure" in none.detail


def test_claim_measures_on_tiny_runs(runs):
    cfg, rec = runs["fig9"]
    s9 = get("clustering.fig9").summary.from_summary(rec.summary, cfg)
    a9 = DynamicsArrays.from_arrays(load_result(rec.run_dir)[1].arrays, cfg)
    curves = C.unit_curves(a9)
    assert list(a9.unit) == [(int(u[1:].split("_")[0]), u.split("_")[1]) for u in s9.units.split(",")]  # in order
    assert len(curves) == len(s9.unit) and all(c["tv_error"].shape == c["grad_total"].shape for c in curves)
    assert C.prop4_max_ratio([s9]) <= 1.0
    assert 0 <= C.prop4_paper_violation_fraction([s9]) <= 1
    rem = load_result(runs["remedies"][1].run_dir)[1]
    rem.config = runs["remedies"][0]
    out = C.smooth_minus_sphere(rem, "norm=smooth")
    assert math.isfinite(out.value) and "onsets per 1000 epochs" in out.detail


def test_smooth_minus_sphere_on_known_rates():
    """Four seeds, 1000 epochs: the sphere spikes 2, 3, 4, 3 times per 1000 epochs, the smoothed normaliser 0, 1, 0,
    1: paired difference −2, −2, −4, −2 (mean −2.5, sd 1), upper end −2.5 + t(0.975, 3)/2 < 0: fewer spikes. With
    the arms swapped (or the difference's sign flipped) the upper end is +4.09: the claim fails."""
    from attnlab.core.experiment import Result
    from attnlab.core.intervals import t95

    epochs = np.array([1000.0])
    sphere, smooth = np.array([2.0, 3.0, 4.0, 3.0]), np.array([0.0, 1.0, 0.0, 1.0])

    def result(a, b):
        return Result(None, {"variants": np.array(["baseline", "norm=smooth"]), "v0/rate": a, "v0/epochs": epochs,
                             "v1/rate": b, "v1/epochs": epochs}, {},
                      config=SimpleNamespace(variants=("baseline", "norm=smooth")))

    out = C.smooth_minus_sphere(result(sphere, smooth))
    assert out.value == pytest.approx(-2.5 + t95(4) * 1.0 / 2) and out.value < 0
    assert "(12 in all)" in out.detail and "(2)" in out.detail
    swapped = C.smooth_minus_sphere(result(smooth, sphere))
    assert swapped.value == pytest.approx(2.5 + t95(4) / 2) and swapped.value > 0


def test_prop4_is_reported_with_its_ratio(runs):
    from attnlab.core.claims import claims

    cfg, rec = runs["fig9"]
    out = C.prop4_along_training(DynamicsArrays.from_arrays(load_result(rec.run_dir)[1].arrays, cfg))
    assert 0 < out.value <= 1.0 and "violations" in out.detail
    ids = {c.id: c for c in claims("clustering")}
    assert ids["clustering.prop4_bound_along_training"].relation == "report"
    assert "clustering.prop4_paper_bound_violations" not in ids


@pytest.mark.parametrize(
    "name, overrides, key",
    [("remedies", {"variants": ["lr=abc"]}, "variants"), ("remedies", {"variants": ["depth=3"]}, "variants"),
     ("remedies", {"variants": ["baseline", "baseline"]}, "variants"), ("fig9", {"dims": []}, "dims"),
     ("fig9", {"show": 40, "n_seeds": 2}, "show"), ("fig10", {"r_min": 2.0, "r_max": 1.0}, "r_max"),
     ("fig13", {"spike_rank": -1}, "spike_rank")],
)
def test_bad_configs_are_rejected(name, overrides, key):
    with pytest.raises(ConfigError) as e:
        resolve(get(f"clustering.{name}").config, "quick", overrides)
    assert key in str(e.value) and "\n" not in str(e.value)


def test_interrupted_remedies_resume_to_the_same_result(tmp_path, monkeypatch):
    from attnlab.core.runs import RunContext

    exp = get("clustering.remedies")
    cfg = resolve(exp.config, "quick", {**TRAIN, "n_seeds": 2, "epochs": 2, "variants": ["baseline", "h=16"]})
    clean = load_result(RunStore(tmp_path / "clean").run(exp, cfg).run_dir)[1]
    original, saves = RunContext.checkpoint, {"n": 0}

    def flaky(self, state, force=False):
        saved = original(self, state, force)
        saves["n"] += saved
        if saves["n"] == 1:
            raise KeyboardInterrupt
        return saved

    store = RunStore(tmp_path / "killed")
    monkeypatch.setattr(RunContext, "checkpoint", flaky)
    with pytest.raises(KeyboardInterrupt):
        store.run(exp, cfg)
    monkeypatch.setattr(RunContext, "checkpoint", original)
    rec = store.run(exp, cfg)
    assert "resumed from checkpoint" in (rec.run_dir / "log.txt").read_text()
    resumed = load_result(rec.run_dir)[1]
    for key in ("v0/train_loss", "v1/train_loss", "v1/rate"):
        assert np.array_equal(resumed.arrays[key], clean.arrays[key])
