"""Self-contained HTML report (figures inlined as base64 PNG): runs, sweeps, and claims tables, newest first; the
committed claims record, folded, last."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from attnlab import __version__
from attnlab.core.files import atomic_write_text, say
from attnlab.core.integrity import MANIFEST, Check, inspect
from attnlab.core.runs import RunStore

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1400px;
color:#222;line-height:1.4;padding:0 1rem}
h1{font-size:1.6rem} h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1.05rem;margin-bottom:.3rem} a{color:#1f5fa8} summary{cursor:pointer}
nav.toc{background:#f8f8f8;border:1px solid #e4e4e4;padding:.4rem 1rem;font-size:.9rem}
nav.toc ul{margin:.2rem 0;padding-left:1.2rem} nav.toc h2{border:0;margin:.3rem 0;font-size:1rem}
.tbl{overflow-x:auto;max-width:100%} table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top;max-width:40em;
overflow-wrap:break-word}
th{background:#f5f5f5;white-space:nowrap} td.num,table.dataframe td{white-space:nowrap;
font-variant-numeric:tabular-nums} td.num{text-align:right}
.pass{color:#0a7a2f;font-weight:600} .fail,.error{color:#b00020;font-weight:600}
.reported{color:#8a6d00;font-weight:600} .muted{color:#777;font-size:.85rem}
.figs{display:flex;flex-wrap:wrap;gap:.5rem;align-items:flex-start}
img.fig{max-width:100%;height:auto;border:1px solid #eee;margin:.3rem 0;cursor:zoom-in}
#lightbox{position:fixed;inset:0;z-index:10;display:flex;align-items:center;justify-content:center;
background:rgba(0,0,0,.7);cursor:zoom-out}
#lightbox[hidden]{display:none} #lightbox img{max-width:96vw;max-height:96vh;background:#fff}
"""
# a figure opens enlarged on a click (or Enter); a click anywhere, or Esc, closes it
_JS = """
const box = document.getElementById('lightbox'), big = box.querySelector('img');
function enlarge(img) { big.src = img.src; big.alt = img.alt; box.hidden = false; }
function shrink() { box.hidden = true; big.removeAttribute('src'); }
document.addEventListener('click', e => {
  if (!box.hidden) shrink(); else if (e.target.matches('img.fig')) enlarge(e.target);
});
document.addEventListener('keydown', e => {
  if (e.key === 'Escape' && !box.hidden) shrink();
  else if (e.key === 'Enter' && e.target.matches && e.target.matches('img.fig')) enlarge(e.target);
});
"""
_LIGHTBOX = "<div id='lightbox' hidden role='dialog' aria-label='enlarged figure'><img alt=''></div>"
FIG_MAX_HEIGHT = 900  # CSS px: a taller figure is shown smaller (its enlarged view shows it whole)
FOLD_ROWS = 12  # summaries and tables longer than this are folded


def _e(x: Any) -> str:
    return html.escape(str(x))


