"""`attnlab store pack` / `unpack`: an unfinished run carried to another store resumes there to the same result as an
uninterrupted run; finished runs are kept; an archive with a path outside the store is refused, nothing written."""

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.runs import RunStore

runner = CliRunner()
WALK = ["knobs.walk", "--set", "steps=60", "--set", "dim=2"]


def cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def _interrupted_run(root):
    """A real `attnlab run` killed mid-run (SIGTERM after its first checkpoint): an interrupted run."""
    env = {**os.environ, "ATTNLAB_CHECKPOINT_EVERY": "0"}
    p = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "run", *WALK, "--set", "sleep=0.05", "--store", root,
                          "-q"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_root = root / "runs" / "knobs.walk"
    for _ in range(600):
        if any(run_root.glob("*/checkpoint.pt")):
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=60)
    return [r for r in RunStore(root).rows() if r["status"] == "interrupted"]


def test_an_unfinished_run_travels_and_resumes_to_the_uninterrupted_result(tmp_path):
    a, b, ref = tmp_path / "a", tmp_path / "b", tmp_path / "ref"
    assert len(_interrupted_run(a)) == 1
    res = cli("store", "pack", tmp_path / "slice.tar.gz", "--store", a)
    assert res.exit_code == 0 and "packed 1 run(s)" in res.stdout, res.output
    res = cli("store", "unpack", tmp_path / "slice.tar.gz", "--store", b)
    assert res.exit_code == 0 and "added (unfinished: resumes from its checkpoint)" in res.stdout, res.output
    (row,) = RunStore(b).rows()
    assert row["status"] == "interrupted"
    done = json.loads(cli("run", *WALK, "--set", "sleep=0.05", "--store", b, "--json").stdout)
    fresh = json.loads(cli("run", *WALK, "--set", "sleep=0.05", "--store", ref, "--json").stdout)
    assert done["config_hash"] == fresh["config_hash"] == row["id"]
    assert done["summary"] == fresh["summary"]  # resumed elsewhere, bit for bit the uninterrupted run
    # unpacking again keeps the finished run
    res = cli("store", "unpack", tmp_path / "slice.tar.gz", "--store", b)
    assert "kept: the store has it finished" in res.stdout, res.output


def test_finished_runs_with_all(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    assert cli("run", *WALK, "--store", a).exit_code == 0
    res = cli("store", "pack", tmp_path / "x.tar.gz", "--store", a)
    assert res.exit_code == 2 and "nothing unfinished" in res.stderr
    assert cli("store", "pack", tmp_path / "x.tar.gz", "--all", "--store", a).exit_code == 0
    assert "added (finished)" in cli("store", "unpack", tmp_path / "x.tar.gz", "--store", b).stdout
    assert cli("store", "verify", "--store", b).exit_code == 0


@pytest.mark.parametrize("name", ["../evil", "runs/knobs.walk/0123456789abcdef/../../../evil", "/etc/evil",
                                  "runs/knobs.walk/notarunid/x"])
def test_an_archive_reaching_outside_the_store_is_refused(tmp_path, name):
    bad = tmp_path / "bad.tar.gz"
    with tarfile.open(bad, "w:gz") as tar:
        for n, data in ((name, b"x"), ("pack.json", json.dumps({"runs": []}).encode())):
            info = tarfile.TarInfo(n)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    res = cli("store", "unpack", bad, "--store", tmp_path / "s")
    assert res.exit_code == 2 and "refused, nothing unpacked" in res.stderr, res.output
    assert not (tmp_path / "evil").exists() and not list((tmp_path / "s").glob("runs/*/*"))
