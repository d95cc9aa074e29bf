"""The event stream outlives a failed read of the sandbox state (a run directory renamed mid-read, a snapshot
removed between listing and stat): it logs the error and sends the state on the next tick."""

from __future__ import annotations

import threading

from starlette.testclient import TestClient

from attnlab.core.runs import RunStore
from attnlab.sandbox.api import create_app
from attnlab.sandbox.service import Sandbox


def test_a_failing_state_read_does_not_end_the_event_stream(tmp_path, monkeypatch, caplog):
    real, calls = Sandbox.state, []

    def flaky(self):
        calls.append(1)
        if len(calls) <= 2:
            raise FileNotFoundError("live.npz vanished mid-read")
        return real(self)

    monkeypatch.setattr(Sandbox, "state", flaky)
    app = create_app(RunStore(tmp_path / "store"))
    stopper = threading.Timer(30, lambda: setattr(app.state, "closing", True))  # never hang the suite
    stopper.start()
    try:
        with TestClient(app) as client, client.stream("GET", "/api/events") as response:
            events = []
            for line in response.iter_lines():
                if line.startswith("event: "):
                    events.append(line)
                    app.state.closing = True  # the loop ends at its next tick
    finally:
        stopper.cancel()
    assert events == ["event: state"] and len(calls) >= 3
    assert "reading the sandbox state failed" in caplog.text