class _Figures:
    """Inlines each distinct PNG once; a figure already shown (same bytes) becomes a link to its first copy."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def img(self, path: Path) -> str:
        data = path.read_bytes()
        key = hashlib.sha256(data).hexdigest()
        if key in self.seen:
            return f"<p class='muted'>{_e(path.name)}: <a href='#{self.seen[key]}'>the same figure as above</a></p>"
        anchor = self.seen[key] = f"fig-{len(self.seen)}"
        width, height = display_size(data)
        size = f'width="{width}" height="{height}" ' if width else ""
        src = "data:image/png;base64," + base64.b64encode(data).decode()
        return (f'<img class="fig" id="{anchor}" {size}tabindex="0" alt="{_e(path.stem)}" '
                f'title="{_e(path.name)} (click to enlarge, Esc closes)" src="{src}">')


def display_size(png: bytes) -> tuple[int, int]:
    """The size in CSS pixels a PNG is shown at: the inches it was drawn at (its pHYs resolution, as matplotlib
    writes it; else one image pixel per CSS pixel) at 96 CSS px per inch, scaled down to at most
    ``FIG_MAX_HEIGHT`` tall. The page's width may shrink it further (``max-width: 100%``). (0, 0): not a PNG."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or png[12:16] != b"IHDR":
        return 0, 0
    width, height = struct.unpack(">II", png[16:24])
    dpi, at = 96.0, 8
    while at + 8 <= len(png):
        length, kind = struct.unpack(">I4s", png[at:at + 8])
        if kind == b"pHYs" and length >= 9:
            per_unit, _, unit = struct.unpack(">IIB", png[at + 8:at + 17])
            dpi = per_unit * 0.0254 if unit == 1 and per_unit else dpi
        if kind in (b"IDAT", b"IEND"):
            break
        at += 12 + length
    scale = min(96.0 / dpi, FIG_MAX_HEIGHT / height if height else 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _kv_table(d: dict[str, Any], label: str | None = None) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th>{_td(v)}</tr>" for k, v in d.items())
    table = f"<div class='tbl'><table>{rows}</table></div>"
    if label is None:
        return table
    if len(d) > FOLD_ROWS:
        return f"<details><summary>{_e(label)} ({len(d)} values)</summary>{table}</details>"
    return f"<h4>{_e(label)}</h4>{table}"


def _td(v: Any) -> str:
    """A table cell; a number's keeps its digits on one line (class ``num``)."""
    number = isinstance(v, int | float) and not isinstance(v, bool)
    return f"<td class='num'>{_e(_fmt(v))}</td>" if number else f"<td>{_e(_fmt(v))}</td>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict | list):
        return json.dumps(v)
    return str(v)


def _anchor(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def run_section(run_dir: Path, figures: _Figures | None = None) -> str:
    """One run in full: its figures, summary (folded when long), config and environment."""
    figures = figures or _Figures()
    meta = json.loads((run_dir / "config.json").read_text())
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    env = {k: meta.get(k) for k in ("attnlab_version", "git_revision", "torch_version", "python", "device", "host",
                                    "created")}
    seeds = meta.get("seeds")
    env["seeds"] = (f"base {seeds.get('base')}, {len(seeds.get('streams') or {})} streams"
                    if isinstance(seeds, dict) else seeds)
    figs = sorted((run_dir / "figures").glob("*.png")) if (run_dir / "figures").exists() else []
    parts = [
        f"<h3 id='{_anchor(meta['experiment'] + '-' + meta['run_id'])}'>{_e(meta['experiment'])} <span class='muted'>"
        f"{_e(meta.get('paper_ref', ''))} · run {_e(meta['run_id'])}</span></h3>",
        f"<p class='muted'>{_e(run_dir)}</p>",
        "<div class='figs'>" + "".join(figures.img(f) for f in figs) + "</div>",
        _kv_table(summary, "summary") if summary else "<p class='fail'>no results (run unfinished)</p>",
        "<details><summary>config</summary>" + _kv_table(meta["config"]) + "</details>",
        "<details><summary>environment</summary>" + _kv_table(env) + "</details>",
    ]
    return "<section>" + "".join(parts) + "</section>"


def others_section(run_dirs: list[Path], newest: Path) -> str:
    """The other runs of an experiment as one table: the config values that differ from the run shown in full,
    then their numeric summary values."""
    base = json.loads((newest / "config.json").read_text())["config"]
    rows = []
    for d in run_dirs:
        meta = json.loads((d / "config.json").read_text())
        summary = json.loads((d / "summary.json").read_text()) if (d / "summary.json").exists() else {}
        differs = {k: _fmt(v) for k, v in meta["config"].items() if base.get(k) != v}
        numbers = {k: v for k, v in summary.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        rows.append({"run": meta["run_id"], **differs, **dict(list(numbers.items())[:8])})
    table = pd.DataFrame(rows).to_html(index=False, float_format=lambda x: f"{x:.5g}", na_rep="")
    return (f"<details><summary>{len(rows)} other run{'s' * (len(rows) > 1)} of this experiment (figures in each "
            f"run's directory)</summary><div class='tbl'>{table}</div></details>")


def sweep_section(sweep_dir: Path, figures: _Figures | None = None) -> str:
    figures = figures or _Figures()
    spec = json.loads((sweep_dir / "sweep.json").read_text())
    parts = [f"<h3 id='{_anchor('sweep-' + sweep_dir.name)}'>sweep {_e(spec['experiment'])} <span class='muted'>"
             f"{_e(sweep_dir.name)} · scale {_e(spec['scale'])} · grid {_e(json.dumps(spec['grid']))}</span></h3>"]
    fig = sweep_dir / "figures" / "sweep.png"
    if fig.exists():
        parts.append("<div class='figs'>" + figures.img(fig) + "</div>")
    if (sweep_dir / "table.parquet").exists():
        table = pd.read_parquet(sweep_dir / "table.parquet")
        body = "<div class='tbl'>" + table.to_html(index=False, float_format=lambda x: f"{x:.5g}", na_rep="") + "</div>"
        parts.append(body if len(table) <= FOLD_ROWS else
                     f"<details><summary>table ({len(table)} runs)</summary>{body}</details>")
    return "<section>" + "".join(parts) + "</section>"


def claims_section(path: Path) -> str:
    rows = json.loads(path.read_text())
    head = "<tr><th>claim</th><th>paper</th><th>measured</th><th>expected</th><th>tolerance</th><th>verdict</th>" \
           "<th>how</th></tr>"
    body = "".join(
        f"<tr><td title='{_e(r['statement'])}'>{_e(r['claim'])}</td><td>{_e(r['ref'])}</td>"
        f"{_td(r['measured'])}<td>{_e(r['expected'])}</td>{_td(r['tolerance'])}"
        f"<td class='{_e(r['verdict'])}'>{_e(r['verdict'])}</td><td>{_e(r['how'])}"
        f"{(' — ' + _e(r['detail'])) if r.get('detail') else ''}</td></tr>"
        for r in rows
    )
    n_pass = sum(r["verdict"] == "pass" for r in rows)
    n_bad = sum(r["verdict"] in ("fail", "error") for r in rows)
    # folded under its counts, unless a claim failed
    return (f"<details{' open' * bool(n_bad)}><summary><b>claims: {_e(path.stem)}</b> <span"
            f"{' class=fail' * bool(n_bad)}>{n_pass} pass, {n_bad} fail, {len(rows) - n_pass - n_bad} reported</span>"
            f"</summary><div class='tbl'><table>{head}{body}</table></div></details>")


def record_section(root: Path) -> str:
    """The committed claims record (``results/claims``): per study and scale the counts, each table of verdicts
    folded under them (the report's last section: what holds, without running anything)."""
    from attnlab.core.record import _threads, load

    docs = sorted(load(root), key=lambda d: (d["scale"] != "quick", d["study"], d.get("device", "cpu")))
    if not docs:
        return ""
    parts = ["<h2>Committed claims record</h2><p class='muted'>the last verdicts committed under "
             f"{_e(root)}: what holds at which scale, without running anything (open a line for its claims)</p>"]
    for d in docs:
        hw = d["hardware"]
        where = hw["gpu"]["name"] if "gpu" in hw else f"{hw['cpu']['cpu']}, {_threads(hw['cpu']['threads'])}"
        c = d["counts"]
        rows = "".join(f"<tr><td title='{_e(r.get('statement', ''))}'>{_e(r['claim'])}</td><td>{_e(r.get('ref', ''))}"
                       f"</td>{_td(r['measured'])}<td>{_e(r.get('expected', ''))}</td><td class='"
                       f"{_e(r['verdict'])}'>{_e(r['verdict'])}</td><td>{_e(r.get('detail') or '')}</td></tr>"
                       for r in d["claims"])
        bad = " class='fail'" if c["fail"] or c["error"] else ""
        parts.append(f"<details><summary><b>{_e(d['study'])} · {_e(d['scale'])}</b> <span{bad}>{c['pass']} pass, "
                     f"{c['fail']} fail, {c['reported']} reported, {c['error']} error</span> <span class='muted'>· "
                     f"{_e(where)} · {d['wall_seconds']:.0f} s · {_e(d['date'])} · {_e(d['commit'])}</span>"
                     "</summary><div class='tbl'><table><tr><th>claim</th><th>paper</th><th>measured</th>"
                     f"<th>expected</th><th>verdict</th><th>detail</th></tr>{rows}</table></div></details>")
    return "".join(parts)


def build(store: RunStore, targets: list[Path] | None = None, title: str = "attnlab report",
          records: Path | None = None, on_skip: Callable[[str], None] = say) -> str:
    """HTML for ``targets`` (run or sweep directories), or for everything in the store if None; with the committed
    claims record under ``records`` (default: the checkout's ``results/claims``) when reporting everything.

    The report opens with what was run last: its sections (a study's runs, the claims checked, the sweeps) newest
    first, the committed record (folded) last. A run whose files fail their integrity check, or a sweep or claims
    file that cannot be read, is skipped and named (in the report and through ``on_skip``, one line each) instead of
    stopping the report."""
    runs: list[Path] = []
    sweeps: list[Path] = []
    skipped: list[str] = []

    def skip(what: str, why: str) -> None:
        skipped.append(f"{what}: {why}")
        on_skip(f"warning: report skips {what}: {why}")

    if targets is None:
        for row in store.rows():
            if row["status"] == "done":
                _add_run(store.dir_of(row), store.check(row), runs, skip)
        sweeps = sorted(p.parent for p in store.root.glob("sweeps/*/*/sweep.json"))
        claim_files = sorted(store.root.glob("claims/*.json"), key=_mtime, reverse=True)
    else:
        for t in targets:
            if (t / "sweep.json").exists():
                sweeps.append(t)
            elif (t / "config.json").exists():
                done = (t / MANIFEST).exists() or (t / "summary.json").exists()
                _add_run(t, inspect(t, {"status": "done"} if done else None), runs, skip)
            else:
                raise FileNotFoundError(f"{t} is neither a run directory (config.json) nor a sweep (sweep.json)")
        claim_files = []
    figures = _Figures()
    dated: list[tuple[str, str, str, list[str]]] = []  # (when, title, html, sub-headings for the contents)
    by_experiment: dict[str, list[Path]] = {}
    for r in runs:
        by_experiment.setdefault(r.parent.name, []).append(r)
    newest = {exp: sorted(dirs, key=_created, reverse=True) for exp, dirs in by_experiment.items()}
    for study in dict.fromkeys(e.split(".")[0] for e in sorted(by_experiment)):
        html_parts, subs = [], []
        for exp in sorted((e for e in newest if e.split(".")[0] == study), key=lambda e: _created(newest[e][0]),
                          reverse=True):
            dirs = newest[exp]
            full, rest = (dirs, []) if targets is not None else (dirs[:1], dirs[1:])
            part = _sections(lambda d: run_section(d, figures), full, skip, "run")
            if rest:
                part += _sections(lambda d, rest=rest: others_section(rest, d), full[:1], skip, "runs of " + exp)
            html_parts.append(part)
            subs.append(exp)
        when = max(_created(newest[e][0]) for e in subs)
        dated.append((when, f"Runs — {study}", "".join(html_parts), subs))
    claims = _sections(claims_section, claim_files, skip, "claims file")
    if claims:
        dated.append((_stamp(claim_files[0]), "Claims", claims, []))
    sweep_html = _sections(lambda d: sweep_section(d, figures), sorted(sweeps, key=_mtime, reverse=True), skip,
                           "sweep")
    if sweep_html:
        dated.append((max(_stamp(d) for d in sweeps), "Sweeps", sweep_html, []))
    # newest first (the order is stable: same-time sections keep the order above)
    sections = [(t, h, subs) for _, t, h, subs in sorted(dated, key=lambda x: x[0], reverse=True)]
    if targets is None:
        from attnlab.core.record import default_root

        root = records if records is not None else default_root()
        if root is not None and root.is_dir() and (section := record_section(root)):
            sections.append(("Committed claims record", section.split("</h2>", 1)[1], []))
    if skipped:
        sections.append(("Skipped", "<ul>" + "".join(f"<li class='fail'>{_e(s)}</li>" for s in skipped) + "</ul>", []))
    warn = (f" · <a class='fail' href='#skipped'>{len(skipped)} skipped</a>" if skipped else "")
    head = (f"<h1>{_e(title)}</h1><p class='muted'>attnlab {__version__} · generated "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')} · store {_e(store.root.resolve())}{warn}</p>")
    if not sections:
        body = "<p>Nothing to report yet: run an experiment first (attnlab run ...).</p>"
    else:
        body = _contents(sections) + "".join(f"<h2 id='{_anchor(t)}'>{_e(t)}</h2>{h}" for t, h, _ in sections)
    return page(title, head + body)


def page(title: str, body: str) -> str:
    """A self-contained HTML page: the report's style, ``body``, and the enlarged view of its figures."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width'>"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>{body}{_LIGHTBOX}"
            f"<script>{_JS}</script></body></html>")


def _contents(sections: list[tuple[str, str, list[str]]]) -> str:
    """The table of contents: each section, and under a study's runs its experiments (linking their first run)."""
    items = []
    for title, html_, subs in sections:
        links = "".join(f"<li><a href='#{m.group(1)}'>{_e(sub)}</a></li>" for sub in subs
                        if (m := re.search(rf"<h3 id='({re.escape(_anchor(sub))}-[0-9a-f]+)'", html_)))
        items.append(f"<li><a href='#{_anchor(title)}'>{_e(title)}</a>" + (f"<ul>{links}</ul>" if links else "")
                     + "</li>")
    return f"<nav class='toc'><h2>Contents</h2><ul>{''.join(items)}</ul></nav>"


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _stamp(path: Path) -> str:
    """A file's modification time in the form of a run's ``created`` (so the two sort together)."""
    return time.strftime("%Y-%m-%dT%H:%M:%S+0000", time.gmtime(_mtime(path)))


def _created(run_dir: Path) -> str:
    try:
        return str(json.loads((run_dir / "config.json").read_text()).get("created", ""))
    except (OSError, ValueError):
        return ""


def _add_run(run_dir: Path, check: Check, runs: list[Path], skip: Callable[[str, str], None]) -> None:
    if check.state == "corrupt":
        skip(f"corrupt run {run_dir.parent.name} {run_dir.name}", f"{check.line()} (the next `attnlab run` of it "
             "recomputes it)")
    else:
        runs.append(run_dir)


def _sections(fn: Callable[[Path], str], paths: list[Path], skip: Callable[[str, str], None], kind: str) -> str:
    """``fn(path)`` for each path; one that cannot be read is skipped and named."""
    out = []
    for p in paths:
        try:
            out.append(fn(p))
        except (OSError, ValueError, KeyError, TypeError) as exc:  # a damaged file of any reader's kind
            skip(f"{kind} {p}", f"unreadable ({type(exc).__name__}: {' '.join(str(exc).split())[:200]})")
    return "".join(out)


def write(store: RunStore, out: Path, targets: list[Path] | None = None, title: str = "attnlab report",
          records: Path | None = None) -> Path:
    atomic_write_text(out, build(store, targets, title, records))
    return out
