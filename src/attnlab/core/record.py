"""The committed claims record: what holds at which scale, readable without running anything.

``attnlab check STUDY --scale S --record results/claims`` writes ``results/claims/<S>/<study>.json`` (a run on a
GPU: ``<study>-cuda.json``): date, commit, hardware (CPU model, cores, threads, torch; the GPU's details), wall
time, and per claim its verdict, measured and expected values, detail and seconds. A run restricted by ``--only``
updates those claims in the existing record and keeps the others (each claim carries its own date and commit).
``attnlab check --since PATH`` compares a new run with a record (:func:`compare`); the README's tables are
generated from the records (``python -m attnlab.core.record README.md``, run by ``make check``), so they never
drift from them.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from attnlab.core import fingerprint
from attnlab.core.claims import ClaimResult
from attnlab.core.device import details, kind, parse
from attnlab.core.files import atomic_write_json, atomic_write_text, replace_block
from attnlab.core.fingerprint import code_fingerprint
from attnlab.core.runs import git_revision

VERDICTS = ("pass", "fail", "reported", "error")
ENTRY_KEYS = ("claim", "ref", "statement", "verdict", "measured", "expected", "tolerance", "detail", "seconds",
              "runs_computed", "runs_reused")


def hardware(device: str | None) -> dict[str, Any]:
    """The machine a record was measured on: the CPU always (model, cores, threads, torch), the GPU if used."""
    out = {"cpu": details(torch.device("cpu")), "python": sys.version.split()[0]}
    dev = parse(device or "cpu")
    if dev.type == "cuda":
        out["gpu"] = details(dev)
    return out


def stale(doc: dict[str, Any]) -> str | None:
    """Why the record ``doc`` no longer measures today's code (its study's experiments changed since), or None.

    Each entry keeps the fingerprint of the code it measured (:mod:`attnlab.core.fingerprint`); an entry without
    one (its commit was not in the checkout that last wrote the record) may be stale and is said so."""
    study = doc.get("study", "")
    now = code_fingerprint(study)
    if now is None:
        return None
    entries = doc.get("claims", [])
    old = [e for e in entries if fingerprint.stale(e, now)]
    if old:
        return (f"{doc.get('path', study)}: {len(old)} of {len(entries)} claims measured experiment code that has "
                f"changed since (fingerprint {old[0]['code']} → {now}, commit {str(old[0].get('commit'))[:10]}): "
                "those verdicts are stale")
    unknown = [e for e in entries if not e.get("code")]
    if unknown:
        return (f"{doc.get('path', study)}: {len(unknown)} of {len(entries)} claims keep no code fingerprint (their "
                f"commit {str(unknown[0].get('commit'))[:10]} was not known when it was written): may be stale")
    return None


def _definitions() -> dict[str, str]:
    """Claim id → :meth:`Claim.fingerprint` of every registered claim."""
    from attnlab.core.claims import claims

    return {c.id: c.fingerprint() for c in claims()}


def redefined(doc: dict[str, Any], definitions: dict[str, str] | None = None) -> int | None:
    """How many of the record's entries measured a definition of their claim that the code no longer makes (another
    gate or measure, or a claim since removed); None for a record written before definitions were kept."""
    entries = doc.get("claims", [])
    if not entries or not all(e.get("definition") for e in entries):
        return None
    now = _definitions() if definitions is None else definitions
    return sum(now.get(e["claim"]) != e["definition"] for e in entries)


def default_root() -> Path | None:
    """``results/claims`` of the source checkout (the working directory's, else the package's), if there is one."""
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (base / "results" / "claims").is_dir():
            return base / "results" / "claims"
    return None


def path_for(root: Path, scale: str, study: str, device: str | None) -> Path:
    suffix = "-cuda" if kind(device) == "cuda" else ""
    return Path(root) / scale / f"{study}{suffix}.json"


def write(results: list[ClaimResult], root: Path, scale: str, device: str | None,
          merge: bool = False, known: set[str] | None = None, elapsed: float | None = None,
          hw: dict[str, Any] | None = None, interrupted: bool = False, budget: str | None = None) -> list[Path]:
    """One record per study in ``results`` under ``root/<scale>/``; ``merge`` keeps the record's other claims.

    ``known``: the claim ids registered at this scale. A merged entry of another (a claim renamed or removed since)
    is dropped, so the record never reports a claim the code no longer makes; a record with fewer than the study's
    known claims (an interrupted check, or ``--only``) says ``"partial": {"claims_measured": n, "claims_planned":
    m, "seconds": elapsed, "interrupted": bool, "budget": budget}`` (``elapsed``: the check's wall time until it
    stopped; ``budget``: the ``--budget`` it ran under). ``hw``: the machine (default :func:`hardware`)."""
    now, commit, hw = time.strftime("%Y-%m-%dT%H:%M:%S%z"), git_revision(), hw or hardware(device)
    definitions = _definitions()
    paths = []
    for study in sorted({r.claim.split(".", 1)[0] for r in results}):
        code = code_fingerprint(study)
        path = path_for(root, scale, study, device)
        entries: dict[str, dict[str, Any]] = {}
        if merge and path.exists():
            entries = {e["claim"]: e for e in json.loads(path.read_text())["claims"]
                       if known is None or e["claim"] in known}
        for r in results:
            if r.claim.startswith(study + "."):
                entries[r.claim] = {**_entry(r.to_json()), "date": now, "commit": commit, "code": code,
                                    "definition": definitions.get(r.claim)}
        rows = list(entries.values())
        doc = {"study": study, "scale": scale, "device": device or "cpu", "date": now, "commit": commit,
               "code": code, "hardware": hw, "wall_seconds": round(sum(e["seconds"] for e in rows), 1),
               "runs_reused": sum(e.get("runs_reused", 0) for e in rows), "counts": counts(rows),
               "command": f"attnlab check {study} --scale {scale}" + (f" --device {device}" if device else ""),
               "claims": rows}
        planned = sum(c.startswith(study + ".") for c in known or ())
        if len(rows) < planned:
            doc["partial"] = {"claims_measured": len(rows), "claims_planned": planned,
                              "seconds": None if elapsed is None else round(elapsed, 1), "interrupted": interrupted}
            if budget is not None:
                doc["partial"]["budget"] = budget
        atomic_write_json(path, doc)
        paths.append(path)
    return paths


def _entry(row: dict[str, Any]) -> dict[str, Any]:
    e = {k: row.get(k) for k in ENTRY_KEYS}
    if isinstance(e["measured"], float) and not math.isfinite(e["measured"]):
        e["measured"] = None  # "never happened" (NaN) is null: the record stays strict JSON
    e["seconds"] = round(float(e["seconds"] or 0.0), 2)
    return e


def counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    rows = list(rows)
    return {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}


def load(path: Path, scale: str | None = None) -> list[dict[str, Any]]:
    """The records in a file, or under a directory (recursively), of ``scale`` if given."""
    path = Path(path)
    if not path.exists():
        from attnlab.core.config import ConfigError

        raise ConfigError(f"--since {str(path)!r} does not exist (a record file or a results/claims directory)")
    files = [path] if path.is_file() else sorted(path.rglob("*.json"))
    docs = [json.loads(f.read_text()) | {"path": str(f)} for f in files]
    return [d for d in docs if "claims" in d and (scale is None or d.get("scale") == scale)]


@dataclass(frozen=True)
class Change:
    claim: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    @property
    def regression(self) -> bool:
        """A claim that passed in the record and now fails (or errors)."""
        return bool(self.before and self.after and self.before["verdict"] == "pass"
                    and self.after["verdict"] in ("fail", "error"))

    def line(self) -> str:
        if self.before is None:
            return f"{self.claim}: new — {self.after['verdict']}, measured {_num(self.after['measured'])}"
        if self.after is None:
            return f"{self.claim}: in the record ({self.before['verdict']}) but not measured now"
        b, a = self.before, self.after
        verdict = f"{b['verdict']} → {a['verdict']}" if b["verdict"] != a["verdict"] else a["verdict"]
        return f"{self.claim}: {verdict}, measured {_num(b['measured'])} → {_num(a['measured'])}" + (
            " (REGRESSION)" if self.regression else "")


def compare(records: list[dict[str, Any]], results: list[ClaimResult], device: str | None = None,
            rel: float = 1e-6) -> list[Change]:
    """The claims of ``results`` whose verdict or value (relative change > ``rel``) differs from the records, or
    that the records lack. Where a study has a CPU and a CUDA record, the one of ``device``'s kind is used."""
    want = kind(device)
    ordered = sorted(records, key=lambda d: kind(d.get("device")) == want)
    before = {e["claim"]: e for d in ordered for e in d["claims"]}  # the matching device's record wins
    now = {r.claim: _entry(r.to_json()) for r in results}
    return [Change(c, before.get(c), e) for c, e in now.items() if c not in before or _differs(before[c], e, rel)]


