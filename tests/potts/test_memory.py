"""potts' memory models against the peak a run adds, measured in a fresh process (core.memory.measured_peak)."""

import pytest

from attnlab.core.config import resolve
from attnlab.core.registry import get


@pytest.mark.parametrize("key, overrides", [
    ("potts.fig3left", {"L": 100, "n_real": 50, "alphas": [0.5, 2.0, 8.0], "lams": [0.01]}),  # model 198, seen 167 MiB
    ("potts.finite_l", {"L": 150, "n_draws": 60, "alphas": [1.0, 4.0]}),  # model 247 MiB, measured 201 MiB
])
def test_model_within_a_factor_two_of_the_measured_peak(model_vs_peak, key, overrides):
    need, peak = model_vs_peak(key, overrides)
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"


def test_paper_scale_fits_this_machine_and_a_larger_one_would_not():
    exp = get("potts.fig3left")
    paper = resolve(exp.config, "paper", {})
    assert exp.memory(paper)[0] < 4 * 2**30  # L = 400, 30 realisations, α ≤ 8: 1.9 GiB
    huge = resolve(exp.config, "paper", {"L": 5000, "n_real": 1000})
    assert exp.memory(huge)[0] > 2**40


def test_a_run_that_cannot_fit_stops_before_it_starts(tmp_path):
    from typer.testing import CliRunner

    from attnlab.cli import app

    res = CliRunner().invoke(app, ["run", "potts.fig3left", "--set", "L=5000", "--set", "n_real=1000",
                                   "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and not (tmp_path / "s").exists(), res.output
    assert "potts.fig3left (cpu) needs" in res.stderr and "lower L, n_real/n_draws or the largest alpha" in res.stderr


@pytest.mark.parametrize("key, overrides", [
    # 16 models of eq. (2) on 3000 sequences (data from short chains): model 513 MiB, measured 521 MiB
    ("potts.fig2d", {"a_values": [0.0, 0.1, 0.3, 1.0], "seeds": 4, "epochs": 1, "burn_in": 10, "thin": 1}),
])
def test_fig2d_model_within_a_factor_two_of_the_measured_peak(model_vs_peak, key, overrides):
    need, peak = model_vs_peak(key, overrides)
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"


def test_every_experiment_the_sandbox_starts_has_a_model_that_grows_with_its_sizes():
    """fig2d trains len(a_values) × seeds models at once; the replica theory holds (α, λ, node) arrays."""
    fig2d, replica = get("potts.fig2d"), get("potts.replica")
    small = resolve(fig2d.config, "quick", {})
    big = resolve(fig2d.config, "quick", {"a_values": [i / 100 for i in range(100)], "seeds": 64})
    assert fig2d.memory(big)[0] > 500 * fig2d.memory(small)[0] > 2**37  # 128 GiB and more: refused on any machine
    assert replica.memory(resolve(replica.config, "paper", {}))[0] < 2**30  # 4000 nodes, 4 λ: 0.4 GiB
    assert replica.memory(resolve(replica.config, "quick", {"lams": [0.1] * 1000, "n_nodes": 100_000}))[0] > 2**40
