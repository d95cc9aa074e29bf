"""``attnlab check``: measure the papers' claims, compare them with a record (``--since``), write the committed
record (``--record``); ``--plan`` says what a check would measure and for how long, ``--budget`` measures what the
record lacks first and stops cleanly at the deadline (:mod:`attnlab.core.plan`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from attnlab.cli_common import (
    DeviceOpt,
    JsonOpt,
    QuietOpt,
    ScaleOpt,
    checked_device,
    err_console,
    guard,
    out_console,
)
from attnlab.cli_flags import OldStoreOpt, StoreOpt
from attnlab.cli_flags import store as _store
from attnlab.core import progress

BUDGET_MARGIN = 0.05  # of the budget, kept for writing the record after the deadline stops the last claim


@guard
def check(
    study: Annotated[str | None, typer.Argument(help="one study (default: all)")] = None,
    scale: ScaleOpt = "quick",
    only: Annotated[list[str] | None, typer.Option("--only", help="only this claim id (repeatable)")] = None,
    device: DeviceOpt = None,
    record: Annotated[Path | None, typer.Option("--record", help="write DIR/<scale>/<study>.json, the committed "
                                                "record (e.g. results/claims)")] = None,
    since: Annotated[Path | None, typer.Option("--since", help="a record file or directory: print what changed "
                                               "verdict or value (exit 1 if a pass became a fail)")] = None,
    budget: Annotated[str | None, typer.Option("--budget", help="stop cleanly within this time (12m, 90s, 1h30m): "
                                               "claims the --record lacks first, then the stalest; what was "
                                               "measured is merged into the record, unfinished runs checkpointed"
                                               )] = None,
    plan_: Annotated[bool, typer.Option("--plan", help="measure nothing: list the claims in the order --budget "
                                        "takes them, each with its estimated time and its runs in the store")]
    = False,
    store: StoreOpt = None,
    old_out: OldStoreOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Measure the papers' claims and compare them with what the papers say (exit 1 if any fails)."""
    from attnlab.core import plan as pl
    from attnlab.core import record as rec
    from attnlab.core.claims import failed, iter_check, to_check
    from attnlab.core.registry import check_study
    from attnlab.core.runs import deadline, sigterm_raises

    check_study(study)
    seconds = pl.parse_duration(budget) if budget is not None else None
    before = rec.load(since, scale) if since is not None else None
    for doc in before or []:  # records of code that changed since: said before the minutes of measuring
        if study is not None and doc.get("study") != study:
            continue
        if (why := rec.stale(doc)) is not None:
            err_console.print(f"stale: {escape(why)}", highlight=False, soft_wrap=True)
        if n := rec.redefined(doc):
            err_console.print(f"stale: {doc['path']}: {n} claim(s) measured a definition changed since (another "
                              "gate or measure, or a claim removed)", highlight=False, soft_wrap=True)
    if record is not None and not plan_ and (rev := rec.git_revision()) and rev.endswith("-dirty"):
        err_console.print("warning: the tree has uncommitted changes: a committed record should be measured from "
                          "a clean tree (commit first); this one will say -dirty", highlight=False)
    progress.set_quiet(quiet or json_)
    todo = to_check(study, scale, only)  # unknown --only ids: one line, before any work
    known = {c.id for c in to_check(study, scale)}  # the studies' claims: a record of fewer is marked partial
    device, runs = checked_device(device), _store(store, old_out)
    root = record if record is not None else rec.default_root()
    if plan_ or seconds is not None:
        steps = pl.plan(todo, scale, runs, root, device)
        if plan_:
            return _print_plan(steps, scale, device, root, json_)
        todo = [st.claim for st in steps]
    results, t0 = [], time.perf_counter()
    partial = bool(only) or seconds is not None

    def write_record(interrupted: bool = False) -> None:
        if record is None or not results:
            return
        for path in rec.write(results, record, scale, device, merge=partial, known=known,
                              elapsed=time.perf_counter() - t0, interrupted=interrupted, budget=budget):
            what = f" (interrupted after {len(results)} claim(s))" if interrupted else ""
            err_console.print(f"record{what} → {path}", highlight=False)

    try:
        with sigterm_raises(), deadline(None if seconds is None else seconds * (1 - BUDGET_MARGIN)):
            for result in iter_check(todo, scale, runs, device=device):
                results.append(result)
                if not (quiet or json_ or progress.enabled()):  # no bar off a terminal: one line per claim instead
                    err_console.print(f"[{len(results)}/{len(todo)}] {result.claim}: {result.verdict} "
                                      f"({result.seconds:.0f} s, {time.perf_counter() - t0:.0f} s so far)",
                                      highlight=False, soft_wrap=True)
    except KeyboardInterrupt as exc:
        if str(exc) != "budget":
            write_record(interrupted=True)
            raise
        left = len(todo) - len(results)
        err_console.print(f"budget {budget} reached after {len(results)} claim(s); {left} left, measured first by "
                          "the next --budget run (unfinished runs resume from their checkpoints)", highlight=False)
    changes = rec.compare(before, results, device) if before is not None else []
    if json_:
        print(json.dumps([r.to_json() for r in results], indent=2))
    else:
        print_claims(results)
    write_record()
    if before is not None:
        err_console.print(f"since {since}: " + (f"{len(changes)} claim(s) changed" if changes else "nothing changed"),
                          highlight=False)
        for change in changes:
            err_console.print(f"  {escape(change.line())}", highlight=False, soft_wrap=True)
    if failed(results) or any(c.regression for c in changes):
        raise typer.Exit(1)


