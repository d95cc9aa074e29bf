"""The study's claims: registration covers the spec's acceptance checks; the exact and fast ones pass."""

import pytest
import torch

from attnlab.core.claims import ClaimContext, claims

torch.set_num_threads(1)


def _claim(name):
    return next(c for c in claims("signal") if c.id == f"signal.{name}")


def test_claims_cover_the_acceptance_checks():
    refs = " ".join(c.ref for c in claims("signal"))
    for ac in ("AC-1", "AC-2", "AC-3", "AC-4", "AC-5", "AC-6", "AC-7", "AC-8", "AC-9", "AC-10", "AC-11", "AC-12"):
        assert ac in refs, ac
    reported = {c.id for c in claims("signal") if c.relation == "report"}
    assert "signal.low_lr_mitigates_entropy_collapse" in reported
    assert {c.id for c in claims("signal", "quick")} >= {"signal.entropy_collapse_blocks_training",
                                                         "signal.depth_theory_vs_sim"}
    assert "signal.rank_collapse_blocks_training" not in {c.id for c in claims("signal", "quick")}


@pytest.mark.parametrize("name", ["closed_forms", "bert_beta_paper", "bert_beta_per_head", "relu_kernel_quadrature",
                                  "mlp_kernel_vs_wide_mlp", "score_covariance_eq10", "score_variance_eq11",
                                  "relu_no_fixed_point", "hf_reinit_beta"])
def test_direct_claims_pass(tmp_path, name):
    from attnlab.core.runs import RunStore

    claim = _claim(name)
    measured = claim.measure(ClaimContext("quick", RunStore(tmp_path)))
    assert claim.verdict(measured) == "pass", (name, measured)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_whole_check_quick(tmp_path):
    from attnlab.core.claims import check, failed
    from attnlab.core.runs import RunStore

    results = check("signal", "quick", RunStore(tmp_path))
    assert not failed(results), [(r.claim, r.measured, r.detail) for r in failed(results)]
