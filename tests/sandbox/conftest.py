"""Fixtures of the sandbox tests: a run store holding real runs, the real server started as a user starts it
(``attnlab sandbox --no-browser`` on a free 127.0.0.1 port, read from its printed address), and Debian's Chromium
driven by Playwright.

The server finds the test study's plug-in (``tests/knobs_study``, study ``knobs``) through its entry point, checkpoints
every epoch and publishes live snapshots every 0.25 s, so job tests stop and resume runs quickly.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # sandbox_helpers
from sandbox_helpers import BIG, SMALL, SPEC, Server, Stored, start_server, stop_server  # noqa: E402


@pytest.fixture(scope="session")
def stored(tmp_path_factory) -> Stored:
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    store = RunStore(tmp_path_factory.mktemp("sandbox") / "store")
    ids = {}
    for name, key, values in (("big", "clustering.train", BIG), ("small", "clustering.train", SMALL),
                              ("spec", "specialization.fig1", SPEC), ("walk", "knobs.walk", {"steps": 5})):
        exp = get(key)
        ids[name] = store.run(exp, resolve(exp.config, "quick", values)).run_id
    return Stored(store.root, **ids)


@pytest.fixture(scope="session")
def server(stored) -> Iterator[Server]:
    srv = start_server(stored.root)
    yield srv
    code = stop_server(srv)
    assert code == 0, srv.output()[-2000:]


# -- the browser ----------------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def browser(playwright, chromium_options, tmp_path_factory):
    """Headless Chromium for the functional tests. It bypasses the page's Content-Security-Policy, which forbids
    ``eval``: Playwright's ``wait_for_function`` polls its predicate with it. ``strict_browser`` enforces it."""
    ctx = playwright.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")), **chromium_options, viewport={"width": 1600, "height": 2000},
        accept_downloads=True, bypass_csp=True)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def strict_browser(playwright, chromium_options):
    """Headless Chromium as a user runs it: the page's Content-Security-Policy is enforced (wait with
    ``sandbox_helpers.wait_js``, not ``wait_for_function``)."""
    chromium = playwright.chromium.launch(**chromium_options)
    ctx = chromium.new_context(viewport={"width": 1600, "height": 2000})
    yield ctx
    ctx.close()
    chromium.close()


@pytest.fixture
def page(browser, server):
    """A fresh page with its console errors collected (a test fails on any uncaught page error)."""
    pg = browser.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.errors = errors
    yield pg
    pg.close()
    assert not errors, errors
