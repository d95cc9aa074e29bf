"""A hypothesis-driven fuzz of the sandbox API against the real server (its own store, two finished knobs runs):
random methods, paths, run ids, query strings, JSON and binary bodies of random sizes, content types, headers and
ways of (not) authenticating. Whatever arrives, the server never fails (no 5xx), refuses what lacks the token or
names a foreign host, answers every API error with one JSON line of at most 300 characters, and keeps serving
(the one 500 allowed is the test plug-in's ``boom`` panel, which fails on purpose).

The number of examples is bounded (``ATTNLAB_FUZZ_EXAMPLES``, default 120) and derandomised, so the suite stays
short and a failure replays; raise it for a longer hunt."""

from __future__ import annotations

import http.client
import json
import os
import string
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sandbox_helpers import start_server, stop_server

EXAMPLES = int(os.environ.get("ATTNLAB_FUZZ_EXAMPLES", "120"))
PATHS = ["/", "/api/studies", "/api/form", "/api/validate", "/api/runs", "/api/runs/bulk", "/api/events",
         "/static/app.js", "/static/../../etc/passwd", "/docs", "/openapi.json", "/nowhere"]
RUN_PATHS = ["/api/runs/{}", "/api/runs/{}/frames", "/api/runs/{}/series", "/api/runs/{}/stop", "/api/runs/{}/pause",
             "/api/runs/{}/continue", "/api/runs/{}/resume", "/api/runs/{}/export", "/api/runs/{}/{}"]
CONTENT_TYPES = ["application/json", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; "
                 "boundary=x", "application/octet-stream", "application/json; charset=utf-16", "", "*/*"]
BOOM = b'{"error":"internal error: RuntimeError: the boom panel always fails"}'  # the test plug-in's own fault
HEADER_TEXT = st.text(alphabet=string.ascii_letters + string.digits + " -_.,;:/=()[]{}'\"!*%", max_size=200)


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    store = RunStore(tmp_path_factory.mktemp("fuzz") / "store")
    exp = get("knobs.walk")
    ids = [store.run(exp, resolve(exp.config, "quick", {"steps": 4, "seed": s})).run_id for s in (0, 1)]
    srv = start_server(store.root)
    srv.ids = ids
    yield srv
    assert stop_server(srv) == 0, srv.output()[-2000:]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=50),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=20), children, max_size=5),
    max_leaves=20)
start_bodies = st.fixed_dictionaries({
    "experiment": st.sampled_from(["knobs.walk", "clustering.train", "knobs.nope", "x" * 120, "../etc", ""]),
    "scale": st.sampled_from(["quick", "paper", "huge"]),
    "config": st.dictionaries(st.sampled_from(["steps", "dim", "sleep", "fail_at", "seed", "need_gib", "drift",
                                               "nope", "k" * 70]),
                              st.one_of(st.text(max_size=30), st.integers(-10**12, 10**12), st.floats(),
                                        st.sampled_from(["nan", "inf", "[1, [2]]", "{a: 1}", "1e400", "-0"])),
                              max_size=6)})
bodies = st.one_of(
    st.none(),
    json_values.map(lambda v: json.dumps(v).encode()),
    start_bodies.map(lambda v: json.dumps(v).encode()),
    st.fixed_dictionaries({"action": st.sampled_from(["stop", "delete", "explode"]),
                           "ids": st.lists(st.text(alphabet="0123456789abcdef", min_size=15, max_size=17),
                                           max_size=5)}).map(lambda v: json.dumps(v).encode()),
    st.binary(max_size=2000),
    st.sampled_from([1000, 100_000, (1 << 20) + 1]).map(lambda n: b"[" + b"1," * (n // 2) + b"1]"),
)


@st.composite
def requests(draw, ids: list[str]):
    run_id = draw(st.one_of(st.sampled_from(ids), st.text(alphabet="0123456789abcdef", min_size=16, max_size=16),
                            st.text(max_size=30)))
    template = draw(st.sampled_from(PATHS + RUN_PATHS))
    path = template.format(quote(run_id, safe=""), quote(draw(st.text(max_size=10)), safe=""))
    query = draw(st.dictionaries(st.sampled_from(["start", "stop", "every", "variant", "panels", "experiment",
                                                  "scale", "token", "x"]), st.text(max_size=30), max_size=4))
    if query:
        path += "?" + urlencode(query)
    headers = draw(st.dictionaries(st.sampled_from(["X-Forwarded-For", "Accept", "Origin", "Referer", "Cookie",
                                                    "User-Agent", "X-Custom", "Sec-Fetch-Site"]), HEADER_TEXT,
                                   max_size=3))
    kind = draw(st.sampled_from(CONTENT_TYPES))
    if kind:
        headers["Content-Type"] = kind
    method = draw(st.sampled_from(["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]))
    body = draw(bodies)
    if draw(st.integers(0, 3)) == 0:  # one in four: a start or validation with a random config (the echo risk)
        method, path, body = "POST", draw(st.sampled_from(["/api/validate", "/api/runs"])), draw(start_bodies.map(
            lambda v: json.dumps(v).encode()))
    return {"method": method, "path": path, "body": body, "headers": headers,
            "auth": draw(st.sampled_from(["token", "token", "token", "none", "foreign host", "wrong token"]))}


def send(server, req: dict) -> tuple[int, bytes]:
    host, port = server.url.split("//")[1].rstrip("/").split(":")
    headers = dict(req["headers"])
    if req["auth"] == "token":
        headers["Authorization"] = f"token {server.token}"
    elif req["auth"] == "wrong token":
        headers["Authorization"] = f"token {server.token[::-1]}"
    if req["auth"] == "foreign host":
        headers.update({"Authorization": f"token {server.token}", "Host": f"evil.example:{port}"})
    con = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        con.request(req["method"], req["path"], body=req["body"], headers=headers)
        r = con.getresponse()
        data = b"" if r.getheader("Content-Type", "").startswith("text/event-stream") else r.read()
        return r.status, data
    except (BrokenPipeError, ConnectionResetError):  # refused (413) before the whole body was sent
        r = con.getresponse()
        return r.status, r.read()
    finally:
        con.close()


def test_the_api_survives_random_requests(target):
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(req=requests(target.ids))
    def one(req):
        status, body = send(target, req)
        seen[status] = seen.get(status, 0) + 1
        assert status < 500 or body == BOOM, (req, status, body[:500])
        if req["auth"] in ("none", "wrong token", "foreign host"):
            assert status == 403, (req, status)
        if status >= 400 and req["path"].startswith("/api/") and req["method"] != "HEAD":
            doc = json.loads(body)
            message = doc.get("error") or doc.get("detail")
            assert isinstance(message, str) and len(message) <= 300, (req, body[:500])
            assert len(body) <= 8000, (req, len(body))

    seen: dict[int, int] = {}
    one()
    alive = {"method": "GET", "path": "/api/studies", "body": None, "headers": {}, "auth": "token"}
    assert send(target, alive)[0] == 200
    assert {200, 403, 404, 422} <= set(seen) and seen[403] < sum(seen.values()) / 2, seen  # the app was reached
