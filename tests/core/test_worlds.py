"""Worlds where a claim is false (``attnlab.core.worlds``) and seed blocks: the machinery every study's
``test_worlds.py`` relies on."""

import math

import numpy as np
import pytest

from attnlab.core import claims as claims_mod
from attnlab.core.claims import BLOCK_SEEDS, Claim, ClaimContext, Measured, claims
from attnlab.core.experiment import Result
from attnlab.core.runs import RunStore
from attnlab.core.worlds import World, measure_in, patched, scale_summary, swap_summary, unfalsified, with_world


def _toy():
    """The template's claim (``examples/my_study``): a study copied from it starts with a falsifiable claim."""
    return next(c for c in claims("toy") if c.id == "toy.diffusion")


def test_the_toy_claim_passes_in_its_world_and_fails_in_the_false_one(tmp_path):
    claim = _toy()
    assert claim.verdict(claim.measure(ClaimContext("quick", RunStore(tmp_path)))) == "pass"
    value, verdict, _ = measure_in(claim, RunStore(tmp_path))
    assert verdict == "fail" and value > 10, value  # drift 1 over 40 steps: |x_T|²/(dim·T) ≈ 40
    assert claim in with_world("toy") and claim not in unfalsified("toy")


def test_a_world_result_function_acts_on_a_copy_and_never_on_the_store(tmp_path):
    store = RunStore(tmp_path)
    true = ClaimContext("quick", store).run("knobs.walk").summary["final_norm"]
    world = World("final norm doubled", result=scale_summary("final_norm", by=2.0))
    c = Claim("knobs.norm", "—", "s", "h", lambda ctx: ctx.run("knobs.walk").summary["final_norm"], true, "approx",
              1e-9)
    value, verdict, _ = measure_in(c, store, world)
    assert (value, verdict) == (pytest.approx(2 * true), "fail")
    assert ClaimContext("quick", store).run("knobs.walk").summary["final_norm"] == true  # the stored run is intact


def test_swap_and_patch_restore_what_they_change():
    r = Result(summary={"a": 1.0, "b": 2.0})
    assert swap_summary("a", "b")("x", r).summary == {"a": 2.0, "b": 1.0}
    before = np.mean
    with patched({"numpy:mean": lambda f: (lambda *a, **k: 42.0)}):
        assert np.mean([1, 2]) == 42.0
    assert np.mean is before


@pytest.mark.parametrize("values,relation,expected,tol,worst", [
    ((0.5, 0.9), "le", 1.0, 0.0, 0.9),     # le: the larger value is the worse
    ((0.5, 0.9), "ge", 0.0, 0.0, 0.5),     # ge: the smaller
    ((0.2, -0.4), "approx", 0.0, 1.0, -0.4),  # approx: the farther from expected
    ((0.5, math.nan), "le", 1.0, 0.0, math.nan),  # a block where the event never happened fails the claim
])
def test_two_seed_blocks_report_the_worse_and_both_in_the_detail(values, relation, expected, tol, worst):
    by_seed = dict(zip(BLOCK_SEEDS, values, strict=True))
    c = Claim("knobs.blocks", "—", "s", "h", lambda ctx: Measured(by_seed[ctx.seed], f"seed {ctx.seed}"), expected,
              relation, tol, blocks=2)
    value, detail = c.measure_blocks(lambda seed: ClaimContext("quick", None, seed=seed))
    assert value == pytest.approx(worst, nan_ok=True)
    assert f"master seed {BLOCK_SEEDS[1]}" in detail and "seed 0" in detail and f"seed {BLOCK_SEEDS[1]}" in detail
    assert c.verdict(value) == ("fail" if math.isnan(worst) else "pass")


def test_one_failing_block_fails_the_claim():
    c = Claim("knobs.blocks", "—", "s", "h", lambda ctx: 0.5 if ctx.seed == 0 else 1.5, 1.0, "le", 0.0, blocks=2)
    value, _ = c.measure_blocks(lambda seed: ClaimContext("quick", None, seed=seed))
    assert (value, c.verdict(value)) == (1.5, "fail")


def test_blocks_are_validated():
    with pytest.raises(ValueError, match="blocks=3"):
        claims_mod.register(Claim("knobs.bad", "—", "s", "h", lambda ctx: 0.0, blocks=3))
