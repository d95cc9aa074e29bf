"""Experiments at reduced size through the run store: configs validated first, results, figures, resume."""

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result
from attnlab.paths.outputs import ONESHOT

SMALL_MARKOV = {"P": 40, "P_test": 100, "widths": (10, 100, 1000), "sample_widths": (10,), "chains": 2,
                "burn_in": 60, "samples": 30, "thin": 2}
TINY_ONESHOT = {**ONESHOT, "P_prune": 40}


def _run(store, name, **overrides):
    exp = get(f"paths.{name}")
    cfg = resolve(exp.config, "quick", overrides)
    rec = store.run(exp, cfg)
    return rec, load_result(rec.run_dir)[1]


@pytest.mark.parametrize(("name", "overrides", "match"), [
    ("fig2c", {"P": 0}, "'P' = 0"),
    ("fig2c", {"tau": -1.0}, "'tau' = -1.0"),
    ("fig2c", {"readout": 99}, "'readout' = 99"),
    ("fig2c", {"N0": 7}, "'N0' = 7"),
    ("fig2c", {"widths": [10, -1]}, "'widths'"),
    ("fig3", {"variants": [{"L": 2, "Hs": [4, 4, 4]}]}, "'Hs' = \\[4, 4, 4\\].*L = 2"),
    ("fig3", {"patch": 5}, "'patch' = 5"),
    ("fig3", {"dataset": "omniglot"}, "'data_root' = None"),
    ("fig3", {"ood": ["fashion_mnist"]}, "'data_root' = None"),
    ("fig3", {"dataset": "digits"}, "'ood' = \\['digits'\\]: the in-distribution set"),
    ("fig3", {"class_split": [8, 1, 1]}, "'class_split' = \\[8, 1, 1\\]"),
    ("fig3", {"class_split": [6, 3, 3]}, "at most the 10 classes of 'mnist_5k'"),
    ("fig3", {"data_root": "/no/such/dir"}, "no such directory"),
    ("fig3", {"taus": [0.1, 0.0]}, "'taus'"),
    ("fig3ef", {"bogus": 1}, "unknown key 'bogus'"),
])
def test_bad_configs_stop_before_any_work(name, overrides, match):
    with pytest.raises(ConfigError, match=match) as err:
        resolve(get(f"paths.{name}").config, "quick", overrides)
    assert "\n" not in str(err.value)


def test_markov_sweep_small(store):
    rec, res = _run(store, "fig2c", **SMALL_MARKOV)
    s = res.summary
    assert s["all_converged"] == 1.0 and s["max_grad"] <= 1e-8
    assert {"acc_theory_N10", "acc_gp_all", "acc_gp_good", "acc_sample_N10", "pearson_N10", "rhat_N10",
            "acc_gp_path3"} <= set(s)
    assert s["pearson_N10"] > 0.9  # short chains, but the sampler follows the theory
    assert (rec.run_dir / "figures" / "fig2c.png").exists()
    m = res.metrics
    assert {"theory", "simulation", "gp"} <= set(m["source"])


def test_alignment_and_kernel_figures(store):
    _, a = _run(store, "fig2d", P=40, P_test=50)
    assert a.summary["top5_overlap_fw"] > a.summary["top5_overlap_gp"]
    rec, k = _run(store, "fig5b", P=40, P_test=50)
    assert k.arrays["C0"].shape == (40, 40) and k.summary["contrast_path0"] > k.summary["contrast_path3"]
    assert (rec.run_dir / "figures" / "fig5b.png").exists()


