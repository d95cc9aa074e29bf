"""95 % Student-t intervals of a mean over seeds: the claims of every study that average per-seed (often paired)
differences assert an end of this interval, so that a verdict does not hinge on a few seeds."""

from __future__ import annotations

import math

import numpy as np


def t95(n: int) -> float:
    """Two-sided 95 % Student quantile with n − 1 degrees of freedom."""
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1))


def mean_interval(x: np.ndarray) -> tuple[float, float, float]:
    """(mean, lower, upper) of the 95 % t-interval of the mean of ``x``; NaN ends below 2 values."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    if n < 2:
        return (float(x.mean()) if n else math.nan), math.nan, math.nan
    half = t95(n) * x.std(ddof=1) / math.sqrt(n)
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)
