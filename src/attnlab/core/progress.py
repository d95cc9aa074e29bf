"""Progress bars for every long loop (rich), silent with ``--quiet`` or when not on a terminal."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

_QUIET = False


def set_quiet(quiet: bool) -> None:
    global _QUIET
    _QUIET = quiet


def enabled() -> bool:
    """Whether bars are drawn: on a terminal, unless :func:`set_quiet` (``--quiet``) or ``$ATTNLAB_QUIET=1`` (the
    variable reaches worker processes: sweep workers, the sandbox's runs) turned them off."""
    return not _QUIET and os.environ.get("ATTNLAB_QUIET", "") in ("", "0") and sys.stderr.isatty()


class Bar:
    """A handle on one task of a progress display; a no-op when progress is disabled."""

    def __init__(self, progress: Progress | None, task: int | None) -> None:
        self._progress, self._task = progress, task

    def advance(self, n: float = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, n)

    def update(self, completed: float, description: str | None = None) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed, description=description)


@contextmanager
def bar(total: float | None, description: str) -> Iterator[Bar]:
    """``with bar(n, "training") as b: ... b.advance()``."""
    if not enabled():
        yield Bar(None, None)
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        transient=True,
    )
    with progress:
        yield Bar(progress, progress.add_task(description, total=total))


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with bar(total, description) as b:
        for item in items:
            yield item
            b.advance()