def test_an_interrupted_sampling_run_resumes_to_the_same_result(tmp_path, monkeypatch):
    """Gibbs chains are checkpointed mid-run; the resumed run equals the uninterrupted one."""
    from attnlab.paths.train import gibbs as train

    monkeypatch.setenv("ATTNLAB_CHECKPOINT_EVERY", "0")
    cfg = {**SMALL_MARKOV, "widths": (10,), "burn_in": 10, "samples": 10, "thin": 2}
    _, ref = _run(RunStore(tmp_path / "a"), "generic", **cfg)
    real = train.GibbsSampler.record
    calls = {"n": 0}

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(train.GibbsSampler, "record", flaky)
    store = RunStore(tmp_path / "b")
    with pytest.raises(KeyboardInterrupt):
        _run(store, "generic", **cfg)
    monkeypatch.setattr(train.GibbsSampler, "record", real)
    _, res = _run(store, "generic", **cfg)
    assert np.array_equal(res.arrays["sim_f_mean"], ref.arrays["sim_f_mean"])
    assert np.array_equal(res.arrays["sim_U"], ref.arrays["sim_U"])


def test_oneshot_pipeline_tiny(store):
    rec, res = _run(store, "fig3", **TINY_ONESHOT)
    s, v = res.summary, "L2_H4-4"
    for key in (f"{v}/gd_best_val", f"{v}/acc_gp_id", f"{v}/acc_fw_id_N10", f"{v}/acc_fw_glyphs_blocks_N1000",
                f"{v}/pearson_N10", f"{v}/sign_agreement_gd", f"{v}/U_dev_from_gp_N1000", f"{v}/top5_overlap_fw",
                f"{v}/block_share_theory", f"{v}/U_shape_dev_N1000"):
        assert key in s and s[key] is not None, key
    assert res.arrays[f"{v}/U_star"].shape == (2, 16, 16) and res.arrays[f"{v}/U_gd"].shape == (16, 16)
    assert (rec.run_dir / "figures" / "fig3.png").exists()


def test_pruning_tiny(store):  # on the bundled real data (MNIST in distribution, scikit-learn's digits OOD)
    rec, res = _run(store, "fig3ef", **{k: v for k, v in TINY_ONESHOT.items() if k not in ("dataset", "ood")})
    s, v = res.summary, "L2_H4-4"
    assert abs(s[f"{v}/scores_max"] - 1) < 1e-12 and s[f"{v}/scores_min"] >= 0
    assert len(res.arrays[f"{v}/curve_id"]) == 7  # 0..6 pruned: every layer keeps a head
    assert np.isfinite(res.arrays[f"{v}/curve_id"]).all()
    assert -1 <= s[f"{v}/spearman_score_drop_id"] <= 1 and 0 <= s[f"{v}/acc_full_digits"] <= 1
    assert (rec.run_dir / "figures" / "fig3ef.png").exists()


def test_oneshot_from_the_users_files(store, tmp_path, write_idx):
    """MNIST's training files in distribution, FashionMNIST's test files out of it, in torchvision's layout."""
    rng = np.random.default_rng(3)
    for name, split in (("MNIST", "train"), ("FashionMNIST", "t10k")):
        raw = tmp_path / name / "raw"
        raw.mkdir(parents=True)
        write_idx(raw / f"{split}-images-idx3-ubyte", rng.integers(0, 256, (60, 28, 28)), gz=True)
        write_idx(raw / f"{split}-labels-idx1-ubyte", np.arange(60) % 10)
    over = {**TINY_ONESHOT, "dataset": "mnist", "ood": ("fashion_mnist",), "data_root": str(tmp_path),
            "widths": (10,)}
    _, res = _run(store, "fig3ef", **over)
    s, v = res.summary, "L2_H4-4"
    assert 0 <= s[f"{v}/acc_full_fashion_mnist"] <= 1 and 0 <= s[f"{v}/acc_full_id"] <= 1


def test_two_variants_tiny(store):
    variants = [{"L": 2, "Hs": [2, 2]}, {"L": 3, "Hs": [2, 1, 2]}]
    _, res = _run(store, "fig6", **{**TINY_ONESHOT, "variants": variants, "sample_widths": ()})
    assert res.arrays["L3_H2-1-2/U_star"].shape == (2, 4, 4)
    _, pr = _run(store, "fig7", **{**TINY_ONESHOT, "variants": variants})
    assert len(pr.arrays["L3_H2-1-2/curve_id"]) == 3  # (2-1) + (1-1) + (2-1) prunable heads, plus k = 0
    torch.set_num_threads(1)
