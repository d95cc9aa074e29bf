"""``attnlab store``: list, verify, rebuild, remove and garbage-collect the runs of a run store.

``ls`` reads the index (and checks that each finished run's files are present at their sealed sizes); ``verify``
re-hashes every file of every finished run against its manifest, like ``git fsck``, and runs SQLite's
``integrity_check`` on the index (exit 1 if anything is corrupt); ``rebuild`` recreates the index from the run
directories; ``rm`` removes runs by id or filter; ``gc`` removes interrupted and failed runs older than an age and
the leftovers of killed processes. None of them creates a store.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from attnlab.cli_common import JsonOpt, err_console, guard, out_console
from attnlab.cli_flags import StoreOpt
from attnlab.cli_flags import store as _store
from attnlab.core.config import ConfigError

store_app = typer.Typer(no_args_is_help=True,
                        help="List, verify, rebuild, remove, garbage-collect, pack and unpack stored runs.")

StudyOpt = Annotated[str | None, typer.Option("--study", help="only runs of this study")]
ExpOpt = Annotated[str | None, typer.Option("--experiment", help="only runs of STUDY.EXPERIMENT")]
StatusOpt = Annotated[str | None, typer.Option("--status", help="queued, running, done, failed, interrupted or "
                                               "corrupt")]
OlderOpt = Annotated[str | None, typer.Option("--older-than", help="created longer ago than AGE (7d, 12h, 30m)")]
NewerOpt = Annotated[str | None, typer.Option("--newer-than", help="created less than AGE ago")]
IdsArg = Annotated[list[str] | None, typer.Argument(help="run ids (or unique prefixes of at least 4 digits)")]


def _selection(study: str | None, experiment: str | None, status: str | None, older: str | None,
               newer: str | None):
    from attnlab.core.maintenance import Selection, parse_age
    from attnlab.core.registry import check_study

    check_study(study)
    return Selection(study, experiment, status, parse_age(older, "--older-than") if older else None,
                     parse_age(newer, "--newer-than") if newer else None)


def _age(t: float | None) -> str:
    if not t:
        return "—"
    s = max(0.0, time.time() - t)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s / size:.0f}{unit}"
    return f"{s:.0f}s"


def _size(n: int) -> str:
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def _state(row: dict[str, Any], check: Any) -> str:
    return {"sealed": "ok", "legacy": "unsealed", "corrupt": "corrupt"}.get(check.state, "—")


@store_app.command("ls")
@guard
def ls(
    ids: IdsArg = None, study: StudyOpt = None, experiment: ExpOpt = None, status: StatusOpt = None,
    older_than: OlderOpt = None, newer_than: NewerOpt = None, store: StoreOpt = None, json_: JsonOpt = False,
) -> None:
    """The runs of the store (newest last): id, experiment, status, age, time taken, and whether each finished
    run's files are present at their sealed sizes ("files": ok, unsealed, corrupt; `verify` checks every byte)."""
    from attnlab.core.maintenance import select

    st = _store(store, existing=True)
    rows = select(st, _selection(study, experiment, status, older_than, newer_than), _ids(st, ids))
    if json_:
        print(json.dumps([{**{k: r[k] for k in ("id", "experiment", "status", "created", "finished", "seconds",
                                                  "attempts", "error")}, "files": _state(r, c),
                           "problems": c.problems, "run_dir": str(st.dir_of(r))} for r, c in rows], indent=2))
        return
    table = Table(title=f"runs in {st.root}")
    for col in ("id", "experiment", "status", "files", "age", "seconds"):
        table.add_column(col, overflow="fold")
    for r, c in rows:
        status_text = "corrupt" if c.state == "corrupt" else r["status"]
        table.add_row(r["id"], r["experiment"], status_text, _state(r, c), _age(r["created"]),
                      "—" if r["seconds"] is None else f"{r['seconds']:.1f}")
    out_console.print(table)
    out_console.print(f"{len(rows)} runs")


