"""The 95 % Student-t interval of a mean (``core/intervals.py``) on values whose interval is known."""

import math

import numpy as np
import pytest

from attnlab.core.intervals import mean_interval, t95


def test_t95_is_the_two_sided_student_quantile():
    assert t95(3) == pytest.approx(4.302653, abs=1e-6) and t95(11) == pytest.approx(2.228139, abs=1e-6)


def test_mean_interval_of_known_values():
    """1, 2, 3: mean 2, sd 1, half-width t(0.975, 2)/√3 = 2.4841; lower below upper, both shift with the sign."""
    mean, lo, hi = mean_interval(np.array([1.0, 2.0, 3.0]))
    assert (mean, lo, hi) == pytest.approx((2.0, 2.0 - 2.484138, 2.0 + 2.484138), abs=1e-6)
    assert mean_interval(np.array([-1.0, -2.0, -3.0])) == pytest.approx((-2.0, -hi, -lo))
    assert mean_interval(np.array([5.0, 5.0])) == (5.0, 5.0, 5.0)


def test_mean_interval_needs_two_values():
    mean, lo, hi = mean_interval(np.array([0.5]))
    assert mean == 0.5 and math.isnan(lo) and math.isnan(hi)
    assert all(math.isnan(v) for v in mean_interval(np.array([])))
