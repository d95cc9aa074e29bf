"""paths.sample: a stored run's network sampled from the store, and a stored sampling run's chains continued to the
same draws as one longer run (the public SAMPLE_posterior.py -f RESULT, whose new samples are appended)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunFailed, RunStore, load_result
from attnlab.paths.experiments.sample import pack, unpack

torch.set_num_threads(1)
SMALL = {"P": 24, "P_test": 30, "T": 8, "N0": 20, "sample_widths": (6,), "chains": 2, "burn_in": 6, "thin": 2,
         "gp_test_sets": 0}


def _run(store: RunStore, key: str, **overrides):
    exp = get(key)
    return store.run(exp, resolve(exp.config, "quick", overrides))


@pytest.mark.parametrize("sampler,mass", [("gibbs", "identity"), ("nuts", "diagonal")])
def test_continuing_a_sampling_run_gives_the_draws_of_one_longer_run(tmp_path, sampler, mass):
    store = RunStore(tmp_path)
    kw = {**SMALL, "sampler": sampler, "nuts_depth": 3, "mass_matrix": mass}
    if mass == "diagonal":
        kw["burn_in"] = 24  # windows 0-2, 3-21, 22-23: the metric is adapted once
    first = _run(store, "paths.sample", **kw, samples=4)
    more = _run(store, "paths.sample", source=first.run_id, samples=3, seed=7)  # the seed does not matter
    once = _run(store, "paths.sample", **kw, samples=7)
    _, a = load_result(more.run_dir)
    _, b = load_result(once.run_dir)
    assert more.summary["continued"] == 1.0 and more.summary["kept_N6"] == 7
    traces = [k for k in b.arrays if k.startswith("state_N6/")]
    assert ("state_N6/inv_mass" in traces) == (mass == "diagonal")
    assert "state_N6/U_tr" in traces and sorted(traces) == sorted(k for k in a.arrays if k.startswith("state_N6/"))
    for k in [*traces, "sim_U", "sim_f_mean", "sim_f_var"]:
        np.testing.assert_array_equal(a.arrays[k], b.arrays[k], err_msg=k)
    _, f = load_result(first.run_dir)  # the stored samples are the first ones of the continued chains
    np.testing.assert_array_equal(a.arrays["state_N6/U_tr"][:, :4], f.arrays["state_N6/U_tr"])


def test_a_markov_runs_problem_is_rebuilt_from_the_store(tmp_path):
    store = RunStore(tmp_path)
    src = _run(store, "paths.fig5c", **{k: v for k, v in SMALL.items() if k != "sample_widths"}, widths=(10,),
               sample_widths=(), seed=3)
    via = _run(store, "paths.sample", source=src.run_id, sample_widths=(6,), samples=4, chains=2, burn_in=4,
               thin=1, seed=5)
    # the same problem from its own keys: layout, sizes and σ⊥ of fig5c, its seed for the data streams
    own = _run(store, "paths.sample", **{k: v for k, v in SMALL.items() if k not in ("burn_in", "thin")}, seed=3,
               layout="good_uniform", sigma_perp=5.0, samples=4, burn_in=4, thin=1)
    _, a = load_result(via.run_dir)
    _, b = load_result(own.run_dir)
    np.testing.assert_array_equal(a.arrays["y_test"], b.arrays["y_test"])
    assert via.summary["n_paths"] == 2 and via.summary["tau_sampled"] == 0.01
    assert not np.array_equal(a.arrays["sim_U"], b.arrays["sim_U"])  # the chains' stream is each run's own seed


def test_a_missing_or_malformed_source_is_named(tmp_path):
    with pytest.raises(RunFailed, match="no run with that id"):
        _run(RunStore(tmp_path), "paths.sample", **SMALL, source="0123456789abcdef", samples=2)
    with pytest.raises(ConfigError, match="source"):
        resolve(get("paths.sample").config, "quick", {"source": "not-an-id"})


def test_sample_min_tau_floors_the_sampling_temperature(tmp_path):
    rec = _run(RunStore(tmp_path), "paths.sample", **SMALL, samples=4, sample_min_tau=0.05)
    assert rec.summary["tau_sampled"] == 0.05


def test_pack_and_unpack_keep_a_sampler_state_bit_for_bit():
    g = torch.Generator().manual_seed(1)
    st = {"V0": torch.randn(2, 3, 4, generator=g, dtype=torch.float64), "V": [torch.randn(2, 1, 3, 3)],
          "a": torch.randn(2, 3), "sweeps": 5, "b1": None, "U_tr": [torch.randn(2, 2, 2) for _ in range(3)],
          "da": {"mu": torch.randn(2), "t": 4}, "leapfrogs": 12.0}
    back, rng = unpack(pack(st, g), torch.device("cpu"))
    assert back["sweeps"] == 5 and back["da"]["t"] == 4 and back["leapfrogs"] == 12.0 and back["b1"] is None
    assert all(torch.equal(x, y) for x, y in zip(back["U_tr"], st["U_tr"], strict=True))
    assert torch.equal(back["V0"], st["V0"]) and torch.equal(back["V"][0], st["V"][0])
    assert torch.equal(rng, g.get_state())


def test_an_interrupted_continuation_resumes_to_the_same_draws(tmp_path, monkeypatch):
    """A continuation killed mid-chain resumes from its checkpoint (not from the source's state again)."""
    from attnlab.paths.train import gibbs as train

    monkeypatch.setenv("ATTNLAB_CHECKPOINT_EVERY", "0")
    store = RunStore(tmp_path)
    first = _run(store, "paths.sample", **SMALL, samples=4)
    once = _run(store, "paths.sample", **SMALL, samples=10)
    real, calls = train.GibbsSampler.record, {"n": 0}

    def flaky(self):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        real(self)

    monkeypatch.setattr(train.GibbsSampler, "record", flaky)
    with pytest.raises(KeyboardInterrupt):
        _run(store, "paths.sample", source=first.run_id, samples=6)
    monkeypatch.setattr(train.GibbsSampler, "record", real)
    more = _run(store, "paths.sample", source=first.run_id, samples=6)
    assert json.loads((more.run_dir / "manifest.json").read_text())["resumed"] is True
    _, a = load_result(more.run_dir)
    _, b = load_result(once.run_dir)
    np.testing.assert_array_equal(a.arrays["state_N6/U_tr"], b.arrays["state_N6/U_tr"])
    np.testing.assert_array_equal(a.arrays["sim_f_mean"], b.arrays["sim_f_mean"])
