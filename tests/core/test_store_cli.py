"""``attnlab store ls | verify | rebuild | rm | gc`` on a real store holding done, failed, interrupted, corrupt and
never-started runs, temporary files of killed writes and a moved-aside index; none of them creates a store."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import threading
import time

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.files import locked
from attnlab.core.runs import RunStore

runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def ls(root, *args: str) -> dict[str, dict]:
    res = cli("store", "ls", "--store", str(root), "--json", *args)
    assert res.exit_code == 0, res.output
    return {r["id"]: r for r in json.loads(res.stdout)}


def sql(root, statement: str, *args) -> None:
    with contextlib.closing(sqlite3.connect(root / "index.sqlite", isolation_level=None)) as con:
        con.execute(statement, args)


@pytest.fixture
def store(tmp_path):
    """done (2), corrupt (1), failed (1) and interrupted (1) knobs.walk runs: name → run id."""
    root = tmp_path / "s"
    ids = {}
    for name, extra in (("done", []), ("other", ["--seed", "1"]), ("corrupt", ["--seed", "2"]),
                        ("failed", ["--set", "fail_at=1"])):
        res = cli("run", "knobs.walk", "--store", str(root), "--set", "steps=4", *extra, "--json")
        ids[name] = RunStore(root).rows()[-1]["id"] if res.exit_code else json.loads(res.stdout)["config_hash"]
    os.truncate(root / "runs" / "knobs.walk" / ids["corrupt"] / "arrays.npz", 40)
    res = cli("run", "knobs.walk", "--store", str(root), "--set", "steps=4", "--seed", "3", "--json")
    ids["interrupted"] = json.loads(res.stdout)["config_hash"]
    sql(root, "UPDATE runs SET status='interrupted', manifest=NULL WHERE id=?", ids["interrupted"])
    (root / "runs" / "knobs.walk" / ids["interrupted"] / "manifest.json").unlink()
    (root / "runs" / "knobs.walk" / ids["interrupted"] / "summary.json").unlink()
    return root, ids


def test_ls_filters_by_status_study_experiment_and_age(store):
    root, ids = store
    every = ls(root)
    assert set(every) == set(ids.values())
    assert {every[i]["status"] for i in ids.values()} == {"done", "failed", "interrupted"}
    assert every[ids["corrupt"]]["files"] == "corrupt" and every[ids["done"]]["files"] == "ok"
    assert "arrays.npz truncated (40 of" in every[ids["corrupt"]]["problems"][0]
    for status in ("failed", "interrupted", "corrupt"):
        assert set(ls(root, "--status", status)) == {ids[status]}
    assert set(ls(root, "--status", "done")) == {ids["done"], ids["other"]}
    assert set(ls(root, "--experiment", "knobs.walk")) == set(ids.values())
    assert ls(root, "--experiment", "knobs.other") == {}
    assert ls(root, "--older-than", "1d") == {} and set(ls(root, "--newer-than", "1h")) == set(ids.values())
    sql(root, "UPDATE runs SET created=? WHERE id=?", time.time() - 3 * 86400, ids["failed"])
    assert set(ls(root, "--older-than", "2d")) == {ids["failed"]}
    assert set(ls(root, ids["done"][:6])) == {ids["done"]}
    table = cli("store", "ls", "--store", str(root))
    assert table.exit_code == 0 and ids["corrupt"] in table.stdout and "5 runs" in table.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["ls", "--status", "finished"], "--status 'finished' is not allowed; allowed: queued, running, done, failed"),
    (["ls", "--older-than", "soon"], "--older-than 'soon': expected an age such as 7d"),
    (["ls", "--study", "nope"], "unknown study 'nope'; allowed:"),
    (["rm", "ab"], "run id 'ab' is shorter than 4 digits"),
    (["rm", "ffffffff"], "run id 'ffffffff' matches no run"),
    (["rm"], "give run ids or a filter"),
])
def test_bad_arguments_exit_2_with_one_line(store, args, message):
    root, _ = store
    res = cli("store", *args, "--store", str(root))
    assert res.exit_code == 2 and message in res.stderr, res.output


def test_verify_checks_every_byte_and_the_index(store):
    root, ids = store
    res = cli("store", "verify", "--store", str(root), "--json")
    doc = json.loads(res.stdout)
    assert res.exit_code == 1 and doc["index"] == "ok" and doc["checked"] == 3
    assert [c["id"] for c in doc["corrupt"]] == [ids["corrupt"]]
    shutil.rmtree(root / "runs" / "knobs.walk" / ids["corrupt"])  # a run directory gone: its row still says done
    res = cli("store", "verify", "--store", str(root))
    assert res.exit_code == 1 and f"corrupt {ids['corrupt']} knobs.walk: " in res.stdout and "missing" in res.stdout
    assert cli("store", "rm", ids["corrupt"], "--store", str(root)).exit_code == 0
    sql(root, "DELETE FROM runs WHERE id=?", ids["other"])
    res = cli("store", "verify", "--store", str(root))
    assert res.exit_code == 0 and f"not in the index {ids['other']}" in res.stdout


def test_rebuild_recreates_the_index_from_the_run_directories(store):
    root, ids = store
    before = {i: r["status"] for i, r in ls(root).items()}
    sql(root, "DELETE FROM runs")
    assert ls(root) == {}
    res = cli("store", "rebuild", "--store", str(root))
    assert res.exit_code == 0 and "from 5 run directories" in res.stdout and "index.sqlite.bak-" in res.stdout
    after = ls(root)
    assert {i: r["status"] for i, r in after.items()} == before
    assert "asked to fail at step 1" in after[ids["failed"]]["error"]
    assert after[ids["corrupt"]]["files"] == "corrupt"


def test_rm_by_id_and_by_filter_never_a_running_run(store):
    root, ids = store
    res = cli("store", "rm", ids["other"][:8], "--store", str(root))
    assert res.exit_code == 0 and not (root / "runs" / "knobs.walk" / ids["other"]).exists()
    assert ids["other"] not in ls(root)
    listed = cli("store", "rm", "--status", "corrupt", "--store", str(root))
    assert listed.exit_code == 2 and f"would remove {ids['corrupt']}" in listed.stdout and "add --yes" in listed.stderr
    assert ids["corrupt"] in ls(root)
    assert cli("store", "rm", "--status", "corrupt", "--yes", "--store", str(root)).exit_code == 0
    assert ids["corrupt"] not in ls(root)
    run_dir = root / "runs" / "knobs.walk" / ids["done"]
    held, release = threading.Event(), threading.Event()

    def hold() -> None:  # a run computing holds its directory's lock
        with locked(run_dir / ".lock"):
            held.set()
            release.wait(30)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        res = cli("store", "rm", ids["done"], "--store", str(root))
    finally:
        release.set()
        t.join()
    assert res.exit_code == 1 and "kept" in res.stderr and "it is running" in res.stderr and run_dir.exists()


def test_gc_removes_old_stopped_runs_and_leftovers_only(store):
    root, ids = store
    runs = root / "runs" / "knobs.walk"
    tmp = runs / ids["done"] / ".summary.json.123.4.tmp"
    tmp.write_text("{")
    (runs / ids["other"] / "checkpoint.pt").write_bytes(b"old")
    never = runs / ("0" * 16)
    never.mkdir()
    os.utime(never, (time.time() - 30 * 86400,) * 2)
    sql(root, "INSERT INTO runs (id, experiment, status, run_dir, config) VALUES (?,?,?,?,?)",
        "1" * 16, "knobs.walk", "failed", str(runs / ("1" * 16)), "{}")
    backup = root / "index.sqlite.corrupt-20200101-000000-1"
    backup.write_bytes(b"x" * 100)
    os.utime(backup, (time.time() - 30 * 86400,) * 2)
    dry = cli("store", "gc", "--store", str(root), "--dry-run")
    assert dry.exit_code == 0 and "5 items" in dry.stdout and tmp.exists() and never.exists()
    res = cli("store", "gc", "--store", str(root), "--older-than", "7d")
    assert res.exit_code == 0, res.output
    assert not tmp.exists() and not (runs / ids["other"] / "checkpoint.pt").exists() and not never.exists()
    assert not backup.exists() and "1" * 16 not in ls(root)
    assert ids["failed"] in ls(root) and ids["interrupted"] in ls(root)  # stopped runs younger than 7 days stay
    res = cli("store", "gc", "--store", str(root), "--older-than", "0s")
    assert res.exit_code == 0 and set(ls(root)) == {ids["done"], ids["other"], ids["corrupt"]}
    assert cli("store", "verify", "--store", str(root), ids["done"]).exit_code == 0


@pytest.mark.parametrize("command", [["ls"], ["verify"], ["rebuild"], ["gc"], ["rm", "--status", "failed", "--yes"]])
def test_no_store_command_creates_a_store(tmp_path, command):
    res = cli("store", *command, "--store", str(tmp_path / "typo"))
    assert res.exit_code == 2 and "no run store at" in res.stderr and not (tmp_path / "typo").exists()


@pytest.mark.parametrize("row", [
    ("zz", "garbage", "done", "/nowhere", "{not json", "yesterday"),  # text where a time belongs
    ("zy", "knobs.walk", "exploded", "/nowhere", "{}", 1.0),          # a status attnlab never writes
])
def test_a_garbage_index_row_names_store_rebuild_and_rebuild_mends_it(store, row):
    root, ids = store
    sql(root, "INSERT INTO runs (id, experiment, status, run_dir, config, created) VALUES (?, ?, ?, ?, ?, ?)", *row)
    for command in ("ls", "verify", "gc"):
        res = cli("store", command, "--store", str(root))
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.exit_code == 2 and len(lines) == 1 and "attnlab store rebuild" in lines[0], res.output
    assert cli("store", "rebuild", "--store", str(root)).exit_code == 0
    assert row[0] not in ls(root) and ids["done"] in ls(root)