def _differs(b: dict[str, Any], a: dict[str, Any], rel: float) -> bool:
    if b["verdict"] != a["verdict"]:
        return True
    x, y = b["measured"], a["measured"]
    if x is None or y is None:
        return (x is None) != (y is None)
    return abs(x - y) > rel * max(abs(x), abs(y), 1e-300)


def _num(x: Any) -> str:
    return "—" if x is None else f"{x:.4g}"


# -- the README's tables, generated from the records -------------------------------------------------------------

BLOCKS = {"claims-record": "claims record", "gpu-table": "paper scale on one GPU"}


def hours(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def _rel(path: str, base: Path) -> str:
    return os.path.relpath(Path(path).resolve(), Path(base).resolve())


def _threads(n: int) -> str:
    return f"{n} thread" + "s" * (n != 1)


def claims_table(records: list[dict[str, Any]], base: Path) -> str:
    """Markdown: one row per record (study, scale, device, pass/fail/reported/error, wall time, date, link)."""
    if not records:
        return ("No committed record yet: `make check` writes `results/claims/quick/`, `make check-paper` "
                "`results/claims/paper/`.\n")
    lines = ["| study | scale | device | pass | fail | reported | error | wall time | measured | record |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    definitions = _definitions()
    for d in sorted(records, key=lambda d: (d["scale"] != "quick", d["study"], d.get("device", "cpu"))):
        n = redefined(d, definitions)
        stale = (" (claim definitions not kept: `check --since` compares)" if n is None else
                 f" ({n} measured a definition changed since)" if n else "")
        c, hw = d["counts"], d["hardware"]
        where = hw["gpu"]["name"] if "gpu" in hw else f"CPU, {_threads(hw['cpu']['threads'])}"
        reused = f" ({d['runs_reused']} runs reused)" if d.get("runs_reused") else ""
        lines.append(f"| {d['study']} | {d['scale']} | {where} | {c['pass']} | {c['fail']} | {c['reported']} | "
                     f"{c['error']} | {_partial(d) or hours(d['wall_seconds']) + reused} | {d['date'][:10]}, "
                     f"{(d['commit'] or 'unknown')[:10]}{stale} | [{Path(d['path']).name}]({_rel(d['path'], base)}) |")
    return "\n".join(lines) + "\n"


def _partial(d: dict[str, Any]) -> str:
    """'interrupted after T: n of m claims' for the record of a check that did not finish, 'n of m claims in T'
    for one that measured chosen claims (``--only``), else ''."""
    part = d.get("partial")
    if not part:
        return ""
    n_of_m = f"{part['claims_measured']} of {part['claims_planned']} claims"
    if part.get("budget"):  # a budgeted slice: its own wall time, not the sum of the claims' seconds
        return f"{n_of_m}; last slice {hours(part['seconds'] or 0)} (--budget {part['budget']})"
    if not part.get("interrupted", True):  # records before the flag existed were all interrupted checks
        reused = d.get("runs_reused", 0)
        return f"{n_of_m} in {hours(d['wall_seconds'])}" + (f" ({reused} run{'s' * (reused > 1)} reused)"
                                                            if reused else "")
    after = f" after {hours(part['seconds'])}" if part.get("seconds") else ""
    return f"interrupted{after}: {n_of_m}"


def gpu_table(records: list[dict[str, Any]], studies: Iterable[str], planned: dict[str, int] | None = None) -> str:
    """Markdown: per study, the paper-scale claims measured (of the registry's ``planned``) over the union of its
    paper-scale records (GPU and CPU; a claim measured in both counts its newer entry), their verdicts, how many
    measured code that has changed since, and the GPU and CPU time the records spent."""
    lines = ["| study | paper-scale claims measured | pass | fail | reported | measured on changed code | GPU time "
             "| CPU time |", "|---|---|---|---|---|---|---|---|"]
    for study in studies:
        docs = [d for d in records if d["scale"] == "paper" and d["study"] == study]
        latest: dict[str, dict[str, Any]] = {}
        spent = {True: 0.0, False: 0.0}
        for d in docs:
            gpu = "gpu" in d["hardware"]
            for e in d["claims"]:
                spent[gpu] += float(e.get("seconds") or 0.0)
                if e["claim"] not in latest or e.get("date", "") > latest[e["claim"]].get("date", ""):
                    latest[e["claim"]] = e
        of = (planned or {}).get(study) or max([d.get("partial", {}).get("claims_planned", len(d["claims"]))
                                                for d in docs] or [0])
        v = counts(latest.values())
        now = code_fingerprint(study)
        stale = sum(fingerprint.stale(e, now) for e in latest.values())
        gpus = sorted({d["hardware"]["gpu"]["name"] for d in docs if "gpu" in d["hardware"]})
        g = f"{hours(spent[True])} ({', '.join(gpus)})" if gpus else "—"
        c = hours(spent[False]) if any("gpu" not in d["hardware"] for d in docs) else "—"
        lines.append(f"| {study} | {len(latest)} of {of} | {v['pass']} | {v['fail'] + v['error']} | {v['reported']} | "
                     f"{stale} | {g} | {c} |")
    return "\n".join(lines) + "\n"


def _planned(scale: str) -> dict[str, int]:
    """Claims the registry holds at ``scale``, per study."""
    from attnlab.core.claims import claims

    out: dict[str, int] = {}
    for c in claims():
        if scale in c.scales:
            out[c.study] = out.get(c.study, 0) + 1
    return out


def render_readme(text: str, records_root: Path, base: Path) -> str:
    """``text`` with each ``<!-- NAME:start -->…<!-- NAME:end -->`` block regenerated from the records."""
    from attnlab import STUDIES

    records = load(records_root) if Path(records_root).is_dir() else []
    blocks = {"claims-record": claims_table(records, base), "gpu-table": gpu_table(records, STUDIES, _planned("paper"))}
    for name, body in blocks.items():
        text = replace_block(text, name, body, "results/claims by `python -m attnlab.core.record README.md`")
    return text


def main(argv: list[str] | None = None) -> int:
    """``python -m attnlab.core.record README.md [RESULTS_CLAIMS_DIR]``: regenerate the README's tables."""
    args = sys.argv[1:] if argv is None else argv
    readme = Path(args[0] if args else "README.md")
    root = Path(args[1]) if len(args) > 1 else readme.parent / "results" / "claims"
    text = readme.read_text()
    new = render_readme(text, root, readme.parent)
    if new != text:
        atomic_write_text(readme, new)
        print(f"updated {readme}")
    else:
        print(f"{readme} is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
