"""What every ``attnlab`` command shares: the consoles, the common options, the error guard (exit codes: 0 success;
1 a run or a claim failed; 2 bad input, nothing run or written; 130 interrupted) and the ``--device`` check. The
command modules (``cli_run``, ``cli_list``, ``cli_check``, …) import this module, never :mod:`attnlab.cli`, which
registers their commands on its app."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape

from attnlab.core.config import SCALES, ConfigError

out_console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True)

ScaleOpt = Annotated[str, typer.Option("--scale", help=f"one of {', '.join(SCALES)}")]
SetOpt = Annotated[list[str] | None, typer.Option("--set", help="override a parameter: KEY=VALUE (repeatable)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print one JSON document on stdout")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="no progress bars")]
DeviceOpt = Annotated[str | None, typer.Option("--device", help="cpu, cuda or cuda:N [default: the config's, cpu]")]


def guard(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Map errors to exit codes with one clear line on stderr."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as exc:
            line = " ".join(str(exc).split())  # one line, whatever the message's source
            err_console.print(f"[red]error:[/red] {escape(line)}", highlight=False, soft_wrap=True)
            raise typer.Exit(2) from None
        except KeyboardInterrupt:
            err_console.print("interrupted: the run is marked 'interrupted'; run the same command again to resume")
            raise typer.Exit(130) from None
        except Exception as exc:
            from attnlab.core.runs import RunFailed  # here, not at the top: `--help` never imports torch

            if not isinstance(exc, RunFailed):
                raise
            log = exc.record.run_dir / "log.txt"
            err_console.print(f"[red]run failed:[/red] {escape(str(exc.record.error))}\n  see {log}", highlight=False,
                              soft_wrap=True)
            raise typer.Exit(1) from None

    return wrapper


def checked_device(name: str | None) -> str | None:
    """Check ``--device`` before any work (:func:`attnlab.core.device.parse`): a bad name, no CUDA, or a GPU index out
    of range is one line, exit 2."""
    from attnlab.core.device import parse

    if name is not None:
        parse(name)
    return name
