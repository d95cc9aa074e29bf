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
    out = bench.main("knobs", parts, argv=["b"])
    assert ran == ["b"] and out["b"] == {"ratio": 2.0} and out["machine"]["threads"] == 1
    assert json.loads((tmp_path / "knobs.json").read_text())["b"] == {"ratio": 2.0}
    bench.main("knobs", parts, argv=[])
    assert ran == ["b", "a", "b"]
    with pytest.raises(SystemExit, match="unknown part"):
        bench.main("knobs", parts, argv=["c"])


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
bench.main("knobs", {{"step": lambda: {{"workload": "one step", "seconds": 0.5, "ratio_vs_limit": 0.7}}}})
'''


@pytest.mark.parametrize("asks", [True, False])
def test_bench_record_is_committed_format(tmp_path, monkeypatch, asks):
    """`attnlab bench STUDY --record` wraps the script's JSON into results/benchmarks/<study>-<device>.json."""
    from typer.testing import CliRunner

    from attnlab.cli import app

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "knobs.py").write_text(SCRIPT.format(asks=asks))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNLAB_BENCH_DEVICE", raising=False)
    res = CliRunner().invoke(app, ["bench", "knobs", "--device", "cpu", "--record", "--out", str(tmp_path / "scratch")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results" / "benchmarks" / "knobs-cpu.json").read_text())
    assert doc["study"] == "knobs" and doc["device"] == "cpu" and doc["device_details"]["type"] == "cpu"
    assert doc["torch"] and doc["date"] and "commit" in doc and doc["note"] == ""
    assert doc["rows"] == [{"part": "step", "workload": "one step", "seconds": 0.5, "ratio_vs_limit": 0.7}]
    assert (tmp_path / "scratch" / "knobs.json").exists()


def test_record_says_when_a_script_ignored_the_requested_gpu(tmp_path):
    bench._ASKED.clear()
    path = bench.record("knobs", {"machine": {}, "a": 1.0}, "cuda", tmp_path)
    doc = json.loads(path.read_text())
    assert path.name == "knobs-cpu.json" and doc["device"] == "cpu" and doc["requested_device"] == "cuda"
    assert "no device option" in doc["note"] and doc["rows"] == [{"part": "a", "value": 1.0}]


def test_against_public_alternates_rounds_and_keeps_both_sides_spread():
    calls = []

    def side(name, walls, cpu, its):
        walls = iter(walls)

        def fn():
            calls.append(name)
            return {"wall_s": next(walls), "cpu_s": cpu, "iterations": its, "threads": 1, "versions": {"torch": "x"}}
        return fn

    row = bench.against_public("P=100", "w", side("pub", [10.0, 20.0, 30.0], 10.0, 1885),
                               side("ours", [0.2, 0.3, 0.1], 0.1, 40), n=3,
                               variants={"lean": side("lean", [1, 1, 1], 0.05, 40)},
                               public_code={"repo": "r", "commit": "c"},
                               attnlab="a", agreement=lambda p, o: f"{p['iterations']} vs {o['iterations']}")
    assert calls == ["pub", "ours", "lean"] * 3 and row["order"] == ["public", "attnlab", "lean"]
    assert row["kind"] == bench.PUBLIC and row["rounds"] == 3 and len(row["load_avg_1min"]) == 4
    pub, ours = row["public"], row["attnlab"]
    assert pub["wall_s"] == [10.0, 20.0, 30.0] and ours["wall_s"] == [0.2, 0.3, 0.1]
    assert pub["wall"] == {"min": 10.0, "median": 20.0, "max": 30.0} and pub["iterations"] == [1885] * 3
    assert pub["threads"] == 1 and pub["versions"] == {"torch": "x"} and pub["cpu"]["median"] == 10.0
    assert row["ratio_wall"] == pytest.approx({"min": 50.0, "median": 200 / 3, "max": 300.0})  # per round, paired
    assert row["ratio_cpu"] == pytest.approx({"min": 100.0, "median": 100.0, "max": 100.0})
    assert row["variants"]["lean"]["ratio_cpu"]["median"] == pytest.approx(200.0)
    assert row["agreement"] == "1885 vs 40"


def test_the_pages_tables_say_not_measured_without_a_record(tmp_path):
    text = "# x\n<!-- bench-public:start -->\nold 251×\n<!-- bench-public:end -->\ntail\n"
    out = bench.render_pages(text, tmp_path / "none")
    assert "251" not in out and out.count(bench.NOT_MEASURED) == len(bench.EXPECTED) and out.endswith("tail\n")
    assert bench.render_pages(out, tmp_path / "none") == out


def test_readme_and_benchmarks_page_tables_are_generated_from_the_records():
    """The README's and docs/benchmarks.md's tables of the comparisons with the public code are what
    `python -m attnlab.core.bench README.md docs/benchmarks.md` writes from results/benchmarks (never drift)."""
    for page, link in ((ROOT / "README.md", "results/benchmarks/"), (ROOT / "docs" / "benchmarks.md", "")):
        text = page.read_text()
        assert "<!-- bench-public" in text, page
        assert bench.render_pages(text, ROOT / "results" / "benchmarks", link) == text, \
            f"{page.name}: tables are stale: run `python -m attnlab.core.bench README.md docs/benchmarks.md`"


PUBLIC_SCRIPT = '''
import time
from attnlab.core import bench


