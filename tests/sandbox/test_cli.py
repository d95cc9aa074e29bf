"""``attnlab sandbox``: bad options stop with one line and exit code 2 before anything listens; a non-loopback host
is warned about; a missing extra is named."""

from __future__ import annotations

import importlib.util

import pytest
from typer.testing import CliRunner

from attnlab import cli
from attnlab.core.config import ConfigError
from attnlab.sandbox import require
from attnlab.sandbox.server import is_loopback


@pytest.mark.parametrize(("args", "message"), [
    (["--port", "70000"], "error: --port 70000: allowed 0..65535 (0 picks a free port)"),
    (["--max-jobs", "0"], "error: --max-jobs 0: must be ≥ 1"),
    (["--host", "no-such-host.invalid"], "error: --host 'no-such-host.invalid': cannot resolve it"),
])
def test_bad_options_stop_with_one_line(tmp_path, args, message):
    result = CliRunner().invoke(cli.app, ["sandbox", "--no-browser", "--store", str(tmp_path), *args])
    assert result.exit_code == 2
    lines = [ln for ln in result.output.splitlines() if ln.strip()]
    assert lines[-1].startswith(message)
    assert not (tmp_path / "index.sqlite").exists()  # nothing written


def test_a_non_loopback_host_needs_allow_remote_and_is_warned_about(tmp_path):
    refused = CliRunner().invoke(cli.app, ["sandbox", "--no-browser", "--store", str(tmp_path), "--host", "0.0.0.0"])
    assert refused.exit_code == 2 and "--host 0.0.0.0 is not a loopback address" in refused.output
    assert "add --allow-remote" in refused.output and not (tmp_path / "index.sqlite").exists()
    result = CliRunner().invoke(cli.app, ["sandbox", "--no-browser", "--store", str(tmp_path), "--host", "0.0.0.0",
                                          "--allow-remote", "--port", "70000"])  # the bad port stops it before it binds
    assert "warning: serving on 0.0.0.0, not loopback" in result.output and result.exit_code == 2


def test_loopback_names():
    assert all(map(is_loopback, ("127.0.0.1", "127.0.0.2", "::1", "localhost")))
    assert not any(map(is_loopback, ("0.0.0.0", "192.168.1.2", "::", "example.org")))


def test_a_missing_extra_is_named(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "uvicorn" else real(name, *a))
    with pytest.raises(ConfigError, match=r"the sandbox needs the 'sandbox' extra: .*\(missing: uvicorn\)"):
        require()
