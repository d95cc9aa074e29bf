"""The JSON API over plain HTTP against the real server: studies and forms, validation by the CLI's config models,
runs, frames and series of stored runs, exports through the offline renderer, and bad requests of every kind
(each answered with one line naming the field, the value and what is allowed, the server serving on)."""

from __future__ import annotations

import base64
import io
import json
import sqlite3

import numpy as np
import pytest
from PIL import Image
from sandbox_helpers import SMALL

from attnlab.core.config import resolve
from attnlab.core.registry import get


def index_ids(server) -> set[str]:
    with sqlite3.connect(server.root / "index.sqlite") as con:
        return {r[0] for r in con.execute("select id from runs")}


def test_studies_and_forms(server):
    studies = {s["study"]: s for s in server.get("api/studies")["studies"]}
    assert {"clustering", "specialization", "knobs", "toy"} <= set(studies)
    startable = {e["key"] for s in studies.values() for e in s["experiments"] if e["startable"]}
    assert {"clustering.train", "specialization.fig1", "knobs.walk", "toy.walk"} <= startable
    form = {f["name"]: f for f in server.get("api/form?experiment=clustering.train&scale=quick")["fields"]}
    assert {"p", "k", "N", "d", "h", "norm", "lr", "batch_size", "seed", "epochs"} <= set(form)
    assert form["k"]["default"] == 3 and form["epochs"]["default"] == 300  # the quick scale of TrainRunConfig
    assert form["norm"]["kind"] == "choice" and "rmsnorm" in form["norm"]["choices"]
    assert form["h"]["default"] is None and "≥ 1" in form["k"]["hint"]
    paper = {f["name"]: f for f in server.get("api/form?experiment=clustering.train&scale=paper")["fields"]}
    assert paper["k"]["default"] == 5


def test_validation_uses_the_cli_config_model(server):
    ok = server.call("POST", "api/validate", {"experiment": "clustering.train", "config": {"k": "4", "lr": "0.01"}})[1]
    exp = get("clustering.train")
    assert ok["ok"] and ok["run_id"] == resolve(exp.config, "quick", {"k": 4, "lr": 0.01}).hash(exp.key)
    bad = server.call("POST", "api/validate", {"experiment": "clustering.train",
                                               "config": {"k": "-1", "lr": "0", "norm": "cube"}})[1]
    by_field = {e["field"]: e["message"] for e in bad["errors"]}
    assert not bad["ok"] and set(by_field) == {"k", "lr", "norm"}
    assert by_field["k"] == "key 'k' = -1: Input should be greater than or equal to 1"
    assert "'sphere'" in by_field["norm"] and "'cube'" in by_field["norm"]
    cross = server.call("POST", "api/validate", {"experiment": "clustering.train", "config": {"k": "20"}})[1]
    assert cross["errors"] == [{"field": "k", "value": 20, "message": "key 'k' = 20: need 1 ≤ k ≤ N = 12"}]
    unknown = server.call("POST", "api/validate", {"experiment": "clustering.train", "config": {"kk": 1}})[1]
    assert unknown["errors"][0]["field"] == "kk" and "allowed keys" in unknown["errors"][0]["message"]


def test_an_invalid_start_writes_nothing(server):
    before = index_ids(server)
    runs_before = {p.name for p in (server.root / "runs" / "clustering.train").iterdir()}
    status, body = server.call("POST", "api/runs", {"experiment": "clustering.train", "config": {"batch_size": "64",
                                                                                                 "n_train": "16"}})
    assert status == 422
    assert body["error"] == "key 'batch_size' = 64: larger than n_train = 16"
    assert body["errors"][0]["field"] == "batch_size"
    assert index_ids(server) == before
    assert {p.name for p in (server.root / "runs" / "clustering.train").iterdir()} == runs_before
    status, body = server.call("POST", "api/runs", {"experiment": "clustering.fig5", "config": {}})
    assert status == 422 and "cannot be started from the sandbox" in body["error"]


def test_a_finished_run_is_reused_not_restarted(server, stored):
    config = {k: str(v) for k, v in SMALL.items()}  # as the page sends them: text, parsed like --set values
    status, body = server.call("POST", "api/runs", {"experiment": "clustering.train", "config": config})
    assert (status, body["run_id"], body["reused"]) == (200, stored.small, True)


def test_runs_list_and_one_run(server, stored):
    runs = {r["id"]: r for r in server.get("api/runs")["runs"]}
    assert {stored.big, stored.small, stored.spec} <= set(runs)
    assert runs[stored.small]["status"] == "done" and "n_seeds=2" in runs[stored.small]["label"]
    meta = server.get(f"api/runs/{stored.big}")
    view = meta["view"]
    assert meta["status"] == "done" and not view["live"] and view["time_label"] == "epoch"
    assert len(view["times"]) == 1001 and view["times"][:3] == [0, 1, 2]
    kinds = {p["name"]: p["kind"] for p in view["panels"]}
    assert kinds["xi"] == "frame" and kinds["loss"] == "series"
    assert server.get(f"api/runs/{stored.small}")["view"]["variants"] == ["seed 1", "seed 2"]


