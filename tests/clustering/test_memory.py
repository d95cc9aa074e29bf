"""The clustering run's memory model (``clustering/memory.py``): it bounds the measured peak, it is linear in the
seeds, and a run that would not fit stops before it starts (one line, exit 2)."""

import json
import subprocess
import sys

import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.memory import max_seeds, per_seed_bytes, train_bytes

PEAK = r"""
import json, resource, sys, torch
torch.set_num_threads(1)
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.train.loop import train
cfg = TrainConfig(**json.loads(sys.argv[1]))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
train(cfg)
print(1024 * (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base))
"""


def _peak_growth(**kw) -> int:
    out = subprocess.run([sys.executable, "-c", PEAK, json.dumps(kw)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1])


def test_model_matches_the_measured_cost_of_a_seed(preset="pal"):
    """The peak RSS grows by about ``per_seed_bytes`` per seed: the slope of the measured peaks at 30, 280 and
    530 seeds (1 epoch; ~2.0 MiB a seed measured, the model says 2.0), the larger of the two slopes."""
    peaks = [_peak_growth(preset=preset, n_seeds=s, epochs=1) for s in (30, 280, 530)]
    measured = max(peaks[1] - peaks[0], peaks[2] - peaks[1]) / 250
    model = per_seed_bytes(TrainConfig(preset=preset, epochs=1), "cpu")
    assert 0.5 < model / measured < 1.6, (model, peaks)


def test_model_is_linear_and_counts_the_step_record():
    cfg = TrainConfig(preset="pal", device="cuda")
    a, b = (train_bytes(cfg.model_copy(update={"n_seeds": s}))[0] for s in (10, 20))
    assert b - a == 10 * per_seed_bytes(cfg)
    sparse = cfg.model_copy(update={"step_log_every": 64})
    assert per_seed_bytes(cfg) - per_seed_bytes(sparse) == 4 * 10 * (64_000 - 1000)   # 8 grad norms + total + loss
    fit = max_seeds(cfg, 80 * 10**9)
    assert 10_000 < fit < 30_000                 # the default record, 1000 epochs: ~17 000 seeds in 80 GB
    assert train_bytes(cfg.model_copy(update={"n_seeds": fit}))[0] <= 80 * 10**9
    assert train_bytes(cfg.model_copy(update={"n_seeds": fit + 1}))[0] > 80 * 10**9


def test_a_run_that_would_not_fit_stops_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(200 * 2**20))
    store = tmp_path / "store"
    res = CliRunner().invoke(app, ["run", "clustering.train", "--store", str(store), "--set", "n_seeds=5000"])
    assert res.exit_code == 2, res.output
    msg = res.stderr.strip()
    assert "n_seeds" in msg and "\n" not in msg and not store.exists()


@pytest.mark.cuda
def test_model_bounds_the_cuda_peak():
    from attnlab.clustering.train.loop import train

    cfg = TrainConfig(preset="pal", n_seeds=2000, epochs=2, device="cuda")
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    train(cfg, device="cuda")
    peak = torch.cuda.max_memory_allocated() - base
    model = train_bytes(cfg)[0]
    assert peak <= model <= 3 * peak + 2**28, (peak, model)