def side(seconds, its):
    return lambda: {"wall_s": seconds, "cpu_s": seconds, "iterations": its, "threads": 1,
                    "versions": {"torch": "9.9"}}


def anchor():
    return {"P=100": bench.against_public("P=100", "the knobs workload", side(3.0, 1885), side(0.02, 40),
                                          public_code={"repo": "tiberilor/attention-paths-interplay",
                                                       "commit": "abc", "runs": "its script"},
                                          attnlab="L-BFGS", agreement=lambda p, o: "features 6e-14")}


bench.main("paths", {"anchor": anchor})
'''


def test_bench_record_of_a_comparison_regenerates_the_pages(tmp_path, monkeypatch):
    """`attnlab bench paths --record --rounds 3` writes both sides' rounds into the record and the README's and
    docs' tables from it; a record of fewer than 3 rounds is kept but not published."""
    from typer.testing import CliRunner

    from attnlab.cli import app

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks" / "paths.py").write_text(PUBLIC_SCRIPT)
    markers = "<!-- bench-public{}:start -->\n<!-- bench-public{}:end -->\n"
    (tmp_path / "README.md").write_text("# r\n" + markers.format("", ""))
    (tmp_path / "docs" / "benchmarks.md").write_text("# b\n" + markers.format("-full", "-full"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ATTNLAB_BENCH_DEVICE", raising=False)
    args = ["bench", "paths", "--record", "--out", str(tmp_path / "scratch")]
    res = CliRunner().invoke(app, [*args, "--rounds", "3"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results" / "benchmarks" / "paths-cpu.json").read_text())
    row = doc["rows"][0]["P=100"]
    assert row["public"]["wall_s"] == [3.0] * 3 and row["attnlab"]["iterations"] == [40] * 3
    assert row["ratio_wall"]["median"] == pytest.approx(150.0) and len(row["load_avg_1min"]) == 4
    readme, docs = (tmp_path / "README.md").read_text(), (tmp_path / "docs" / "benchmarks.md").read_text()
    assert "| 150× (150–150×) wall, 150× (150–150×) CPU | features 6e-14 | [paths-cpu.json]" \
           "(results/benchmarks/paths-cpu.json)" in readme, readme
    assert "3 s (3–3 s) wall, 3 s (3–3 s) CPU; 1885 iterations" in readme
    assert readme.count(bench.NOT_MEASURED) == len(bench.EXPECTED) - 1
    assert "tiberilor/attention-paths-interplay @ abc: its script" in docs and "torch 9.9" in docs
    assert "`results/benchmarks/paths-cpu.json`" in docs and "3 rounds, load" in docs
    assert CliRunner().invoke(app, [*args, "--rounds", "2"]).exit_code == 0
    readme = (tmp_path / "README.md").read_text()
    assert "150×" not in readme and "a record of 2 round(s) is not enough" in readme
