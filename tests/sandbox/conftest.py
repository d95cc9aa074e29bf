"""Fixtures of the sandbox tests: a run store holding real runs, the real server started as a user starts it
(``attnlab sandbox --no-browser`` on a free 127.0.0.1 port, read from its printed address), and Debian's Chromium
driven by Playwright.

The server finds the example study's plug-in (``examples/my_study``, study ``toy``) through its entry point, checkpoints
every epoch and publishes live snapshots every 0.25 s, so job tests stop and resume runs quickly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # sandbox_helpers
CHROMIUM = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
from sandbox_helpers import BIG, SMALL, SPEC, Server, Stored, start_server, stop_server  # noqa: E402

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="session")
def stored(tmp_path_factory) -> Stored:
    from attnlab.core.config import resolve
    from attnlab.core.experiment import get
    from attnlab.core.runs import RunStore

    store = RunStore(tmp_path_factory.mktemp("sandbox") / "store")
    ids = {}
    for name, key, values in (("big", "clustering.train", BIG), ("small", "clustering.train", SMALL),
                              ("spec", "specialization.fig1", SPEC), ("walk", "toy.walk", {"steps": 5})):
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
def playwright():
    """Playwright, driving Debian's Chromium (its own browser download does not work here)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the browser tests need playwright (pinned in requirements.lock; pip install playwright)")
    if not Path(CHROMIUM).exists():
        _skip_or_fail(f"the browser tests need Debian's Chromium at {CHROMIUM}: `apt-get install chromium` "
                      "(`make test` installs it when run as root)")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def browser(playwright, tmp_path_factory):
    """Headless Chromium for the functional tests. It bypasses the page's Content-Security-Policy, which forbids
    ``eval``: Playwright's ``wait_for_function`` polls its predicate with it. ``strict_browser`` enforces it."""
    ctx = playwright.chromium.launch_persistent_context(
        str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
        args=CHROMIUM_ARGS, viewport={"width": 1600, "height": 2000}, accept_downloads=True, bypass_csp=True)
    yield ctx
    ctx.close()


@pytest.fixture(scope="session")
def strict_browser(playwright):
    """Headless Chromium as a user runs it: the page's Content-Security-Policy is enforced (wait with
    ``sandbox_helpers.wait_js``, not ``wait_for_function``)."""
    chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
    ctx = chromium.new_context(viewport={"width": 1600, "height": 2000})
    yield ctx
    ctx.close()
    chromium.close()


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests: {reason}")
    pytest.skip(reason)


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
