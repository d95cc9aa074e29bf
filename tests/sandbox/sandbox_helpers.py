"""Shared helpers of the sandbox tests: the stored runs' configs, the real server as a subprocess, polling."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SERVER_ENV = {"ATTNLAB_CHECKPOINT_EVERY": "0", "ATTNLAB_PUBLISH_EVERY": "0.25", "ATTNLAB_QUIET": "1"}

#: the stored runs every test may open (created once per session, in process, through the run store)
BIG = {"k": 3, "n_train": 16, "batch_size": 16, "epochs": 1000, "log_every": 20, "head_metrics": False}  # 1001 snaps
SMALL = {"k": 3, "n_train": 64, "batch_size": 32, "epochs": 30, "n_seeds": 2, "seed": 1}
SPEC = {"D": 64, "tau_max": 4.0, "n_mc": 1000, "record_every": 0.5}


@dataclass
class Stored:
    root: Path
    big: str
    small: str
    spec: str
    walk: str


# -- the server -----------------------------------------------------------------------------------------
@dataclass
class Server:
    url: str  # http://127.0.0.1:PORT/ (the printed address without its token)
    token: str
    proc: subprocess.Popen
    root: Path
    printed: dict[str, list[str]] = field(default_factory=lambda: {"stdout": [], "stderr": []}, repr=False)
    readers: list[threading.Thread] = field(default_factory=list, repr=False)

    def output(self, stream: str = "stderr") -> str:
        """What the server has printed on ``stream`` so far (both pipes are read all along by threads: a pipe
        that nobody reads fills up and blocks the server on its next write)."""
        return "".join(self.printed[stream])

    def page_url(self, query: str = "") -> str:
        """The page's address with the token, as printed, plus ``query`` (e.g. "?run=ID")."""
        more = query.lstrip("?")
        return f"{self.url}?token={self.token}" + (f"&{more}" if more else "")

    def call(self, method: str, path: str, body: Any = None, timeout: float = 120,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """(status, JSON or bytes) of one request with the token (as a script sends it: an Authorization header);
        HTTP errors are returned, not raised. ``headers`` add to or replace the default ones."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        base = {"Content-Type": "application/json"} if data is not None else {}
        base["Authorization"] = f"token {self.token}"
        req = urllib.request.Request(self.url + path.lstrip("/"), data=data, method=method,
                                     headers={k: v for k, v in {**base, **(headers or {})}.items() if v is not None})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, kind, content = r.status, r.headers.get_content_type(), r.read()
        except urllib.error.HTTPError as e:
            status, kind, content = e.code, e.headers.get_content_type(), e.read()
        return status, json.loads(content) if kind == "application/json" else content

    def get(self, path: str) -> Any:
        status, body = self.call("GET", path)
        assert status == 200, (path, status, body)
        return body

    def run_status(self, run_id: str) -> str:
        return self.get(f"api/runs/{run_id}")["status"]


def start_server(root: Path, *args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Server:
    """``attnlab sandbox --no-browser --port 0 --store ROOT`` as a user runs it; the URL is read from its output."""
    env = {**os.environ, **SERVER_ENV, **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "sandbox", "--no-browser", "--port", "0", "--store",
                             str(root), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline and proc.poll() is None:
        ready, _, _ = select.select([proc.stdout], [], [], 1.0)
        if ready:
            line = proc.stdout.readline()
            if "http://" in line:
                break
    if "http://" not in line:
        proc.kill()
        raise RuntimeError(f"the sandbox did not start: {line!r} {proc.stderr.read()[-2000:]}")
    printed = line[line.index("http://"):].split()[0]
    url, _, token = printed.partition("?token=")
    server = Server(url, token, proc, root)
    server.printed["stdout"].append(line)
    for name in ("stdout", "stderr"):
        server.readers.append(threading.Thread(target=_drain, args=(getattr(proc, name), server.printed[name]),
                                               daemon=True))
        server.readers[-1].start()
    wait_for(lambda: server.call("GET", "api/studies", timeout=10)[0] == 200, timeout=timeout, what="first answer")
    return server


def _drain(pipe, into: list[str]) -> None:
    for text in iter(pipe.readline, ""):
        into.append(text)


def stop_server(server: Server, timeout: float = 60) -> int:
    """Ctrl-C, as at a terminal; returns the exit code once the server has exited and its output is all read."""
    server.proc.send_signal(signal.SIGINT)
    try:
        server.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
    for reader in server.readers:
        reader.join(5)
    return server.proc.returncode


def wait_for(pred: Callable[[], Any], timeout: float = 60, interval: float = 0.2, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def wait_status(server: Server, run_id: str, statuses: tuple[str, ...], timeout: float = 120) -> dict[str, Any]:
    """Poll ``GET /api/runs/{id}`` until its status is one of ``statuses``; the last answer on timeout."""
    last: dict[str, Any] = {}

    def check() -> bool:
        nonlocal last
        last = server.get(f"api/runs/{run_id}")
        return last["status"] in statuses

    try:
        wait_for(check, timeout=timeout, interval=0.25, what=f"run {run_id} to be {'/'.join(statuses)}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last: {last.get('status')} {last.get('error')}") from None
    return last


def wait_js(page, expression: str, timeout: float = 60, arg: Any = None) -> Any:
    """Poll ``page.evaluate(expression)`` from Python until it is truthy (``wait_for_function`` evaluates its
    predicate with ``eval``, which the page's Content-Security-Policy forbids)."""
    return wait_for(lambda: page.evaluate(expression, arg), timeout=timeout, interval=0.1, what=expression)
