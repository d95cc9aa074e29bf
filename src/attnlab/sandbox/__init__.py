"""The live visual sandbox: a local web app to start, watch, scrub and compare runs (paper 4 Sec. 4.1, issue 5).

``attnlab sandbox`` serves it on 127.0.0.1 (``server.serve``); the ASGI app and its JSON API live in ``api``, the
training jobs in ``jobs``, run-store access in ``store``, the start form in ``forms``; studies contribute panels
through ``plugin`` (each study's ``<study>.views``: the sandbox imports no study); the page is ``static/``.
Needs the ``sandbox`` extra (FastAPI, uvicorn, plotly); ``require()`` says so in one line when it is missing.
"""

from __future__ import annotations

import importlib.util

from attnlab.core.config import ConfigError

EXTRA = ("fastapi", "uvicorn", "plotly")


def require() -> None:
    """Raise ``ConfigError`` naming the extra when one of its packages is missing."""
    missing = [m for m in EXTRA if importlib.util.find_spec(m) is None]
    if missing:
        raise ConfigError(f"the sandbox needs the 'sandbox' extra: pip install 'attnlab[sandbox]' "
                          f"(missing: {', '.join(missing)})")
