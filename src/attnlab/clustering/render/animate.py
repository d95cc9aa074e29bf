"""Frames and animations of the visual sandbox over a run's snapshots (paper Sec. 4.1, Sec. 4.3).

One ``SnapshotRenderer`` figure is reused for every frame (axes cleared and redrawn, layout computed once).
GIF goes through pillow (matplotlib's ``PillowWriter``); MP4 needs ``ffmpeg`` on PATH and fails with a clear
message otherwise. A snapshot range outside the run raises ``ConfigError`` before anything is written.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt

from attnlab.clustering.render.render import SnapshotRenderer, resolve_panels
from attnlab.clustering.train.history import History
from attnlab.core.config import ConfigError

FORMATS = ("png", "pdf")


def snapshot_indices(history: History, indices: Iterable[int] | None = None,
                     epochs: Iterable[float] | None = None, every: int = 1) -> list[int]:
    """Snapshot indices to render: explicit ``indices`` (e.g. ``range(0, 50, 5)``), or the snapshots nearest to
    ``epochs`` (each must lie within the run), or all; then every ``every``-th. Out of range → ConfigError."""
    T = len(history.snapshot_epochs)
    e0, e1 = float(history.snapshot_epochs[0]), float(history.snapshot_epochs[-1])
    allowed = f"allowed snapshot indices 0..{T - 1} (epochs {e0:g}..{e1:g})"
    if indices is not None and epochs is not None:
        raise ConfigError("give either snapshot indices or epochs, not both")
    if every < 1:
        raise ConfigError(f"every = {every}: must be ≥ 1")
    if indices is not None:
        idx = [int(i) for i in indices]
        bad = [i for i in idx if not 0 <= i < T]
        if bad:
            raise ConfigError(f"snapshot indices {_short(bad)} outside the run: {allowed}")
    elif epochs is not None:
        eps = [float(e) for e in epochs]
        bad = [e for e in eps if not e0 <= e <= e1]
        if bad:
            raise ConfigError(f"epochs {_short(bad)} outside the run: {allowed}")
        idx = list(dict.fromkeys(history.snapshot_index(e) for e in eps))
    else:
        idx = list(range(T))
    if not idx:
        raise ConfigError(f"empty snapshot range: {allowed}")
    return idx[::every]


def _short(values: Sequence) -> str:
    vals = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return "[" + ", ".join(vals[:4]) + (", …" if len(vals) > 4 else "") + "]"


def _renderer(history: History, panels, seed: int, **opts: Any) -> SnapshotRenderer:
    return SnapshotRenderer(history, panels=resolve_panels(panels), seed=seed, **opts)


def _freeze_layout(fig) -> None:
    """Compute a layout engine's layout once, then keep axes positions fixed (speed; constant frame size)."""
    if fig.get_layout_engine() is not None:
        fig.draw_without_rendering()
        fig.set_layout_engine(None)


def render_frames(history: History, panels: str | Sequence[str] = "default", *, indices: Iterable[int] | None = None,
                  epochs: Iterable[float] | None = None, every: int = 1, seed: int = 0,
                  out_dir: str | os.PathLike = "frames", fmt: str = "png", dpi: float | None = None,
                  **opts: Any) -> list[Path]:
    """Write one image per snapshot, ``out_dir/frame_0000.png`` … (``fmt`` png or pdf); returns the paths."""
    if fmt not in FORMATS:
        raise ConfigError(f"fmt = {fmt!r}: allowed {', '.join(FORMATS)}")
    idx = snapshot_indices(history, indices, epochs, every)
    r = _renderer(history, panels, seed, **opts)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    try:
        for n, i in enumerate(idx):
            fig = r.draw(i)
            if n == 0:
                _freeze_layout(fig)
            path = out / f"frame_{n:04d}.{fmt}"
            fig.savefig(path, format=fmt, dpi=dpi or fig.dpi, bbox_inches=None)
            paths.append(path)
    finally:
        if r.fig is not None:
            plt.close(r.fig)
    return paths


def render_animation(history: History, panels: str | Sequence[str] = "default", *,
                     indices: Iterable[int] | None = None, epochs: Iterable[float] | None = None, every: int = 1,
                     seed: int = 0, out: str | os.PathLike = "sandbox.gif", fps: float = 5, dpi: float | None = None,
                     **opts: Any) -> Path:
    """Animate the panels over the snapshots into a GIF (pillow) or an MP4 (ffmpeg); returns the path.

    ``dpi`` defaults to 80 (smaller, faster files); the file is written atomically (temporary file renamed)."""
    from matplotlib.animation import FFMpegWriter, PillowWriter

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix == ".mp4":
        if shutil.which("ffmpeg") is None:
            raise ConfigError(f"cannot write {out.name}: ffmpeg is not installed (not found on PATH); "
                              "GIF output works without it (out='….gif')")
        writer: Any = FFMpegWriter(fps=fps, codec="h264")
    elif suffix == ".gif":
        writer = PillowWriter(fps=fps)
    else:
        raise ConfigError(f"out = {str(out)!r}: the animation must end in .gif or .mp4")
    if fps <= 0:
        raise ConfigError(f"fps = {fps}: must be > 0")
    idx = snapshot_indices(history, indices, epochs, every)
    r = _renderer(history, panels, seed, **opts)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.partial{out.suffix}")
    try:
        fig = r.draw(idx[0])
        _freeze_layout(fig)
        with writer.saving(fig, str(tmp), dpi or 80):
            for n, i in enumerate(idx):
                if n:
                    r.draw(i)
                writer.grab_frame()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        if r.fig is not None:
            plt.close(r.fig)
    return out


def frame_count(path: str | os.PathLike) -> int:
    """Number of frames of a GIF (pillow)."""
    from PIL import Image

    with Image.open(path) as im:
        return int(getattr(im, "n_frames", 1))


