"""The sandbox's guard against the real server, as Jupyter guards its own: every request needs the printed token (or
the cookie its first page load sets); a Host header that is not this machine's is refused (DNS rebinding); a
state-changing request from another origin is refused whatever its content type (CSRF); bodies over 1 MB are refused
and no error echoes more than a few hundred characters; the job queue is bounded (429) and a job whose memory model
exceeds the free memory is refused; runs are deleted and stopped in bulk."""

from __future__ import annotations

import http.client
import json

import pytest
from sandbox_helpers import start_server, stop_server, wait_for, wait_status

MB = 1 << 20


def raw(server, method: str, path: str, body: bytes | None = None, headers: dict[str, str] | None = None,
        chunked: bool = False) -> tuple[int, dict[str, str], bytes]:
    """One request with exactly these headers (plus Host, unless given): no token unless the test adds it."""
    host, port = server.url.split("//")[1].rstrip("/").split(":")
    con = http.client.HTTPConnection(host, int(port), timeout=120)
    try:
        con.request(method, path, body=body, headers=headers or {}, encode_chunked=chunked)
        r = con.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    except (BrokenPipeError, ConnectionResetError):  # the server answered and closed before the body was sent
        r = con.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        con.close()


def origin(server) -> str:
    return server.url.rstrip("/")


def cookie(server) -> dict[str, str]:
    """The cookie a browser holds after opening the printed URL (read from the server's own Set-Cookie)."""
    status, headers, _ = raw(server, "GET", f"/?token={server.token}")
    assert status == 200
    return {"Cookie": headers["set-cookie"].split(";")[0]}


def token(server) -> dict[str, str]:
    return {"Authorization": f"token {server.token}"}


# -- token --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/", "/static/app.js", "/api/runs", "/api/events", "/api/studies"])
def test_every_request_needs_the_token(server, path):
    for headers in ({}, {"Authorization": "token wrong-token-wrong-token"}, {"Cookie": "attnlab-sandbox-1=x"}):
        status, _, body = raw(server, "GET", path, headers=headers)
        assert status == 403 and b"needs its token" in body
    near = server.token[:-1] + ("y" if server.token.endswith("x") else "x")  # one character off (never the token)
    assert raw(server, "GET", path + "?token=" + near)[0] == 403


def test_the_token_in_the_url_sets_a_cookie_that_authenticates_the_page(server, stored):
    status, headers, body = raw(server, "GET", f"/?token={server.token}")
    assert status == 200 and b"attnlab sandbox" in body
    jar = headers["set-cookie"]
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    assert jar.startswith(f"attnlab-sandbox-{port}={server.token};") and "HttpOnly" in jar and "SameSite=Strict" in jar
    status, _, body = raw(server, "GET", "/api/runs", headers=cookie(server))
    assert status == 200 and stored.small in json.loads(body)["runs"][0]["id"] + body.decode()
    assert raw(server, "GET", "/api/runs", headers=token(server))[0] == 200


def test_responses_carry_the_hardening_headers(server):
    for path in ("/", "/api/runs", "/nowhere"):
        _, headers, _ = raw(server, "GET", path, headers=token(server))
        assert headers["x-content-type-options"] == "nosniff" and headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "same-origin" and "frame-ancestors 'none'" in headers[
            "content-security-policy"]


# -- DNS rebinding ------------------------------------------------------------------------------------
@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1.evil.example:{port}",
                                  "attacker.localhost.evil:{port}", ""])
def test_a_host_header_that_is_not_this_machine_is_refused(server, host):
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    for auth in (token(server), cookie(server)):
        for method, path in (("GET", "/api/runs"), ("GET", "/"), ("POST", "/api/validate")):
            status, _, body = raw(server, method, path, b"{}", {**auth, "Host": host.format(port=port),
                                                                 "Content-Type": "application/json"})
            assert status == 403 and b"is not allowed" in body and b"DNS rebinding" in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LOCALHOST:{port}"])
def test_loopback_names_are_allowed(server, host):
    port = server.url.rstrip("/").rsplit(":", 1)[1]
    assert raw(server, "GET", "/api/studies", headers={**token(server), "Host": host.format(port=port)})[0] == 200


# -- CSRF ---------------------------------------------------------------------------------------------
FOREIGN = [("application/x-www-form-urlencoded", b"a=1"), ("text/plain", b"{}"),
           ("multipart/form-data; boundary=x", b"--x--\r\n"), ("application/json", b"{}"), (None, None)]


