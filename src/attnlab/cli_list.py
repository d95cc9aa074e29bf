"""``attnlab list``: the studies' experiments, their scales and parameters; ``list STUDY.EXPERIMENT`` shows one
experiment's parameters with type, default, allowed values, both scales' values and description."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from attnlab.cli_common import JsonOpt, guard, out_console


@guard
def list_(
    study: Annotated[str | None, typer.Argument(help="only this study, or STUDY.EXPERIMENT for one experiment's "
                                                    "parameters")] = None,
    params: Annotated[bool, typer.Option("--params", help="show every parameter: type, default, allowed values, "
                                                          "description")] = False,
    claims_: Annotated[bool, typer.Option("--claims", help="list the claims instead: id, paper reference, scales, "
                                                            "statement")] = False,
    json_: JsonOpt = False,
) -> None:
    """Studies, experiments (one per paper figure), their scales and parameters; or their claims (``--claims``)."""
    from attnlab.core.catalog import load

    cat = load()  # from the on-disk cache: no study (and no torch) imported once it is built
    if study is not None and "." not in study and study not in cat["studies"]:
        from attnlab.core.registry import check_study

        check_study(study)  # one line naming the allowed studies
    if claims_:
        return _list_claims([c for c in cat["claims"] if study is None or c["study"] == study], json_)
    if study is not None and "." in study:
        found = [e for e in cat["experiments"] if e["experiment"] == study]
        if not found:
            from attnlab.core.registry import get

            get(study)  # one line naming the study's experiments
        return _list_experiment(found[0], json_)
    exps = [e for e in cat["experiments"] if study is None or e["study"] == study]
    if json_:
        print(json.dumps([{k: v for k, v in e.items() if k not in ("study", "doc")} for e in exps], indent=2))
        return
    table = Table(title="attnlab experiments", show_lines=params)
    for col in ("experiment", "paper", "title", "quick scale", "paper scale"):
        table.add_column(col, overflow="fold")
    for e in exps:
        title = e["title"] + (" [headline]" if e["headline"] else "")
        if params:
            title += "\n" + "\n".join(
                f"  {p['name']}: {p['type']} = {p['default']}" + (f" ({p['allowed']})" if p["allowed"] else "")
                + (f" — {p['description']}" if p["description"] else "") for p in e["parameters"])
        table.add_row(e["experiment"], e["ref"], title, _scale_text(e, "quick"),
                      _scale_text(e, "paper") or "paper defaults")
    out_console.print(table)
    n = sum(study is None or c["study"] == study for c in cat["claims"])
    out_console.print(f"{n} claims registered (`attnlab list --claims`); see `attnlab check`. "
                      "`attnlab list STUDY.EXPERIMENT` shows one experiment's parameters.")


def _scale_text(e: dict[str, Any], scale: str) -> str:
    return ", ".join(f"{k}={v}" for k, v in e["scales"].get(scale, {}).items())


def _list_experiment(e: dict[str, Any], json_: bool) -> None:
    """One experiment: its paper reference and doc, then each parameter with both scales' values."""
    if json_:
        print(json.dumps({k: v for k, v in e.items() if k not in ("study", "doc")}, indent=2))
        return
    out_console.print(f"[bold]{e['experiment']}[/bold] — {escape(e['title'])} ({escape(e['ref'])})"
                      + (" [headline]" if e["headline"] else ""), highlight=False)
    if e["doc"]:
        out_console.print(escape(e["doc"]), highlight=False)
    table = Table(show_lines=False)
    for col in ("parameter", "type", "default", "quick", "paper", "allowed", "description"):
        table.add_column(col, overflow="fold")
    for p in e["parameters"]:
        quick, paper = (p[f"scale_{s}"] for s in ("quick", "paper"))
        table.add_row(p["name"], p["type"], str(p["default"]), "" if quick == p["default"] else str(quick),
                      "" if paper == p["default"] else str(paper), p["allowed"], p["description"])
    out_console.print(table)
    out_console.print("quick/paper: the value that scale sets (blank: the default). Change any with "
                      f"`attnlab run {e['experiment']} --set NAME=VALUE`.", highlight=False)


def _list_claims(rows: list[dict[str, Any]], json_: bool) -> None:
    rows = [{k: v for k, v in r.items() if k != "study"} for r in rows]
    if json_:
        print(json.dumps(rows, indent=2))
        return
    table = Table(title=f"{len(rows)} claims")
    for col in ("claim", "paper", "scales", "statement"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["claim"], r["ref"], ", ".join(r["scales"]),
                      r["statement"] + (" (reported)" if r["relation"] == "report" else ""))
    out_console.print(table)
