"""The documentation site in a real browser: Debian's headless Chromium, driven by Playwright, opens every page of
the built site served over HTTP, checks that it loads without a page error or a failed request and that every image
on it loads, and that the search finds a study.

The site is the one ``make docs`` built into ``site/`` (``make test`` builds it first); without one, it is built
here into a temporary folder (``mkdocs build --strict``, a minute or two).
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from attnlab import STUDIES

ROOT = Path(__file__).resolve().parents[2]


def _skip_or_fail(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the docs' browser test: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    built = ROOT / "site"
    if (built / "index.html").exists() and (built / "search" / "search_index.json").exists():
        return built
    if shutil.which("mkdocs", path=str(Path(sys.executable).parent)) is None:
        _skip_or_fail("no built site/ and no mkdocs in this environment: `make docs` builds the site")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run([str(Path(sys.executable).parent / "mkdocs"), "build", "--strict", "-d", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def url(site):
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args) -> None:
        pass


@pytest.fixture(scope="module")
def browser(playwright, chromium_options, tmp_path_factory):
    """Chromium (tests/conftest.py launches every browser test's) with a window of a reader's size."""
    ctx = playwright.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("chromium-profile")),
                                                        **chromium_options, viewport={"width": 1400, "height": 900})
    yield ctx
    ctx.close()


def pages(site: Path) -> list[str]:
    """Every HTML page of the site, as paths relative to its root ('' for the home page)."""
    out = []
    for path in sorted(site.rglob("*.html")):
        rel = path.relative_to(site).as_posix()
        if rel == "404.html" or rel.startswith(("assets/", "search/")):
            continue
        out.append(rel.removesuffix("index.html"))
    return out


LOAD_IMAGES = """async () => {
    const imgs = [...document.images];
    for (const img of imgs) img.loading = "eager";
    await Promise.all(imgs.map(img => img.complete ? null : new Promise(done => {
        img.addEventListener("load", done); img.addEventListener("error", done);
    })));
    return {count: imgs.length, broken: imgs.filter(img => !(img.complete && img.naturalWidth > 0))
                                            .map(img => img.getAttribute("src"))};
}"""


def test_every_page_and_every_image_loads(browser, site, url):
    found = pages(site)
    for study in STUDIES:
        assert f"studies/{study}/" in found, f"no page for study {study}"
    assert any(p.startswith("reference/") for p in found) and any("gallery" in p for p in found)
    page = browser.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    # a request the next navigation cancels (the search worker still loading) is aborted, not failed
    page.on("requestfailed", lambda req: "ERR_ABORTED" not in (req.failure or "")
            and problems.append(f"request failed: {req.url} ({req.failure})"))
    page.on("response", lambda r: r.status >= 400 and problems.append(f"{r.status}: {r.url}"))
    images = 0
    for rel in found:
        response = page.goto(url + rel, wait_until="networkidle")
        assert response is not None and response.ok, f"{rel}: {response and response.status}"
        assert page.title(), f"{rel}: no title"
        state = page.evaluate(LOAD_IMAGES)
        assert not state["broken"], f"{rel}: images that do not load: {state['broken']}"
        images += state["count"]
        assert not problems, f"{rel}: {problems}"
    page.close()
    assert images >= len(STUDIES), f"the gallery's figures are missing: {images} images on the whole site"


def test_search_finds_a_study(browser, url):
    page = browser.new_page()
    page.goto(url, wait_until="networkidle")
    page.click("input.md-search__input")  # the header's search field (a wide window shows it)
    # typed key by key as a reader does: the search reacts to key events (a programmatic fill left it idle in CI)
    page.keyboard.type("clustering heads", delay=30)
    result = page.locator(".md-search-result__item a[href*='studies/clustering']")
    result.first.wait_for(timeout=30_000)
    page.close()


MATHS = """() => {
    const boxes = [...document.querySelectorAll("mjx-container")];
    const glyph = document.querySelector("mjx-c");
    return {count: boxes.length, errors: document.querySelectorAll("mjx-merror").length,
            glyph: glyph ? getComputedStyle(glyph, "::before").content : "",
            height: boxes.length ? boxes[0].getBoundingClientRect().height : 0};
}"""


def test_maths_is_typeset_from_the_sites_own_mathjax(browser, url):
    page = browser.new_page()
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(url + "studies/potts/", wait_until="networkidle")
    page.wait_for_function("document.querySelectorAll('mjx-container').length > 0", timeout=30_000)
    state = page.evaluate(MATHS)
    page.close()
    assert state["count"] >= 5 and state["errors"] == 0, state  # every $$…$$ display of the page, none in error
    assert state["glyph"] not in ("", "none") and state["height"] > 30, state  # glyphs drawn, not empty boxes
    assert all(r.startswith(url) for r in requests), [r for r in requests if not r.startswith(url)]
