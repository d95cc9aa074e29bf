import json

import pytest

from attnlab.core.claims import Claim, check, failed, register


def _claim(relation, expected, tol=0.0, value=1.0, cid="knobs.tmp"):
    return Claim(cid, "Eq. 0", "s", "h", lambda ctx: value, expected, relation, tol)


@pytest.mark.parametrize(
    "relation, expected, tol, value, verdict",
    [
        ("approx", 1.0, 0.1, 1.05, "pass"), ("approx", 1.0, 0.01, 1.05, "fail"),
        ("le", 1.0, 0.0, 0.9, "pass"), ("le", 1.0, 0.0, 1.1, "fail"), ("le", 1.0, 0.2, 1.1, "pass"),
        ("ge", 1.0, 0.0, 1.1, "pass"), ("ge", 1.0, 0.0, 0.9, "fail"),
        ("in", (0.0, 2.0), 0.0, 1.0, "pass"), ("in", (0.0, 0.5), 0.0, 1.0, "fail"),
        ("report", 10.0, 0.0, 3.0, "reported"), ("approx", 1.0, 0.1, float("nan"), "fail"),
    ],
)
def test_verdicts(relation, expected, tol, value, verdict):
    assert _claim(relation, expected, tol).verdict(value) == verdict


def test_register_rejects_malformed():
    with pytest.raises(ValueError, match="needs expected"):
        register(_claim("in", 1.0))


def test_check_runs_experiments_through_the_store_and_writes_json(store):
    results = check("knobs", "quick", store)
    diffusion = next(r for r in results if r.claim == "knobs.diffusion")
    assert diffusion.verdict == "pass" and 0.1 < diffusion.measured < 1.9
    assert len(store.rows("knobs.walk")) == 4  # the claim's four seeds, now reusable
    rows = json.loads((store.root / "claims" / "knobs-quick.json").read_text())
    assert {r["claim"] for r in rows} >= {"knobs.diffusion"}


def test_a_claim_that_raises_is_an_error_not_a_crash(store):
    def boom(ctx):
        raise RuntimeError("cannot measure")

    register(Claim("knobs.broken", "—", "s", "h", boom, 0.0))
    try:
        results = check("knobs", "quick", store, only=["broken"])
        assert [r.verdict for r in results] == ["error"] and "cannot measure" in results[0].detail
        assert failed(results)
    finally:
        from attnlab.core import claims as mod

        mod._CLAIMS.pop("knobs.broken")


def test_a_measure_may_return_its_detail_and_an_event_that_never_happened_fails_with_it(store):
    from attnlab.core import claims as mod
    from attnlab.core.claims import Claim, Measured, check, register

    register(Claim(id="knobs.detail_ok", ref="-", statement="s", how="h",
                   measure=lambda ctx: Measured(0.5, "0.5 at quick scale"), expected=0.5, tolerance=0.01))
    register(Claim(id="knobs.detail_missing", ref="-", statement="s", how="h",
                   measure=lambda ctx: Measured(float("nan"), "split not reached by τ = 30"), expected=1.0))
    try:
        got = {r.claim: r for r in check("knobs", "quick", store, only=["knobs.detail_ok", "knobs.detail_missing"])}
    finally:
        mod._CLAIMS.pop("knobs.detail_ok")
        mod._CLAIMS.pop("knobs.detail_missing")
    assert (got["knobs.detail_ok"].verdict, got["knobs.detail_ok"].detail) == ("pass", "0.5 at quick scale")
    assert (got["knobs.detail_missing"].verdict, got["knobs.detail_missing"].detail) == (
        "fail", "split not reached by τ = 30")


def test_the_claim_helper_registers_and_summary_names_the_keys_a_run_has(store):
    from attnlab.core import claims as mod
    from attnlab.core.claims import ClaimContext, claim

    c = claim("knobs.helper", "Eq. 0", "s", "h", lambda ctx: ctx.summary("knobs.walk", "final_norm", steps=5),
              relation="report")
    try:
        assert mod._CLAIMS["knobs.helper"] is c and c.scales == ("quick", "paper")
        ctx = ClaimContext("quick", store)
        assert ctx.summary("knobs.walk", "final_norm", steps=5) == ctx.run("knobs.walk", steps=5).summary["final_norm"]
        with pytest.raises(KeyError, match=r"has no summary key 'nope'; it has: .*final_norm"):
            ctx.summary("knobs.walk", "nope", steps=5)
    finally:
        mod._CLAIMS.pop("knobs.helper")
