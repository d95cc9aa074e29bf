"""paths' memory model of the Markov-task experiments against the peak a run adds, measured in a fresh process."""

import pytest


@pytest.mark.parametrize("key, overrides", [
    ("paths.fig2d", {"P_test": 2000, "T": 20, "N0": 300}),  # model 720 MiB, measured 475 MiB
    ("paths.fig5b", {"P_test": 1500, "T": 40, "N0": 150}),  # model 627 MiB, measured 421 MiB
])
def test_model_within_a_factor_two_of_the_measured_peak(model_vs_peak, key, overrides):
    need, peak = model_vs_peak(key, overrides)
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"
