"""The template ``examples/my_study`` (study ``toy``) is a clean study to copy: its config holds the walk's parameters
only (attnlab's own tests turn their knobs on ``tests/knobs_study``), its memory model bounds the measured peak, and
its sandbox view draws the walk and its distance from the origin against the theory."""

from __future__ import annotations

import numpy as np
import pytest

from attnlab.core.config import Config, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result
from attnlab.sandbox.plugin import plugin_for


def test_the_template_has_no_test_knobs():
    exp = get("toy.walk")
    assert set(exp.config.model_fields) - set(Config.model_fields) == {"steps", "dim", "drift"}
    assert exp.resources is None or exp.resources(resolve(exp.config, "quick", {})) == {}
    plug = plugin_for("toy.walk")
    assert set(plug.forms["toy.walk"]) == {"steps", "dim", "drift", "seed"}
    assert all(p.default for p in plug.openers["walk"]("toy.walk", {"path": np.zeros((3, 2))}, {}, {}).panels)


@pytest.mark.parametrize(("steps", "dim"), [(40, 3), (4000, 64)])
def test_the_template_memory_model_bounds_the_measured_peak(model_vs_peak, steps, dim):
    model, peak = model_vs_peak("toy.walk", {"steps": steps, "dim": dim})
    assert peak <= model <= 1.5 * peak, (model, peak)


def test_the_template_view_draws_the_walk_and_its_theory(tmp_path):
    exp = get("toy.walk")
    for drift in (0.0, 0.5):
        cfg = resolve(exp.config, "quick", {"steps": 6, "dim": 1, "drift": drift})
        arrays = load_result(RunStore(tmp_path).run(exp, cfg).run_dir)[1].arrays
        view = plugin_for("toy.walk").openers["walk"]("toy.walk", arrays, {}, cfg.model_dump())
        frame = view.frame(2, 0, ["walk"])["walk"]["data"][0]
        assert list(frame["x"]) == list(arrays["path"][:3, 0]) and list(frame["y"]) == [0.0] * 3  # 1-D: y = 0
        walked, theory = view.series(0, ["norm"])["norm"]["data"]
        assert np.allclose(walked["y"], np.abs(arrays["path"][:, 0]))
        t = np.arange(1, 7)
        assert np.allclose(theory["y"], np.sqrt(t * (1 + drift**2 * t)))  # √E|x_t|² in one dimension
