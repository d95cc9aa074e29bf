"""signal's memory models against the peak a run adds, measured in a fresh process (core.memory.measured_peak)."""

import pytest

from attnlab.core.experiment import get


@pytest.mark.parametrize("key, overrides", [
    ("signal.depth", {"T": 32, "L": 2}),  # finite-T Monte Carlo: model 584 MiB, measured 636 MiB
    ("signal.depth", {"d": 512, "T": 256, "H": 2, "n_seqs": 8, "n_inits": 4, "L": 2, "finite_T": False,
                      "pairs": [[0.1, 1.0]]}),  # the propagation alone: model 228 MiB, measured 161 MiB
    ("signal.fig3", {"T": 128, "d": 512, "betas": [0.5, 1.0, 2.0], "rhos": [0.0, 0.5], "n_rep": 8}),  # 136 vs 128
])
def test_model_within_a_factor_two_of_the_measured_peak(model_vs_peak, key, overrides):
    need, peak = model_vs_peak(key, overrides)
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"


def test_every_depth_figure_has_the_model():
    assert all(get(f"signal.{k}").memory is not None for k in ("fig1d", "fig1e", "depth", "fig3"))
