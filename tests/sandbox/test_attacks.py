"""Issue 27's attacks on the sandbox, each against the real server with real requests (and a real browser for the
stored script injection): a run whose error or label holds HTML is shown as text and runs nothing (and the page's
Content-Security-Policy would stop an inline script anyway); idle or token-less connections do not lock the user out;
every experiment the form offers has a memory model, and the API accepts it and refuses a run too large to fit; a
websocket upgrade is answered as plain HTTP without warnings."""

from __future__ import annotations

import json
import socket
import sqlite3
import time

import pytest
from sandbox_helpers import start_server, stop_server, wait_for, wait_js

#: the reviewer's planted error: an image whose onerror handler POSTs a new run from the page (same origin)
PLANTED_ERROR = ("<img id=planted src=x onerror=\"fetch('/api/runs',{method:'POST',headers:{'Content-Type':"
                 "'application/json'},body:JSON.stringify({experiment:'knobs.walk',config:{steps:'9'}})})\">"
                 "<script>window.pwned=1</script>")
PLANTED_LABEL = "<img src=x onerror=p()>"  # 23 characters: the label keeps 24 of a config value


def connect(server) -> socket.socket:
    host, port = server.url.split("//")[1].rstrip("/").split(":")
    return socket.create_connection((host, int(port)), timeout=10)


def exchange(server, request: bytes) -> bytes:
    """Send ``request`` on a new connection and read one response (by its Content-Length) or until it closes."""
    with connect(server) as s:
        s.sendall(request)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
            head, sep, body = out.partition(b"\r\n\r\n")
            length = [int(h.split(b":")[1]) for h in head.lower().split(b"\r\n") if h.startswith(b"content-length:")]
            if sep and length and len(body) >= length[0]:
                break
    return out


# -- stored script injection --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A server over a run store in which someone planted HTML in a run's error and in another run's label."""
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    store = RunStore(tmp_path_factory.mktemp("planted") / "store")
    exp = get("knobs.walk")
    failed = store.run(exp, resolve(exp.config, "quick", {"steps": 2, "seed": 1})).run_id
    labelled = store.run(exp, resolve(exp.config, "quick", {"steps": 2, "seed": 2})).run_id
    config = json.loads(store.status(labelled)["config"])
    config["seed"] = PLANTED_LABEL  # what a hand-edited index row shows as its label
    with sqlite3.connect(store.root / "index.sqlite") as con:
        con.execute("UPDATE runs SET status = 'failed', error = ? WHERE id = ?", (PLANTED_ERROR, failed))
        con.execute("UPDATE runs SET config = ? WHERE id = ?", (json.dumps(config), labelled))
    srv = start_server(store.root)
    yield srv, failed, labelled
    assert stop_server(srv) == 0


def test_a_planted_error_or_label_is_shown_as_text_and_runs_nothing(strict_browser, planted):
    server, failed, labelled = planted
    before = {r["id"] for r in server.get("api/runs")["runs"]}
    page = strict_browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(server.page_url())
        wait_js(page, "window.sandbox && window.sandbox.stats.ready")
        page.wait_for_selector(f"#runs .run[data-run='{failed}']")
        page.wait_for_timeout(1500)  # an injected handler would have fired by now (the image fails at once)
        texts = page.evaluate("""(ids) => ids.map((id) =>
            document.querySelector(`#runs .run[data-run='${id}']`).textContent)""", [failed, labelled])
        assert PLANTED_ERROR in texts[0] and PLANTED_LABEL in texts[1]
        assert page.evaluate("document.querySelectorAll('#runs img, #runs script, #planted').length") == 0
        assert page.evaluate("window.pwned") is None and not errors, errors
    finally:
        page.close()
    time.sleep(0.5)
    assert {r["id"] for r in server.get("api/runs")["runs"]} == before  # the planted POST never left the page


def test_the_content_security_policy_blocks_inline_script_even_if_html_got_in(strict_browser, planted):
    """Defence in depth: HTML inserted into the page (as the old runs list did) cannot run a handler or a script."""
    server, _, _ = planted
    page = strict_browser.new_page()
    try:
        page.goto(server.page_url())
        wait_js(page, "window.sandbox && window.sandbox.stats.ready")
        violations = page.evaluate("""() => new Promise((done) => {
            const seen = [];
            document.addEventListener("securitypolicyviolation", (e) => seen.push(e.violatedDirective));
            document.body.insertAdjacentHTML("beforeend", '<img src="x" onerror="window.ran = 1">');
            const s = document.createElement("script");
            s.textContent = "window.ran = 2";
            document.body.append(s);
            setTimeout(() => done(seen), 800);
        })""")
        assert page.evaluate("window.ran") is None
        assert violations and all(v.startswith("script-src") for v in violations), violations
    finally:
        page.close()


def test_the_page_itself_runs_under_its_policy_without_violations(strict_browser, server, stored):
    """The policy is strict (no inline script, no eval) and the page, Plotly included, works under it."""
    page = strict_browser.new_page()
    page.add_init_script("""window.cspViolations = [];
        document.addEventListener("securitypolicyviolation", (e) => window.cspViolations.push(e.violatedDirective));""")
    try:
        page.goto(server.page_url(f"?run={stored.small}&renderer=plotly"))
        wait_js(page, "window.sandbox && window.sandbox.stats.ready", timeout=120)
        wait_js(page, "window.sandbox.stats.opens.length > 0", timeout=120)
        page.wait_for_timeout(1000)
        assert page.evaluate("window.cspViolations") == []
        assert page.evaluate("document.querySelectorAll('.js-plotly-plot').length") > 0
    finally:
        page.close()


