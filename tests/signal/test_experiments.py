"""Every experiment of the study at a tiny size through the run store, with its figure; headline flags;
config errors before any work; resume of an interrupted training run."""

import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import experiments, get
from attnlab.core.runs import RunStore, load_result
from attnlab.signal.outputs import TINY

torch.set_num_threads(1)

CASES = {**TINY, "universality": {**TINY["universality"], "combos": [[32, 1, 32], [32, 2, 32], [32, 1, 16]],
                                   "betas": [0.5, 1.5, 2.5, 3.5]},
         "figC3": {**TINY["figC3"], "betas": [0.5, 1.5, 3.0]}}


def test_every_paper_figure_has_an_experiment():
    names = {e.name for e in experiments("signal")}
    assert {"fig1ab", "fig1c", "fig1d", "fig1e", "fig1f", "fig3", "fig4", "fig5", "figB1", "figC1", "figC2",
            "figC3"} <= names  # Fig. 2 is the block diagram; figB1 draws Figs. B.1 and B.2
    assert {e.name for e in experiments("signal") if e.headline} == {"fig1c", "fig1d"}
    # the map's two experiments (attnlab map on real families; no figure of their own) are run small by
    # tests/signal/test_mapping_claims.py and tests/core/test_outputs.py
    assert set(CASES) == names - {"map_families", "map_fix_training"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_small(tmp_path, name):
    exp = get(f"signal.{name}")
    rec = RunStore(tmp_path).run(exp, resolve(exp.config, "quick", CASES[name]))
    assert rec.status == "done", rec.error
    _, result = load_result(rec.run_dir)
    assert len(result.metrics) > 0 and result.arrays
    assert list((rec.run_dir / "figures").glob("*.png"))
    assert all(v is None or isinstance(v, int | float) for v in result.summary.values())


@pytest.mark.parametrize("bad", [{"beta": 0.0}, {"T": 1}, {"H": 5}, {"alpha_sa": -1.0}, {"activation": "swish"},
                                 {"corpus": "tinystories"}])
def test_bad_configs_fail_before_work(bad):
    with pytest.raises(ConfigError):
        resolve(get("signal.fig1d").config, "quick", bad)


def test_quick_and_paper_scales_differ():
    for name in ("fig1c", "fig1d", "fig3", "fig4", "fig5"):
        cfg = get(f"signal.{name}").config
        assert resolve(cfg, "quick") != resolve(cfg, "paper")
    paper = resolve(get("signal.fig1d").config, "paper")
    assert (paper.L, paper.d, paper.H, paper.T, paper.n_inits, paper.n_seqs) == (60, 720, 6, 512, 10, 10)


def test_interrupted_training_resumes_to_the_same_result(tmp_path, monkeypatch):
    """Kill fig4 after its first checkpoint (an exception inside the loop); the rerun resumes from it and
    ends where an uninterrupted run ends."""
    from attnlab.signal.train import mlm

    exp = get("signal.fig4")
    cfg = resolve(exp.config, "quick", {**CASES["fig4"], "steps": 9, "log_every": 3})
    ref = RunStore(tmp_path / "ref").run(exp, cfg)
    store = RunStore(tmp_path / "cut")
    real = mlm.evaluate
    calls = {"n": 0}

    def dying(*a, **k):
        calls["n"] += 1
        if calls["n"] == 3:  # init, step 3 (checkpointed), then die at step 6
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(mlm, "evaluate", dying)
    with pytest.raises(KeyboardInterrupt):
        store.run(exp, cfg)
    monkeypatch.setattr(mlm, "evaluate", real)
    rec = store.run(exp, cfg)
    assert rec.status == "done"
    a, b = load_result(ref.run_dir)[1], load_result(rec.run_dir)[1]
    assert a.summary["loss_gap_min"] == pytest.approx(b.summary["loss_gap_min"], abs=1e-6)
