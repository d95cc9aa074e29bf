"""The sandbox over a stored run: find its histories, parse a snapshot range, render (``attnlab render``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from attnlab.clustering.train.history import History, histories
from attnlab.core.config import ConfigError


def load_history(run_dir: str | os.PathLike, name: str | None = None) -> History:
    """The History stored in a run directory's arrays (``--history`` picks one when there are several)."""
    run_dir = Path(run_dir)
    path = run_dir / "arrays.npz"
    if not path.is_file():
        raise ConfigError(f"run directory {str(run_dir)!r} has no arrays.npz (not a finished run?)")
    with np.load(path, allow_pickle=False) as f:
        found = histories({k: f[k] for k in f.files})
    if not found:
        raise ConfigError(f"run {run_dir.name} stores no training history with snapshots")
    if name is None:
        if len(found) > 1:
            raise ConfigError(f"run {run_dir.name} stores several histories; pick one with --history "
                              f"({', '.join(p.rstrip('/') for p in found)})")
        return next(iter(found.values()))
    key = name if name in found else name.rstrip("/") + "/"
    if key not in found:
        raise ConfigError(f"history {name!r} not in run {run_dir.name}; have {', '.join(p.rstrip('/') for p in found)}")
    return found[key]


def parse_epochs(text: str | None) -> list[float] | None:
    """'0:200:20' → [0, 20, …, 200]; '10,50,120' → [10, 50, 120]; None → all snapshots."""
    if text is None:
        return None
    try:
        if ":" in text:
            parts = [float(v) for v in text.split(":")]
            start, stop = parts[0], parts[1]
            step = parts[2] if len(parts) > 2 else 1.0
            if step <= 0 or stop < start or len(parts) > 3:
                raise ValueError
            return list(np.arange(start, stop + step / 2, step))
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"--epochs {text!r}: expected START:STOP[:STEP] (STOP ≥ START, STEP > 0) "
                          "or a comma-separated list of epochs") from None


def render_run(run_dir: str | os.PathLike, out: str | os.PathLike, *, panels: str = "default",
               epochs: str | None = None, every: int = 1, seed: int = 0, history: str | None = None,
               fps: float = 5.0, fmt: str = "png") -> Path:
    """Render a stored run: ``out`` ending in .gif/.mp4 → animation, .png/.pdf → the first selected snapshot,
    anything else → a directory of frames. Every input is checked before a file is written."""
    from attnlab.clustering.render.animate import render_animation, render_frames, snapshot_indices

    hist = load_history(run_dir, history)
    if not 0 <= seed < hist.n_seeds:
        raise ConfigError(f"--seed {seed}: the run has seeds 0..{hist.n_seeds - 1}")
    names: str | list[str] = panels if panels in ("default", "all") else [p.strip() for p in panels.split(",")]
    eps = parse_epochs(epochs)
    snapshot_indices(hist, epochs=eps, every=every)  # range errors before anything is written
    out = Path(out)
    suffix = out.suffix.lower()
    if suffix in (".gif", ".mp4"):
        return render_animation(hist, names, epochs=eps, every=every, seed=seed, out=out, fps=fps)
    if suffix in (".png", ".pdf"):
        idx = snapshot_indices(hist, epochs=eps, every=every)[:1]
        tmp = out.with_name(f".{out.stem}.frames")
        try:
            [frame] = render_frames(hist, names, indices=idx, seed=seed, out_dir=tmp, fmt=suffix[1:])
            os.replace(frame, out)
        finally:
            if tmp.is_dir():
                for f in tmp.iterdir():
                    f.unlink()
                tmp.rmdir()
        return out
    render_frames(hist, names, epochs=eps, every=every, seed=seed, out_dir=out, fmt=fmt)
    return out
