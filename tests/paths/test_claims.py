"""The study's claims: they cover the checks A1-D4 (docs/studies/paths.md), the direct ones pass, and (slow)
the whole quick check."""

import pytest

from attnlab.core.claims import ClaimContext, Measured, check, claims, failed
from attnlab.core.runs import RunStore


def _claim(name):
    return next(c for c in claims("paths") if c.id == f"paths.{name}")


def test_claims_cover_the_checks():
    refs = " ".join(c.ref for c in claims("paths"))
    for t in [f"A{i}" for i in range(1, 11)] + ["B1", "B2", "B3", "B3b", "B3c", "B3d", "B4", "B4b", "B5", "B5b",
                                                "B6", "B7", "B7b", "B8", "B9", "B10", "C", "D1", "D2", "D3",
                                                "D4"]:
        assert any(f"check {t}{end}" in refs for end in "); ,"), t
    assert "B11: last-token readout" in refs
    reported = {c.id for c in claims("paths") if c.relation == "report"}
    assert {"paths.oneshot_gd_sign_agreement", "paths.oneshot_U_near_gp_at_1000"}.isdisjoint(reported)
    # every quick claim is also made at paper scale, where a quick-only `<id>_quick` (reported: too small a model)
    # is asserted as `<id>`
    paper = {c.id for c in claims("paths", "paper")}
    assert {c.id.removesuffix("_quick") for c in claims("paths", "quick")} < paper
    assert all(c.relation == "report" for c in claims("paths", "quick") if c.id.endswith("_quick"))


@pytest.mark.parametrize("name", ["layers_equal_paths", "action_gradient", "gp_limit_solution",
                                  "single_head_scalar_theory", "stationarity_residuals",
                                  "head_permutation_equivariance", "block_sampler_exact", "path_feature_tree",
                                  "good_head_attention", "episode_tokens", "episode_labels_balanced",
                                  "episode_query_matches_one"])
def test_direct_claims_pass(tmp_path, name):
    c = _claim(name)
    measured = c.measure(ClaimContext("quick", RunStore(tmp_path)))
    value = measured.value if isinstance(measured, Measured) else measured
    assert c.verdict(value) == "pass", (name, measured)


def test_stationarity_equations_hold_only_at_the_saddle_point():
    """Check A6's residuals (Eqs. 32-34 written out apart from the action's code): ~0 at the solver's U*, not at
    U* moved by 1 %."""
    from attnlab.paths.claims.common import _random_problem, stationarity_residuals
    from attnlab.paths.theory import kernels
    from attnlab.paths.theory import saddle as theory

    pb = _random_problem((2, 2), P=15)
    sp = theory.solve(theory.Action(kernels.PathKernels(pb.Xi, pb.sigma2), pb.y, 0.1, 3.0, pb.Hs, pb.sigma2))
    assert max(stationarity_residuals(pb, sp.Us, 3.0, 0.1)) < 1e-7
    moved = [sp.Us[0] * 1.01, *sp.Us[1:]]
    assert min(stationarity_residuals(pb, moved, 3.0, 0.1)[:2]) > 1e-3


@pytest.mark.slow
def test_every_claim_holds_at_quick_scale(tmp_path):
    results = check("paths", "quick", RunStore(tmp_path))
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]


class _Empty(ClaimContext):
    """A context whose runs measured nothing (``values`` = {}) or only NaN (as a float, or as stored: None): the
    event never happened."""

    values: dict | float | None

    def run(self, experiment, **overrides):
        from attnlab.core.config import resolve
        from attnlab.core.registry import get

        exp = get(experiment)
        config = resolve(exp.config, self.scale, overrides)
        summary = self.values if isinstance(self.values, dict) else dict.fromkeys(exp.summary.keys(config),
                                                                                   self.values)
        return type("R", (), {"summary": summary, "config": config})()


@pytest.mark.parametrize("values", [{}, "nan", None])
def test_oneshot_claims_without_their_event_say_why(tmp_path, values):
    from attnlab.core.claims import Measured
    from attnlab.paths.claims import oneshot as oneshot_claims

    ctx = _Empty("paper", RunStore(tmp_path))
    ctx.values = float(values) if values == "nan" else values
    names = [c for c in claims("paths", "paper") if c.measure.__module__ == oneshot_claims.__name__
             and c.measure.__qualname__.startswith("_on.")]
    assert len(names) >= 6  # the summary-based measures; the paired and pruning ones read arrays (test_oneshot)
    for c in names:
        out = c.measure(ctx)
        assert isinstance(out, Measured) and out.value != out.value, c.id  # NaN, no exception
        assert ("has no" if values == {} else "not measurable") in out.detail and "paper scale" in out.detail
        assert c.verdict(out.value) in ("fail", "reported")
