"""The circuit experiments of paper 4 (Figs 1–6, 8, 15, D9) at a tiny size through the run store, with their
figures; the stored runs reopen as Histories; an interrupted transfer resumes to the same result."""

import dataclasses

import numpy as np
import pytest
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.experiments import circuits
from attnlab.clustering.outputs import TINY
from attnlab.clustering.train.history import History
from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import experiments, get
from attnlab.core.runs import RunContext, RunStore, load_result

torch.set_num_threads(1)
CASES = {name: TINY[name] for name in ("fig1", "stationarity", "circuits", "fig5", "transfer_circuit", "fig8", "train")}
FIGURES = {"fig1": {"fig1", "fig1_all_panels", "fig1_scaling"}, "stationarity": {"stationarity"},
           "circuits": {"circuits", "taxonomy"}, "fig5": {"fig5"},
           "transfer_circuit": {"fig6", "fig15", "transfer_accuracy"}, "fig8": {"fig8", "fig8_phases"},
           "train": {"snapshot", "curves"}}


def test_circuit_figures_have_experiments():
    refs = {e.name: e.ref for e in experiments("clustering")}
    assert {"fig1", "circuits", "fig5", "transfer_circuit", "fig8", "stationarity"} <= set(refs)
    assert refs["circuits"] == "Figs. 2–4" and refs["transfer_circuit"] == "Figs. 6, 15"


