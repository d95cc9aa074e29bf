"""Claims of the circuit figures (check C3, C4, D4, D9, D10; Figs 5, 6): each measured at a reduced size (the
construction claims at full size), the training claims' logic on given summaries, and (slow) the whole check."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from attnlab.core.claims import ClaimContext, check, claims, failed
from attnlab.core.registry import get
from attnlab.core.runs import RunStore

torch.set_num_threads(1)
TINY = {"clustering.fig1": {"n_sample": 2000},
        "clustering.stationarity": {"epochs": 3},
        "clustering.fig5": {"k": 3, "n_seeds": 2, "epochs": 2, "n_train": 128, "n_test": 128},
        "clustering.transfer_circuit": {"k": 3, "n_seeds": 2, "epochs": 2, "epochs_new": 2, "n_train": 128,
                                        "n_test": 128}}


def _claim(name):
    return next(c for c in claims("clustering") if c.id == f"clustering.{name}")


@pytest.fixture(scope="module")
def tiny_ctx(tmp_path_factory):
    """A claim context whose runs are shrunk by ``TINY``, sharing one store across the module."""
    original = ClaimContext.run
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ClaimContext, "run",
                   lambda self, exp, **kw: original(self, exp, **{**TINY.get(get(exp).key, {}), **kw}))
        yield ClaimContext("quick", RunStore(tmp_path_factory.mktemp("claims")))


class FakeCtx:
    """Answers ``ctx.run(name).summary`` and the typed ``ctx.summary(name)`` (its attributes) from given summaries."""

    def __init__(self, **summaries):
        self.summaries = summaries

    def run(self, name, **_):
        return SimpleNamespace(summary=self.summaries[get(name).name])

    def summary(self, name, key=None, **_):
        flat = self.summaries[get(name).name]
        return flat[key] if key is not None else SimpleNamespace(**flat)


MINE = ("ideal_head_accuracy", "ideal_head_stationary", "ideal_head_six_clusters", "ideal_head_clusters_p3_N12_k5",
        "ideal_head_clusters_p3_N8_k3", "ideal_head_clusters_p5_N8_k3", "ideal_head_gradient_vanishes_with_scale",
        "ideal_head_breaks_at_small_scale", "stationary_under_training_accuracy", "stationary_under_training_ce",
        "stationary_under_training_accuracy_sharp", "stationary_under_training_ce_sharp",
        "clustering_precedes_fitting", "taxonomy_value_corrected",
        "attention_init_final_similar", "transfer_better_focus")


def test_registered_with_refs():
    by_id = {c.id: c for c in claims("clustering")}
    for name in MINE:
        c = by_id[f"clustering.{name}"]
        assert "spec" not in c.ref.lower() and any(w in c.ref for w in ("Fig", "Prop", "Sec.", "App")), c.ref
    reported = {n for n in MINE if by_id[f"clustering.{n}"].relation == "report"}
    assert reported == set()
    assert set(_claim("transfer_better_focus").scales) == {"quick", "paper"}  # asserted at both scales


@pytest.mark.parametrize("name", ["ideal_head_accuracy", "ideal_head_stationary", "ideal_head_six_clusters",
                                  "ideal_head_clusters_p2_N12_k5", "ideal_head_clusters_p3_N12_k5",
                                  "ideal_head_clusters_p3_N8_k3", "ideal_head_clusters_p5_N8_k3",
                                  "ideal_head_gradient_vanishes_with_scale", "stationary_under_training_accuracy_sharp",
                                  "stationary_under_training_ce_sharp"])
def test_exact_claims_pass(tiny_ctx, name):
    claim = _claim(name)
    measured = claim.measure(tiny_ctx)
    assert claim.verdict(measured) == "pass", (name, measured)


def test_construction_breaks_at_small_scale(tiny_ctx):
    claim = _claim("ideal_head_breaks_at_small_scale")
    assert claim.verdict(claim.measure(tiny_ctx)) == "pass"


def test_soft_head_stays_under_adam(tiny_ctx):
    """D9 as printed (c = 0.2, λ = μ = 2): the soft head keeps accuracy 1 and its cross-entropy under Adam."""
    for name in ("stationary_under_training_accuracy", "stationary_under_training_ce"):
        claim = _claim(name)
        assert claim.verdict(claim.measure(tiny_ctx)) == "pass", (name, claim.measure(tiny_ctx))


def test_attention_and_transfer_measures_need_three_solved_seeds(tiny_ctx):
    for name in ("attention_init_final_similar", "transfer_better_focus"):
        m = _claim(name).measure(tiny_ctx)
        assert math.isnan(m.value) and "fewer than 3" in m.detail, (name, m)


class ArraysCtx:
    """Answers ``ctx.run(name)`` with given arrays."""

    def __init__(self, **arrays):
        self.arrays = arrays

    def run(self, name, **_):
        return SimpleNamespace(arrays=self.arrays[get(name).name], summary={})


def test_fig5_claim_compares_own_and_other_initialisations():
    """Solved seeds whose final map matches its own initial map (0.8) and not the others' (0.1): the interval of
    the difference stays above 0; with the roles swapped it is below."""
    corr = np.full((4, 4), 0.1) + np.diag([0.7, 0.75, 0.65, 0.6])
    acc = np.array([1.0, 0.95, 0.92, 0.5])
    claim = _claim("attention_init_final_similar")
    good = claim.measure(ArraysCtx(fig5={"attn/attn_corr_matrix": corr, "test_acc": acc}))
    assert claim.verdict(good.value) == "pass" and "3 solved of 4" in good.detail
    bad = claim.measure(ArraysCtx(fig5={"attn/attn_corr_matrix": 0.9 - corr, "test_acc": acc}))
    assert claim.verdict(bad.value) == "fail"


def test_transfer_focus_claim_is_paired_over_solved_pretrained_seeds():
    start, acc = np.array([0.3, 0.4, 0.5, 0.2]), np.array([1.0, 1.0, 0.95, 0.3])
    claim = _claim("transfer_better_focus")
    arrays = {"model_pre/test_acc": acc, "attn/attn_prefix_mass_start": start,
              "attn/attn_prefix_mass_end": start + np.array([0.1, 0.12, 0.11, -0.5])}
    up = claim.measure(ArraysCtx(transfer_circuit=arrays))
    assert claim.verdict(up.value) == "pass" and "3 of 4 seeds solved p = 2" in up.detail
    arrays["attn/attn_prefix_mass_end"] = start - 0.1
    assert claim.verdict(claim.measure(ArraysCtx(transfer_circuit=arrays)).value) == "fail"


def test_cluster_first_pools_runs_and_needs_two_seeds():
    claim = _claim("clustering_precedes_fitting")
    ctx = FakeCtx(fig8={"d4_n_clustering_solved": 3, "d4_n_cluster_first": 3},
                  circuits={"d4_n_clustering_solved": 7, "d4_n_cluster_first": 6})
    assert claim.measure(ctx) == pytest.approx(0.9) and claim.verdict(claim.measure(ctx)) == "pass"
    ctx.summaries["circuits"]["d4_n_cluster_first"] = 5
    assert claim.verdict(claim.measure(ctx)) == "fail"
    few = FakeCtx(fig8={"d4_n_clustering_solved": 1, "d4_n_cluster_first": 1},
                  circuits={"d4_n_clustering_solved": 0, "d4_n_cluster_first": 0})
    assert math.isnan(claim.measure(few)) and claim.verdict(claim.measure(few)) == "fail"


def test_taxonomy_claims():
    c = _claim("taxonomy_value_corrected")
    assert c.verdict(c.measure(FakeCtx(circuits={"n_value_corrected": 2}))) == "pass"
    assert c.verdict(c.measure(FakeCtx(circuits={"n_value_corrected": 0}))) == "fail"
    assert "clustering.taxonomy_failed_models" not in {c.id for c in claims("clustering")}  # a unit test now


def test_paired_lower_and_transfer_gain_on_known_intervals():
    """Gains 0.20, 0.21, 0.22 over three solved seeds: mean 0.21, sd 0.01, lower end 0.21 − t(0.975, 2)·0.01/√3;
    a gain of the other sign, or the upper end taken for the lower, changes the value and the verdict."""
    from attnlab.clustering.claims.training import paired_lower
    from attnlab.core.intervals import t95

    diff = np.array([0.20, 0.21, 0.22])
    lo = 0.21 - t95(3) * 0.01 / np.sqrt(3)
    assert paired_lower(diff) == pytest.approx(lo) and paired_lower(-diff) == pytest.approx(-0.21 - (0.21 - lo))
    assert math.isnan(paired_lower(diff[:2]))
    start = np.array([0.3, 0.4, 0.5, 0.6])
    arrays = {"model_pre/test_acc": np.array([1.0, 0.95, 0.9, 0.5]), "attn/attn_prefix_mass_start": start,
              "attn/attn_prefix_mass_end": start + np.array([0.20, 0.21, 0.22, -0.9])}
    claim = _claim("transfer_better_focus")
    up = claim.measure(ArraysCtx(transfer_circuit=arrays))
    assert up.value == pytest.approx(lo) and claim.verdict(up.value) == "pass"
    arrays["attn/attn_prefix_mass_start"], arrays["attn/attn_prefix_mass_end"] = (
        arrays["attn/attn_prefix_mass_end"], start)
    down = claim.measure(ArraysCtx(transfer_circuit=arrays))
    assert down.value == pytest.approx(-0.21 - (0.21 - lo)) and claim.verdict(down.value) == "fail"
    assert claim.blocks == 2


@pytest.mark.slow
def test_every_circuit_claim_holds_at_quick_scale(tmp_path):
    only = [c.id for c in claims("clustering", "quick") if c.id.split(".")[1] in {
        "ideal_head_accuracy", "ideal_head_stationary", "stationary_under_training_ce_sharp",
        "clustering_precedes_fitting", "taxonomy_value_corrected"}]
    results = check("clustering", "quick", RunStore(tmp_path), only=only)
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]
