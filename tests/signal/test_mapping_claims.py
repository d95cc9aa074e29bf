"""The experiments and claims of ``attnlab map`` on real families (signal.map_families, signal.map_fix_training;
claims in attnlab.signal.claims.mapping) at tiny sizes."""

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.core.config import resolve
from attnlab.core.context import RunContext
from attnlab.core.device import resolve_device
from attnlab.core.experiment import Result
from attnlab.core.registry import get
from attnlab.core.rng import Streams

pytest.importorskip("transformers")
torch.set_num_threads(1)


def _run(key: str, **over) -> tuple[object, Result]:
    exp = get(key)
    cfg = resolve(exp.config, "quick", over)
    with tempfile.TemporaryDirectory() as d:
        device = resolve_device(cfg.device)
        return cfg, exp.fn(cfg, RunContext(Path(d), cfg, device, Streams(cfg.seed, device)))


class _Ctx:
    """A claim context whose one run has ``summary`` (flat keys), made by ``config``."""

    def __init__(self, summary, config=None):
        self.result = Result(summary=summary, config=config)

    def run(self, *_, **__):
        return self.result

    def summary(self, experiment, **_):
        return get(experiment).summary.from_summary(self.result.summary, self.result.config)


def test_map_families_compares_every_layer_of_each_family_and_depth():
    _, res = _run("signal.map_families", families=("bert", "roberta"), depths=(2, 3), d=32, H=2, T=16, batch=4,
                    vocab=100, positions=64)
    pred, meas = res.arrays["rho_predicted"], res.arrays["rho_measured"]
    assert pred.shape == meas.shape == (2, 2, 4)
    assert np.isnan(pred[:, 0, 3]).all() and np.isfinite(pred[:, 1]).all()  # depth 2 has layers 0..2 only
    np.testing.assert_allclose(pred[..., 0], meas[..., 0])  # the prediction starts from the measured ρ_0
    dev = np.nanmax(np.abs(pred[..., 1:] - meas[..., 1:]), axis=-1)
    np.testing.assert_allclose(res.arrays["max_dev"], dev)
    assert res.summary["max_dev"] == pytest.approx(dev.max())
    assert res.summary["max_dev_roberta_L3"] == pytest.approx(dev[1, 1])


def test_without_the_fix_both_arms_train_identically():
    """The pairing is exact: with fix=False the second arm is the original, trained on the same data and head."""
    _, res = _run("signal.map_fix_training", L=1, d=16, H=1, T=8, steps=4, batch=2, n_eval=4, n_seeds=2, n_log=2,
                  positions=16, vocab=16, fix=False)
    np.testing.assert_array_equal(res.arrays["eval_loss"][:, 0], res.arrays["eval_loss"][:, 1])
    assert res.summary["drop_gain_mean"] == 0.0


def test_the_fix_lowers_beta_below_beta_c_of_an_entropy_collapsed_model():
    _, res = _run("signal.map_fix_training", L=1, d=32, H=1, T=8, steps=1, batch=2, n_eval=4, n_seeds=2, n_log=1,
                  positions=64, vocab=16, init_std=0.5)
    s = res.summary
    assert s["phase_seed0"] == 2.0 and s["beta"] > s["beta_c"]
    assert s["beta_fix"] == pytest.approx(s["beta_c"] / 2, rel=1e-6)


def test_fix_claim_is_the_lower_end_of_the_paired_t_interval():
    from attnlab.signal.claims import mapping as cm

    drops = {"drop_original_seed0": 0.1, "drop_fixed_seed0": 3.0, "drop_original_seed1": 0.2,
             "drop_fixed_seed1": 3.4, "drop_original_seed2": 0.0, "drop_fixed_seed2": 2.9}
    s = {**drops, "beta": 2.0, "beta_c": 1.4, "alpha_c": 0.0, "beta_fix": 0.7, "alpha_fix": 3.0,
         "loss_start": 4.2, "uniform_loss": 4.1, "drop_gain_mean": 3.0, "drop_gain_sd": 0.17,
         **{f"phase_seed{i}": 2.0 for i in range(3)},
         **{f"loss_{a}_seed{i}": 1.0 for a in ("original", "fixed") for i in range(3)}}  # the run's every key
    diff = np.array([2.9, 3.2, 2.9])
    out = cm._fix_trains(_Ctx(s, resolve(get(cm.MAP_FIX_TRAINING).config, "quick", {"n_seeds": 3})))
    assert out.value == pytest.approx(diff.mean() - 4.303 * diff.std(ddof=1) / math.sqrt(3))
    assert "entropy collapse" in out.detail