def test_frames_by_range_and_series(server, stored):
    body = server.get(f"api/runs/{stored.big}/frames?start=10&stop=40&every=10&panels=xi,levels,attention")
    assert [f["index"] for f in body["frames"]] == [10, 20, 30]
    assert [f["time"] for f in body["frames"]] == [10, 20, 30]
    fig = body["frames"][0]["figures"]["xi"]
    pts = fig["data"][0]
    assert len(pts["x"]) == len(pts["y"]) == 32 and all("class y" in h for h in pts["hovertext"])
    png = body["frames"][0]["figures"]["levels"]["data"][0]["source"]
    img = Image.open(io.BytesIO(base64.b64decode(png.split(",", 1)[1])))
    assert img.size == (60, 60)
    attn = np.array(body["frames"][0]["figures"]["attention"]["data"][0]["z"])
    assert attn.shape == (12, 12) and np.allclose(attn.sum(1), 1, atol=1e-3)
    stop_clipped = server.get(f"api/runs/{stored.big}/frames?start=998&stop=5000&panels=xi")
    assert [f["index"] for f in stop_clipped["frames"]] == [998, 999, 1000]
    series = server.get(f"api/runs/{stored.small}/series?variant=1")["figures"]
    assert set(series) == {"loss"} or {"loss", "grads", "min_norm"} <= set(series)
    loss = {t["name"]: t for t in series["loss"]["data"]}
    assert len(loss["train loss"]["x"]) == 31  # epochs 0..30


@pytest.mark.parametrize(("path", "status", "needle"), [
    ("api/runs/zzz", 422, "'run_id' = 'zzz': String should match pattern"),
    ("api/runs/0123456789abcdef", 404, "no run 0123456789abcdef"),
    ("api/runs/{big}/frames?start=5000", 422, "start = 5000: the run has 1001 frames (allowed 0..1000)"),
    ("api/runs/{big}/frames?start=-1", 422, "'start' = '-1': Input should be greater than or equal to 0"),
    ("api/runs/{big}/frames?start=0&stop=500", 422, "500 frames requested: at most 200 per request"),
    ("api/runs/{big}/frames?panels=loss", 422, "panel 'loss' is not a frame panel of this run; allowed: tokens"),
    ("api/runs/{big}/frames?panels=../../etc", 422, "'panels' = '../../etc': String should match pattern"),
    ("api/runs/{small}/series?variant=2", 422, "variant = 2: allowed 0..1 (seed 1, seed 2)"),
    ("api/form?experiment=clustering.nope", 422, "unknown experiment 'clustering.nope'"),
    ("api/form?experiment=clustering.train&scale=huge", 422, "'scale' = 'huge': Input should be 'quick' or 'paper'"),
    ("static/..%2F..%2Fapi.py", 404, ""),
    ("static/app.py", 404, "no static file 'app.py'"),
])
def test_bad_requests_get_one_line(server, stored, path, status, needle):
    got, body = server.call("GET", path.format(big=stored.big, small=stored.small))
    assert got == status, body
    if needle:
        assert needle in body["error"] and "\n" not in body["error"]


def test_malformed_posts_and_the_server_survives(server, stored):
    for payload, needle in ((b"{bad json", "not valid JSON"), (b"[1, 2]", "Input should be a valid dictionary"),
                            (json.dumps({"experiment": "clustering.train", "extra": 1}).encode(),
                             "'extra' = 1: Extra inputs are not permitted"),
                            (json.dumps({"experiment": "x; rm -rf /"}).encode(), "'experiment' = 'x; rm -rf /'")):
        status, body = server.call("POST", "api/runs", payload)
        assert status == 422 and needle in body["error"], body
    status, body = server.call("POST", f"api/runs/{stored.big}/launch")
    assert status == 422 and "'action' = 'launch'" in body["error"]
    status, body = server.call("POST", f"api/runs/{stored.big}/stop")
    assert status == 409 and "no active sandbox job" in body["error"]
    assert server.call("GET", "api/studies")[0] == 200  # still serving


def test_a_failing_panel_is_a_500_line_and_the_server_goes_on(server, stored):
    run_id = stored.walk  # a run of the test study, shown by its plug-in (tests/knobs_study)
    status, body = server.call("GET", f"api/runs/{run_id}/frames?panels=boom")
    assert status == 500 and body["error"] == "internal error: RuntimeError: the boom panel always fails"
    frames = server.get(f"api/runs/{run_id}/frames?start=4&panels=walk")["frames"]
    assert frames[0]["figures"]["walk"]["data"][0]["x"] and frames[0]["time"] == 5
    assert server.call("GET", "api/studies")[0] == 200


def test_exports_through_the_offline_renderer(server, stored):
    status, gif = server.call("POST", f"api/runs/{stored.small}/export",
                              {"format": "gif", "start": 0, "stop": 30, "every": 10, "panels": ["xi", "loss"]})
    assert status == 200, gif
    img = Image.open(io.BytesIO(gif))
    assert img.format == "GIF" and img.n_frames == 3
    status, png = server.call("POST", f"api/runs/{stored.small}/export", {"format": "png", "start": 30, "variant": 1})
    assert status == 200 and Image.open(io.BytesIO(png)).format == "PNG"
    status, body = server.call("POST", f"api/runs/{stored.big}/export", {"format": "gif", "start": 0})
    assert status == 422 and body["error"] == "1001 frames: an export holds at most 300 (raise 'every')"
    status, body = server.call("POST", f"api/runs/{stored.spec}/export", {"format": "gif"})
    assert status == 422 and body["error"] == "export to .gif is not available for this study's runs"
    status, body = server.call("POST", f"api/runs/{stored.small}/export", {"format": "webm"})
    assert status == 422 and "'format' = 'webm'" in body["error"]


def test_the_page_and_plotly_come_from_the_package(server):
    status, html = server.call("GET", "")
    assert status == 200 and b"/static/plotly.min.js" in html and b"cdn" not in html.lower()
    status, js = server.call("GET", "static/plotly.min.js")
    assert status == 200 and js.startswith(b"/**\n* plotly.js v") and len(js) > 1_000_000
    for name in ("app.js", "viewer.js", "form.js", "api.js", "style.css"):
        assert server.call("GET", f"static/{name}")[0] == 200
