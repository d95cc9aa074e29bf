"""Time models: every experiment of the five studies has one, finite and positive at both scales, and the committed
calibration's estimates of runs held out of its fit (another scale) are within core.costs.FACTOR of their seconds."""

from __future__ import annotations

import math

import pytest

from attnlab.core import costs
from attnlab.core.config import resolve
from attnlab.core.experiment import experiments

STUDIES = ("specialization", "signal", "potts", "paths", "clustering")


@pytest.mark.parametrize("study", STUDIES)
def test_every_experiment_has_a_time_model_at_both_scales(study):
    missing, bad = [], []
    for exp in experiments(study):
        if exp.cost is None:
            missing.append(exp.key)
            continue
        for scale in ("quick", "paper"):
            w = exp.cost(resolve(exp.config, scale, {}))
            if not (isinstance(w, int | float) and math.isfinite(w) and w > 0):
                bad.append((exp.key, scale, w))
    assert not missing, f"experiments without a time model (<study>/costs.py): {missing}"
    assert not bad, bad


def test_the_committed_calibration_extrapolates_within_its_factor():
    rates = costs.load("cpu")
    if not rates:
        pytest.skip("no committed calibration (results/timing/cpu.json) in this checkout")
    held = [(k, h) for k, r in rates.items() for h in r.held_out]
    assert held, "the calibration keeps no held-out run: fit on one scale, hold out the other"
    off = [(k, h) for k, h in held if not 1 / costs.FACTOR <= h["estimate"] / h["seconds"] <= costs.FACTOR]
    assert not off, f"{len(off)} of {len(held)} held-out runs estimated beyond a factor {costs.FACTOR}: {off}"
