import json

import pytest
from typer.testing import CliRunner

from attnlab.cli import app

runner = CliRunner()


def test_list_shows_experiments_and_parameters():
    res = runner.invoke(app, ["list", "--json"])
    assert res.exit_code == 0, res.output
    doc = {e["experiment"]: e for e in json.loads(res.stdout)}
    walk = doc["knobs.walk"]
    assert walk["scales"]["paper"] == {"steps": 400}
    assert {p["name"] for p in walk["parameters"]} >= {"steps", "dim", "seed", "device"}
    assert runner.invoke(app, ["list"]).exit_code == 0
    bad = runner.invoke(app, ["list", "nosuchstudy"])
    assert bad.exit_code == 2 and "unknown study" in bad.stderr


def test_list_one_experiment_shows_each_parameter_with_both_scales_and_what_it_accepts():
    res = runner.invoke(app, ["list", "knobs.walk", "--json"])
    assert res.exit_code == 0, res.output
    steps = {p["name"]: p for p in json.loads(res.stdout)["parameters"]}["steps"]
    assert steps["scale_paper"] == 400 and steps["scale_quick"] != 400 and steps["allowed"].startswith("≥")
    table = runner.invoke(app, ["list", "knobs.walk"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "steps" in table.stdout and "400" in table.stdout
    assert "description" in table.stdout and "knobs.nope" not in table.stdout
    bad = runner.invoke(app, ["list", "knobs.nope"])
    assert bad.exit_code == 2 and "unknown experiment 'knobs.nope'" in bad.stderr and "knobs.walk" in bad.stderr


def test_run_json_then_reuse(tmp_path):
    args = ["run", "knobs.walk", "--store", str(tmp_path), "--set", "steps=3", "--seed", "5", "--json"]
    first = json.loads(runner.invoke(app, args).stdout)
    assert first["status"] == "done" and not first["reused"] and len(first["config_hash"]) == 16
    assert set(first["summary"]) == {"final_norm", "mean_x0"}
    second = json.loads(runner.invoke(app, args).stdout)
    assert second["reused"] and second["summary"] == first["summary"]
    forced = json.loads(runner.invoke(app, [*args, "--force"]).stdout)
    assert not forced["reused"]


def test_run_errors_exit_2_without_writing(tmp_path):
    store = tmp_path / "s"
    for args in (["run", "knobs.nope"], ["run", "walk"], ["run", "knobs.walk", "--scale", "big"],
                 ["run", "knobs.walk", "--device", "cuda"] if not _cuda() else ["run", "knobs.walk", "--set", "dim=0"]):
        res = runner.invoke(app, [*args, "--store", str(store)])
        assert res.exit_code == 2, (args, res.output)
        assert res.stderr.startswith("error:")
    assert not store.exists()


def _cuda():
    import torch

    return torch.cuda.is_available()


def test_failed_run_exit_1_and_points_to_log(tmp_path):
    res = runner.invoke(app, ["run", "knobs.walk", "--store", str(tmp_path), "--set", "fail_at=0"])
    assert res.exit_code == 1 and "asked to fail" in res.stderr and "log.txt" in res.stderr


def test_check_json_and_exit_code(tmp_path):
    res = runner.invoke(app, ["check", "knobs", "--json", "--store", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    assert {"claim", "ref", "measured", "expected", "tolerance", "verdict"} <= set(rows[0])

    from attnlab.core import claims as mod

    mod.register(mod.Claim("knobs.false", "—", "never", "constant", lambda ctx: 1.0, 0.0, "approx", 0.1))
    try:
        res = runner.invoke(app, ["check", "knobs", "--store", str(tmp_path)])
        assert res.exit_code == 1 and "knobs.false" in res.stdout
    finally:
        mod._CLAIMS.pop("knobs.false")


def test_report_of_run_sweep_and_all(tmp_path):
    store = tmp_path / "s"
    run = json.loads(runner.invoke(app, ["run", "knobs.walk", "--store", str(store), "--set", "steps=3",
                                         "--json"]).stdout)
    sw = runner.invoke(app, ["sweep", "knobs.walk", "--grid", "steps=2,3", "--store", str(store), "--workers", "1",
                             "--json"])
    assert sw.exit_code == 0, sw.output
    sweep_dir = json.loads(sw.stdout)["sweep_dir"]
    runner.invoke(app, ["check", "knobs", "--store", str(store)])
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", run["run_dir"], sweep_dir, "--html", str(out), "--store", str(store)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    assert html.count("data:image/png;base64,") == 2 and "knobs.walk" in html and "<table" in html
    res = runner.invoke(app, ["report", "--all", "--html", str(out), "--store", str(store)])
    html = out.read_text()
    assert "claims: knobs-quick" in html and "knobs.diffusion" in html and "Sweeps" in html
    assert runner.invoke(app, ["report", "--html", str(out)]).exit_code == 2
    assert runner.invoke(app, ["report", str(tmp_path / "missing")]).exit_code == 2


def test_reproduce_runs_headline_and_writes_report(tmp_path):
    out = tmp_path / "rep.html"
    res = runner.invoke(app, ["reproduce", "knobs", "--scale", "quick", "--store", str(tmp_path / "s"), "--html",
                              str(out)])
    assert res.exit_code == 0, res.output
    assert "knobs.walk" in out.read_text() and "knobs.diffusion" in out.read_text()


@pytest.mark.dask
def test_sweep_cli_on_a_dask_local_cluster(tmp_path):
    res = runner.invoke(app, ["sweep", "knobs.walk", "--grid", "seed=0,1", "--set", "steps=3", "--executor", "dask",
                              "--workers", "2", "--store", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["runs"] == 2 and doc["failed"] == 0
    bad = runner.invoke(app, ["sweep", "knobs.walk", "--grid", "seed=0", "--executor", "ray"])
    assert bad.exit_code == 2 and "allowed: local, dask" in bad.stderr


def test_bench_runs_the_script_without_the_cli_arguments(tmp_path, monkeypatch):
    """`attnlab bench STUDY` runs benchmarks/STUDY.py as a script that sees no arguments (all its parts)."""
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "knobs.py").write_text(
        "import json, os, sys\n"
        "from pathlib import Path\n"
        "out = Path(os.environ['ATTNLAB_BENCH_OUT']); out.mkdir(parents=True, exist_ok=True)\n"
        "(out / 'knobs.json').write_text(json.dumps({'argv': sys.argv[1:], 'main': __name__ == '__main__'}))\n")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["bench", "knobs", "--out", str(tmp_path / "res")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "res" / "knobs.json").read_text()) == {"argv": [], "main": True}
    missing = runner.invoke(app, ["bench", "nosuch"])
    assert missing.exit_code == 2 and "no benchmark for 'nosuch'" in missing.stderr


@pytest.mark.parametrize("module", ["attnlab", "attnlab.cli"])
def test_python_dash_m_has_every_command(module):
    """``python -m attnlab`` and ``python -m attnlab.cli`` (a checkout run from ``src``) know ``list`` too: the
    commands registered by other modules live on the imported module's app, not on ``__main__``'s."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", module, "list", "toy"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "toy.walk" in res.stdout, res.stderr[-2000:]
