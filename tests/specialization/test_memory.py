"""specialization's memory models against measured peaks; the SGD's chunk from free memory; exit 2 before a run."""

import pytest
import torch

from attnlab.core.config import resolve
from attnlab.core.memory import measured_peak
from attnlab.core.registry import get
from attnlab.specialization.train import budget


@pytest.mark.parametrize("key, overrides", [
    # the SGD's chunk (16 MiB on the CPU) beside the theory and the Bayes risk; model 107 MiB, measured 171 MiB
    ("specialization.fig1", {"D": 2000, "n_mc": 20_000, "tau_max": 0.1, "record_every": 0.1}),
    # five seeds batched through the flow, then evaluated on fresh samples; model 314 MiB, measured 236 MiB
    ("specialization.fig5", {"Hs": [8], "nus": [], "laws": ["flip"], "activations": ["softmax"], "seeds": 5,
                             "n_mc": 20_000, "eval_mc": 40_000, "bayes_mc": 1000, "tau_max": 2.0}),
])
def test_model_within_a_factor_two_of_the_measured_peak(key, overrides):
    exp = get(key)
    cfg = resolve(exp.config, "quick", overrides)
    need, peak = exp.memory(cfg)[0], measured_peak(key, cfg)["peak"]
    assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, measured {peak / 2**20:.0f} MiB"


def test_sgd_chunk_follows_free_memory(monkeypatch):
    """One chunk per step at D = 10^4, N_b = D, L = 10, H = 2 when 80 GB are free (a GPU); what fits otherwise."""
    per = budget.sgd_seq_bytes(1, 10, 10_000, 2)
    assert per == 4 * (100_000 + 160 + 400)
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(80e9))
    cuda = torch.device("cuda")  # only its type is read: nothing is allocated
    assert budget.sgd_chunk(1, 10_000, 10, 10_000, 2, 2, device=cuda) == 10_000
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(2e9))  # half of it: 2486 sequences, on groups of 335 (2^24 words)
    assert budget.sgd_chunk(1, 10_000, 10, 10_000, 2, 2, device=cuda) == (1e9 // per) // 335 * 335 == 2345
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(1e5))  # nothing free: the floor of 16 sequences
    assert budget.sgd_chunk(1, 10_000, 10, 10_000, 2, 2, device=cuda) == budget.MIN_CHUNK
    # on the CPU at most 16 MiB of tokens, on bounds of the noise's groups (13 sequences at L·D = 5000)
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(80e9))
    assert budget.sgd_chunk(1, 10_000, 10, 10_000, 2, 2) == budget.CPU_CHUNK_BYTES // per
    assert budget.sgd_chunk(1, 500, 10, 500, 2, 2) == 500
    assert budget.sgd_chunk(1, 5000, 10, 500, 2, 2) % 13 == 0


def test_a_run_that_cannot_fit_stops_before_it_starts(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from attnlab.cli import app

    exp = get("specialization.fig1")
    paper = resolve(exp.config, "paper", {})
    assert exp.memory(paper)[0] < 2**30  # D = 10^4: the SGD streams its batch; the theory's 10^5 samples dominate
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(50e6))  # a machine with 50 MB free
    res = CliRunner().invoke(app, ["run", "specialization.fig1", "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and not (tmp_path / "s").exists(), res.output
    assert "specialization.fig1 (cpu) needs" in res.stderr and "lower D, batch (N_b) or n_mc" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
