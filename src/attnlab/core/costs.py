"""Time models beside the memory models: what a run costs, as a formula in its sizes, calibrated on measured runs.

A study declares, for each experiment, its **work** as a formula in the config's sizes, in a module of its own
(``<study>/costs.py``, kept out of the code fingerprint like ``memory.py``)::

    @cost_model("paths.fig2c")
    def fig2c(c) -> float:  # Adam steps × (P·T)² kernel entries per width and seed
        return len(c.widths) * c.n_seeds * c.steps * (c.P * c.T) ** 2

The units are the formula's own (operations, up to a constant); :func:`calibrate` turns them into seconds per
device kind ("cpu" is one thread, timed by the run's CPU time; "cuda" a GPU, by wall time) from a store's finished
runs: the rate of an experiment is the median of seconds / work over its runs, and its **factor** the largest
ratio, either way, between a run's seconds and the rate's estimate. ``attnlab store calibrate`` writes the rates
into ``results/timing/<kind>.json``; ``attnlab check --plan`` reads them to say what each claim's missing runs will
cost. The calibration also keeps, per experiment, the runs held out of the fit (another size) with their estimate
and their measured seconds: that is how far the formula extrapolates. The committed CPU calibration is fitted on
each experiment's quick run and holds out its tiny run (``benchmarks/timing.py``); an estimate is tested to be
within :data:`FACTOR` of the measured time, but for the misses each study's ``costs.py`` lists with their reason
(``KNOWN_MISSES``; docs/claims.md).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from attnlab.core.config import resolve_from
from attnlab.core.device import kind as kind_of  # "cuda"/"cpu" of a name or a recorded description

CostFn = Callable[[Any], float]
KINDS = ("cpu", "cuda")
#: the most an estimate may be off, either way, on the committed calibration's held-out runs (tested)
FACTOR = 4.0


def cost_model(*keys: str) -> Callable[[CostFn], CostFn]:
    """Decorator attaching ``fn(config) -> work`` (a formula in the config's sizes) to the registered experiments
    ``keys``, as :func:`attnlab.core.registry.memory_model` attaches memory models."""
    from attnlab.core.registry import attach

    def add(fn: CostFn) -> CostFn:
        for key in keys:
            attach(key, cost=fn)
        return fn

    return add


@dataclass
class Rate:
    """Seconds per unit of work of one experiment on one device kind, and how well its formula fits."""

    experiment: str
    seconds_per_unit: float
    runs: int  # runs in the fit
    factor: float  # the largest ratio, either way, between a fitted run's seconds and its estimate
    held_out: list[dict[str, float]] = field(default_factory=list)  # {"work", "seconds", "estimate"} of other runs

    def estimate(self, work: float) -> float:
        return self.seconds_per_unit * work


def work_of(exp: Any, config: Any) -> float | None:
    """The experiment's work for ``config`` (None: no time model, or the formula fails on it)."""
    if getattr(exp, "cost", None) is None:
        return None
    try:
        w = float(exp.cost(config))
    except Exception:  # a formula that cannot read this config: no estimate rather than no plan
        return None
    return w if math.isfinite(w) and w > 0 else None


def measured_runs(store: Any, kind: str) -> Iterable[tuple[Any, Any, float]]:
    """(experiment, config, seconds) of every finished run in ``store`` on device kind ``kind`` whose experiment
    has a time model. On the CPU a run's seconds are its process's CPU time where its manifest kept it (a busy
    machine stretches wall time, not CPU time), else the index's wall time; a run resumed from a checkpoint timed
    only its last part and is left out."""
    from attnlab.core.registry import get

    for row in store.index.rows(status="done"):
        if not row.get("seconds"):
            continue
        try:
            exp = get(row["experiment"])
            meta = json.loads((Path(row["run_dir"]) / "config.json").read_text())
            manifest = json.loads((Path(row["run_dir"]) / "manifest.json").read_text())
        except Exception:  # another study's run, a run without its files: not ours to time
            continue
        if getattr(exp, "cost", None) is None or kind_of(meta.get("device")) != kind:
            continue
        if manifest.get("resumed"):
            continue
        seconds = manifest.get("cpu_seconds") if kind == "cpu" and manifest.get("cpu_seconds") else row["seconds"]
        try:
            config = resolve_from(exp.config, json.loads(row["config"]))
        except Exception:  # stored under a config class that has changed since
            continue
        yield exp, config, float(seconds)


def calibrate(fit: Iterable[tuple[Any, Any, float]], held: Iterable[tuple[Any, Any, float]] = ()) -> dict[str, Rate]:
    """Per experiment, the rate (median of seconds / work) and factor over ``fit``; ``held`` (runs of other sizes,
    not fitted) are kept with their estimates to show how far the formula extrapolates."""
    points: dict[str, list[tuple[float, float]]] = {}
    for exp, config, seconds in fit:
        if (w := work_of(exp, config)) is not None:
            points.setdefault(exp.key, []).append((w, seconds))
    rates = {}
    for key, pts in sorted(points.items()):
        rate = math.exp(statistics.median(math.log(s / w) for w, s in pts))
        factor = max(max(s / (rate * w), rate * w / s) for w, s in pts)
        rates[key] = Rate(key, rate, len(pts), round(factor, 3))
    for exp, config, seconds in held:
        if exp.key in rates and (w := work_of(exp, config)) is not None:
            rates[exp.key].held_out.append({"work": w, "seconds": round(seconds, 2),
                                            "estimate": round(rates[exp.key].estimate(w), 2)})
    return rates


def save(rates: dict[str, Rate], path: Path, machine: dict[str, Any]) -> None:
    from attnlab.core.files import atomic_write_json

    atomic_write_json(path, {"machine": machine, "rates": {k: asdict(r) for k, r in rates.items()}})


def load(kind: str, root: Path | None = None) -> dict[str, Rate]:
    """The committed calibration of device kind ``kind`` (``results/timing/<kind>.json``); {} if none."""
    root = root if root is not None else timing_root()
    path = None if root is None else root / f"{kind}.json"
    if path is None or not path.exists():
        return {}
    return {k: Rate(**v) for k, v in json.loads(path.read_text())["rates"].items()}


def timing_root() -> Path | None:
    """``$ATTNLAB_TIMING``, else ``results/timing`` of the source checkout (the working directory's, else the
    package's), if there is one."""
    import os

    if os.environ.get("ATTNLAB_TIMING"):
        return Path(os.environ["ATTNLAB_TIMING"])
    for base in (Path.cwd(), Path(__file__).resolve().parents[3]):
        if (base / "results" / "timing").is_dir():
            return base / "results" / "timing"
    return None


def estimate(exp: Any, config: Any, kind: str, rates: dict[str, Rate] | None = None) -> float | None:
    """Seconds a run of ``exp`` with ``config`` should take on device kind ``kind``; None without a time model or a
    calibration of that kind."""
    rates = load(kind) if rates is None else rates
    rate, w = rates.get(exp.key), work_of(exp, config)
    return None if rate is None or w is None else rate.estimate(w)
