"""The sandbox in a real browser (Debian's headless Chromium driven by Playwright) against the real server: the form
shows errors and starts nothing, a run started from the page updates its ξ panel live and stops resumably, the slider
scrubs a 1000-snapshot run, the loss curve jumps on a click, hovering a sentence shows its class and probability, panels
toggle, the play button plays the frames, two runs stand side by side, the plots on screen are not empty, the view
exports as PNG, the specialization study draws its panels, and the canvas renderer draws every frame panel where Plotly
would.

First paint and scrub redraw times are measured here and printed (``-s``), and written as JSON to
``$ATTNLAB_SANDBOX_TIMINGS`` when it is set; they are never asserted.
"""

from __future__ import annotations

import io
import json
import os
import statistics
import time

from PIL import Image
from sandbox_helpers import wait_for


def open_page(page, server, query: str = "") -> None:
    page.goto(server.page_url(query))
    page.wait_for_function("window.sandbox && window.sandbox.stats.ready", timeout=120_000)


def choose(page, experiment: str) -> None:
    """Pick an experiment in the start form and wait until its own fields replace the previous ones."""
    page.select_option("#experiment", experiment)
    page.wait_for_function(f"document.getElementById('form').dataset.loaded.startsWith('{experiment}@')")


def drawn(page, pane: str, panel: str) -> int | None:
    value = page.evaluate(f"(document.getElementById('{pane}-{panel}') || {{dataset: {{}}}}).dataset.index")
    return None if value is None else int(value)


def wait_drawn(page, pane: str, panel: str, index: int, timeout: float = 60_000) -> None:
    try:
        page.wait_for_function(f"(document.getElementById('{pane}-{panel}') || {{dataset: {{}}}}).dataset.index === "
                               f"'{index}'", timeout=timeout)
    except Exception as exc:
        state = page.evaluate("window.sandbox.app.viewers.map(v => ({pane: v.pane, run: v.runId, target: v.target, "
                              "drawn: v.drawn, notes: v.notes.textContent, onscreen: [...v.onscreen], "
                              "errors: window.sandbox.stats.errors}))")
        raise AssertionError(f"{pane}-{panel} never showed frame {index}: {state}") from exc


def plot_pixel(page, div_id: str, x: float, y: float | None = None) -> tuple[float, float]:
    """Page coordinates of data point (x, y) in a plot div, drawn by Plotly or by the canvas renderer (y None: the
    middle of the plot area)."""
    return tuple(page.evaluate("""([id, x, y]) => {
        const div = document.getElementById(id), r = div.getBoundingClientRect(), c = div._canvasplot;
        if (c) return [r.left + c.xa.d2p(x), r.top + (y === null ? c.box.y + c.box.h / 2 : c.ya.d2p(y))];
        const xa = div._fullLayout.xaxis, ya = div._fullLayout.yaxis;
        return [r.left + xa._offset + xa.l2p(x), r.top + ya._offset + (y === null ? ya._length / 2 : ya.l2p(y))];
    }""", [div_id, x, y]))


def test_the_form_shows_errors_next_to_fields_and_starts_nothing(page, server):
    open_page(page, server)
    choose(page, "clustering.train")
    before = {r["id"] for r in server.get("api/runs")["runs"]}
    page.fill("#field-k", "20")
    page.wait_for_function("document.getElementById('error-k').textContent === 'key \\'k\\' = 20: need 1 ≤ k ≤ N = 12'")
    assert page.locator("#start-run").is_disabled()
    assert page.locator(".field[data-field=k]").get_attribute("class") == "field invalid"
    page.fill("#field-lr", "-3")
    page.evaluate("window.sandbox.app.form.start()")  # a start that beats the validation: the server refuses it
    page.wait_for_function("document.getElementById('error-lr').textContent.includes('greater than 0')")
    assert {r["id"] for r in server.get("api/runs")["runs"]} == before  # nothing started, nothing written
    page.fill("#field-lr", "0.003")  # the field errors fixed, the model's cross-field check speaks again
    page.wait_for_function("document.getElementById('error-k').textContent.includes('need 1 ≤ k ≤ N = 12') && "
                           "document.getElementById('error-lr').textContent === ''")
    page.fill("#field-k", "3")
    page.wait_for_function("document.getElementById('error-k').textContent === '' && "
                           "!document.getElementById('start-run').disabled")


