"""The driver every ``benchmarks/<study>.py`` shares: run the named parts, print each result, write one JSON.

A benchmark script defines its parts as functions returning a dict (workload, times, ratios) and ends with::

    if __name__ == "__main__":
        bench.main("potts", {"sampling": sampling, "training": training})

``attnlab bench potts`` runs every part; ``python -m benchmarks.potts sampling`` picks some. The JSON goes to
``$ATTNLAB_BENCH_OUT/<study>.json`` (default ``benchmarks/results``, uncommitted scratch), with the machine it was
measured on. A script that can run on a GPU takes its device from :func:`device` (``attnlab bench --device cuda``);
``attnlab bench --record`` turns the JSON into a committed record ``results/benchmarks/<study>-<device>.json``
(:func:`record`: device, date, commit, torch/CUDA versions, one row per part).

A comparison with a paper's public code (:func:`against_public`) times both sides in at least three alternated
rounds (public, attnlab, public, attnlab, …) and keeps every round's wall and CPU seconds, iteration counts, thread
counts, versions and the load average; the README's and docs/benchmarks.md's "Against the papers' public code"
tables are generated from the committed records (:func:`render_pages`; ``python -m attnlab.core.bench README.md
docs/benchmarks.md``, also run by ``attnlab bench --record``), and a test fails when they are stale.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from attnlab.core.files import replace_block

_ASKED: list[str] = []  # devices the running script asked for through device()


def threads() -> int:
    """Torch threads for a benchmark: ``$ATTNLAB_THREADS`` (default 1, the pinned setting of the tests), set now."""
    n = int(os.environ.get("ATTNLAB_THREADS", "1"))
    torch.set_num_threads(n)
    return n


def device() -> torch.device:
    """The device a benchmark computes on: ``$ATTNLAB_BENCH_DEVICE`` (``attnlab bench --device``), default cpu."""
    from attnlab.core.device import parse

    name = os.environ.get("ATTNLAB_BENCH_DEVICE", "cpu")
    _ASKED.append(name)
    return parse(name)


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """(mean seconds per call over ``repeat`` calls, the last result); CUDA work is waited for at both ends."""
    _sync()
    t0 = time.perf_counter()
    for _ in range(repeat):
        out = fn()
    _sync()
    return (time.perf_counter() - t0) / repeat, out


def _sync() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def machine(threads: int) -> dict[str, Any]:
    """Python, torch, thread count, CPU and load average: what a timing depends on."""
    return {"python": platform.python_version(), "torch": torch.__version__, "threads": threads,
            "cpu": platform.processor() or platform.machine(), "load_avg": list(os.getloadavg())}


def main(study: str, parts: dict[str, Callable[[], dict[str, Any]]], threads: int = 1,
         argv: list[str] | None = None) -> dict[str, Any]:
    """Run the parts named in ``argv`` (default ``sys.argv[1:]``; none named: all of them) and write the JSON."""
    names = sys.argv[1:] if argv is None else argv
    unknown = [n for n in names if n not in parts]
    if unknown:
        raise SystemExit(f"{study} benchmark: unknown part(s) {', '.join(unknown)}; have {', '.join(parts)}")
    out: dict[str, Any] = {"machine": machine(threads)}
    for name in names or list(parts):
        print(f"[{study}] {name} …", flush=True)
        out[name] = parts[name]()
        print(json.dumps(out[name], indent=2), flush=True)
    path = Path(os.environ.get("ATTNLAB_BENCH_OUT", "benchmarks/results")) / f"{study}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"→ {path}")
    return out


def record(study: str, result: dict[str, Any], requested: str, out_dir: Path) -> Path:
    """Write the committed benchmark record ``out_dir/<study>-<device>.json`` from a script's JSON ``result``.

    ``<device>`` is ``cpu`` or the GPU's name (``nvidia-h100-80gb-hbm3``). A script that never asked for its device
    (:func:`device`) ran on the CPU whatever was requested, and its record says so.
    """
    from attnlab.core.device import details, parse
    from attnlab.core.files import atomic_write_json
    from attnlab.core.runs import git_revision

    used = requested if requested in _ASKED or requested == "cpu" else "cpu"
    dev = parse(used)
    info = details(dev)
    label = "cpu" if dev.type == "cpu" else _slug(info["name"])
    rows = [{"part": k, **(v if isinstance(v, dict) else {"value": v})} for k, v in result.items() if k != "machine"]
    note = "" if used == requested else f"this benchmark has no device option: it ran on the CPU, not {requested}"
    doc = {"study": study, "device": used, "device_label": label, "device_details": info,
           "requested_device": requested, "note": note,
           "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "commit": git_revision(), "torch": torch.__version__,
           "cuda": torch.version.cuda, "machine": result.get("machine", {}), "rows": rows}
    path = out_dir / f"{study}-{label}.json"
    atomic_write_json(path, doc)
    return path


def _slug(text: str) -> str:
    return "-".join("".join(c if c.isalnum() else " " for c in text.lower()).split()) or "gpu"


# -- against a paper's public code: alternated rounds ------------------------------------------------------------

PUBLIC = "public-comparison"  # the ``kind`` of a row made by against_public
MIN_ROUNDS = 3  # fewer rounds are recorded but never published


def rounds() -> int:
    """Alternated rounds of a comparison: ``$ATTNLAB_BENCH_ROUNDS`` (``attnlab bench --rounds``), default 3."""
    n = int(os.environ.get("ATTNLAB_BENCH_ROUNDS", str(MIN_ROUNDS)))
    if n < 1:
        raise SystemExit(f"ATTNLAB_BENCH_ROUNDS={n}: must be ≥ 1")
    return n


def spread(xs: list[float]) -> dict[str, float]:
    """min, median and max of ``xs``."""
    return {"min": min(xs), "median": statistics.median(xs), "max": max(xs)}


def _side(outs: list[dict[str, Any]]) -> dict[str, Any]:
    wall, cpu = [float(o["wall_s"]) for o in outs], [o.get("cpu_s") for o in outs]
    side = {"wall_s": wall, "wall": spread(wall), "iterations": [o.get("iterations") for o in outs],
            "threads": outs[-1].get("threads"), "versions": outs[-1].get("versions", {})}
    if all(c is not None for c in cpu):
        side |= {"cpu_s": [float(c) for c in cpu], "cpu": spread([float(c) for c in cpu])}
    return side


def _ratios(pub: dict[str, Any], ours: dict[str, Any]) -> dict[str, Any]:
    out = {"ratio_wall": spread([a / b for a, b in zip(pub["wall_s"], ours["wall_s"], strict=True)])}
    if "cpu_s" in pub and "cpu_s" in ours:
        out["ratio_cpu"] = spread([a / b for a, b in zip(pub["cpu_s"], ours["cpu_s"], strict=True)])
    return out


def against_public(name: str, workload: str, public: Callable[[], dict[str, Any]], ours: Callable[[], dict[str, Any]],
                   *, public_code: dict[str, Any], attnlab: str, variants: dict[str, Callable[[], dict[str, Any]]]
                   | None = None, agreement: Callable[[dict[str, Any], dict[str, Any]], str] | None = None,
                   n: int | None = None) -> dict[str, Any]:
    """One workload timed on the public code and on attnlab in ``n`` (:func:`rounds`) alternated rounds.

    Each side is a function that does the work once and returns ``wall_s``, ``cpu_s`` (None where unknown),
    ``iterations`` (the optimiser steps or evaluations it took), ``threads``, optionally ``versions``, and anything
    ``agreement(public_last, attnlab_last)`` reads to say in one line how the two results agree. ``variants``
    (other attnlab settings of the same workload) are timed in the same rounds, after attnlab. ``public_code``
    names the code: ``repo``, ``commit``, ``runs`` (what exactly was run). The ratio is public / attnlab per round.
    """
    n = rounds() if n is None else n
    fns = {"public": public, "attnlab": ours, **(variants or {})}
    outs: dict[str, list[dict[str, Any]]] = {k: [] for k in fns}
    load = []
    for _ in range(n):
        load.append(os.getloadavg()[0])
        for k, fn in fns.items():
            outs[k].append(fn())
    load.append(os.getloadavg()[0])
    pub, mine = _side(outs["public"]), _side(outs["attnlab"])
    row = {"kind": PUBLIC, "name": name, "workload": workload, "rounds": n, "order": list(fns),
           "load_avg_1min": load, "public_code": public_code, "attnlab_runs": attnlab, "public": pub,
           "attnlab": mine, **_ratios(pub, mine),
           "agreement": agreement(outs["public"][-1], outs["attnlab"][-1]) if agreement else ""}
    if variants:
        row["variants"] = {k: (s := _side(outs[k])) | _ratios(pub, s) for k in variants}
    return row


# -- the pages' tables, generated from the committed records -----------------------------------------------------

# The comparisons the README and docs/benchmarks.md list, with or without a record: (study, name, workload, code).
EXPECTED = (
    ("paths", "P=100", "Markov task of Fig. 2c (4 paths, N = 10, τ = 0.01), tokens → U on the public code's own "
     "tokens and heads, P = 100", "tiberilor/attention-paths-interplay"),
    ("paths", "P=400", "the same, P = 400", "tiberilor/attention-paths-interplay"),
    ("paths", "P=100 widths variances", "the same, P = 100, per-layer widths (10, 20, 15), variances (1.2, 0.8, 1.5, "
     "0.9)", "tiberilor/attention-paths-interplay"),
    ("clustering", "grid", "pal's `grid` configuration, 400 epochs: pal 5 seeds one after another, attnlab 100 seeds "
     "in one run", "facebookresearch/pal"),
)
NOT_MEASURED = "not measured yet against the committed record"
MARKERS = {"bench-public": "short", "bench-public-full": "full"}


def _s(x: float) -> str:
    return f"{x:.3g} s" if x < 1000 else f"{x:.0f} s"


def _x(r: dict[str, float]) -> str:
    return f"{r['median']:.3g}× ({r['min']:.3g}–{r['max']:.3g}×)"


def _time(side: dict[str, Any], clock: str = "wall") -> str:
    t = side[clock]
    return f"{_s(t['median'])} ({_s(t['min'])[:-2]}–{_s(t['max'])})"


def _iters(side: dict[str, Any]) -> str:
    its = [i for i in side["iterations"] if i is not None]
    if not its:
        return ""
    return f"{its[0]}" if len(set(map(str, its))) == 1 else f"{min(its)}–{max(its)}"


def comparisons(records_dir: Path) -> dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]]:
    """(study, name) → (record, row) for every public-code comparison in ``records_dir/*.json`` (the newest
    record wins where two hold the same comparison)."""
    found: dict[tuple[str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
    for path in sorted(Path(records_dir).glob("*.json")) if Path(records_dir).is_dir() else []:
        doc = json.loads(path.read_text())
        doc["file"] = path.name
        for part in doc.get("rows", []):
            for row in [part, *(v for v in part.values() if isinstance(v, dict))]:
                key = (doc["study"], row.get("name", ""))
                if row.get("kind") == PUBLIC and (key not in found or doc["date"] > found[key][0]["date"]):
                    found[key] = (doc, row)
    return found


def _cells(doc: dict[str, Any], row: dict[str, Any], full: bool, link: str) -> list[str]:
    pub, ours, code = row["public"], row["attnlab"], row["public_code"]
    def times(side: dict[str, Any]) -> str:
        out = f"{_time(side)} wall" + (f", {_time(side, 'cpu')} CPU" if "cpu" in side else "")
        its = _iters(side)
        return out + (f"; {its} iterations" if its else "") + (f"; {side['threads']} thread(s)" if full else "")
    ratio = f"{_x(row['ratio_wall'])} wall" + (f", {_x(row['ratio_cpu'])} CPU" if "ratio_cpu" in row else "")
    load = f"load {min(row['load_avg_1min']):.1f}–{max(row['load_avg_1min']):.1f}"
    rec = f"[{doc['file']}]({link}{doc['file']})" if link else f"`results/benchmarks/{doc['file']}`"
    rec += f", {doc['date'][:10]}, commit {(doc.get('commit') or 'unknown')[:10]}, {row['rounds']} rounds, {load}"
    if not full:
        return [times(pub), times(ours), ratio, row.get("agreement") or "—", rec]
    versions = ", ".join(f"{k} {v}" for k, v in pub.get("versions", {}).items())
    public = (f"{code.get('repo', '')} @ {str(code.get('commit', 'unknown'))[:10]}: {code.get('runs', '')}; "
              f"{times(pub)}" + (f"; {versions}" if versions else ""))
    for name, v in row.get("variants", {}).items():
        ratio += f"; {name}: {_x(v['ratio_wall'])} wall" + (f", {_x(v['ratio_cpu'])} CPU" if "ratio_cpu" in v else "")
    return [public, f"{row['attnlab_runs']}; {times(ours)}; torch {doc.get('torch')}", ratio,
            row.get("agreement") or "—", rec]


def public_table(records_dir: Path, full: bool, link: str = "") -> str:
    """Markdown: one row per expected comparison; its numbers from the committed record, or
    :data:`NOT_MEASURED` where no record holds it with at least :data:`MIN_ROUNDS` rounds."""
    found = comparisons(records_dir)
    lines = ["| study | workload | public code | attnlab | ratio, median (range over rounds) | agreement | record |",
             "|---|---|---|---|---|---|---|"]
    for study, name, workload, repo in EXPECTED:
        doc, row = found.get((study, name), (None, None))
        if row is not None and row["rounds"] >= MIN_ROUNDS:
            cells = _cells(doc, row, full, link)
            workload = row["workload"] if full else workload
        else:
            short = f" (a record of {row['rounds']} round(s) is not enough)" if row else ""
            cells = [repo, "—", NOT_MEASURED + short, "—", "—"]
        lines.append("| " + " | ".join([study, workload, *cells]).replace("\n", " ") + " |")
    return "\n".join(lines) + "\n"


def render_pages(text: str, records_dir: Path, link: str = "") -> str:
    """``text`` with each ``<!-- bench-public[-full]:start -->…:end -->`` block regenerated from the records."""
    for name, kind in MARKERS.items():
        text = replace_block(text, name, public_table(records_dir, kind == "full", link),
                             "results/benchmarks by `python -m attnlab.core.bench README.md docs/benchmarks.md`")
    return text


def update_pages(pages: list[Path], records_dir: Path | None = None) -> list[Path]:
    """Regenerate the tables of ``pages`` (a page at the repository root links the records; one below does not);
    returns the pages that changed."""
    changed = []
    for page in pages:
        root = records_dir or _root_of(page) / "results" / "benchmarks"
        text = page.read_text()
        link = "results/benchmarks/" if page.resolve().parent == _root_of(page).resolve() else ""
        new = render_pages(text, root, link)
        if new != text:
            from attnlab.core.files import atomic_write_text

            atomic_write_text(page, new)
            changed.append(page)
    return changed


def _root_of(page: Path) -> Path:
    """The checkout a page belongs to: the nearest folder above it holding ``results/``."""
    for base in Path(page).resolve().parents:
        if (base / "results").is_dir() or (base / "pyproject.toml").exists():
            return base
    return Path(page).resolve().parent


if __name__ == "__main__":
    pages = [Path(p) for p in sys.argv[1:]] or [Path("README.md"), Path("docs/benchmarks.md")]
    for p in pages:
        print(f"updated {p}" if p in update_pages([p]) else f"{p} is up to date")
