"""Every experiment of the study at a tiny size, through the run store, with its figure; config errors; an
experiment interrupted mid-training resumes to the result of an uninterrupted run."""

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import experiments, get
from attnlab.core.runs import RunContext, RunStore, load_result
from attnlab.potts.configs import TINY_DATA as DATA
from attnlab.potts.study import STUDY

torch.set_num_threads(1)

CASES = {e.name: dict(e.outputs.tiny) for e in STUDY.experiments}  # each experiment's declared fast check


def test_every_paper_figure_has_an_experiment():
    names = {e.name for e in experiments("potts")}
    assert {"fig2", "fig2d", "fig3left", "fig3right"} <= names
    assert set(CASES) == names
    assert {e.name for e in experiments("potts") if e.headline} == {"fig2", "fig3left"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_small(tmp_path, name):
    exp = get(f"potts.{name}")
    cfg = resolve(exp.config, "quick", CASES[name])
    rec = RunStore(tmp_path).run(exp, cfg)
    assert rec.status == "done"
    _, result = load_result(rec.run_dir)
    assert len(result.metrics) > 0 and result.arrays
    assert list((rec.run_dir / "figures").glob("*.png"))
    assert all(v is None or isinstance(v, int | float) for v in result.summary.values())


def test_fig2_small_learns_and_orders_the_models(tmp_path):
    """At a small size the factored layer already beats the untrained level and a 1-layer vanilla transformer."""
    exp = get("potts.fig2")
    cfg = resolve(exp.config, "quick", {**DATA, "M_train": 400, "epochs": 30, "vanilla_epochs": 5, "d": 8,
                                        "models": ["factored", "vanilla1"], "beta": 1.5})
    s = RunStore(tmp_path).run(exp, cfg).summary
    assert s["factored_gap"] < 0.15 and s["factored_corr"] > 0.6
    assert s["vanilla1_test"] > s["factored_test"]


@pytest.mark.parametrize(
    "name, overrides, key",
    [("fig2", {"C": 1}, "C"), ("fig2", {"L": 1}, "L"), ("fig2", {"beta": -0.1}, "beta"),
     ("fig2", {"L": 2, "J": [[0.0, 1.0], [0.0, 0.0]]}, "J"), ("fig2", {"C": 2, "U": [[1.0, 2.0], [0.0, 1.0]]}, "U"),
     ("fig2", {"L": 2, "J": [[1.0, 0.0], [0.0, 0.0]]}, "J"), ("fig3left", {"nu": 2.0}, "nu"),
     ("replica", {"nus": [3.0, 1.5]}, "nus"), ("fig2d", {"L": 25}, "L"), ("fig2", {"models": ["bert"]}, "models"),
     ("fig3right", {"Ms": [5000]}, "Ms"), ("fig2", {"lr": 0}, "lr"), ("gibbs", {"betas": [-1.0, 1.0]}, "betas")],
)
def test_bad_configs_are_rejected_before_work(name, overrides, key):
    with pytest.raises(ConfigError) as e:
        resolve(get(f"potts.{name}").config, "quick", overrides)
    assert f"'{key}" in str(e.value), str(e.value)


def test_interrupted_training_resumes_to_the_same_result(tmp_path, monkeypatch):
    exp = get("potts.fig2")
    cfg = resolve(exp.config, "quick", {**DATA, "epochs": 4, "models": ["factored", "vanilla1"], "vanilla_epochs": 3,
                                        "d": 8})
    clean = load_result(RunStore(tmp_path / "clean").run(exp, cfg).run_dir)[1]

    monkeypatch.setenv("ATTNLAB_CHECKPOINT_EVERY", "0")
    saves = {"n": 0}
    original = RunContext.checkpoint

    def flaky(self, state, force=False):
        saved = original(self, state, force)
        saves["n"] += saved
        if saves["n"] in (2, 7):  # inside the factored training, then inside the vanilla one
            raise KeyboardInterrupt
        return saved

    store = RunStore(tmp_path / "killed")
    monkeypatch.setattr(RunContext, "checkpoint", flaky)
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            store.run(exp, cfg)
        assert store.status(cfg.hash(exp.key))["status"] == "interrupted"
    monkeypatch.setattr(RunContext, "checkpoint", original)
    rec = store.run(exp, cfg)
    assert "resumed from checkpoint" in (rec.run_dir / "log.txt").read_text()
    resumed = load_result(rec.run_dir)[1]
    fm, vm = resumed.arrays["factored/maps"], resumed.arrays["vanilla1/maps"]
    assert fm.shape[0] == 5 and fm.shape[2:] == (6, 6)  # epochs 0..4
    assert vm.shape == (len(resumed.arrays["vanilla1/traj_time"]), 1, 6, 6)
    for key in ("factored/traj_test_loss", "factored/W", "vanilla1/traj_test_loss", "vanilla1/map", "factored/maps",
                "vanilla1/maps"):
        assert np.allclose(resumed.arrays[key], clean.arrays[key], rtol=0, atol=1e-12), key
