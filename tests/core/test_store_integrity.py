"""The run store against real damage: every finished run is sealed by a SHA-256 manifest (in its directory and in
the index); a truncated, deleted, altered or half-written file makes the run corrupt, which is said in one line and
recomputed (bit-identically) instead of reused; the report skips and names it; a malformed, emptied, deleted or
locked index is moved aside and rebuilt from the run directories with one line saying so."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys

import numpy as np
import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.config import resolve
from attnlab.core.integrity import MANIFEST
from attnlab.core.registry import get
from attnlab.core.runs import RunStore, load_result

runner = CliRunner()
WALK = ["--set", "steps=6"]


def cli(*args: str):
    return runner.invoke(app, list(args))


def run_walk(store, *extra: str) -> dict:
    res = cli("run", "knobs.walk", "--store", str(store), *WALK, *extra, "--json")
    assert res.exit_code == 0, res.output
    return {**json.loads(res.stdout), "stderr": res.stderr}


def sql(root, statement: str) -> None:
    with contextlib.closing(sqlite3.connect(root / "index.sqlite", isolation_level=None)) as con:
        con.execute(statement)


def warnings(res) -> list[str]:
    return [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]


@pytest.fixture
def sealed(tmp_path):
    """A store with one finished knobs.walk run: (store root, run directory, its summary and path array)."""
    first = run_walk(tmp_path / "s")
    d = tmp_path / "s" / "runs" / "knobs.walk" / first["config_hash"]
    return tmp_path / "s", d, first["summary"], load_result(d)[1].arrays["path"]


def test_a_finished_run_is_sealed_in_its_directory_and_in_the_index(sealed):
    root, d, _, _ = sealed
    manifest = json.loads((d / MANIFEST).read_text())
    assert {"config.json", "summary.json", "arrays.npz", "metrics.parquet", "figures/walk.png",
            "figures/walk.pdf"} == set(manifest["files"])
    assert manifest["files"]["arrays.npz"]["size"] == (d / "arrays.npz").stat().st_size
    row = RunStore(root).status(d.name)
    assert json.loads(row["manifest"])["files"] == manifest["files"]
    assert run_walk(root)["reused"]


def _flip_byte(p):
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))


DAMAGE = {
    "summary truncated": (lambda d: os.truncate(d / "summary.json", 10), "summary.json truncated (10 of"),
    "arrays truncated": (lambda d: os.truncate(d / "arrays.npz", 100), "arrays.npz truncated (100 of"),
    "metrics truncated": (lambda d: os.truncate(d / "metrics.parquet", 200), "metrics.parquet truncated"),
    "arrays deleted": (lambda d: (d / "arrays.npz").unlink(), "arrays.npz missing"),
    "figure deleted": (lambda d: (d / "figures" / "walk.png").unlink(), "figures/walk.png missing"),
    "one byte flipped": (lambda d: _flip_byte(d / "arrays.npz"), "arrays.npz does not match its SHA-256"),
    "half-written summary": (lambda d: (d / "summary.json").write_text('{"final_norm": 1.0, "mean_x0": '),
                             "summary.json"),
    "manifest truncated": (lambda d: os.truncate(d / MANIFEST, 20), "manifest.json is unreadable"),
    "manifest deleted": (lambda d: (d / MANIFEST).unlink(), "manifest.json missing"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_run_is_corrupt_said_in_one_line_and_recomputed_bit_identically(sealed, damage):
    root, d, summary, path = sealed
    hurt, words = DAMAGE[damage]
    hurt(d)
    verify = cli("store", "verify", "--store", str(root))
    assert verify.exit_code == 1 and words in verify.stdout and "1 corrupt" in verify.stdout
    again = cli("run", "knobs.walk", "--store", str(root), *WALK, "--json")
    assert again.exit_code == 0, again.output
    out = json.loads(again.stdout)
    lines = warnings(again)
    assert len(lines) == 1 and f"run {d.name} (knobs.walk) is corrupt: " in lines[0] and words in lines[0]
    assert lines[0].endswith("recomputing it") and not out["reused"]
    assert out["summary"] == summary and np.array_equal(load_result(d)[1].arrays["path"], path)
    assert cli("store", "verify", "--store", str(root)).exit_code == 0
    assert run_walk(root)["reused"]


def test_force_recomputes_a_corrupt_run_too(sealed):
    root, d, summary, _ = sealed
    os.truncate(d / "arrays.npz", 5)
    res = cli("run", "knobs.walk", "--store", str(root), *WALK, "--force", "--json")
    assert res.exit_code == 0 and len(warnings(res)) == 1 and json.loads(res.stdout)["summary"] == summary


def test_report_skips_and_names_a_corrupt_run(sealed, tmp_path):
    root, d, _, _ = sealed
    other = run_walk(root, "--seed", "3")
    os.truncate(d / "summary.json", 10)
    html = tmp_path / "r.html"
    res = cli("report", "--all", "--store", str(root), "--html", str(html))
    assert res.exit_code == 0, res.output
    text = html.read_text()
    assert ">Skipped</h2>" in text and f"corrupt run knobs.walk {d.name}" in text
    assert other["config_hash"] in text  # the sound run is still reported
    assert [ln for ln in warnings(res) if "report skips corrupt run" in ln and d.name in ln]
    res = cli("report", str(d), "--html", str(html))
    assert res.exit_code == 0 and "summary.json truncated" in html.read_text()


def test_a_sweep_recomputes_a_corrupt_point(tmp_path):
    root = tmp_path / "s"
    args = ["sweep", "knobs.walk", "--grid", "seed=0,1", *WALK, "--store", str(root), "--workers", "1", "--json"]
    assert cli(*args).exit_code == 0
    victim = sorted((root / "runs" / "knobs.walk").iterdir())[0]
    os.truncate(victim / "arrays.npz", 50)
    res = cli(*args)
    doc = json.loads(res.stdout)
    assert res.exit_code == 0 and (doc["ran"], doc["reused"]) == (1, 1)
    assert [ln for ln in warnings(res) if victim.name in ln and "is corrupt" in ln]


def test_a_legacy_run_without_manifest_is_checked_reused_and_sealed(sealed):
    root, d, summary, _ = sealed
    (d / MANIFEST).unlink()
    sql(root, "UPDATE runs SET manifest=NULL")
    out = run_walk(root)
    assert out["reused"] and out["summary"] == summary and not warnings_in(out)
    assert (d / MANIFEST).exists() and RunStore(root).status(d.name)["manifest"]
    (d / MANIFEST).unlink()
    sql(root, "UPDATE runs SET manifest=NULL")
    os.truncate(d / "arrays.npz", 100)  # a legacy run is checked for structure: the zip's CRCs fail
    out = run_walk(root)
    assert not out["reused"] and "arrays.npz is damaged" in out["stderr"]


def warnings_in(out: dict) -> list[str]:
    return [ln for ln in out["stderr"].splitlines() if ln.startswith("warning:")]


# -- the index --------------------------------------------------------------------------------------
INDEX_DAMAGE = {
    "truncated": (lambda p: os.truncate(p, 3000), "is damaged (database disk image is malformed)"),
    "garbage": (lambda p: p.write_bytes(os.urandom(8192)), "is damaged (file is not a database)"),
    "emptied": (lambda p: os.truncate(p, 0), "was missing or empty while 3 run directories exist"),
    "deleted": (lambda p: p.unlink(), "was missing or empty while 3 run directories exist"),
}


@pytest.mark.parametrize("damage", list(INDEX_DAMAGE))
def test_a_damaged_index_is_moved_aside_and_rebuilt_from_the_run_directories(tmp_path, damage):
    root = tmp_path / "s"
    done = [run_walk(root, "--seed", str(s))["config_hash"] for s in (0, 1)]
    failed = cli("run", "knobs.walk", "--store", str(root), *WALK, "--set", "fail_at=2")
    assert failed.exit_code == 1
    before = {r["id"]: r["status"] for r in RunStore(root).rows()}
    index = root / "index.sqlite"
    sql(root, "PRAGMA wal_checkpoint(TRUNCATE)")  # fold the WAL in, as a closed store has it
    hurt, words = INDEX_DAMAGE[damage]
    hurt(index)
    res = cli("store", "ls", "--store", str(root), "--json")
    assert res.exit_code == 0, res.output
    lines = warnings(res)
    assert len(lines) == 1 and words in lines[0] and "rebuilt it from" in lines[0]
    rows = {r["id"]: r for r in json.loads(res.stdout)}
    assert {k: r["status"] for k, r in rows.items()} == before
    assert all(rows[i]["files"] == "ok" for i in done)
    assert "asked to fail at step 2" in rows[next(k for k, s in before.items() if s == "failed")]["error"]
    if damage in ("truncated", "garbage"):
        assert len([p for p in root.glob("index.sqlite.corrupt-*") if not p.name.endswith(("-wal", "-shm"))]) == 1
    assert run_walk(root, "--seed", "0")["reused"]  # the rebuilt index still knows the sealed runs
    assert cli("store", "verify", "--store", str(root)).exit_code == 0


def test_an_index_locked_past_the_timeout_is_moved_aside_and_rebuilt(tmp_path):
    root = tmp_path / "s"
    first = run_walk(root)["config_hash"]
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sqlite3, sys, time\n"
        f"con = sqlite3.connect({str(root / 'index.sqlite')!r}, isolation_level=None)\n"
        "con.execute('BEGIN EXCLUSIVE'); con.execute(\"UPDATE runs SET host='held'\")\n"
        "print('locked', flush=True); time.sleep(120)\n")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        env = {**os.environ, "ATTNLAB_INDEX_TIMEOUT": "1"}
        res = subprocess.run([sys.executable, "-m", "attnlab.cli", "run", "knobs.walk", "--store", str(root), *WALK,
                              "--seed", "7", "--json", "--quiet"], env=env, capture_output=True, text=True, timeout=300)
    finally:
        holder.kill()
        holder.wait()
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("warning:")]
    assert len(lines) == 1 and "stayed locked for 1 s" in lines[0] and "rebuilt it from" in lines[0]
    rows = {r["id"]: r["status"] for r in RunStore(root).rows()}
    assert rows == {first: "done", json.loads(res.stdout)["config_hash"]: "done"}


def test_a_killed_write_leaves_only_a_temporary_file_which_gc_removes(sealed):
    root, d, _, _ = sealed
    tmp = d / f".arrays.npz.{os.getpid()}.1.tmp"  # what a process killed inside atomic_write leaves
    tmp.write_bytes(b"PK\x03\x04 half of a zip")
    assert cli("store", "verify", "--store", str(root)).exit_code == 0  # results are untouched
    assert run_walk(root)["reused"]
    res = cli("store", "gc", "--store", str(root))
    assert res.exit_code == 0 and "temporary file of a killed write" in res.stdout and not tmp.exists()


def test_a_run_killed_between_its_last_write_and_its_seal_is_finished_on_the_next_run(sealed):
    root, d, summary, _ = sealed
    (d / MANIFEST).unlink()
    sql(root, "UPDATE runs SET status='running', manifest=NULL")  # as left by SIGKILL before the index said "done"
    store = RunStore(root)
    assert store.status(d.name)["status"] == "interrupted"
    out = run_walk(root)
    assert out["summary"] == summary and not warnings_in(out) and (d / MANIFEST).exists()
    assert store.status(d.name)["status"] == "done"


def test_the_store_is_the_same_through_the_python_api(sealed):
    root, d, _, _ = sealed
    store = RunStore(root)
    exp = get("knobs.walk")
    os.truncate(d / "metrics.parquet", 30)
    assert store.check(store.status(d.name)).state == "corrupt"
    assert store.reusable(store.status(d.name)) is None
    rec = store.run(exp, resolve(exp.config, "quick", {"steps": 6}))
    assert not rec.reused and store.check(store.status(d.name)).state == "sealed"


def test_status_only_reads_and_lookup_finds_an_intact_finished_run(sealed):
    root, d, summary, _ = sealed
    store, exp = RunStore(root), get("knobs.walk")
    cfg = resolve(exp.config, "quick", {"steps": 6})
    found = store.lookup(exp, cfg)
    assert found is not None and found.run_id == d.name and found.summary == summary and found.reused
    assert store.lookup(exp, resolve(exp.config, "quick", {"steps": 7})) is None  # never run
    sql(root, "UPDATE runs SET status='running'")  # as a killed run leaves it
    assert store.status(d.name)["status"] == "interrupted"
    assert store.index.get(d.name)["status"] == "running"  # a reader wrote nothing
    assert store.record_interrupted() == [d.name] and store.index.get(d.name)["status"] == "interrupted"
    os.truncate(d / "arrays.npz", 10)
    assert store.lookup(exp, cfg) is None  # corrupt: not reused


def test_a_lock_probe_sees_the_run_and_never_another_probe(tmp_path):
    """is_locked is true under a run's exclusive lock and false under a concurrent probe's shared one (a probe that
    took the exclusive lock made a delete racing the sandbox's event stream refuse a stopped run as 'running')."""
    import fcntl

    from attnlab.core.files import is_locked, locked

    lock = tmp_path / ".lock"
    with locked(lock):
        assert is_locked(lock)
    assert not is_locked(lock)
    with open(lock) as other:  # another probe, mid-probe
        fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)
        assert not is_locked(lock)
