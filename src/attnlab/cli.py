"""The ``attnlab`` command: list, run, sweep, check, report, reproduce, bench, render, sandbox, map, store.

The commands are plain functions in their modules (``cli_list``, ``cli_run``, ``cli_check``, ``cli_bench``,
``cli_map``; ``cli_store`` has its own sub-app), sharing :mod:`attnlab.cli_common`; this module registers them on
its app, in the order ``--help`` lists them.
Exit codes: 0 success; 1 a run failed or a claim failed; 2 bad input (nothing was run or written);
130 interrupted (the run is marked and resumes when started again).
"""

from __future__ import annotations

import sys

import typer

from attnlab import cli_bench, cli_check, cli_list, cli_map, cli_run, cli_store

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="attnlab: solvable models of attention — simulations, their exact theories, and the comparison.",
)
COMMANDS = {  # name → function, in the order --help lists them
    "list": cli_list.list_, "run": cli_run.run, "sweep": cli_run.sweep, "report": cli_run.report,
    "reproduce": cli_run.reproduce, "render": cli_run.render, "sandbox": cli_run.sandbox, "bench": cli_bench.bench,
    "check": cli_check.check, "map": cli_map.map_,
}
for name, command in COMMANDS.items():
    app.command(name)(command)
app.add_typer(cli_store.store_app, name="store")


def main() -> int:
    """The ``attnlab`` script. A reader that closes the pipe early (``attnlab list | head -1``) ends it quietly with
    exit 0, as ``cat`` would: click turns the broken pipe into exit 1, which is undone here."""
    try:
        app(prog_name="attnlab")
    except SystemExit as exc:
        if exc.code == 1 and isinstance(exc.__context__, BrokenPipeError):
            return 0
        raise
    return 0


if __name__ == "__main__":  # python -m attnlab.cli
    sys.exit(main())
