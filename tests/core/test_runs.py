import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from attnlab.core.config import resolve
from attnlab.core.files import atomic_write_text
from attnlab.core.registry import get
from attnlab.core.runs import RunFailed, RunStore, load_result


def _walk(**overrides):
    exp = get("knobs.walk")
    return exp, resolve(exp.config, "quick", overrides)


def test_run_writes_every_artifact_and_is_reused(store):
    exp, cfg = _walk(steps=5)
    rec = store.run(exp, cfg)
    assert rec.status == "done" and not rec.reused
    d = rec.run_dir
    for name in ("config.json", "metrics.parquet", "arrays.npz", "summary.json", "log.txt", "figures/walk.png",
                 "figures/walk.pdf"):
        assert (d / name).exists(), name
    assert not (d / "checkpoint.pt").exists()
    meta = json.loads((d / "config.json").read_text())
    assert meta["run_id"] == rec.run_id == cfg.hash("knobs.walk")
    assert meta["torch_version"] and meta["attnlab_version"] and meta["seeds"]["streams"]["data"] > 0
    assert store.run(exp, cfg).reused
    again = store.run(exp, cfg, force=True)
    assert not again.reused and again.summary == rec.summary
    row = store.status(rec.run_id)
    assert row["status"] == "done" and row["completions"] == 2 and row["seconds"] >= 0
    _, result = load_result(d)
    assert result.arrays["path"].shape == (5, 3)
    assert set(result.metrics.columns) == {"source", "observable", "time_name", "time", "value", "step"}


def test_different_seed_is_a_different_run(store):
    exp, cfg = _walk(steps=3)
    a = store.run(exp, cfg)
    b = store.run(exp, resolve(exp.config, "quick", {"steps": 3}, seed=1))
    assert a.run_id != b.run_id and a.summary != b.summary


def test_failed_run_is_recorded_and_retried(store):
    exp, cfg = _walk(steps=5, fail_at=2)
    with pytest.raises(RunFailed, match="asked to fail at step 2"):
        store.run(exp, cfg)
    row = store.status(cfg.hash(exp.key))
    assert row["status"] == "failed" and "ValueError" in row["error"]
    assert "asked to fail" in (store.run_dir(exp, row["id"]) / "log.txt").read_text()
    with pytest.raises(RunFailed):
        store.run(exp, cfg)
    assert store.status(row["id"])["attempts"] == 2


def test_atomic_write_leaves_no_partial_file(tmp_path):
    target = tmp_path / "x.txt"
    atomic_write_text(target, "old")

    class Boom(Exception):
        pass

    from attnlab.core.files import atomic_write

    def bad(p: Path):
        p.write_text("half")
        raise Boom

    with pytest.raises(Boom):
        atomic_write(target, bad)
    assert target.read_text() == "old" and list(tmp_path.iterdir()) == [target]


def test_index_survives_concurrent_writers(tmp_path):
    stores = [RunStore(tmp_path / "s") for _ in range(4)]
    exp = get("knobs.walk")
    errors = []

    def work(i):
        try:
            for seed in range(3):
                stores[i].run(exp, resolve(exp.config, "quick", {"steps": 2}, seed=10 * i + seed))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    rows = stores[0].rows("knobs.walk")
    assert len(rows) == 12 and all(r["status"] == "done" for r in rows)


def _cli(store: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "attnlab.cli", "run", "knobs.walk", "--store", str(store), "--set", "steps=150",
            "--set", "sleep=0.05", "--quiet", *extra]


def _wait_for_checkpoint(store: Path, proc: subprocess.Popen, min_step: int = 5) -> Path:
    deadline = time.time() + 60
    while time.time() < deadline:
        for ck in store.glob("runs/knobs.walk/*/checkpoint.pt"):
            import torch

            try:
                if torch.load(ck, weights_only=False)["state"]["step"] >= min_step:
                    return ck.parent
            except Exception:
                pass
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("no checkpoint appeared")


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_killed_run_resumes_to_the_uninterrupted_result(tmp_path, sig):
    env = {**os.environ, "ATTNLAB_CHECKPOINT_EVERY": "0"}
    killed = tmp_path / "killed"
    # a shell that starts jobs in the background ignores SIGINT in them; give the run the default action back
    proc = subprocess.Popen(_cli(killed), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    run_dir = _wait_for_checkpoint(killed, proc)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "resume" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    store = RunStore(killed)
    row = store.status(run_dir.name)
    assert row["status"] == "interrupted" and not (run_dir / "summary.json").exists()

    resumed = subprocess.run(_cli(killed, "--json"), env=env, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert "resumed from checkpoint" in (run_dir / "log.txt").read_text()
    assert store.status(run_dir.name)["attempts"] == 2

    clean = subprocess.run(_cli(tmp_path / "clean", "--json", "--set", "sleep=0"), env=env, capture_output=True,
                           text=True, timeout=120)
    a, b = json.loads(resumed.stdout), json.loads(clean.stdout)
    assert a["summary"] == b["summary"]
    pa = load_result(a["run_dir"])[1].arrays["path"]
    pb = load_result(b["run_dir"])[1].arrays["path"]
    assert np.array_equal(pa, pb)


def test_config_lists_every_stream_the_run_used(tmp_path):
    """``seeds.streams``: the run's named streams and the per-model streams a study seeds itself (clustering)."""
    from attnlab.core.registry import get as get_exp
    from attnlab.core.rng import stream_seed

    exp = get_exp("clustering.train")
    cfg = resolve(exp.config, "quick", {**exp.outputs.tiny, "n_seeds": 2})
    rec = RunStore(tmp_path).run(exp, cfg)
    streams = json.loads((rec.run_dir / "config.json").read_text())["seeds"]["streams"]
    assert {"data", "batch", "data@1", "batch@1"} <= set(streams), sorted(streams)
    assert streams["data@1"] == stream_seed(1, "data") and streams["data"] == stream_seed(cfg.seed, "data")
