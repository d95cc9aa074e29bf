import json

import pytest

from attnlab.core.claims import Claim, check, failed, register


def _claim(relation, expected, tol=0.0, value=1.0, cid="toy.tmp"):
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
    results = check("toy", "quick", store)
    diffusion = next(r for r in results if r.claim == "toy.diffusion")
    assert diffusion.verdict == "pass" and 0.1 < diffusion.measured < 1.9
    assert len(store.rows("toy.walk")) == 4  # the claim's four seeds, now reusable
    rows = json.loads((store.root / "claims" / "toy-quick.json").read_text())
    assert {r["claim"] for r in rows} >= {"toy.diffusion"}


def test_a_claim_that_raises_is_an_error_not_a_crash(store):
    def boom(ctx):
        raise RuntimeError("cannot measure")

    register(Claim("toy.broken", "—", "s", "h", boom, 0.0))
    try:
        results = check("toy", "quick", store, only=["broken"])
        assert [r.verdict for r in results] == ["error"] and "cannot measure" in results[0].detail
        assert failed(results)
    finally:
        from attnlab.core import claims as mod

        mod._CLAIMS.pop("toy.broken")


def test_a_measure_may_return_its_detail_and_an_event_that_never_happened_fails_with_it(store):
    from attnlab.core import claims as mod
    from attnlab.core.claims import Claim, Measured, check, register

    register(Claim(id="toy.detail_ok", ref="-", statement="s", how="h",
                   measure=lambda ctx: Measured(0.5, "0.5 at quick scale"), expected=0.5, tolerance=0.01))
    register(Claim(id="toy.detail_missing", ref="-", statement="s", how="h",
                   measure=lambda ctx: Measured(float("nan"), "split not reached by τ = 30"), expected=1.0))
    try:
        got = {r.claim: r for r in check("toy", "quick", store, only=["toy.detail_ok", "toy.detail_missing"])}
    finally:
        mod._CLAIMS.pop("toy.detail_ok")
        mod._CLAIMS.pop("toy.detail_missing")
    assert (got["toy.detail_ok"].verdict, got["toy.detail_ok"].detail) == ("pass", "0.5 at quick scale")
    assert (got["toy.detail_missing"].verdict, got["toy.detail_missing"].detail) == (
        "fail", "split not reached by τ = 30")


def test_the_claim_helper_registers_and_summary_names_the_keys_a_run_has(store):
    from attnlab.core import claims as mod
    from attnlab.core.claims import ClaimContext, claim

    c = claim("toy.helper", "Eq. 0", "s", "h", lambda ctx: ctx.summary("toy.walk", "final_norm", steps=5),
              relation="report")
    try:
        assert mod._CLAIMS["toy.helper"] is c and c.scales == ("quick", "paper")
        ctx = ClaimContext("quick", store)
        assert ctx.summary("toy.walk", "final_norm", steps=5) == ctx.run("toy.walk", steps=5).summary["final_norm"]
        with pytest.raises(KeyError, match=r"has no summary key 'nope'; it has: .*final_norm"):
            ctx.summary("toy.walk", "nope", steps=5)
    finally:
        mod._CLAIMS.pop("toy.helper")
