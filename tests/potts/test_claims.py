"""The study's claims: registration against the checks of the docs, the direct (exact) ones, and (slow) the whole
check."""

import pytest
import torch

from attnlab.core.claims import ClaimContext, check, claims, failed

torch.set_num_threads(1)


def _claim(name):
    return next(c for c in claims("potts") if c.id == f"potts.{name}")


def test_claims_cover_the_checks():
    refs = " ".join(c.ref for c in claims("potts"))
    for n in range(1, 22):
        assert f"check {n})" in refs or f"check {n}," in refs, n
    reported = {c.id for c in claims("potts") if c.relation == "report"}
    assert reported == {"potts.paper_alpha_minus_half", "potts.paper_sampler_hamming"}


@pytest.mark.parametrize("name", ["conditional_is_energy_difference", "eq2_at_a0_is_factored", "closed_form_gradient"])
def test_exact_claims_pass(tmp_path, name):
    from attnlab.core.runs import RunStore

    claim = _claim(name)
    measured = claim.measure(ClaimContext("quick", RunStore(tmp_path)))
    assert claim.verdict(measured) == "pass", (name, measured)


def test_a_reported_claim_is_never_a_failure():
    claim = _claim("paper_alpha_minus_half")
    assert claim.verdict(-1.03) == "reported" and claim.expected == -0.5


@pytest.mark.slow
def test_every_claim_holds_at_quick_scale(tmp_path):
    from attnlab.core.runs import RunStore

    results = check("potts", "quick", RunStore(tmp_path))
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]
