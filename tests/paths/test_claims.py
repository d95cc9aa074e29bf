"""The study's claims: they cover the spec's checks, the direct ones pass, and (slow) the whole quick check."""

import pytest

from attnlab.core.claims import ClaimContext, check, claims, failed
from attnlab.core.runs import RunStore


def _claim(name):
    return next(c for c in claims("paths") if c.id == f"paths.{name}")


def test_claims_cover_the_spec_checks():
    refs = " ".join(c.ref for c in claims("paths"))
    for t in [f"A{i}" for i in range(1, 11)] + ["B1", "B2", "B3", "B3b", "B3c", "B3d", "B4", "B4b", "B5", "B5b",
                                                "B6", "B7", "B7b", "B8", "B9", "B10", "check C", "D1", "D2", "D3",
                                                "D4"]:
        assert any(f"spec {t}{end}" in refs for end in "); ,"), t
    assert "B11: last-token readout" in refs
    reported = {c.id for c in claims("paths") if c.relation == "report"}
    assert {"paths.oneshot_gd_sign_agreement", "paths.score_tracks_drop", "paths.oneshot_U_near_gp_at_1000"} <= reported
    assert {c.id for c in claims("paths", "quick")} < {c.id for c in claims("paths", "paper")}


@pytest.mark.parametrize("name", ["layers_equal_paths", "action_gradient", "gp_limit_solution",
                                  "single_head_scalar_theory", "stationarity_residuals",
                                  "head_permutation_equivariance", "block_sampler_exact", "path_feature_tree",
                                  "good_head_attention", "episode_tokens", "episode_labels_balanced",
                                  "episode_query_matches_one"])
def test_direct_claims_pass(tmp_path, name):
    c = _claim(name)
    measured = c.measure(ClaimContext("quick", RunStore(tmp_path)))
    assert c.verdict(measured) == "pass", (name, measured)


@pytest.mark.slow
def test_every_claim_holds_at_quick_scale(tmp_path):
    results = check("paths", "quick", RunStore(tmp_path))
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]