@store_app.command()
@guard
def verify(ids: IdsArg = None, store: StoreOpt = None, json_: JsonOpt = False) -> None:
    """Re-hash every file of every finished run against its manifest and check the index (exit 1 if corrupt)."""
    from attnlab.core.maintenance import Selection, scan_runs, select

    st = _store(store, existing=True)
    index_check = st.index.integrity()
    rows = select(st, Selection(), _ids(st, ids), deep=True)
    known = {r["id"] for r in st.index.rows()}
    missing = [r for r in scan_runs(st.root) if r["id"] not in known] if not ids else []
    done = [(r, c) for r, c in rows if r["status"] == "done"]
    corrupt = [(r, c) for r, c in done if c.state == "corrupt"]
    legacy = sum(c.state == "legacy" for _, c in done)
    if json_:
        print(json.dumps({"index": index_check, "checked": len(done), "legacy": legacy,
                          "not_in_index": [r["id"] for r in missing],
                          "corrupt": [{"id": r["id"], "experiment": r["experiment"], "problems": c.problems}
                                      for r, c in corrupt]}, indent=2))
    else:
        for r, c in corrupt:
            out_console.print(f"[red]corrupt[/red] {r['id']} {r['experiment']}: {escape(c.line(10))}", highlight=False,
                              soft_wrap=True)
        for r in missing:
            out_console.print(f"[yellow]not in the index[/yellow] {r['id']} {r['experiment']}: run `attnlab store "
                              "rebuild` to add it", highlight=False)
        if index_check != "ok":
            out_console.print(f"[red]index[/red] {escape(index_check)}: run `attnlab store rebuild`", highlight=False)
        out_console.print(f"verified {len(done)} finished runs ({legacy} unsealed, from before manifests): "
                          f"{len(corrupt)} corrupt; index {index_check}", highlight=False)
    if corrupt or index_check != "ok":
        raise typer.Exit(1)


@store_app.command()
@guard
def rebuild(store: StoreOpt = None) -> None:
    """Rebuild the index from the run directories (the old index is kept beside it as index.sqlite.bak-TIME)."""
    st = _store(store, existing=True)
    backup, n = st.index.rebuild()
    kept = f"; the old index is kept as {backup}" if backup else ""
    out_console.print(f"rebuilt {st.index.path} from {n} run directories{kept}", highlight=False)


@store_app.command()
@guard
def rm(
    ids: IdsArg = None, study: StudyOpt = None, experiment: ExpOpt = None, status: StatusOpt = None,
    older_than: OlderOpt = None, newer_than: NewerOpt = None, store: StoreOpt = None,
    yes: Annotated[bool, typer.Option("--yes", help="remove what a filter selects (without it: list only)")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="say what would be removed; remove nothing")] = False,
) -> None:
    """Remove runs (their directories and index rows) by id or by filter; a running run is never removed."""
    from attnlab.core.maintenance import remove, select

    sel = _selection(study, experiment, status, older_than, newer_than)
    if not ids and sel.empty:
        raise ConfigError("give run ids or a filter (--study, --experiment, --status, --older-than, --newer-than)")
    st = _store(store, existing=True)
    rows = select(st, sel, _ids(st, ids))
    if not ids and not yes and not dry_run:
        for r, _ in rows:
            out_console.print(f"would remove {r['id']} {r['experiment']} ({r['status']})", highlight=False)
        raise ConfigError(f"{len(rows)} runs match the filter: add --yes to remove them (or --dry-run to list them)")
    kept = 0
    for r, _ in rows:
        why = remove(st, r, dry_run)
        verb = "would remove" if dry_run else "removed"
        if why:
            kept += 1
            err_console.print(f"kept {r['id']} {r['experiment']}: {why}", highlight=False)
        else:
            out_console.print(f"{verb} {r['id']} {r['experiment']} ({r['status']})", highlight=False)
    out_console.print(f"{len(rows) - kept} runs {'would be ' if dry_run else ''}removed, {kept} kept")
    if kept:
        raise typer.Exit(1)


@store_app.command()
@guard
def gc(
    older_than: Annotated[str, typer.Option("--older-than", help="age of interrupted/failed runs to remove")] = "7d",
    store: StoreOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="say what would be removed; remove nothing")] = False,
) -> None:
    """Remove interrupted and failed runs older than AGE, temporary files of killed writes, checkpoints left in
    finished runs, run directories that never started, index rows without a directory and old moved-aside indexes."""
    from attnlab.core.maintenance import collect, garbage, parse_age

    st = _store(store, existing=True)
    if not dry_run:
        st.record_interrupted()  # dead "running" runs become "interrupted" (aged from now)
    items = garbage(st, parse_age(older_than, "--older-than"))
    for item in items:
        if not dry_run:
            collect(st, item)
        out_console.print(f"{'would remove' if dry_run else 'removed'} {item.what}: {item.path} ({_size(item.bytes)})",
                          highlight=False, soft_wrap=True)
    total = sum(i.bytes for i in items)
    out_console.print(f"{len(items)} items, {_size(total)} {'would be ' if dry_run else ''}freed", highlight=False)


def _ids(st: Any, ids: list[str] | None) -> list[str] | None:
    """Full ids for ``ids`` (each a unique prefix of at least 4 hex digits), or ConfigError naming the bad one."""
    if not ids:
        return None
    known = [r["id"] for r in st.index.rows()]
    out = []
    for i in ids:
        hits = [k for k in known if k.startswith(i)] if len(i) >= 4 else []
        if len(hits) != 1:
            why = "is shorter than 4 digits" if len(i) < 4 else "matches no run" if not hits else \
                f"matches {len(hits)} runs; give more digits"
            raise ConfigError(f"run id {i[:40]!r} {why} (see `attnlab store ls`)")
        out.append(hits[0])
    return out


