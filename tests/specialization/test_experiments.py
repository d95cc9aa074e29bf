"""Every experiment of the study at a tiny size, through the run store, with its figure; config errors;
resume of an interrupted experiment."""

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import experiments, get
from attnlab.core.runs import RunStore, load_result
from attnlab.specialization.outputs import TINY

torch.set_num_threads(1)

CASES = {name: TINY[name] for name in ("fig1", "fig9", "fig10", "fig2", "fig4", "fig12", "fig5", "fig6", "fig7", "fig8",
                                        "fig11", "phases", "escape", "split_time")}


def test_every_paper_figure_has_an_experiment():
    names = {e.name for e in experiments("specialization")}
    figs = {f"fig{n}" for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 18, 19)}
    assert figs <= names  # Fig. 15 is fig2's H set, Fig. 20 the final-m maps of fig19


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_small(tmp_path, name):
    exp = get(f"specialization.{name}")
    cfg = resolve(exp.config, "quick", CASES[name])
    rec = RunStore(tmp_path).run(exp, cfg)
    assert rec.status == "done"
    _, result = load_result(rec.run_dir)
    assert len(result.metrics) > 0 and result.arrays
    assert list((rec.run_dir / "figures").glob("*.png"))
    assert all(v is None or isinstance(v, int | float) for v in result.summary.values())


def test_sim_vs_theory_agree_at_small_size(tmp_path):
    exp = get("specialization.fig9")
    cfg = resolve(exp.config, "quick", {"D": 200, "tau_max": 4.0, "record_every": 1.0, "n_mc": 4000})
    s = RunStore(tmp_path).run(exp, cfg).summary
    for act in ("softmax", "softmax1", "bsoftmax"):
        assert s[f"max_dm_{act}"] < 0.1 and s[f"max_drr_{act}"] < 0.1, (act, s)
    assert s["max_db_softmax"] == 0.0 and s["max_dv_bsoftmax"] == 0.0  # frozen parameters


def test_final_error_ordering_small(tmp_path):
    """One-hot F = 2 (flip), H = 2 = |support|: B-softmax gets close to Bayes, softmax does not."""
    exp = get("specialization.fig5")
    cfg = resolve(exp.config, "quick", {"laws": ["flip"], "Hs": [2], "nus": [], "F_H": 2, "nu_H": 4.0, "seeds": 1,
                                        "tau_max": 200.0, "n_mc": 4000, "eval_mc": 20_000, "bayes_mc": 100_000})
    s = RunStore(tmp_path).run(exp, cfg).summary
    assert s["E_flip_bayes_H"] <= s["E_flip_bsoftmax_H2"] + 0.005
    assert s["E_flip_bsoftmax_H2"] < s["E_flip_softmax_H2"]
    assert s["E_flip_bsoftmax_H2"] - s["E_flip_bayes_H"] < 0.02


@pytest.mark.parametrize(
    "overrides, key",
    [({"F": 1}, "F"), ({"nu1": -1.0}, "nu1"), ({"activations": ["relu"]}, "activations"), ({"H": 0}, "H"),
     ({"law": "gaussian", "nu1": 1.0, "nu2": 2.0}, "nu1"), ({"batch": 0}, "batch"), ({"L": 1}, "L")],
)
def test_bad_configs_are_rejected_before_work(overrides, key):
    with pytest.raises(ConfigError) as e:
        resolve(get("specialization.fig1").config, "quick", overrides)
    assert key in str(e.value)


def test_interrupted_experiment_resumes_to_the_same_result(killed_and_resumed):
    exp = get("specialization.fig11")
    cfg = resolve(exp.config, "quick", {"nu1s": [0.5, 4.0], "nu2s": [0.5], "tau_max": 3.0, "n_mc": 400})
    clean, _, resumed = killed_and_resumed(exp, cfg, lambda state: True)  # killed at its first save
    assert np.array_equal(resumed.arrays["cos_q"], clean.arrays["cos_q"])


def test_an_sgd_interrupted_mid_activation_resumes_inside_it(killed_and_resumed):
    """Figs. 1/9/10 save the SGD's state inside an activation (at D = 10^4 one activation outlasts a slice): killed
    at its first save, the run resumes from that step, not from the activation's start, to the same result."""
    from attnlab.specialization.experiments import sim_vs_theory

    exp = get("specialization.fig9")
    cfg = resolve(exp.config, "quick", {"D": 48, "tau_max": 2.0, "record_every": 0.5, "activations": ["softmax"],
                                         "n_mc": 400})
    assert round(cfg.tau_max / cfg.gamma) > sim_vs_theory.SAVE_EVERY  # the first save falls inside the SGD
    clean, state, resumed = killed_and_resumed(exp, cfg, lambda state: True)
    assert state["partial"][0] == "softmax" and int(state["partial"][1]["step"]) == sim_vs_theory.SAVE_EVERY
    assert all(np.array_equal(clean.arrays[k], resumed.arrays[k]) for k in clean.arrays)