def _print_plan(steps: list, scale: str, device: str | None, root: Path | None, json_: bool) -> None:
    from attnlab.core.record import hours

    rows = [{"claim": st.claim.id, "last": st.source, "seconds": st.seconds, "estimate": st.estimate,
             "expected": st.expected, "stale": st.stale, "runs_known": st.complete,
             "runs": [{"experiment": r.experiment, "run_id": r.run_id, "in_store": r.stored, "estimate": r.seconds}
                      for r in st.runs]} for st in steps]
    if json_:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"plan: {len(rows)} claims at {scale} scale on {device or 'cpu'} (record: {root})")
    for col in ("claim", "last measured", "record s", "model s", "runs (✓ in the store, else estimated s)"):
        table.add_column(col, overflow="fold")
    for r in rows:
        runs = ", ".join(f"{x['experiment'].split('.', 1)[1]}" + (" ✓" if x["in_store"] else
                         f" {x['estimate']:.0f}" if x["estimate"] is not None else " ?") for x in r["runs"])
        runs += "" if r["runs_known"] else " …"
        table.add_row(r["claim"], r["last"] + (" (stale code)" if r["stale"] else ""), _secs(r["seconds"]),
                      _secs(r["estimate"]) + ("" if r["runs_known"] else "+"), runs)
    out_console.print(table)
    total, modelled, by_record, unique = plan_total(steps)
    out_console.print(f"about {hours(total)} for {modelled + by_record} of {len(rows)} claims ({modelled} by the "
                      f"time models of their {unique} missing runs, each counted once, {by_record} by their last "
                      f"record); {len(rows) - modelled - by_record} without an estimate. A run marked ✓ is reused; "
                      "'…' and '+': later runs depend on a run not made yet.")


def plan_total(steps: list) -> tuple[float, int, int, int]:
    """(seconds, claims estimated by the time models, claims estimated by their record, distinct runs): a run that
    several claims ask for is made once, so it is counted once."""
    runs: dict[str, float] = {}
    modelled = by_record = 0
    seconds = 0.0
    for st in steps:
        if st.estimate is not None and st.complete:
            modelled += 1
            runs.update({r.run_id: r.seconds for r in st.runs if not r.stored})
        elif st.seconds is not None:
            by_record += 1
            seconds += st.seconds
    return seconds + sum(runs.values()), modelled, by_record, len(runs)


def _secs(s: float | None) -> str:
    return "?" if s is None else f"{s:.0f}"


def print_claims(results: list) -> None:
    table = Table(title="claims")
    for col in ("claim", "paper", "measured", "expected", "tolerance", "verdict"):
        table.add_column(col, overflow="fold")
    colours = {"pass": "green", "fail": "red", "error": "red", "reported": "yellow"}
    for r in results:
        measured = "—" if r.measured is None else f"{r.measured:.4g}"
        table.add_row(r.claim, r.ref, measured, r.expected, f"{r.tolerance:.3g}",
                      f"[{colours[r.verdict]}]{r.verdict}[/]")
    out_console.print(table)
    for r in results:
        if r.detail:
            err_console.print(f"{r.claim}: {escape(r.detail)}", highlight=False)
