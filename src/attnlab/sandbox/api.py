"""The sandbox's ASGI app (FastAPI): JSON API, server-sent progress events and the static front end.

Endpoints (every input validated by a pydantic model or the experiment's own config model; errors are JSON
``{"error": one line naming the field, the value and what is allowed}``, never longer than a few hundred characters
whatever was sent). A start is refused with 429 when the job queue is full and with 422 when its experiment's memory
model says it needs more than the machine has free (with what the queued runs will need). ``security.Guard`` (token,
Host, Origin, body size) stands in front of all of it.

    GET  /api/studies                    plug-ins and the experiments they open / start
    GET  /api/form?experiment=&scale=    the start form's fields with their defaults at that scale
    POST /api/validate                   {experiment, scale, config} → run id or every problem by field
    GET  /api/runs                       the run store's runs, with the sandbox's job states
    POST /api/runs                       start a run (queued when max_jobs are busy; a finished one is reused)
    GET  /api/runs/{id}                  one run: status, config, and its view (times, variants, panels)
    GET  /api/runs/{id}/frames?start=&stop=&every=&variant=&panels=   frame figures of a snapshot range
    GET  /api/runs/{id}/series?variant=&panels=                       series figures (time on x)
    POST /api/runs/{id}/stop | pause | continue | resume              job control (resume: restart from checkpoint)
    DELETE /api/runs/{id}                remove a run that is not active (its directory and index row)
    POST /api/runs/bulk                  {action: stop | delete, ids}: one result per run
    POST /api/runs/{id}/export           PNG / GIF / MP4 of a frame range through the study's offline renderer
    GET  /api/events                     SSE: the runs list and the version of every live run, on change
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import tempfile
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Literal

from fastapi import Body, FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse, Response, StreamingResponse
from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool

from attnlab.core.config import SCALES, ConfigError, resolve_from
from attnlab.core.plotting import plotly_js as core_plotly_js
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms
from attnlab.sandbox.messages import (
    EXPERIMENT,
    BulkRequest,
    ExportRequest,
    Json,
    StartRequest,
    error,
    field_errors,
    install_error_handlers,
)
from attnlab.sandbox.plugin import PANEL_NAME, plugins
from attnlab.sandbox.security import clip
from attnlab.sandbox.service import Sandbox, check_frames, check_variant
from attnlab.sandbox.store import NotFound, check_names
from attnlab.sandbox.traces import to_json

log = logging.getLogger(__name__)
STATIC = Path(__file__).parent / "static"
MAX_FRAMES_PER_REQUEST = 200
MAX_EXPORT_FRAMES = 300
PANEL_LIST = rf"^({PANEL_NAME}(,{PANEL_NAME})*)?$"  # comma-separated panel names
Panels = Annotated[str, Query(pattern=PANEL_LIST, max_length=2000)]
RunId = Annotated[str, PathParam(pattern=r"^[0-9a-f]{16}$", description="16 hex digits")]


def create_app(store: RunStore, max_jobs: int = 1, max_queued: int = 16) -> FastAPI:
    """The app over ``store``; ``max_jobs`` training processes at once, at most ``max_queued`` more waiting."""
    sb = Sandbox(store, max_jobs, max_queued)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        app.state.closing = True
        await run_in_threadpool(sb.jobs.shutdown)

    app = FastAPI(title="attnlab sandbox", lifespan=lifespan, default_response_class=Json, docs_url=None,
                  redoc_url=None)
    app.state.closing = False
    app.state.server = None  # set by ``server.serve`` so that the event stream ends when uvicorn stops
    app.state.reader, app.state.jobs = sb.reader, sb.jobs
    install_error_handlers(app)
    for add in (add_study_routes, add_run_routes, add_view_routes, add_control_routes, add_event_routes,
                add_page_routes):
        add(app, sb)
    return app


def add_study_routes(app: FastAPI, sb: Sandbox) -> None:
    """GET /api/studies, GET /api/form, POST /api/validate."""

    @app.get("/api/studies")
    def studies() -> Response:
        out = []
        for study, plugin in plugins().items():
            exps = []
            for key in plugin.experiments:
                try:
                    e = get(key)
                except ConfigError:
                    continue
                exps.append({"key": key, "title": e.title, "ref": e.ref, "startable": key in plugin.forms})
            out.append({"study": study, "experiments": exps})
        return Json({"studies": out, "scales": list(SCALES), "max_jobs": sb.jobs.max_jobs})

    @app.get("/api/form")
    def form(experiment: Annotated[str, Query(pattern=EXPERIMENT, max_length=100)],
             scale: Literal["quick", "paper"] = "quick") -> Response:
        exp, plugin = sb.startable(experiment)
        return Json({"experiment": exp.key, "scale": scale, "title": exp.title,
                     "fields": forms.fields(exp, scale, plugin.forms[exp.key])})

    @app.post("/api/validate")
    def validate(req: StartRequest) -> Response:
        exp, config, errors, memory = sb.validated(req)
        if config is None:
            return Json({"ok": False, "errors": field_errors(errors)})
        run_id = config.hash(exp.key)
        row = sb.stored(run_id)
        return Json({"ok": True, "run_id": run_id, "existing": row["status"] if row else None, "errors": [],
                     "memory": memory})


def add_run_routes(app: FastAPI, sb: Sandbox) -> None:
    """GET /api/runs, POST /api/runs (start), GET /api/runs/{id}."""

    @app.get("/api/runs")
    def runs() -> Response:
        return Json({"runs": [sb.job_view(r) for r in sb.reader.rows()], "max_jobs": sb.jobs.max_jobs})

    @app.post("/api/runs")
    def start(req: StartRequest) -> Response:
        exp, config, errors, memory = sb.validated(req)
        if config is None:
            return error(errors[0].message, 422, errors=field_errors(errors))
        run_id = config.hash(exp.key)
        row = sb.stored(run_id)
        if row and row["status"] == "done" and sb.store.reusable(row) is not None:  # a corrupt run is recomputed
            return Json({"run_id": run_id, "status": "done", "reused": True}, status_code=200)
        job = sb.jobs.submit(exp, config, need=(memory or {}).get("need") or 0)
        return Json({"run_id": run_id, "status": job.status, "reused": False,
                     "queue_position": sb.jobs.position(run_id)}, status_code=202)

    @app.get("/api/runs/{run_id}")
    def run(run_id: RunId) -> Response:
        row = sb.job_view(sb.reader.row(run_id))
        out = {"id": run_id, "experiment": row["experiment"], "status": row["status"], "error": row.get("error"),
               "config": json.loads(row["config"]), "seconds": row["seconds"], "pid": row.get("pid"),
               "queue_position": row.get("queue_position"), "view": None, "reason": None}
        try:
            opened = sb.reader.open(run_id)
            out["view"] = {**opened.view.describe(), "live": opened.live, "version": list(opened.version)}
        except (NotFound, ConfigError) as exc:
            out["reason"] = str(exc)
        return Json(out)


def add_view_routes(app: FastAPI, sb: Sandbox) -> None:
    """GET /api/runs/{id}/frames and /series (Plotly figures), POST /api/runs/{id}/export (a file)."""

    @app.get("/api/runs/{run_id}/frames")
    def frames(run_id: RunId, start: Annotated[int, Query(ge=0)] = 0, stop: Annotated[int | None, Query(ge=1)] = None,
               every: Annotated[int, Query(ge=1, le=100_000)] = 1, variant: Annotated[int, Query(ge=0)] = 0,
               panels: Panels = "") -> Response:
        opened = sb.reader.open(run_id)
        view = opened.view
        n = len(view.times)
        check_frames(view, start, variant)
        stop = start + 1 if stop is None else min(stop, n)  # one frame unless a range is asked for
        if stop <= start:
            raise ConfigError(f"stop = {stop}: must be greater than start = {start}")
        indices = list(range(start, stop, every))
        if len(indices) > MAX_FRAMES_PER_REQUEST:
            raise ConfigError(f"{len(indices)} frames requested: at most {MAX_FRAMES_PER_REQUEST} per request")
        names = check_names(view, [p for p in panels.split(",") if p], "frame")
        return Json({"run_id": run_id, "n_frames": n, "live": opened.live,
                     "frames": sb.reader.frames(opened, indices, variant, names)})

    @app.get("/api/runs/{run_id}/series")
    def series(run_id: RunId, variant: Annotated[int, Query(ge=0)] = 0, panels: Panels = "") -> Response:
        opened = sb.reader.open(run_id)
        view = opened.view
        check_variant(view, variant)
        names = check_names(view, [p for p in panels.split(",") if p], "series")
        return Json({"run_id": run_id, "n_frames": len(view.times), "live": opened.live,
                     "figures": view.series(variant, names)})

    @app.post("/api/runs/{run_id}/export")
    def export(run_id: RunId, req: Annotated[ExportRequest, Body()]) -> Response:
        view = sb.reader.open(run_id).view
        n = len(view.times)
        check_frames(view, req.start, req.variant)
        stop = min(req.stop if req.stop is not None else (req.start + 1 if req.format == "png" else n), n)
        indices = list(range(req.start, max(stop, req.start + 1), req.every))
        if len(indices) > MAX_EXPORT_FRAMES:
            raise ConfigError(f"{len(indices)} frames: an export holds at most {MAX_EXPORT_FRAMES} (raise 'every')")
        unknown = sorted(set(req.panels) - {p.name for p in view.panels})
        if unknown:
            raise ConfigError(f"panel {unknown[0]!r} is not a panel of this run; allowed: "
                              f"{', '.join(p.name for p in view.panels)}")
        names = [p.name for p in view.panels if (p.name in req.panels if req.panels else p.default)]
        tmp = Path(tempfile.mkdtemp(prefix="attnlab-sandbox-export-"))
        name = f"{run_id}-{indices[0]}-{indices[-1]}.{req.format}"
        try:
            with sb.render_lock:  # matplotlib's pyplot state is not thread-safe: one export at a time
                path = view.render(tmp / name, indices, req.variant, names, req.fps)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return FileResponse(path, filename=name, media_type={"png": "image/png", "gif": "image/gif",
                                                             "mp4": "video/mp4"}[req.format],
                            background=BackgroundTask(shutil.rmtree, tmp, ignore_errors=True))


def add_control_routes(app: FastAPI, sb: Sandbox) -> None:
    """POST /api/runs/{id}/{stop|pause|continue|resume}, DELETE /api/runs/{id}, POST /api/runs/bulk."""

    @app.post("/api/runs/{run_id}/{action}")
    def control(run_id: RunId, action: Literal["stop", "pause", "continue", "resume"]) -> Response:
        if action == "resume":
            row = sb.reader.row(run_id)
            if row["status"] not in ("interrupted", "failed"):
                raise LookupError(f"run {run_id} is {row['status']}; only an interrupted or failed run resumes")
            exp, _ = sb.startable(row["experiment"])
            config = resolve_from(exp.config, json.loads(row["config"]))
            job = sb.jobs.submit(exp, config, need=sb.need_of(exp, config)["need"] or 0)
        else:
            job = {"stop": sb.jobs.stop, "pause": sb.jobs.pause, "continue": sb.jobs.cont}[action](run_id)
        return Json({"run_id": run_id, **job.to_json()})

    @app.delete("/api/runs/{run_id}")
    def delete(run_id: RunId) -> Response:
        return Json(sb.delete(run_id))

    @app.post("/api/runs/bulk")
    def bulk(req: BulkRequest) -> Response:
        results = []
        for run_id in dict.fromkeys(req.ids):  # each id once, in order
            try:
                if req.action == "stop":
                    results.append({"run_id": run_id, "ok": True, "status": sb.jobs.stop(run_id).status})
                else:
                    results.append({"run_id": run_id, "ok": True, **sb.delete(run_id)})
            except (LookupError, ConfigError) as exc:
                results.append({"run_id": run_id, "ok": False, "error": clip(str(exc).strip("'\""))})
        return Json({"action": req.action, "results": results, "ok": sum(r["ok"] for r in results),
                     "failed": sum(not r["ok"] for r in results)})


def add_event_routes(app: FastAPI, sb: Sandbox) -> None:
    """GET /api/events: server-sent events with the runs list whenever it or a live snapshot changes."""

    def closing() -> bool:
        server = app.state.server
        return app.state.closing or (server is not None and server.should_exit)

    @app.get("/api/events")
    async def events(request: Request) -> StreamingResponse:
        async def stream():
            last, quiet = None, 0
            yield "retry: 1000\n\n"
            while not closing():
                try:
                    text = to_json(await run_in_threadpool(sb.state))
                except Exception:  # one bad read (a run dir mid-rename) must not end the stream
                    log.exception("/api/events: reading the sandbox state failed; retrying on the next tick")
                    text = last
                if text != last:
                    last, quiet = text, 0
                    yield f"event: state\ndata: {text}\n\n"
                elif quiet >= 30:
                    quiet = 0
                    yield ": keep-alive\n\n"
                if await request.is_disconnected():
                    break
                await asyncio.sleep(0.3)
                quiet += 1

        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


def add_page_routes(app: FastAPI, sb: Sandbox) -> None:
    """GET / (the page) and GET /static/{name} (a fixed set of packaged files, plotly.min.js among them)."""
    files = {p.name: p for p in STATIC.iterdir() if p.is_file()}
    files["plotly.min.js"] = plotly_js()

    @app.get("/", response_class=FileResponse)
    def index() -> FileResponse:
        return FileResponse(files["index.html"], headers={"Cache-Control": "no-cache"})

    @app.get("/static/{name}")
    def static(name: Annotated[str, PathParam(pattern=r"^[a-z0-9_.-]+$", max_length=64)]) -> FileResponse:
        if name not in files:  # a fixed set of packaged files: the name never becomes a path
            raise NotFound(f"no static file {name!r}")
        return FileResponse(files[name], headers={"Cache-Control": "max-age=3600"})


def plotly_js() -> Path:
    """plotly.min.js as shipped inside the installed ``plotly`` Python package (no CDN, no download)."""
    return core_plotly_js("the sandbox")