def test_cross_origin_state_changes_are_refused_whatever_the_content_type(fresh):
    server = fresh
    run = start_walk(server, seed=101)["run_id"]
    wait_status(server, run, ("running",))
    jar = cookie(server)
    for kind, body in FOREIGN:
        ctype = {"Content-Type": kind} if kind else {}
        for extra in ({"Origin": "http://evil.example"}, {"Origin": "null"},
                      {"Origin": origin(server).replace("127.0.0.1", "evil.example")},
                      {"Origin": origin(server) + "1"}, {"Referer": "http://evil.example/page"}, {},
                      {"Origin": origin(server), "Sec-Fetch-Site": "cross-site"}):
            for method, path in (("POST", f"/api/runs/{run}/stop"), ("DELETE", f"/api/runs/{run}"),
                                 ("POST", "/api/runs/bulk"), ("POST", "/api/runs")):
                status, _, answer = raw(server, method, path, body, {**jar, **ctype, **extra})
                assert status == 403, (method, path, kind, extra, answer)
    assert server.get(f"api/runs/{run}")["status"] == "running"  # nothing was stopped or deleted
    # the page itself: the cookie and its own Origin (what the browser sends) is allowed
    status, _, answer = raw(server, "POST", f"/api/runs/{run}/stop", None, {**jar, "Origin": origin(server)})
    assert status == 200 and json.loads(answer)["status"] == "stopping"
    wait_status(server, run, ("interrupted",))


# -- sizes and echoes ----------------------------------------------------------------------------------
def test_bodies_over_one_megabyte_are_refused_without_being_echoed(server):
    auth = {**token(server), "Content-Type": "application/json"}
    big = json.dumps({"experiment": "knobs.walk", "config": {"steps": "x" * (30 * MB)}}).encode()
    status, _, body = raw(server, "POST", "/api/validate", big, auth)
    assert status == 413 and len(body) < 300 and b"larger than 1048576 bytes" in body
    chunks = (b"x" * 65536 for _ in range(24))  # 1.5 MB without a Content-Length
    status, _, body = raw(server, "POST", "/api/validate", chunks, auth, chunked=True)
    assert status == 413 and len(body) < 300
    status, _, body = raw(server, "POST", "/api/validate", b"{}", {**auth, "Content-Length": "abc"})
    assert status in (400, 413) and len(body) < 300


@pytest.mark.parametrize("config", [{"steps": "7" * 900_000}, {"k" * 64: "v" * 500_000}, {"steps": ["x" * 1000] * 900},
                                    {"steps": "[" * 100_000}, {f"key{i}": "nan" for i in range(200)}])
def test_errors_never_echo_more_than_a_few_hundred_characters(server, config):
    body = json.dumps({"experiment": "knobs.walk", "config": config}).encode()
    assert len(body) < MB
    for path in ("/api/validate", "/api/runs"):
        status, _, answer = raw(server, "POST", path, body, {**token(server), "Content-Type": "application/json"})
        doc = json.loads(answer)
        assert status in (200, 422) and len(answer) < 8000, (status, len(answer))
        for e in [doc.get("error") or ""] + [x["message"] for x in doc.get("errors", [])]:
            assert len(e) <= 300


# -- the queue, memory, delete and bulk stop -----------------------------------------------------------
@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """A server of its own (its runs are deleted here): 1 running job and 2 queued at most, 4 GiB "free"."""
    srv = start_server(tmp_path_factory.mktemp("guarded") / "store", "--max-queued", "2",
                       env={"ATTNLAB_FREE_BYTES": str(4 * 2**30)})
    yield srv
    assert stop_server(srv) == 0


def start_walk(server, expect: int = 202, **config) -> dict:
    body = {"experiment": "knobs.walk", "config": {"steps": "400", "sleep": "0.2", **{k: str(v) for k, v in
                                                                                        config.items()}}}
    status, answer = server.call("POST", "api/runs", body)
    assert status == expect, answer
    return answer


