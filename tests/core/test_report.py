"""The HTML report reads like a document: contents first, then what was run last (newest first), the committed
record folded at the end; one full run per experiment (the others in one table), each distinct figure once, shown
at the size it was drawn and enlargeable (Esc or a click closes it), numbers kept whole, long tables folded."""

import io
import json
import os
import re
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from attnlab.core import record, report
from attnlab.core.config import resolve
from attnlab.core.registry import get

FIG = re.compile(r'<img class="fig"')


def _walks(store, seeds, steps=4):
    exp = get("knobs.walk")
    return [store.run(exp, resolve(exp.config, "quick", {"steps": steps}, seed=s)) for s in seeds]


def _png(width_in: float, height_in: float, dpi: int = 150) -> bytes:
    fig = Figure(figsize=(width_in, height_in))
    for ax in fig.subplots(1, max(1, round(width_in / 3)), squeeze=False).flat:
        ax.plot([0, 1], [0, 1])
        ax.set_title("a panel")
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def _fake_run(root: Path, figures: dict[str, bytes], summary: dict) -> Path:
    run = root / "knobs.fake" / "0123456789abcdef"
    (run / "figures").mkdir(parents=True)
    (run / "config.json").write_text(json.dumps({"experiment": "knobs.fake", "run_id": "0123456789abcdef",
                                                 "created": "2026-01-01T00:00:00+0000", "config": {"n": 3},
                                                 "seeds": {"base": 0, "streams": {"a": 1, "b": 2}}}))
    (run / "summary.json").write_text(json.dumps(summary))
    for name, data in figures.items():
        (run / "figures" / name).write_bytes(data)
    return run


def test_the_report_has_contents_one_full_run_per_experiment_and_the_others_in_a_table(store):
    records = _walks(store, range(3))
    html = report.build(store)
    toc = html.split("<nav class='toc'>", 1)[1].split("</nav>", 1)[0]
    assert "Runs — knobs" in toc and "knobs.walk" in toc
    for anchor in re.findall(r"href='#([^']+)'", toc):
        assert f"id='{anchor}'" in html, anchor  # every entry of the contents leads somewhere
    assert html.count("<section>") == 1  # the newest run in full …
    assert "2 other runs of this experiment" in html  # … and the two others in one table
    for r in records:
        assert r.run_id in html
    assert len(FIG.findall(html)) == 1 and "id='lightbox'" in html


def test_the_report_opens_with_what_was_just_run_and_ends_with_the_committed_record(store, tmp_path):
    root = tmp_path / "claims"
    for study in ("potts", "paths", "signal"):
        rows = [{"claim": f"{study}.c{i}", "verdict": "pass", "measured": 0.1234567} for i in range(3)]
        path = record.path_for(root, "quick", study, None)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"study": study, "scale": "quick", "device": "cpu", "date": "2026-01-02",
                                    "commit": "abcdef0", "wall_seconds": 60.0, "counts": record.counts(rows),
                                    "hardware": {"cpu": {"cpu": "Some CPU", "threads": 2}}, "claims": rows}))
    _walks(store, [1])
    claims = store.root / "claims" / "knobs-quick.json"
    claims.parent.mkdir(parents=True, exist_ok=True)
    claims.write_text(json.dumps([{"claim": "knobs.c", "ref": "Eq. 1", "statement": "s", "measured": 0.004554491,
                                   "expected": "≤ 0.01", "tolerance": 0.0, "verdict": "pass", "how": "h"}]))
    os.utime(claims, (1e9, 1e9))  # checked long before the run
    html = report.build(store, records=root)
    titles = re.findall(r"<h2 id='[^']+'>([^<]+)</h2>", html)
    assert titles == ["Runs — knobs", "Claims", "Committed claims record"], titles  # newest first, the record last
    committed = html.split("Committed claims record</h2>", 1)[1]
    assert committed.count("<details><summary>") == 3 and "<table" not in committed.split("<details>", 1)[0]
    assert "3 pass, 0 fail, 0 reported, 0 error" in committed  # the counts show while the tables are folded
    assert "<td class='num'>0.00455449</td>" in html  # numbers in cells that keep them on one line
    assert "<details><summary><b>claims: knobs-quick</b>" in html  # all pass: folded under its counts


def test_a_claims_table_with_a_failure_is_open(tmp_path):
    path = tmp_path / "knobs-quick.json"
    rows = [{"claim": f"knobs.c{i}", "ref": "", "statement": "", "measured": 1.0, "expected": "", "tolerance": 0.0,
             "verdict": v, "how": ""} for i, v in enumerate(["pass", "fail", "reported"])]
    path.write_text(json.dumps(rows))
    assert report.claims_section(path).startswith("<details open><summary>") and "1 pass, 1 fail, 1 reported" in \
        report.claims_section(path)


