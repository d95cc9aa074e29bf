"""The sandbox API's messages: request models, the JSON response, and errors of one clipped line each.

Whatever a request holds, an error answer names the field, the value (at most 80 characters of it) and what is
allowed, in at most 300 characters (``security.clip``); a validation answer lists at most 20 field errors.
"""

from __future__ import annotations

import sys
import traceback
from typing import Annotated, Any, Literal

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from pydantic import BaseModel, ConfigDict, Field

from attnlab.core.config import ConfigError
from attnlab.sandbox.forms import FieldError
from attnlab.sandbox.jobs import QueueFull
from attnlab.sandbox.plugin import PANEL_NAME
from attnlab.sandbox.security import clip
from attnlab.sandbox.store import NotFound
from attnlab.sandbox.traces import to_json

MAX_ERRORS = 20  # field errors listed in one answer
EXPERIMENT = r"^[A-Za-z0-9_]+\.[A-Za-z0-9_]+$"  # study.name, as registered (signal.figC2: case matters)
Value = str | int | float | bool | None | list[str | int | float | bool | None]


class Json(Response):
    """JSON with numpy arrays, NaN as null, floats to 5 significant digits (``traces.to_json``)."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return to_json(content).encode()


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StartRequest(Strict):
    experiment: str = Field(pattern=EXPERIMENT, max_length=100)
    scale: Literal["quick", "paper"] = "quick"
    config: dict[Annotated[str, Field(max_length=64)], Value] = Field(default_factory=dict, max_length=200)


class BulkRequest(Strict):
    action: Literal["stop", "delete"]
    ids: list[Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")]] = Field(max_length=1000)


class ExportRequest(Strict):
    format: Literal["png", "gif", "mp4"]
    start: int = Field(0, ge=0)
    stop: int | None = Field(None, ge=1, description="exclusive; default start + 1 (png) or the last frame")
    every: int = Field(1, ge=1, le=10_000)
    variant: int = Field(0, ge=0)
    panels: list[Annotated[str, Field(pattern=rf"^{PANEL_NAME}$")]] = Field(default_factory=list, max_length=64)
    fps: float = Field(5.0, gt=0, le=60)


def one_line_request_error(exc: RequestValidationError) -> str:
    errs = exc.errors()
    err = errs[0]
    if err.get("type") == "json_invalid":
        return f"the request body is not valid JSON ({err.get('ctx', {}).get('error', 'decode error')})"
    loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
    where = clip(".".join(loc), 80) or "request"
    value = clip(repr(err.get("input")), 80)
    text = f"{where!r} = {value}: {err.get('msg', 'invalid')}" if loc else str(err.get("msg", "invalid request"))
    more = f" (and {len(errs) - 1} more problem(s))" if len(errs) > 1 else ""
    return clip(text + more)


def error(message: Any, status: int, **extra: Any) -> Json:
    return Json({"error": clip(str(message)), **extra}, status_code=status)


def field_errors(errors: list[FieldError]) -> list[dict[str, Any]]:
    """Field errors for the page, each message and value clipped (the input is never echoed at length)."""
    out = []
    for e in errors[:MAX_ERRORS]:
        value = e.value if isinstance(e.value, int | float | bool | None) or len(repr(e.value)) <= 80 else \
            clip(repr(e.value), 80)
        out.append({"field": clip(str(e.field), 80), "value": value, "message": clip(e.message)})
    return out


def install_error_handlers(app: FastAPI) -> None:
    """One JSON line per error, with the status its kind calls for; the server keeps serving."""

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> Response:
        return error(one_line_request_error(exc), 422)

    @app.exception_handler(ConfigError)
    async def bad_config(request: Request, exc: ConfigError) -> Response:
        return error(exc, 422)

    @app.exception_handler(NotFound)
    async def not_found(request: Request, exc: NotFound) -> Response:
        return error(exc, 404)

    @app.exception_handler(LookupError)
    async def conflict(request: Request, exc: LookupError) -> Response:
        return error(str(exc).strip("'\""), 409)

    @app.exception_handler(QueueFull)
    async def queue_full(request: Request, exc: QueueFull) -> Response:
        response = error(exc, 429)
        response.headers["Retry-After"] = "10"
        return response

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> Response:
        traceback.print_exception(exc, file=sys.stderr)
        return error(f"internal error: {type(exc).__name__}: {exc}", 500)