def test_a_run_started_from_the_page_updates_live_and_stops_resumably(page, server):
    open_page(page, server)
    choose(page, "clustering.train")
    for name, value in {"n_train": "64", "batch_size": "32", "epochs": "3000", "seed": "7"}.items():  # stopped early
        page.fill(f"#field-{name}", value)
    page.wait_for_function("document.getElementById('start-note').textContent.includes('(new)')")
    page.click("#start-run")
    viewer = page.locator(".viewer[data-pane=A]")
    run_id = wait_for(lambda: viewer.get_attribute("data-run"), timeout=30, what="the viewer to open the run")
    seen: dict[int, list[float]] = {}
    deadline = time.monotonic() + 240
    while len(seen) < 3 and time.monotonic() < deadline:  # the drawn frame and its ξ while the run trains
        state = page.evaluate("""() => {
            const div = document.getElementById('A-xi'), badge = document.querySelector('.viewer .vstatus');
            if (!div || !div.data) return [badge.textContent, null, null];
            return [badge.textContent, div.dataset.index, div.data[0].x.slice(0, 4)];
        }""")
        if state[0] == "running" and state[1] is not None:
            seen.setdefault(int(state[1]), state[2])
        time.sleep(0.2)
    assert len(seen) >= 3, f"the ξ panel showed frames {sorted(seen)} while training"  # first frame + 2 updates
    assert len({tuple(x) for x in seen.values()}) >= 3  # and the points moved
    assert server.get(f"api/runs/{run_id}")["status"] == "running"
    viewer.locator("button.control.stop").click()
    page.wait_for_function("document.querySelector('.viewer .vstatus').textContent === 'interrupted'",
                           timeout=120_000)
    assert viewer.locator("button.control.resume").is_visible()
    meta = server.get(f"api/runs/{run_id}")
    assert meta["status"] == "interrupted" and meta["view"]["live"]  # its live snapshot stays viewable
    assert (server.root / "runs" / "clustering.train" / run_id / "checkpoint.pt").exists()


def test_first_paint_and_scrubbing_a_1000_snapshot_run(page, server, stored):
    open_page(page, server, f"?run={stored.big}")
    first_paint = page.evaluate("window.sandbox.stats.firstPaint")
    wait_drawn(page, "A", "xi", 1000)
    viewer = page.locator(".viewer[data-pane=A]")
    assert "epoch 1000 (frame 1000/1000)" in viewer.locator(".step").inner_text()
    slider = viewer.locator(".slider")
    slider.fill("500")  # scrub as a user: the range input's input event
    wait_drawn(page, "A", "xi", 500)
    assert "epoch 500 " in viewer.locator(".step").inner_text()
    assert page.evaluate("document.getElementById('A-loss').dataset.cursor") == "500"
    page.wait_for_function("(v => [...Array(41).keys()].every(i => v.entry(500 + i, v.visible('frame'))))"
                           "(window.sandbox.app.viewers[0])", timeout=120_000)  # the prefetch around frame 500
    n0 = page.evaluate("window.sandbox.stats.redraws.length")
    slider.focus()
    for _ in range(40):  # frame by frame over fetched frames: the scrub redraw
        page.keyboard.press("ArrowRight")
    wait_drawn(page, "A", "xi", 540)
    assert "epoch 540 " in viewer.locator(".step").inner_text()
    scrub = page.evaluate(f"window.sandbox.stats.redraws.slice({n0})")
    cached = [r["total_ms"] for r in scrub if r["cached"]]
    jumps = []
    for target in (120, 860, 333):  # far jumps: the frame is fetched, then drawn
        slider.fill(str(target))
        wait_drawn(page, "A", "xi", target)
        jumps.append(page.evaluate("window.sandbox.stats.redraws.at(-1)"))
    timings = {
        "first_paint_ms": round(first_paint), "open_ms": round(page.evaluate("window.sandbox.stats.opens[0].ms")),
        "scrub_frames": len(cached), "scrub_redraw_ms_median": round(statistics.median(cached), 1),
        "scrub_redraw_ms_p90": round(sorted(cached)[int(0.9 * (len(cached) - 1))], 1),
        "uncached_jump_ms": [round(j["total_ms"]) for j in jumps],
        "uncached_fetch_ms": [round(j["fetch_ms"]) for j in jumps],
        "frame_panels": len(page.evaluate("window.sandbox.app.viewers[0].visible('frame')")),
        "load_average": os.getloadavg()[0], "snapshots": 1001,
    }
    print("\nsandbox timings:", json.dumps(timings))
    if os.environ.get("ATTNLAB_SANDBOX_TIMINGS"):
        with open(os.environ["ATTNLAB_SANDBOX_TIMINGS"], "w") as f:
            json.dump(timings, f, indent=2)
    assert cached, "no redraw of a fetched frame was recorded"


