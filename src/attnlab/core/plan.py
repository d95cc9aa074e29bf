"""What a check will measure, in which order and for how long: the claims a record lacks first, then the stalest;
each claim's time from the committed records; the runs each claim has in the store already.

``attnlab check STUDY --scale paper --plan`` prints :func:`plan`; ``--budget 12m`` measures in :func:`order` and
stops cleanly at the deadline (:func:`attnlab.core.runs.deadline`), so that a paper-scale check advances slice by
slice, on whatever machine is at hand, and its record adds the slices up.

A claim's time is estimated twice. By the time models (:mod:`attnlab.core.costs`): each run the claim asks for that
the store lacks, at the formula of its sizes times the experiment's calibrated rate on this device kind. By the
records: its last measured seconds, on this device kind if measured there, else on the other kind (said so); a
record's seconds count only the runs that claim computed, so a claim that reused runs measured elsewhere is
estimated low there. A claim never measured is ordered first.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.core import costs
from attnlab.core.claims import Claim, ClaimContext
from attnlab.core.config import resolve
from attnlab.core.device import kind
from attnlab.core.experiment import Experiment, Result
from attnlab.core.fingerprint import code_fingerprint, stale
from attnlab.core.registry import get
from attnlab.core.runs import Interrupted, RunStore, deadline

PROBE_SECONDS = 2.0  # the longest a plan lets one claim's measure run on stored results


def entries(root: Path | None, scale: str, study: str, device: str | None) -> tuple[dict[str, dict], dict[str, dict]]:
    """The record's entries of ``study`` at ``scale`` by claim id: (this device kind's, the other kind's)."""
    from attnlab.core.record import path_for

    if root is None:
        return {}, {}
    cuda = kind(device) == "cuda"
    out = []
    for dev in (device, None if cuda else "cuda"):
        path = path_for(root, scale, study, dev)
        doc = json.loads(path.read_text()) if path.exists() else {"claims": []}
        out.append({e["claim"]: e for e in doc["claims"]})
    return out[0], out[1]


def order(todo: list[Claim], same: dict[str, dict], fingerprints: dict[str, str | None],
          other: dict[str, dict] | None = None) -> list[Claim]:
    """Claims missing from the record first (in registry order; those the other device kind's record lacks too
    before those it holds), then those measured on code that changed since, then the rest, the longest ago first."""
    other = other or {}

    def key(item: tuple[int, Claim]) -> tuple[int, str, int]:
        i, c = item
        e = same.get(c.id)
        if e is None:
            return (1 if c.id in other else 0, "", i)
        return (2 if stale(e, fingerprints.get(c.study)) else 3, str(e.get("date", "")), i)

    return [c for _, c in sorted(enumerate(todo), key=key)]


class _Unknown(dict):
    """The summary of a run not made yet: every key is there, and NaN."""

    def __contains__(self, key: object) -> bool:
        return True

    def __missing__(self, key: str) -> Any:
        return math.nan


class _UnknownArrays(_Unknown):
    """The arrays of a run not made yet: every name is there, a 1×1 NaN array."""

    def __missing__(self, key: str) -> Any:
        return np.full((1, 1), np.nan)


def _stand_in() -> Result:
    r = Result()
    r.summary, r.arrays = _Unknown(), _UnknownArrays()  # set after construction, which copies into plain dicts
    return r


@dataclass
class Planned:
    """One run a claim asks for: whether the store has it, and what it would cost to make (:mod:`.costs`)."""

    experiment: str
    run_id: str
    stored: bool
    seconds: float | None = None  # the time model's estimate on the plan's device kind (None: no model)


