"""The benchmark driver: parts chosen by name, one JSON per study; scripts run as `python -m benchmarks.<study>`."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attnlab.core import bench

ROOT = Path(__file__).resolve().parents[2]


def test_main_runs_the_named_parts_and_writes_json(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_BENCH_OUT", str(tmp_path))
    ran = []
    parts = {"a": lambda: ran.append("a") or {"seconds": 1.0}, "b": lambda: ran.append("b") or {"ratio": 2.0}}
    out = bench.main("toy", parts, argv=["b"])
    assert ran == ["b"] and out["b"] == {"ratio": 2.0} and out["machine"]["threads"] == 1
    assert json.loads((tmp_path / "toy.json").read_text())["b"] == {"ratio": 2.0}
    bench.main("toy", parts, argv=[])
    assert ran == ["b", "a", "b"]
    with pytest.raises(SystemExit, match="unknown part"):
        bench.main("toy", parts, argv=["c"])


def test_scripts_run_as_modules_despite_benchmarks_signal():
    """`python -m benchmarks.paths` imports torch (which imports the standard `signal`, not benchmarks/signal.py)
    and reaches the driver, which rejects an unknown part before any work."""
    res = subprocess.run([sys.executable, "-m", "benchmarks.paths", "nosuchpart"], cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert res.returncode != 0 and "paths benchmark: unknown part(s) nosuchpart" in res.stderr, res.stderr[-2000:]


def test_timed_and_threads(monkeypatch):
    monkeypatch.setenv("ATTNLAB_THREADS", "1")
    assert bench.threads() == 1
    calls = []
    seconds, out = bench.timed(lambda: calls.append(1) or len(calls), repeat=3)
    assert out == 3 and seconds >= 0 and len(calls) == 3


SCRIPT = '''
from attnlab.core import bench
DEV = bench.device() if {asks} else None
bench.main("toy", {{"step": lambda: {{"workload": "one step", "seconds": 0.5, "ratio_vs_limit": 0.7}}}})
'''


@pytest.mark.parametrize("asks", [True, False])
def test_bench_record_is_committed_format(tmp_path, monkeypatch, asks):
    """`attnlab bench STUDY --record` wraps the script's JSON into results/benchmarks/<study>-<device>.json."""
    from typer.testing import CliRunner

    from attnlab.cli import app

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "toy.py").write_text(SCRIPT.format(asks=asks))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNLAB_BENCH_DEVICE", raising=False)
    res = CliRunner().invoke(app, ["bench", "toy", "--device", "cpu", "--record", "--out", str(tmp_path / "scratch")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results" / "benchmarks" / "toy-cpu.json").read_text())
    assert doc["study"] == "toy" and doc["device"] == "cpu" and doc["device_details"]["type"] == "cpu"
    assert doc["torch"] and doc["date"] and "commit" in doc and doc["note"] == ""
    assert doc["rows"] == [{"part": "step", "workload": "one step", "seconds": 0.5, "ratio_vs_limit": 0.7}]
    assert (tmp_path / "scratch" / "toy.json").exists()


def test_record_says_when_a_script_ignored_the_requested_gpu(tmp_path):
    bench._ASKED.clear()
    path = bench.record("toy", {"machine": {}, "a": 1.0}, "cuda", tmp_path)
    doc = json.loads(path.read_text())
    assert path.name == "toy-cpu.json" and doc["device"] == "cpu" and doc["requested_device"] == "cuda"
    assert "no device option" in doc["note"] and doc["rows"] == [{"part": "a", "value": 1.0}]