def test_click_hover_toggle_and_seeds(page, server, stored):
    open_page(page, server, f"?run={stored.small}")
    wait_drawn(page, "A", "xi", 30)
    x, y = plot_pixel(page, "A-loss", 12.0)
    page.mouse.click(x, y)  # a click on the loss curve jumps to that epoch
    wait_drawn(page, "A", "xi", 12)
    assert "epoch 12 " in page.locator(".viewer .step").inner_text()

    px, py = page.evaluate("(t => [t.x[5], t.y[5]])(document.getElementById('A-xi').data[0])")
    x, y = plot_pixel(page, "A-xi", px, py)
    page.mouse.move(x, y)
    label = page.locator("#A-xi .hovertext")
    label.wait_for(timeout=10_000)
    text = label.text_content()
    assert "sentence" in text and "class y =" in text and "p̂(y|x) =" in text
    x, y = plot_pixel(page, "A-attention", 2.0, 1.0)  # a heatmap cell: its hovertemplate with the sentence
    page.mouse.move(x, y)
    page.wait_for_function("(document.querySelector('#A-attention .hovertext') || {}).textContent?.includes('a = ')")
    cell = page.locator("#A-attention .hovertext").inner_text()
    assert cell.startswith("sentence ") and "position t = 2" in cell, cell

    page.click(".viewer .panel-toggles summary")
    page.uncheck(".viewer .toggle input[name=attention]")
    assert page.locator("#A-attention").is_hidden()
    page.check(".viewer .toggle input[name=grads]")
    page.wait_for_function("(document.getElementById('A-grads').data || []).length === 6")

    before = page.evaluate("document.getElementById('A-xi').data[0].x.slice(0, 3)")
    page.select_option(".viewer .variant", "1")  # the run's second seed
    page.wait_for_function(f"JSON.stringify(document.getElementById('A-xi').data[0].x.slice(0, 3)) !== "
                           f"'{json.dumps(before, separators=(',', ':'))}'")

    page.locator(".viewer .slider").fill("0")
    wait_drawn(page, "A", "xi", 0)
    page.click(".viewer .play")  # plays the frames in order up to the last one, then stops
    assert page.locator(".viewer .play").inner_text() == "❚❚"
    wait_drawn(page, "A", "xi", 30)
    page.wait_for_function("document.querySelector('.viewer .play').textContent === '▶'")
    assert page.locator(".viewer .slider").input_value() == "30" and not page.locator(".viewer .follow").is_checked()


