"""Summaries hold Python numbers; objects display compactly in a terminal and as HTML in Jupyter."""

import json

import numpy as np
import pandas as pd
import pytest
import torch

from attnlab.core.claims import ClaimResult
from attnlab.core.experiment import Result, summary_value
from attnlab.core.trajectory import Trajectory


def test_summary_values_become_python_numbers():
    r = Result(summary={"n_clusters": torch.tensor([6]), "rate": np.float32(0.25), "ok": np.bool_(True),
                        "never": float("nan"), "per_seed": np.array([1, 2, 3]), "pair": (torch.tensor(1.5), "a"),
                        "name": "ideal"})
    assert r.summary == {"n_clusters": 6, "rate": 0.25, "ok": True, "never": None, "per_seed": [1, 2, 3],
                         "pair": [1.5, "a"], "name": "ideal"}
    assert type(r.summary["n_clusters"]) is int and type(r.summary["rate"]) is float
    json.dumps(r.summary, allow_nan=False)  # what summary.json holds
    with pytest.raises(TypeError, match=r"summary\['grid'\] must be a number"):
        summary_value("grid", np.zeros((2, 2)))
    with pytest.raises(TypeError, match=r"summary\['obj\[0\]'\]"):
        summary_value("obj", [object()])


def test_objects_display_compactly_and_as_html():
    t = np.linspace(0, 1, 1000)
    tr = Trajectory(t, {"m": np.random.default_rng(0).normal(size=(1000, 4, 3)), "loss": 1 - t}, source="theory")
    text = repr(tr)
    assert len(text.splitlines()) <= 5 and len(text) < 400 and "array(1000, 4, 3) float64" in text
    assert text.startswith("Trajectory(theory: 1000 times, tau 0 … 1, 2 observables)")
    assert "<table>" in tr._repr_html_() and "array(1000,)" in tr._repr_html_()
    res = Result(pd.DataFrame({"x": range(500)}), {"a": np.zeros((300, 300))}, {f"k{i}": i for i in range(50)})
    assert len(repr(res).splitlines()) == 14 and "… and 40 more" in repr(res) and "<table>" in res._repr_html_()
    c = ClaimResult("c1", "Eq. (3)", "the <loss> falls", "how", 0.123456, "≤ 0.2", 0.0, "pass", "quick", 2.0, "detail")
    assert repr(c).startswith("ClaimResult(c1: pass, measured 0.1235, expected ≤ 0.2, quick)")
    assert "&lt;loss&gt;" in c._repr_html_()
