"""One meaning per flag: the run store is ``--store`` (or ATTNLAB_HOME) on every command, the report's file is
``--html``; the old spellings say they are deprecated and still work where they are unambiguous; unknown ids, NaN
and infinity, and an unreachable dask scheduler each stop with one line and exit 2, having written nothing."""

from __future__ import annotations

import contextlib
import json
import socket

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.config import ConfigError
from attnlab.core.sweep import reach_scheduler

runner = CliRunner()


def cli(*args: str):
    return runner.invoke(app, list(args))


def one_error_line(res) -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("error: "), res.output
    return lines[0]


def test_the_store_is_store_everywhere_and_out_is_its_deprecated_spelling(tmp_path):
    new = cli("run", "knobs.walk", "--store", str(tmp_path / "a"), "--set", "steps=3", "--json")
    assert new.exit_code == 0 and "deprecated" not in new.stderr
    old = cli("run", "knobs.walk", "--out", str(tmp_path / "a"), "--set", "steps=3", "--json")
    assert old.exit_code == 0 and json.loads(old.stdout)["reused"]
    assert "warning: --out for the run store is deprecated; use --store DIR" in old.stderr
    both = cli("run", "knobs.walk", "--out", str(tmp_path / "a"), "--store", str(tmp_path / "b"))
    assert "give the run store once" in one_error_line(both) and not (tmp_path / "b").exists()


def test_the_environment_names_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_HOME", str(tmp_path / "home"))
    assert cli("run", "knobs.walk", "--set", "steps=3").exit_code == 0
    assert (tmp_path / "home" / "index.sqlite").exists()
    res = cli("store", "ls", "--json")
    assert res.exit_code == 0 and len(json.loads(res.stdout)) == 1


def test_the_report_file_is_html_and_report_never_creates_a_store(tmp_path):
    store = tmp_path / "s"
    assert cli("run", "knobs.walk", "--store", str(store), "--set", "steps=3").exit_code == 0
    html = tmp_path / "r.html"
    assert cli("report", "--all", "--store", str(store), "--html", str(html)).exit_code == 0 and html.exists()
    line = one_error_line(cli("report", "--all", "--out", str(store)))  # the IsADirectoryError
    assert "--out" in line and "is a directory: the run store is --store DIR and the HTML file is --html FILE" in line
    assert not (tmp_path / "attnlab-runs").exists()
    old = cli("report", "--all", "--store", str(store), "--out", str(tmp_path / "old.html"))
    assert old.exit_code == 0 and "--out for the HTML file is deprecated; use --html FILE" in old.stderr
    line = one_error_line(cli("report", "--all", "--store", str(tmp_path / "typo"), "--html", str(html)))
    assert "no run store at" in line and not (tmp_path / "typo").exists()
    assert "is a directory" in one_error_line(cli("report", "--all", "--store", str(store), "--html", str(tmp_path)))


def test_reproduce_takes_html_and_its_old_report_spelling(tmp_path):
    out = tmp_path / "rep.html"
    res = cli("reproduce", "knobs", "--quick", "--no-claims", "--store", str(tmp_path / "s"), "--report", str(out))
    assert res.exit_code == 0 and out.exists() and "--report for the HTML file is deprecated" in res.stderr


@pytest.mark.parametrize(("args", "words"), [
    (["check", "knobs", "--only", "nope"],
     "unknown claim id 'nope' of knobs (none is close); `attnlab list --claims knobs`"),
    (["check", "potts", "--only", "dual_a_monotone"], "(did you mean "),
    (["check", "nosuchstudy"], "unknown study 'nosuchstudy'; allowed: specialization, clustering"),
    (["run", "knobs.nope"], "unknown experiment 'knobs.nope'; known: knobs.walk"),
    (["sweep", "knobs.nope", "--grid", "steps=1,2"], "unknown experiment 'knobs.nope'; known: knobs.walk"),
    (["run", "knobs.walk", "--set", "drift=nan"], "key 'drift' = nan: NaN (not a number) is not accepted"),
    (["run", "knobs.walk", "--set", "drift=inf"], "key 'drift' = inf: infinity is not accepted"),
    (["run", "knobs.walk", "--set", "steps=-inf"], "key 'steps' = -inf: infinity is not accepted"),
    (["sweep", "knobs.walk", "--grid", "drift=0,nan"], "key 'drift' = nan: NaN (not a number) is not accepted"),
])
def test_unknown_ids_and_non_finite_numbers_exit_2_with_the_allowed_values(tmp_path, args, words):
    line = one_error_line(cli(*args, "--store", str(tmp_path / "s")))
    assert words in line
    assert not (tmp_path / "s").exists()  # nothing written, no vacuous pass