def test_two_runs_side_by_side_non_empty_plots_and_png_export(page, server, stored, tmp_path):
    open_page(page, server, f"?run={stored.big}")
    wait_drawn(page, "A", "xi", 1000)
    page.locator(f"#runs .run[data-run='{stored.small}'] button.compare").click()
    wait_drawn(page, "B", "xi", 30)
    assert page.locator(".viewer").count() == 2 and page.locator("#viewers.compare").count() == 1
    page.locator(".viewer[data-pane=A] .slider").fill("20")  # linked time: B follows to its nearest epoch
    wait_drawn(page, "A", "xi", 20)
    wait_drawn(page, "B", "xi", 20)

    shot = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("L")
    for pane in "AB":
        for panel in ("tokens", "normalized", "attention", "xi", "levels", "mlp", "loss"):
            box = page.locator(f"#{pane}-{panel}").bounding_box()
            crop = shot.crop((int(box["x"]), int(box["y"]), int(box["x"] + box["width"]),
                              int(box["y"] + box["height"])))
            ink = sum(crop.histogram()[:200]) / (crop.width * crop.height)
            assert ink > 0.01, f"panel {pane}-{panel} looks empty ({ink:.2%} non-white pixels)"

    viewer = page.locator(".viewer[data-pane=B]")
    viewer.locator(".export-kind").select_option("view")
    with page.expect_download() as download:
        viewer.locator("button.export").click()
    path = tmp_path / "view.png"
    download.value.save_as(path)
    img = Image.open(path)
    n_panels = page.evaluate("window.sandbox.app.viewers[1].visible('frame').length + "
                             "window.sandbox.app.viewers[1].visible('series').length")
    assert img.format == "PNG" and img.width >= 4 * 200 and n_panels == 10
    assert sum(1 for c in img.convert("L").histogram() if c) > 50  # a picture, not a blank canvas


def test_the_specialization_study_in_the_browser(page, server, stored):
    open_page(page, server, f"?run={stored.spec}")
    wait_drawn(page, "A", "plane12", 8)
    names = page.evaluate("document.getElementById('A-loss').data.map(t => t.name)")
    assert names == ["theory", "simulation", "Bayes risk"]
    page.locator(".viewer .slider").fill("3")
    wait_drawn(page, "A", "plane12", 3)
    assert "τ 1.5 " in page.locator(".viewer .step").inner_text()


CANVAS_VS_PLOTLY = """async (pane) => {
    const v = window.sandbox.app.viewers.find((w) => w.pane === pane), out = {};
    for (const name of v.visible("frame")) {
        const div = v.divs[name], c = div._canvasplot;
        if (!c) { out[name] = null; continue; }
        const [w, h] = [c.canvas.clientWidth, c.canvas.clientHeight];
        const probe = document.createElement("div");
        probe.style.cssText = `position: absolute; left: -5000px; top: 0; width: ${w}px; height: ${h}px`;
        document.body.append(probe);
        await Plotly.newPlot(probe, c.fig.data, {...c.fig.layout, width: w, height: h});
        const fx = probe._fullLayout.xaxis, fy = probe._fullLayout.yaxis;
        const mine = (ax) => ax.spec.visible === false ? [] : ax.ticks().map((t) => t.text);
        const theirs = (ax) => (ax._vals || []).map((t) => t.text.replace(/<[^>]*>/g, ""));
        out[name] = {canvas: [c.xa.r0, c.xa.r1, c.ya.r0, c.ya.r1, c.box.x, c.box.w, c.box.y, c.box.h],
                     plotly: [...fx.range.map(fx.r2l), ...fy.range.map(fy.r2l), fx._offset, fx._length, fy._offset,
                              fy._length],
                     ticks: [mine(c.xa), theirs(fx), mine(c.ya), theirs(fy)]};
        Plotly.purge(probe);
        probe.remove();
    }
    return out;
}"""


