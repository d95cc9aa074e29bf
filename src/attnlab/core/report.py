"""Self-contained HTML report (figures inlined as base64 PNG): runs, sweeps, and claims tables."""

from __future__ import annotations

import base64
import html
import json
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
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2rem auto;max-width:1200px;
color:#222;line-height:1.4;padding:0 1rem}
h1{font-size:1.6rem} h2{font-size:1.25rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
h3{font-size:1.05rem;margin-bottom:.3rem}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5} .pass{color:#0a7a2f;font-weight:600} .fail,.error{color:#b00020;font-weight:600}
.reported{color:#8a6d00;font-weight:600} .muted{color:#777;font-size:.85rem}
img{max-width:100%;border:1px solid #eee;margin:.3rem 0} details{margin:.3rem 0}
.figs{display:flex;flex-wrap:wrap;gap:.5rem} .figs img{max-width:48%}
"""


def _e(x: Any) -> str:
    return html.escape(str(x))


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{_e(path.stem)}" title="{_e(path.name)}" src="data:image/png;base64,{data}">'


def _kv_table(d: dict[str, Any]) -> str:
    rows = "".join(f"<tr><th>{_e(k)}</th><td>{_e(_fmt(v))}</td></tr>" for k, v in d.items())
    return f"<table>{rows}</table>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, dict | list):
        return json.dumps(v)
    return str(v)


def run_section(run_dir: Path) -> str:
    meta = json.loads((run_dir / "config.json").read_text())
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    env = {k: meta.get(k) for k in ("attnlab_version", "git_revision", "torch_version", "python", "device", "host",
                                    "created")}
    env["seeds"] = meta.get("seeds")
    figs = sorted((run_dir / "figures").glob("*.png")) if (run_dir / "figures").exists() else []
    parts = [
        f"<h3>{_e(meta['experiment'])} <span class='muted'>{_e(meta.get('paper_ref', ''))} · run "
        f"{_e(meta['run_id'])}</span></h3>",
        f"<p class='muted'>{_e(run_dir)}</p>",
        "<div class='figs'>" + "".join(_img(f) for f in figs) + "</div>",
        "<h4>summary</h4>" + _kv_table(summary) if summary else "<p class='fail'>no results (run unfinished)</p>",
        "<details><summary>config</summary>" + _kv_table(meta["config"]) + "</details>",
        "<details><summary>environment</summary>" + _kv_table(env) + "</details>",
    ]
    return "<section>" + "".join(parts) + "</section>"


def sweep_section(sweep_dir: Path) -> str:
    spec = json.loads((sweep_dir / "sweep.json").read_text())
    parts = [f"<h3>sweep {_e(spec['experiment'])} <span class='muted'>{_e(sweep_dir.name)} · scale "
             f"{_e(spec['scale'])} · grid {_e(json.dumps(spec['grid']))}</span></h3>"]
    fig = sweep_dir / "figures" / "sweep.png"
    if fig.exists():
        parts.append(_img(fig))
    if (sweep_dir / "table.parquet").exists():
        table = pd.read_parquet(sweep_dir / "table.parquet")
        parts.append(table.to_html(index=False, float_format=lambda x: f"{x:.5g}", na_rep=""))
    return "<section>" + "".join(parts) + "</section>"


def claims_section(path: Path) -> str:
    rows = json.loads(path.read_text())
    head = "<tr><th>claim</th><th>paper</th><th>measured</th><th>expected</th><th>tolerance</th><th>verdict</th>" \
           "<th>how</th></tr>"
    body = "".join(
        f"<tr><td title='{_e(r['statement'])}'>{_e(r['claim'])}</td><td>{_e(r['ref'])}</td>"
        f"<td>{_e(_fmt(r['measured']))}</td><td>{_e(r['expected'])}</td><td>{_e(_fmt(r['tolerance']))}</td>"
        f"<td class='{_e(r['verdict'])}'>{_e(r['verdict'])}</td><td>{_e(r['how'])}"
        f"{(' — ' + _e(r['detail'])) if r.get('detail') else ''}</td></tr>"
        for r in rows
    )
    n_pass = sum(r["verdict"] == "pass" for r in rows)
    n_bad = sum(r["verdict"] in ("fail", "error") for r in rows)
    return (f"<h3>claims: {_e(path.stem)} <span class='muted'>{n_pass} pass, {n_bad} fail, "
            f"{len(rows) - n_pass - n_bad} reported</span></h3><table>{head}{body}</table>")


def record_section(root: Path) -> str:
    """The committed claims record (``results/claims``): per study and scale the counts, then every verdict."""
    from attnlab.core.record import load

    docs = sorted(load(root), key=lambda d: (d["scale"] != "quick", d["study"], d.get("device", "cpu")))
    if not docs:
        return ""
    parts = ["<h2>Committed claims record</h2><p class='muted'>the last verdicts committed under "
             f"{_e(root)}: what holds at which scale, without running anything</p>"]
    for d in docs:
        hw = d["hardware"]
        where = hw["gpu"]["name"] if "gpu" in hw else f"{hw['cpu']['cpu']}, {hw['cpu']['threads']} threads"
        c = d["counts"]
        rows = "".join(f"<tr><td title='{_e(r.get('statement', ''))}'>{_e(r['claim'])}</td><td>{_e(r.get('ref', ''))}"
                       f"</td><td>{_e(_fmt(r['measured']))}</td><td>{_e(r.get('expected', ''))}</td><td class='"
                       f"{_e(r['verdict'])}'>{_e(r['verdict'])}</td><td>{_e(r.get('detail') or '')}</td></tr>"
                       for r in d["claims"])
        parts.append(f"<h3>{_e(d['study'])} · {_e(d['scale'])} <span class='muted'>{c['pass']} pass, {c['fail']} "
                     f"fail, {c['reported']} reported, {c['error']} error · {_e(where)} · {d['wall_seconds']:.0f} s · "
                     f"{_e(d['date'])} · {_e(d['commit'])}</span></h3><table><tr><th>claim</th><th>paper</th>"
                     f"<th>measured</th><th>expected</th><th>verdict</th><th>detail</th></tr>{rows}</table>")
    return "".join(parts)


def build(store: RunStore, targets: list[Path] | None = None, title: str = "attnlab report",
          records: Path | None = None, on_skip: Callable[[str], None] = say) -> str:
    """HTML for ``targets`` (run or sweep directories), or for everything in the store if None; with the committed
    claims record under ``records`` (default: the checkout's ``results/claims``) when reporting everything.

    A run whose files fail their integrity check, or a sweep or claims file that cannot be read, is skipped and
    named (in the report and through ``on_skip``, one line each) instead of stopping the report."""
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
        claim_files = sorted(store.root.glob("claims/*.json"))
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
    body = [f"<h1>{_e(title)}</h1><p class='muted'>attnlab {__version__} · generated "
            f"{time.strftime('%Y-%m-%d %H:%M:%S')} · store {_e(store.root.resolve())}</p>"]
    claims = _sections(claims_section, claim_files, skip, "claims file")
    if claims:
        body.append("<h2>Claims</h2>" + claims)
    if targets is None:
        from attnlab.core.record import default_root

        root = records if records is not None else default_root()
        if root is not None and root.is_dir() and (section := record_section(root)):
            body.append(section)
    by_study: dict[str, list[Path]] = {}
    for r in runs:
        by_study.setdefault(r.parent.name.split(".")[0], []).append(r)
    for study, dirs in by_study.items():
        body.append(f"<h2>Runs — {_e(study)}</h2>" + _sections(run_section, sorted(dirs), skip, "run"))
    sweep_html = _sections(sweep_section, sweeps, skip, "sweep")
    if sweep_html:
        body.append("<h2>Sweeps</h2>" + sweep_html)
    if skipped:
        body.append("<h2>Skipped</h2><ul>" + "".join(f"<li class='fail'>{_e(s)}</li>" for s in skipped) + "</ul>")
    if len(body) == 1:
        body.append("<p>Nothing to report yet: run an experiment first (attnlab run ...).</p>")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title><style>{_CSS}</style>"
            f"</head><body>{''.join(body)}</body></html>")


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