# -- lock-out without a token ---------------------------------------------------------------------------
def test_idle_and_token_less_connections_do_not_lock_the_user_out(server):
    """200 idle connections and 100 token-less requests held open: the user's requests are still answered (the
    limit counts only token holders' requests), and a connection that sends nothing is closed after 5 s."""
    idle = [connect(server) for _ in range(200)]
    partial = [connect(server) for _ in range(100)]
    try:
        for s in partial:  # a request line and no end of headers: uvicorn waits for the rest
            s.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        anonymous = exchange(server, b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        assert anonymous.startswith(b"HTTP/1.1 403"), anonymous[:200]
        t0 = time.monotonic()
        for _ in range(5):
            status, body = server.call("GET", "api/runs", timeout=10)
            assert status == 200, body
        assert time.monotonic() - t0 < 5
        idle[0].settimeout(15)
        assert idle[0].recv(1) == b""  # closed by the server (keep-alive timeout), not held for ever
    finally:
        for s in idle + partial:
            s.close()


def test_token_holders_are_limited_after_the_token_check():
    """The Guard's own limit: the (max_active + 1)-th request in flight of a token holder answers 503; requests
    without the token are refused 403 and hold no slot."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from attnlab.sandbox.security import Guard

    release: list[asyncio.Event] = []

    async def app(scope, receive, send):
        await release[0].wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def call(guard, authorization: str | None) -> int:
        sent = []

        async def send(message):
            sent.append(message)

        headers = [(b"host", b"127.0.0.1:8888")] + ([(b"authorization", authorization.encode())]
                                                     if authorization else [])
        scope = {"type": "http", "method": "GET", "path": "/api/runs", "query_string": b"", "headers": headers}
        await guard(scope, lambda: asyncio.sleep(0, {"type": "http.request", "body": b""}), send)
        return sent[0]["status"]

    async def main():
        release.append(asyncio.Event())
        guard = Guard(app, "t" * 24, 8888, frozenset({"127.0.0.1"}), max_active=2)
        held = [asyncio.create_task(call(guard, "token " + "t" * 24)) for _ in range(2)]
        await asyncio.sleep(0.05)
        anonymous = await asyncio.gather(*(call(guard, None) for _ in range(10)))
        third = await call(guard, "token " + "t" * 24)
        release[0].set()
        return anonymous, third, await asyncio.gather(*held), guard.active

    with ThreadPoolExecutor(1) as pool:  # a thread of its own: the browser tests' Playwright holds this one's loop
        anonymous, third, held, active = pool.submit(asyncio.run, main()).result(timeout=30)
    assert anonymous == [403] * 10 and third == 503 and held == [200, 200] and active == 0


# -- memory guard and what the form offers ------------------------------------------------------------------
def offered(server) -> list[str]:
    return [e["key"] for s in server.get("api/studies")["studies"] for e in s["experiments"] if e["startable"]]


def test_every_experiment_the_form_offers_has_a_memory_model_and_the_api_accepts_it(server):
    from attnlab.core.registry import get

    keys = offered(server)
    assert {"signal.figC2", "signal.figC3", "potts.fig2d", "signal.alphac"} <= set(keys)
    assert [k for k in keys if get(k).memory is None] == []
    for key in keys:
        status, form = server.call("GET", f"api/form?experiment={key}&scale=quick")
        assert status == 200, (key, form)
        status, answer = server.call("POST", "api/validate", {"experiment": key, "scale": "quick", "config": {}})
        assert status == 200 and answer["ok"] and answer["memory"]["need"] is not None, (key, answer)


@pytest.mark.parametrize("key, config", [
    ("potts.fig2d", {"a_values": json.dumps([i / 1000 for i in range(2000)]), "seeds": "64"}),  # 128 000 models
    ("signal.alphac", {"sim_alphas": json.dumps([1.0] * 2000), "d": "4096", "T": "1024", "n_seqs": "1000",
                       "n_inits": "1000", "sim_L": "1000"}),
    ("potts.replica", {"lams": json.dumps([1e-3 * (1 + k) for k in range(1000)]), "n_nodes": "100000"}),
    ("signal.figC3", {"table_betas": json.dumps([1.0] * 2000), "n_inits": "10000", "n_seqs": "1000", "T": "512"}),
    ("signal.fig5", {"L": "10000", "n_inits": "10000", "n_seqs": "10000"}),
])
def test_a_job_too_large_for_the_machine_is_refused_before_it_starts(server, key, config):
    before = {r["id"] for r in server.get("api/runs")["runs"]}
    answer = server.call("POST", "api/validate", {"experiment": key, "config": config})[1]
    assert not answer["ok"] and "this run needs" in answer["errors"][0]["message"], answer
    status, answer = server.call("POST", "api/runs", {"experiment": key, "config": config})
    assert status == 422 and "GiB free" in answer["error"], answer
    assert {r["id"] for r in server.get("api/runs")["runs"]} == before


# -- websocket upgrades ---------------------------------------------------------------------------------------
def test_a_websocket_upgrade_is_answered_as_http_and_logs_no_warning(tmp_path):
    server = start_server(tmp_path / "store")
    upgrade = (b"GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
               b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n")
    try:
        for _ in range(3):
            assert exchange(server, upgrade + b"\r\n").startswith(b"HTTP/1.1 403")
        with_token = exchange(server, upgrade.replace(b"/api/events", b"/ws") +
                              f"Authorization: token {server.token}\r\n\r\n".encode())
        assert with_token.startswith(b"HTTP/1.1 404"), with_token[:200]
        wait_for(lambda: server.call("GET", "api/studies")[0] == 200, what="an answer after the upgrades")
    finally:
        assert stop_server(server) == 0
    log = server.output()
    assert "WARNING" not in log.upper() and "upgrade" not in log.lower(), log[-2000:]