def test_the_canvas_renderer_draws_frame_panels_where_plotly_would(page, server, stored):
    """Every default frame panel of the clustering, specialization and knobs runs (legends inside and outside, error
    bars, log axes over less than one to six decades, category axes) is drawn on canvas (the fast path), with
    Plotly's axis ranges (within 0.5% of the span), plot area (within 1 px) and tick labels: Plotly draws the same
    figure aside."""
    for run, panel, index in ((stored.big, "xi", 1000), (stored.spec, "plane12", 8), (stored.walk, "walk", 4)):
        open_page(page, server, f"?run={run}")
        wait_drawn(page, "A", panel, index)
        page.wait_for_function("window.Plotly")
        both = page.evaluate(CANVAS_VS_PLOTLY, "A")
        assert both and all(both.values()), f"panels not drawn on canvas: {[n for n, b in both.items() if not b]}"
        for name, b in both.items():
            (cx0, cx1, cy0, cy1, *cbox), (px0, px1, py0, py1, *pbox) = b["canvas"], b["plotly"]
            for (c0, c1), (p0, p1) in (((cx0, cx1), (px0, px1)), ((cy0, cy1), (py0, py1))):
                span = abs(p1 - p0)
                assert abs(c0 - p0) < 0.005 * span and abs(c1 - p1) < 0.005 * span, (name, b)
            mine_x, plotly_x, mine_y, plotly_y = b["ticks"]
            assert mine_x == plotly_x and mine_y == plotly_y, (name, b["ticks"])
            assert max(abs(c - p) for c, p in zip(cbox, pbox, strict=True)) < 1, (name, b)


def test_stop_all_shown_and_delete_stopped_shown_from_the_page(page, server):
    ids = []
    for seed in (31, 32):
        status, body = server.call("POST", "api/runs", {"experiment": "knobs.walk", "config": {
            "steps": "777", "sleep": "0.2", "seed": str(seed)}})
        assert status == 202, body
        ids.append(body["run_id"])
    open_page(page, server)
    page.fill("#runs-filter", "steps=777")
    page.wait_for_function("document.querySelectorAll('#runs .run').length === 2 && "
                           "!document.getElementById('stop-shown').disabled")
    alerts: list[str] = []
    def alerted(dialog) -> None:  # a failed stop says so in an alert
        alerts.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", alerted)
    page.click("#stop-shown")
    try:
        page.wait_for_function("[...document.querySelectorAll('#runs .run')].every(r => r.dataset.status === "
                               "'interrupted') && !document.getElementById('delete-shown').disabled", timeout=120_000)
    except Exception as exc:  # say what the page and the server saw
        shown = page.evaluate("[...document.querySelectorAll('#runs .run')].map(r => r.dataset.status)")
        raise AssertionError(f"page: {shown}; server: {[server.get(f'api/runs/{i}') for i in ids]}; alerts: "
                             f"{alerts}; server's stderr: {server.output()[-1500:]}") from exc
    page.remove_listener("dialog", alerted)
    assert all(server.run_status(i) == "interrupted" for i in ids)
    assert page.locator("#runs .run button.delete").count() == 2
    dialogs: list[str] = []

    def confirm_then_record(dialog) -> None:  # accept the confirmation; a failed delete says why in an alert
        dialogs.append(dialog.message)
        dialog.accept()

    page.on("dialog", confirm_then_record)
    page.click("#delete-shown")
    try:
        page.wait_for_function("document.querySelectorAll('#runs .run').length === 0")
    except Exception as exc:
        shown = page.evaluate("[...document.querySelectorAll('#runs .run')].map(r => r.dataset.status)")
        raise AssertionError(f"page: {shown}; dialogs: {dialogs}; server's stderr: {server.output()[-1500:]}") from exc
    listed = {r["id"] for r in server.get("api/runs")["runs"]}
    assert not listed & set(ids) and not any((server.root / "runs" / "knobs.walk" / i).exists() for i in ids)
