"""The worlds of paper 1 that swap two arms edit the typed summary (:mod:`attnlab.signal.claims.worlds`): each
exchanges exactly the two flat keys of its arms, at both scales, and leaves every other key as stored."""

import pytest

from attnlab.core.claims import claims
from attnlab.core.config import resolve
from attnlab.core.registry import get, load_studies
from attnlab.core.result import Result

SWAPS = {  # world (claim id without the study) → the two flat summary keys it exchanges
    "q_sa_annealed_vanishes": ("ipr_rho0_T1024_beta0.5", "ipr_rho0_T1024_beta3"),
    "entropy_annealed": ("entropy_rho0_T4096_beta0.5", "entropy_rho0_T4096_beta3"),
    "no_skip_low_beta_collapses": ("rho1_beta0.5", "rho_1_beta3"),
    "spectrum_rescaled_no_bulk": ("lambda2_beta2_T1024", "lambda2_standard_T1024"),
    "spectrum_standard_scaling": ("slope_standard", "slope_beta2"),
}


@pytest.mark.parametrize("scale", ["quick", "paper"])
@pytest.mark.parametrize("name", sorted(SWAPS))
def test_world_swaps_exactly_its_two_keys(name, scale):
    load_studies(["signal"])
    world = {c.id: c for c in claims("signal")}[f"signal.{name}"].falsify
    (key, overrides), = world.overrides.items()
    exp = get(key)
    config = resolve(exp.config, scale, dict(overrides))
    stored = {k: float(i) for i, k in enumerate(sorted(exp.summary.keys(config)))}
    edited = world.result(key, Result(summary=dict(stored), config=config)).summary
    a, b = SWAPS[name]
    assert edited == {**stored, a: stored[b], b: stored[a]}
