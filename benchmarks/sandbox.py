"""Benchmark of the live sandbox in a real browser (never run by the tests; `attnlab bench sandbox`).

Trains one 1000-snapshot clustering run (d = 2, k = 3, every epoch kept) into a temporary run store, starts
``attnlab sandbox`` on it and drives Debian's headless Chromium (Playwright) to measure, written as JSON to
``$ATTNLAB_BENCH_OUT/sandbox.json`` (default benchmarks/results):

1. first paint: navigation start → every default panel of the last snapshot drawn, with a cold browser profile
   (plotly.min.js parsed for the first time) and warm (second visit);
2. scrub redraw: one frame step over fetched frames (arrow key on the slider, each step drawn before the next),
   median and p90 over 60 steps, from the key's input event to the next animation frame after the redraw;
3. jump: a far slider move to a frame not fetched yet (server computes it, then it is drawn);
4. server side: computing and encoding one frame of every default panel.

The machine's load average is recorded with the timings: on a shared 2-core machine it moves them a lot.
"""

from __future__ import annotations

import json
import os
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHROMIUM = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
RUN = {"k": 3, "n_train": 16, "batch_size": 16, "epochs": 1000, "log_every": 20, "head_metrics": False}


def make_run(root: Path) -> str:
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    exp = get("clustering.train")
    return RunStore(root).run(exp, resolve(exp.config, "quick", RUN)).run_id


def serve(root: Path) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "attnlab.cli", "sandbox", "--no-browser", "--out", str(root)],
                            stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1.0)[0]:
            line = proc.stdout.readline()
            if "http://" in line:
                return proc, line[line.index("http://"):].split()[0]
    proc.kill()
    raise RuntimeError("the sandbox did not start")


def server_frame_ms(root: Path, run_id: str) -> float:
    from attnlab.clustering.views.plugin import DEFAULT
    from attnlab.core.runs import RunStore
    from attnlab.sandbox.store import RunReader
    from attnlab.sandbox.traces import to_json

    opened = RunReader(RunStore(root)).open(run_id)
    names = [n for n in DEFAULT if n in opened.view.panel_names("frame")]
    t0 = time.perf_counter()
    for i in range(0, 1000, 50):
        to_json(opened.view.frame(i, 0, names))
    return (time.perf_counter() - t0) / 20 * 1000


def browser_timings(url: str, run_id: str) -> dict:
    from playwright.sync_api import sync_playwright

    out: dict = {}
    with sync_playwright() as pw:
        ctx = pw.chromium.launch_persistent_context(tempfile.mkdtemp(prefix="attnlab-bench-"), headless=True,
                                                    executable_path=CHROMIUM, args=ARGS,
                                                    viewport={"width": 1600, "height": 2000})
        page = ctx.new_page()
        for visit in ("cold", "warm"):
            page.goto(f"{url}?run={run_id}")
            page.wait_for_function("window.sandbox && window.sandbox.stats.firstPaint !== null", timeout=120_000)
            out[f"first_paint_ms_{visit}"] = round(page.evaluate("window.sandbox.stats.firstPaint"))
        viewer = "window.sandbox.app.viewers[0]"
        page.locator(".slider").fill("400")
        page.wait_for_function(f"(v => [...Array(61).keys()].every(i => v.entry(400 + i, v.visible('frame'))))"
                               f"({viewer})", timeout=300_000)
        page.wait_for_function(f"{viewer}.drawn === 400")
        n0 = page.evaluate("window.sandbox.stats.redraws.length")
        page.locator(".slider").focus()
        for _ in range(60):
            page.keyboard.press("ArrowRight")
            page.wait_for_function(f"{viewer}.drawn === {viewer}.target")  # one step drawn before the next
        steps = [r["total_ms"] for r in page.evaluate(f"window.sandbox.stats.redraws.slice({n0})") if r["cached"]]
        jumps = []
        for target in (100, 900, 250, 700):
            page.locator(".slider").fill(str(target))
            page.wait_for_function(f"{viewer}.drawn === {target}")
            jumps.append(page.evaluate("window.sandbox.stats.redraws.at(-1)"))
        out.update({
            "scrub_step_ms_median": round(statistics.median(steps), 1),
            "scrub_step_ms_p90": round(sorted(steps)[int(0.9 * (len(steps) - 1))], 1), "scrub_steps": len(steps),
            "jump_uncached_ms": [round(j["total_ms"]) for j in jumps],
            "frame_panels": page.evaluate(f"{viewer}.visible('frame').length"),
        })
        ctx.close()
    return out


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="attnlab-bench-sandbox-"))
    t0 = time.perf_counter()
    run_id = make_run(root)
    result = {"train_1000_snapshots_s": round(time.perf_counter() - t0, 1),
              "server_frame_ms": round(server_frame_ms(root, run_id), 1)}
    proc, url = serve(root)
    try:
        result.update(browser_timings(url, run_id))
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    result["load_average_1min"] = round(os.getloadavg()[0], 2)
    result["cpus"] = os.cpu_count()
    out = Path(os.environ.get("ATTNLAB_BENCH_OUT", "benchmarks/results")) / "sandbox.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    print(f"→ {out}")


if __name__ == "__main__":
    main()