def test_a_known_claim_at_a_scale_where_it_is_not_measured_is_refused(tmp_path, monkeypatch):
    from attnlab.core import claims

    diffusion = claims._CLAIMS["knobs.diffusion"]
    monkeypatch.setitem(claims._CLAIMS, "knobs.diffusion", type(diffusion)(**{**diffusion.__dict__,
                                                                             "scales": ("paper",)}))
    line = one_error_line(cli("check", "knobs", "--only", "diffusion", "--store", str(tmp_path / "s")))
    assert "is measured at scale 'quick'" in line


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.dask
def test_an_unreachable_scheduler_fails_with_one_line_before_writing(tmp_path):
    address = f"tcp://127.0.0.1:{_closed_port()}"
    line = one_error_line(cli("sweep", "knobs.walk", "--grid", "steps=2,3", "--executor", "dask", "--scheduler",
                              address, "--store", str(tmp_path / "s")))
    assert f"--scheduler {address}: cannot reach a dask scheduler there (Connection refused)" in line
    assert not (tmp_path / "s").exists()


@pytest.mark.dask
def test_a_port_where_no_scheduler_answers_fails_at_the_timeout_before_writing(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNLAB_DASK_TIMEOUT", "1")
    with socket.socket() as silent:  # accepts connections, never speaks dask
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        line = one_error_line(cli("sweep", "knobs.walk", "--grid", "steps=2,3", "--executor", "dask", "--scheduler",
                                  address, "--store", str(tmp_path / "s")))
    assert f"--scheduler {address}: no dask scheduler answered within 1 s" in line
    assert not (tmp_path / "s").exists()
    with pytest.raises(ConfigError, match="expected tcp://HOST:PORT"):
        reach_scheduler("not an address")


def test_an_unknown_claim_id_prints_a_few_close_matches_not_every_id(tmp_path):
    line = one_error_line(cli("check", "--only", "trnsfer_better_focus", "--store", str(tmp_path / "s")))
    assert "did you mean transfer_better_focus" in line and len(line) < 400, line


def test_list_elements_are_finite_and_in_range(tmp_path):
    """NaN, infinity, 1e308 or a negative ratio inside a list stop before any work, naming the key."""
    for value, words in [("[nan]", "NaN (not a number) is not accepted"), ("[inf,1]", "infinity is not accepted"),
                         ("[1e308,1]", "less than or equal to 1000"), ("[-1,1]", "greater than 0")]:
        res = cli("run", "potts.fig3left", "--set", f"alphas={value}", "--store", str(tmp_path / "s"))
        assert res.exit_code == 2 and "alphas" in one_error_line(res) and words in one_error_line(res), res.output
    assert not (tmp_path / "s" / "runs").exists()


def test_a_closed_pipe_ends_the_command_quietly():
    """`attnlab list | head -1`: exit 0 and nothing on stderr (click alone exits 1 on a broken pipe)."""
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "list", "--params"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.close()
    assert p.wait(timeout=120) == 0 and p.stderr.read() == b""


@pytest.mark.dask
def test_a_port_where_another_protocol_answers_is_one_line(tmp_path):
    """An HTTP server at the scheduler address: its bytes read as dask frames once asked for an allocation of
    exbibytes; now one line saying it is not a dask scheduler, and nothing written."""
    import threading

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()

        def answer():  # the reachability probe, then the identity request: each gets an HTTP answer
            with contextlib.suppress(OSError):
                for _ in range(4):
                    conn, _ = server.accept()
                    with conn:
                        conn.settimeout(2)
                        with contextlib.suppress(OSError):
                            conn.recv(1024)
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" + b"\xff" * 64)

        threading.Thread(target=answer, daemon=True).start()
        address = f"tcp://127.0.0.1:{server.getsockname()[1]}"
        line = one_error_line(cli("sweep", "knobs.walk", "--grid", "steps=2,3", "--executor", "dask", "--scheduler",
                                  address, "--store", str(tmp_path / "s")))
    assert "but not a dask scheduler" in line and not (tmp_path / "s").exists()


def test_the_command_line_starts_without_torch():
    """`attnlab --help` (and every command's help) imports neither torch nor pandas: under a second on 2 cores."""
    import subprocess
    import sys

    code = "import sys, attnlab.cli; print(sorted(m for m in ('torch', 'pandas', 'numpy') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_list_reads_its_catalogue_without_importing_the_studies(tmp_path):
    """`attnlab list` builds the catalogue once per source state, then answers from it without torch; an edited
    source file makes a new catalogue."""
    import os
    import subprocess
    import sys

    from attnlab.core import catalog

    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    code = ("import atexit, sys; atexit.register(lambda: print('torch' in sys.modules)); "
            "from attnlab.cli import main; sys.argv = ['attnlab', 'list', 'toy']; main()")
    first = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    second = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert "toy.walk" in second.stdout and second.stdout.strip().endswith("False"), second.stdout
    assert first.stdout.strip().endswith("True")  # the first one built it from the studies
    assert len(list((tmp_path / "attnlab").glob("catalog-*.json"))) == 1
    before = catalog.key()
    src = catalog._roots()[-1] / "__init__.py"  # the last root: an installed study's package
    os.utime(src, ns=(src.stat().st_atime_ns, src.stat().st_mtime_ns + 1))
    assert catalog.key() != before