@store_app.command("pack")
@guard
def pack_(
    archive: Annotated[Path, typer.Argument(help="the .tar.gz to write")],
    ids: Annotated[list[str] | None, typer.Option("--id", help="a run id or prefix (repeatable)")] = None,
    study: StudyOpt = None, experiment: ExpOpt = None, status: StatusOpt = None,
    all_: Annotated[bool, typer.Option("--all", help="every run the filters select, finished ones too (default: "
                                       "the unfinished runs, with their checkpoints)")] = False,
    store: StoreOpt = None,
) -> None:
    """Write runs into one .tar.gz to carry to another machine (`store unpack` there): by default the unfinished
    runs, so that a check stopped by a slice's deadline resumes where it stopped."""
    from attnlab.core.carry import pack
    from attnlab.core.maintenance import select

    st = _store(store, existing=True)
    sel = _selection(study, experiment, status, None, None)
    rows = [r for r, _ in select(st, sel, ids or None)
            if all_ or ids or status or r["status"] in ("interrupted", "running")]
    if not rows:
        raise ConfigError("no run selected: nothing unfinished in the store (--all packs finished runs too)")
    info = pack(st, rows, archive)
    out_console.print(f"packed {len(info['runs'])} run(s) into {archive} ({_size(info['bytes'])}); "
                      f"`attnlab store unpack {archive.name}` adds them to another store", highlight=False)


@store_app.command("unpack")
@guard
def unpack_(archive: Annotated[Path, typer.Argument(help="a .tar.gz written by `attnlab store pack`")],
            store: StoreOpt = None) -> None:
    """Add the runs of a `store pack` archive to this store: a run it has finished is kept, an unfinished one is
    replaced by a carried run that progressed further; an archive member outside runs/EXP/ID/ is refused."""
    from attnlab.core.carry import unpack

    if not archive.is_file():
        raise ConfigError(f"{str(archive)!r} does not exist (an archive written by `attnlab store pack`)")
    for run_id, what in unpack(_store(store), archive):
        out_console.print(f"{run_id}: {what}", highlight=False)


@store_app.command("calibrate")
@guard
def calibrate_(
    store: StoreOpt = None,
    held_out: Annotated[list[Path] | None, typer.Option("--held-out", help="a store whose runs (another scale) are "
                                                        "estimated, not fitted: how far the formulas extrapolate "
                                                        "(repeatable)")] = None,
    kind: Annotated[str, typer.Option("--kind", help="cpu (one thread) or cuda")] = "cpu",
    out: Annotated[Path | None, typer.Option("--out", help="write OUT/<kind>.json (e.g. results/timing)")] = None,
    json_: JsonOpt = False,
) -> None:
    """Fit each experiment's time model (its work formula, core.costs) to the seconds of the store's finished runs;
    `check --plan` reads the rates from results/timing/<kind>.json."""
    from attnlab.core import costs
    from attnlab.core.record import hardware
    from attnlab.core.registry import load_studies
    from attnlab.core.runs import RunStore

    if kind not in costs.KINDS:
        raise ConfigError(f"--kind {kind!r}: allowed: {', '.join(costs.KINDS)}")
    load_studies()
    st = _store(store, existing=True)
    held = [r for p in held_out or [] for r in costs.measured_runs(RunStore(p), kind)]
    rates, where = costs.calibrate(costs.measured_runs(st, kind), held), str(st.root)
    machine = hardware("cuda" if kind == "cuda" else None)
    if not rates:
        raise ConfigError(f"no finished {kind} run of an experiment with a time model in {where}")
    if out is not None:
        costs.save(rates, Path(out) / f"{kind}.json", machine)
    if json_:
        print(json.dumps({k: vars(r) for k, r in rates.items()}, indent=2))
        return
    table = Table(title=f"time models on {kind}, fitted on {where}")
    for col in ("experiment", "runs", "s per unit", "factor", "held out: estimate / measured s"):
        table.add_column(col, overflow="fold")
    for r in rates.values():
        table.add_row(r.experiment, str(r.runs), f"{r.seconds_per_unit:.3g}", f"{r.factor:.2f}",
                      ", ".join(f"{h['estimate']:.0f}/{h['seconds']:.0f}" for h in r.held_out))
    out_console.print(table)
    if out is not None:
        err_console.print(f"rates → {Path(out) / f'{kind}.json'}", highlight=False)