def test_the_queue_is_bounded_memory_is_checked_and_runs_stop_and_delete_in_bulk(fresh):
    server = fresh
    ok = server.call("POST", "api/validate", {"experiment": "knobs.walk", "config": {"need_gib": "1.5"}})[1]
    assert ok["ok"] and ok["memory"]["need"] == int(1.5 * 2**30) and ok["memory"]["free"] == 4 * 2**30
    bad = server.call("POST", "api/validate", {"experiment": "knobs.walk", "config": {"need_gib": "8"}})[1]
    assert not bad["ok"] and "this run needs 8 GiB but the CPU has 4 GiB free; lower need_gib" in \
        bad["errors"][0]["message"]
    before = {r["id"] for r in server.get("api/runs")["runs"]}
    refused = start_walk(server, 422, need_gib=8, seed=1)
    assert "needs 8 GiB" in refused["error"] and {r["id"] for r in server.get("api/runs")["runs"]} == before
    jobs = [start_walk(server, need_gib=1.5, seed=s)["run_id"] for s in (2, 3, 4)]  # 1 runs, 2 queued (3 GiB)
    assert [server.get(f"api/runs/{j}")["status"] for j in jobs] == ["running", "queued", "queued"]
    more = start_walk(server, 422, need_gib=1.5, seed=5)  # 1.5 + the queued 3 > 4 GiB free
    assert "(and the queued runs 3 GiB more) but the CPU has 4 GiB free" in more["error"]
    status, answer = server.call("POST", "api/runs", {"experiment": "knobs.walk", "config": {"seed": "6"}})
    assert status == 429 and "1 runs are running and 2 are queued" in answer["error"]
    assert server.get(f"api/runs/{jobs[0]}")["status"] == "running"
    status, answer = server.call("DELETE", f"api/runs/{jobs[0]}")
    assert status == 409 and "stop it first" in answer["error"]

    status, answer = server.call("POST", "api/runs/bulk", {"action": "stop", "ids": [*jobs, "f" * 16]})
    assert status == 200 and answer["ok"] == 3 and answer["failed"] == 1
    for j in jobs:
        wait_status(server, j, ("interrupted",))
    status, answer = server.call("POST", "api/runs/bulk", {"action": "delete", "ids": jobs})
    assert status == 200 and answer["ok"] == 3, answer
    listed = {r["id"] for r in server.get("api/runs")["runs"]}
    assert not listed & set(jobs) and not any((server.root / "runs" / "knobs.walk" / j).exists() for j in jobs)
    assert server.call("GET", f"api/runs/{jobs[0]}")[0] == 404


def test_a_finished_run_is_deleted_with_its_files(fresh):
    server = fresh
    run = start_walk(server, steps=3, sleep=0, seed=42)["run_id"]
    wait_status(server, run, ("done",))
    d = server.root / "runs" / "knobs.walk" / run
    assert (d / "manifest.json").exists()
    status, answer = server.call("DELETE", f"api/runs/{run}")
    assert status == 200 and answer == {"run_id": run, "deleted": True} and not d.exists()
    assert server.call("DELETE", f"api/runs/{run}")[0] == 404
    assert server.call("DELETE", "api/runs/nothex")[0] == 422


def test_a_corrupt_finished_run_is_restarted_not_reused(fresh):
    server = fresh
    run = start_walk(server, steps=3, sleep=0, seed=43)["run_id"]
    wait_status(server, run, ("done",))
    (server.root / "runs" / "knobs.walk" / run / "summary.json").write_text("{")
    meta = server.get(f"api/runs/{run}")
    assert meta["view"] is None and "is corrupt" in meta["reason"]
    again = start_walk(server, steps=3, sleep=0, seed=43)
    assert again["run_id"] == run and not again["reused"]
    wait_status(server, run, ("done",))
    wait_for(lambda: server.get(f"api/runs/{run}")["view"] is not None, timeout=30, what="the recomputed view")


def test_the_issues_oversized_clustering_job_is_refused_by_its_memory_model(server):
    """d = 4096, h = 65536, n_seeds = 100000 (the issue's example) needs far more than any machine has free."""
    config = {"d": "4096", "h": "65536", "n_seeds": "100000"}
    before = {r["id"] for r in server.get("api/runs")["runs"]}
    answer = server.call("POST", "api/validate", {"experiment": "clustering.train", "config": config})[1]
    assert not answer["ok"] and "this run needs" in answer["errors"][0]["message"]
    assert "reduce n_seeds" in answer["errors"][0]["message"]
    status, answer = server.call("POST", "api/runs", {"experiment": "clustering.train", "config": config})
    assert status == 422 and "GiB free" in answer["error"]
    assert {r["id"] for r in server.get("api/runs")["runs"]} == before
