"""`attnlab check --plan` and `--budget`: the claims a record lacks first, then the stalest; a budgeted check stops
cleanly at its deadline, keeps what it measured in the record and resumes its unfinished run next time."""

import json

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core import claims as claims_mod
from attnlab.core.config import ConfigError, resolve
from attnlab.core.plan import order, parse_duration
from attnlab.core.registry import get

runner = CliRunner()


@pytest.mark.parametrize("text,seconds", [("12m", 720), ("90s", 90), ("1h30m", 5400), ("45", 45), ("0.5h", 1800)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "12 minutes", "m"])
def test_bad_durations_are_one_line(text):
    with pytest.raises(ConfigError, match="give a duration such as 12m"):
        parse_duration(text)


def _c(name):
    return claims_mod.Claim(f"knobs.{name}", "—", "s", "h", lambda ctx: 0.0)


def test_order_missing_then_stale_then_oldest():
    todo = [_c("fresh"), _c("old"), _c("missing"), _c("stale"), _c("missing2")]
    entries = {"knobs.fresh": {"date": "2026-11-20", "code": "abc"}, "knobs.old": {"date": "2026-10-01", "code": "abc"},
               "knobs.stale": {"date": "2026-11-25", "code": "old"}}
    got = [c.id.split(".")[1] for c in order(todo, entries, {"knobs": "abc"})]
    assert got == ["missing", "missing2", "stale", "old", "fresh"]
    # a claim the other device kind's record holds comes after those no record holds
    got = [c.id.split(".")[1] for c in order(todo, entries, {"knobs": "abc"}, {"knobs.missing": {}})]
    assert got == ["missing2", "missing", "stale", "old", "fresh"]


@pytest.fixture
def slow():
    """A knobs claim whose run sleeps 0.2 s a step for 40 steps: 8 s, longer than the budget below."""
    claims_mod.register(claims_mod.Claim("knobs.slow", "—", "slow", "walk", lambda ctx: ctx.run(
        "knobs.walk", sleep=0.2).summary["final_norm"] * 0.0, 0.0, "approx", 0.1))
    yield
    claims_mod._CLAIMS.pop("knobs.slow")


def test_a_budgeted_check_measures_what_the_record_lacks_and_stops_cleanly(tmp_path, slow):
    store, claims_dir = str(tmp_path / "s"), tmp_path / "claims"
    res = runner.invoke(app, ["check", "knobs", "--only", "diffusion", "--store", store, "--record", str(claims_dir)])
    assert res.exit_code == 0, res.output
    plan = runner.invoke(app, ["check", "knobs", "--plan", "--json", "--store", store, "--record", str(claims_dir)])
    rows = json.loads(plan.stdout)
    assert [r["claim"] for r in rows] == ["knobs.slow", "knobs.diffusion"]  # never measured first
    assert rows[0]["last"] == "never measured" and rows[0]["runs"][0]["in_store"] is False
    assert all(r["in_store"] for r in rows[1]["runs"]) and rows[1]["seconds"] is not None
    res = runner.invoke(app, ["check", "knobs", "--budget", "3s", "--store", store, "--record", str(claims_dir)])
    assert res.exit_code == 0 and "budget 3s reached after 0 claim(s); 2 left" in res.stderr, res.output
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text())
    assert [e["claim"] for e in doc["claims"]] == ["knobs.diffusion"]  # the record keeps what it had
    # the unfinished run was checkpointed: the next slice resumes it and measures the claim
    res = runner.invoke(app, ["check", "knobs", "--budget", "60s", "--store", store, "--record", str(claims_dir)])
    assert res.exit_code == 0, res.output
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text())
    assert {e["claim"] for e in doc["claims"]} == {"knobs.diffusion", "knobs.slow"} and "partial" not in doc


def test_a_plan_stops_a_claim_that_computes_by_itself(tmp_path):
    """A claim measured without a stored run (a direct computation) is stopped after a couple of seconds: the plan
    measures nothing."""
    import time

    from attnlab.core.plan import PROBE_SECONDS, plan
    from attnlab.core.runs import RunStore

    slow = claims_mod.Claim("knobs.direct", "—", "s", "h", lambda ctx: time.sleep(30) or 0.0)
    t0 = time.perf_counter()
    (step,) = plan([slow], "quick", RunStore(tmp_path), None, None)
    assert time.perf_counter() - t0 < PROBE_SECONDS + 5 and not step.complete and step.runs == []


def test_time_models_fitted_on_short_runs_estimate_a_longer_one(tmp_path, monkeypatch):
    """`store calibrate` fits the walk's formula (a fixed cost per run plus steps × (bookkeeping + dim)) on two
    5,000-step walks; the rate estimates a 40,000-step walk within core.costs.FACTOR of its CPU time (a formula
    blind to the steps would be 3-6× off), and `check --plan` adds a claim's missing runs up with it."""
    from attnlab.core import costs

    fit, held, timing = tmp_path / "fit", tmp_path / "held", tmp_path / "timing"
    for store, steps, seeds in ((fit, 5000, (0, 1)), (held, 40_000, (0,))):
        for seed in seeds:
            res = runner.invoke(app, ["run", "knobs.walk", "--set", f"steps={steps}", "--seed", str(seed), "--store",
                                      str(store), "--quiet"])
            assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["store", "calibrate", "--store", str(fit), "--held-out", str(held), "--out", str(timing),
                              "--json"])
    assert res.exit_code == 0, res.output
    rate = json.loads(res.stdout)["knobs.walk"]
    assert rate["runs"] == 2 and len(rate["held_out"]) == 1
    (h,) = rate["held_out"]
    assert 1 / costs.FACTOR < h["estimate"] / h["seconds"] < costs.FACTOR, h
    monkeypatch.setenv("ATTNLAB_TIMING", str(timing))
    plan = runner.invoke(app, ["check", "knobs", "--plan", "--json", "--store", str(tmp_path / "empty")])
    (row,) = json.loads(plan.stdout)
    assert row["runs_known"] and len(row["runs"]) == 4 and not any(r["in_store"] for r in row["runs"])
    walk = costs.load("cpu", timing)["knobs.walk"]
    assert row["estimate"] == pytest.approx(4 * walk.estimate(get("knobs.walk").cost(resolve(get("knobs.walk").config,
                                                                                           "quick", {}))))