def test_numbers_and_headers_are_never_broken_inside_a_token():
    css = report._CSS
    assert "anywhere" not in css  # overflow-wrap:anywhere lets a table squeeze a number to one digit a line
    assert re.search(r"th\{[^}]*white-space:nowrap", css) and re.search(r"td\.num[^{]*\{[^}]*white-space:nowrap", css)
    assert report._td(0.004554491) == "<td class='num'>0.00455449</td>" and report._td("pass") == "<td>pass</td>"
    assert report._td(True) == "<td>True</td>"


def test_a_figure_is_shown_at_the_size_it_was_drawn():
    wide = _png(16.2, 3.4)  # a five-panel figure, about 2426 × 504 pixels at 150 dpi
    assert report.display_size(wide) == (round(16.2 * 96), round(3.4 * 96))  # its inches at 96 CSS px per inch
    w, h = report.display_size(_png(8, 20))
    assert h == report.FIG_MAX_HEIGHT and abs(w / h - 0.4) < 0.01  # a very tall one is shown smaller, in shape
    assert report.display_size(b"not a png") == (0, 0)


def test_the_same_figure_is_inlined_once_and_explicit_targets_are_each_shown_in_full(store):
    a, b = _walks(store, [5, 6])
    html = report.build(store, [a.run_dir, a.run_dir, b.run_dir])
    assert html.count("<section>") == 3 and len(FIG.findall(html)) == 2  # the repeated run's figure links back
    assert "the same figure as above" in html


def test_a_long_summary_is_folded(tmp_path):
    folded = report._kv_table({f"k{i}": i for i in range(report.FOLD_ROWS + 1)}, "summary")
    shown = report._kv_table({"a": 1.0}, "summary")
    assert folded.startswith("<details>") and "(13 values)" in folded and shown.startswith("<h4>summary</h4>")


# -- in a browser (Debian's Chromium, as the docs' test): skipped where there is none -------------------------------
READ = """() => {
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    const fig = document.querySelector('img.fig').getBoundingClientRect();
    const broken = [...document.querySelectorAll('td.num, th')].filter(c => {
        const range = document.createRange(); range.selectNodeContents(c);
        return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
    }).map(c => c.textContent);
    return {fig: [fig.width, fig.height], broken};
}"""


@pytest.fixture(scope="module")
def chromium():
    playwright = pytest.importorskip("playwright.sync_api")
    path = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
    if not Path(path).exists():
        pytest.skip(f"no Chromium at {path}")
    with playwright.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=path, headless=True, args=["--no-sandbox", "--disable-gpu"])
        yield browser
        browser.close()


def test_in_a_browser_figures_are_readable_numbers_whole_and_esc_closes_the_enlarged_view(chromium, tmp_path):
    summary = {f"a_rather_long_observable_name_{i}": 0.004554491 * (i + 1) for i in range(6)}
    run = _fake_run(tmp_path, {"panels.png": _png(16.2, 3.4)}, summary)
    claims = tmp_path / "knobs-quick.json"
    claims.write_text(json.dumps([{"claim": "knobs.a_claim_with_a_long_name", "ref": "Eq. 1", "statement": "s",
                                   "measured": 0.004554491, "expected": "≤ 0.01", "tolerance": 0.0, "verdict":
                                   "pass", "how": "a long explanation of how it is measured " * 8}]))
    out = tmp_path / "report.html"
    out.write_text(report.page("t", report.run_section(run) + report.claims_section(claims)))
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.goto(out.as_uri())
    state = page.evaluate(READ)
    width, height = state["fig"]
    assert height >= 250 and abs(width / height - 16.2 / 3.4) < 0.05, state  # the five panels at a readable size,
    # in shape (they were 640 px wide, 135 px tall)
    assert not state["broken"], state
    lightbox = page.locator("#lightbox")
    page.click("img.fig")
    assert lightbox.is_visible()
    page.keyboard.press("Escape")
    assert not lightbox.is_visible()
    page.click("img.fig")
    page.mouse.click(5, 5)  # outside the enlarged figure
    assert not lightbox.is_visible()
    page.set_viewport_size({"width": 480, "height": 800})  # a narrow window: tables scroll, cells stay whole
    assert not page.evaluate(READ)["broken"]
    page.close()