class ProbeContext(ClaimContext):
    """A claim context that runs nothing: each run the claim asks for is looked up in the store and noted with its
    time model's estimate; a run not in the store stands in as NaN values (the runs a claim asks for rarely depend
    on another run's values; where they do, the measure stops on the NaN and the plan says its runs are not all
    known)."""

    seen: list[Planned]
    rates: dict[str, costs.Rate]

    def run(self, experiment: str | Experiment, **overrides: Any) -> Result:
        from attnlab.core.runs import load_result

        exp = get(experiment)
        device = overrides.pop("device", self.device)
        config = resolve(exp.config, self.scale, overrides, seed=overrides.pop("seed", self.seed), device=device)
        found = self.store.lookup(exp, config)
        seconds = None if found is not None else costs.estimate(exp, config, kind(device), self.rates)
        self.seen.append(Planned(exp.key, config.hash(exp.key), found is not None, seconds))
        result = _stand_in() if found is None else load_result(found.run_dir)[1]
        result.config = config
        return result


@dataclass
class Step:
    """One claim of a plan: its last record entry and seconds there, its runs, and the time model's estimate."""

    claim: Claim
    entry: dict[str, Any] | None
    seconds: float | None  # the claim's seconds in its last record entry
    source: str
    runs: list[Planned] = field(default_factory=list)
    complete: bool = True  # False: the probe stopped before the claim's last run; later runs are not known
    stale: bool = False  # its record entry measured experiment code that has changed since

    @property
    def estimate(self) -> float | None:
        """Seconds the claim's runs not in the store will take by their time models (None: one has no model)."""
        todo = [r for r in self.runs if not r.stored]
        return None if any(r.seconds is None for r in todo) else sum(r.seconds for r in todo)

    @property
    def expected(self) -> float | None:
        """The plan's best figure for this claim: the time models' when every missing run has one, else the
        record's seconds."""
        return self.estimate if self.estimate is not None and self.complete else self.seconds


def plan(todo: list[Claim], scale: str, store: RunStore, root: Path | None, device: str | None) -> list[Step]:
    """The check's claims in :func:`order`, each with its estimate and its runs in ``store``."""
    steps = []
    rates = costs.load(kind(device))
    by_study: dict[str, tuple[dict, dict]] = {}
    for c in todo:
        by_study.setdefault(c.study, entries(root, scale, c.study, device))
    same_all = {k: v for s, _ in by_study.values() for k, v in s.items()}
    other_all = {k: v for _, o in by_study.values() for k, v in o.items()}
    now = {s: code_fingerprint(s) for s in by_study}
    for c in order(todo, same_all, now, other_all):
        same, other = by_study[c.study]
        e = same.get(c.id) or other.get(c.id)
        where = "" if c.id in same else " (other device kind)"
        seconds = None if e is None else float(e.get("seconds") or 0.0)
        source = "never measured" if e is None else f"{e.get('date', '?')[:10]}{where}"
        seen: list[Planned] = []

        def probe(seed: int, seen: list[Planned] = seen) -> ProbeContext:
            ctx = ProbeContext(scale, store, seed=seed, device=device)
            ctx.seen, ctx.rates = seen, rates
            return ctx

        complete = True
        try:  # a claim that computes by itself (no run) is stopped after PROBE_SECONDS: the plan measures nothing
            with deadline(PROBE_SECONDS):
                c.measure_blocks(probe)
        except Interrupted:
            complete = False
        except Exception:  # stopped on a stand-in's NaN, or on stored runs: the plan lists what it saw
            complete = all(r.stored for r in seen)
        steps.append(Step(c, e, seconds, source, seen, complete, bool(e) and stale(e, now[c.study])))
    return steps


def parse_duration(text: str) -> float:
    """``"12m"``, ``"90s"``, ``"1h"``, ``"1h30m"`` or a number of seconds → seconds."""
    import re

    from attnlab.core.config import ConfigError

    t = text.strip().lower()
    if re.fullmatch(r"\d+(\.\d+)?", t):
        return float(t)
    parts = re.fullmatch(r"(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?(?:(\d+(?:\.\d+)?)s)?", t)
    if not t or parts is None or not any(parts.groups()):
        raise ConfigError(f"--budget {text!r}: give a duration such as 12m, 90s, 1h or 1h30m")
    h, m, s = (float(g or 0) for g in parts.groups())
    return h * 3600 + m * 60 + s