@pytest.fixture(scope="module")
def runs(run_cases):
    """Every experiment once, tiny, through one store: name -> (config, run record)."""
    return run_cases("clustering", CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_experiment_runs_small(runs, name):
    cfg, rec = runs[name]
    assert rec.status == "done"
    _, result = load_result(rec.run_dir)
    assert len(result.metrics) > 0 and result.arrays
    pngs = {p.stem for p in (rec.run_dir / "figures").glob("*.png")}
    assert FIGURES[name] <= pngs, pngs
    assert all(v is None or isinstance(v, int | float | str) for v in result.summary.values())
    if name != "fig1":
        prefix = "pretrain/" if name == "transfer_circuit" else "run/"
        h = History.from_arrays(result.arrays, prefix)
        assert h.n_seeds == cfg.n_seeds and len(h.epochs) >= 2


def test_fig1_construction_metrics(runs):
    s = runs["fig1"][1].summary
    assert s["accuracy"] == 1.0 and s["grad_norm"] < 1e-8 and s["n_clusters"] == 6 and s["head_type"] == "ideal"
    assert s["n_clusters_p3_N8_k3_d4"] == 10 and s["accuracy_p3_N8_k3_d4"] == 1.0
    assert s["grad_norm_c0.2"] > s["grad_norm_c1"] and s["accuracy_c0.1"] < 1.0
    with pytest.raises(ConfigError, match="key 'h'"):
        resolve(get("clustering.fig1").config, "quick", {"h": 5})


def test_training_summaries_are_consistent(runs):
    s = runs["circuits"][1].summary
    assert sum(s[f"n_{t}"] for t in circuits.TYPES) == s["n_models"] == 3
    assert s["n_failed_misclassified"] == 0
    st = runs["stationarity"][1].summary
    assert st["accuracy_min"] == 1.0 and st["ce_end"] <= st["ce_start"]
    t = load_result(runs["transfer_circuit"][1].run_dir)[1]
    fin = History.from_arrays(t.arrays, "finetune/")
    assert fin.task.p == 3 and fin.snapshots["E"].shape[2] == 3
    tr = runs["train"][1].summary
    assert sum(tr[f"n_{t}"] for t in circuits.TYPES) == 2 and 0 <= tr["mean_test_acc"] <= tr["best_test_acc"] <= 1


def test_circuit_metrics_and_taxonomy_on_the_construction():
    """The construction (plus a copy with the suffix leaking into ξ) through the per-model metrics of Figs. 2–4."""
    from attnlab.clustering.theory import construction

    params, spec = construction.build_clustering_head(2, 12, 5, 2, 8)
    leaky = {k: v.clone() for k, v in params.items()}
    leaky["P"][0, 5:] = torch.tensor([0.0, 1.0]) + 0.3 * torch.randn(7, 2, generator=torch.Generator().manual_seed(0),
                                                                     dtype=torch.float64)
    stacked = {k: torch.cat([params[k], leaky[k]])[None] for k in params}
    task = Task(2, 12, 5)
    h = History(spec, task, [0, 1], np.array([0]), {k: v.numpy() for k, v in stacked.items()}, np.array([0]),
                {"test_acc": np.array([[1.0, 1.0]])})
    m = circuits.circuit_metrics(h)
    assert m["head_type"][0] == "ideal" and m["n_clusters"][0] == 6
    assert m["R_suffix"][1] > 0.02 and m["head_type"][1] in ("partial", "fuzzy")
    assert circuits.representatives(m) == {"ideal": 0, m["head_type"][1]: 1}


def test_two_stage_seed_choice():
    m = {"test_acc": np.array([0.5, 1.0, 1.0, 1.0, 1.0]), "cluster_score": np.array([0.1, 0.95, 0.99, 0.97, 0.99]),
         "t_cluster": np.array([np.nan, 4.0, 30.0, 40.0, 20.0]), "t_fit": np.array([np.nan, 5.0, 31.0, 20.0, 30.0])}
    epochs = np.arange(60)
    loss = np.full((60, 5), 0.69)
    loss[40, 2] = 5.0  # seed 2 spikes after clustering
    assert circuits.choose_two_stage_seed(m, loss, epochs, 10) == (4, "clean two-stage")
    assert circuits.choose_two_stage_seed(m, loss, epochs, 10, max_spike=10.0) == (2, "clean two-stage")
    assert circuits.choose_two_stage_seed(m, loss, epochs, 50) == (1, "solved clustering")
    none = {k: v[:1] for k, v in m.items()}
    assert circuits.choose_two_stage_seed(none, loss[:, :1], epochs, 10) == (0, "best (none solved)")


def test_interrupted_transfer_resumes_to_the_same_result(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_CHECKPOINT_EVERY", "0")
    exp = dataclasses.replace(get("clustering.transfer_circuit"), figure=None)  # figures are tested above
    cfg = resolve(exp.config, "quick", CASES["transfer_circuit"])
    clean = load_result(RunStore(tmp_path / "clean").run(exp, cfg).run_dir)[1]
    saves = {"n": 0}
    original = RunContext.checkpoint

    def flaky(self, state, force=False):
        saved = original(self, state, force)
        saves["n"] += saved
        if saves["n"] == 4:  # after the first finetuning epoch
            raise KeyboardInterrupt
        return saved

    store = RunStore(tmp_path / "killed")
    monkeypatch.setattr(RunContext, "checkpoint", flaky)
    with pytest.raises(KeyboardInterrupt):
        store.run(exp, cfg)
    monkeypatch.setattr(RunContext, "checkpoint", original)
    rec = store.run(exp, cfg)
    assert "resumed from checkpoint" in (rec.run_dir / "log.txt").read_text()
    resumed = load_result(rec.run_dir)[1]
    assert set(resumed.arrays) == set(clean.arrays)
    for k, v in clean.arrays.items():
        assert np.array_equal(resumed.arrays[k], v, equal_nan=v.dtype.kind in "fc"), k


def test_unseen_sentences_are_capped():
    """Task.unseen returns at most n sentences outside the train set (≈ 529k exist for p = 3, N = 12)."""
    task = Task(3, 12, 3)
    train = task.sample(100, torch.Generator().manual_seed(0))
    u = task.unseen(train, 500, torch.Generator().manual_seed(1))
    assert u.shape == (500, 12) and int(u.max()) == 2 and len({tuple(r) for r in u.tolist()}) == 500
    seen = set(map(tuple, train.tolist()))
    assert not any(tuple(r) in seen for r in u.tolist())
    small = Task(2, 6, 3)  # 64 sentences: the whole complement when it has ≤ n
    tr = small.sample(20, torch.Generator().manual_seed(0))
    assert len(small.unseen(tr, 500, torch.Generator().manual_seed(1))) == 64 - len({tuple(r) for r in tr.tolist()})


def test_probe_grid_is_bounded():
    x, _, suf = Task(10, 12, 5).probe_grid()      # 10^5 prefixes: one suffix each, not 16
    assert x.shape == (100_000, 12) and int(suf.max()) == 0
    assert Task(2, 12, 5).probe_grid()[0].shape == (4096, 12)
    with pytest.raises(ConfigError, match="too many for the probe grid"):
        Task(97, 12, 5)
