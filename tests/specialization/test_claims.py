"""The study's claims: registration, the fast exact ones at full size, events that never happen, and (slow) the
whole check."""

import math
import re

import numpy as np
import pytest
import torch

from attnlab.core.claims import ClaimContext, Measured, check, claims, failed

torch.set_num_threads(1)


def _claim(name):
    return next(c for c in claims("specialization") if c.id == f"specialization.{name}")


def test_claims_cover_the_papers_results():
    refs = " ".join(c.ref for c in claims("specialization"))
    for ref in ("Prop. III.1", "Prop. III.2", "Prop. III.3", "Prop. III.4", "Prop. IV.1", "Prop. IV.2", "Prop. IV.3(a)",
                "Prop. IV.3(b)", "Lemma III.1", "Lemma A.1", "Lemma A.3", "Lemma A.4", "Eq. (4)", "Fig. 1", "Fig. 3",
                "Fig. 4", "Fig. 5", "Fig. 6", "Fig. 7", "Fig. 8", "Fig. 11"):
        assert ref in refs, ref
    assert not re.search(r"\bspec\b", refs)
    reported = {c.id for c in claims("specialization") if c.relation == "report"}
    assert reported == {"specialization.tau_s_fig1", "specialization.pruning_gaussian"}


@pytest.mark.parametrize("name", ["softmax1_unspecialised_gradients", "bsoftmax_is_bayes", "softmax1_construction",
                                  "softmax_not_well_specified", "pruning_redundant_heads"])
def test_exact_claims_pass(tmp_path, name):
    from attnlab.core.runs import RunStore

    claim = _claim(name)
    measured = claim.measure(ClaimContext("quick", RunStore(tmp_path)))
    assert claim.verdict(measured) == "pass", (name, measured)


def test_softmax1_early_rates_hold_at_r_zero_and_reverse_at_r_identity(tmp_path):
    """Lemma A.4: (A18)-(A19) at m = r = 0 (closed forms of (A16)-(A17): dv/dτ = 1/18, db/dτ = −1/216 at L = 5, H = 2);
    the detail reports the reversed signs at r = I."""
    from attnlab.core.runs import RunStore

    claim = _claim("softmax1_early_v")
    out = claim.measure(ClaimContext("quick", RunStore(tmp_path)))
    assert claim.verdict(out.value) == "pass" and abs(out.value - 1 / 216) < 1e-12
    assert "dv/dτ = 0.0556" in out.detail and "dv/dτ = -0.0" in out.detail  # r = I: v first decreases


SHORT = {  # horizons far too short for the events the claims time: the split, the features learnt
    "specialization.split_time": {"seeds": 2, "n_mc": 2000, "tau_max": 1.0, "D": 1000},
    "specialization.escape": {"n_mc": 2000, "tau_max": 1.0, "Ds": [100, 1000]},
    "specialization.fig4": {"n_mc": 2000, "tau_max": 1.0, "record_every": 0.5},
}


class _ShortRuns(ClaimContext):
    def run(self, experiment, **overrides):
        return super().run(experiment, **{**SHORT[getattr(experiment, "key", experiment)], **overrides})


@pytest.mark.parametrize("name", ["tau_s_fig1", "escape_time_increases_with_D", "escape_time_log_D",
                                  "sequential_learning", "bsoftmax_learns_faster"])
def test_a_claim_whose_event_never_happens_says_why(tmp_path, name):
    """No claim crashes on a run where its event does not happen: Measured(nan, why), a failed verdict."""
    from attnlab.core.runs import RunStore

    claim = _claim(name)
    out = claim.measure(_ShortRuns("quick", RunStore(tmp_path)))
    assert isinstance(out, Measured) and math.isnan(out.value), out
    assert "τ = 1" in out.detail, out.detail
    assert claim.verdict(out.value) == ("reported" if claim.relation == "report" else "fail")


@pytest.mark.slow
def test_every_claim_holds_at_quick_scale(tmp_path):
    from attnlab.core.runs import RunStore

    results = check("specialization", "quick", RunStore(tmp_path))
    assert not failed(results), [(r.claim, r.measured, r.expected, r.detail) for r in failed(results)]


def test_exact_identities():
    from attnlab.specialization.claims import identities as ident

    assert ident.activation_identities() < 1e-12
    assert ident.loss_at_origin() < 1e-12
    assert ident.permutation_invariance() < 1e-6
    assert ident.r_gradient_at_zero() < 1e-10
    assert ident.order_parameter_extraction() < 1e-10


def test_finite_d_consistency_reduced_size():
    """Prop. III.1 at D = 600 over 6000 sequences: sampling error ~0.01, O(1/D) bias ~0.002."""
    from attnlab.specialization.claims import identities as ident

    assert ident.finite_d_consistency(D=600, n=6000) < 0.03


def test_welch_lower_end_is_below_the_mean_gap_and_sees_its_sign():
    """The interval of the pruning comparison: a clear gap has its lower end above 0, the swapped arms below,
    noise alone straddles 0, and too few values give −inf (never a pass)."""
    from attnlab.specialization.claims.trained import welch_lower

    hi, lo = np.array([0.30, 0.32, 0.31, 0.29]), np.array([0.10, 0.12, 0.11, 0.09])
    assert 0 < welch_lower(hi, lo) < 0.2
    assert welch_lower(lo, hi) < -0.2
    assert welch_lower(hi, hi + 0.001) < 0
    assert welch_lower(hi[:1], lo) == -np.inf
