"""paths' memory model of the Markov-task experiments against the peak a run adds, measured in a fresh process."""

import pytest

from attnlab.core.config import resolve
from attnlab.core.experiment import get
from attnlab.core.memory import measured_peak


@pytest.mark.parametrize("key, overrides", [
    ("paths.fig2d", {"P_test": 2000, "T": 20, "N0": 300}),
    ("paths.fig5b", {"P_test": 1500, "T": 40, "N0": 150}),
])
def test_model_within_a_factor_two_of_the_measured_peak(key, overrides):
    exp = get(key)
    cfg = resolve(exp.config, "quick", overrides)
    need, peak = exp.memory(cfg)[0], measured_peak(key, cfg)["peak"]
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"
