"""The flags that name where things go, with one meaning each across commands: the run store is ``--store`` (else
``$ATTNLAB_HOME``, else ./attnlab-runs) and the report's file is ``--html``. Their old spellings (``--out`` for the
store; ``report --out`` and ``reproduce --report`` for the HTML file) still work, with a deprecation warning, where
they are unambiguous."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from attnlab.core.config import ConfigError

StoreOpt = Annotated[Path | None, typer.Option("--store", help="run store [env ATTNLAB_HOME, ./attnlab-runs]")]
OldStoreOpt = Annotated[Path | None, typer.Option("--out", hidden=True, help="deprecated spelling of --store")]
err_console = Console(stderr=True)


def store(given: Path | None, old_out: Path | None = None, existing: bool = False):
    """The run store of ``--store`` (else ``$ATTNLAB_HOME``, else ./attnlab-runs); ``--out`` is its old spelling.

    ``existing``: a command that only reads (report, store) refuses a directory that holds no run store, rather
    than create an empty one and report nothing."""
    if old_out is not None:
        if given is not None:
            raise ConfigError("give the run store once: --store DIR (--out is its deprecated spelling)")
        err_console.print("warning: --out for the run store is deprecated; use --store DIR (or ATTNLAB_HOME)",
                          highlight=False)
        given = old_out
    from attnlab.core.runs import RunStore, default_root  # torch: imported by the commands that use a store

    root = given if given is not None else default_root()
    if existing and not ((root / "index.sqlite").exists() or (root / "runs").is_dir()):
        raise ConfigError(f"no run store at {str(root)!r} (no index.sqlite or runs/ in it); give --store DIR or set "
                          "ATTNLAB_HOME")
    return RunStore(root)


def html_file(html: Path | None, old: Path | None, old_name: str) -> Path:
    """The report's HTML file (``--html``); ``old_name`` is its deprecated spelling, refused when it names a
    directory (``report --out STORE``: it never meant the store)."""
    if old is not None:
        if html is not None:
            raise ConfigError(f"give the HTML file once: --html FILE ({old_name} is its deprecated spelling)")
        if old.is_dir():
            raise ConfigError(f"{old_name} {str(old)!r} is a directory: the run store is --store DIR and the HTML file "
                              "is --html FILE")
        err_console.print(f"warning: {old_name} for the HTML file is deprecated; use --html FILE", highlight=False)
        html = old
    html = html if html is not None else Path("attnlab-report.html")
    if html.is_dir():
        raise ConfigError(f"--html {str(html)!r} is a directory; give a file name, e.g. --html report.html")
    return html
