"""What a check will measure, in which order and for how long: the claims a record lacks first, then the stalest;
each claim's time from the committed records; the runs each claim has in the store already.

``attnlab check STUDY --scale paper --plan`` prints :func:`plan`; ``--budget 12m`` measures in :func:`order` and
stops cleanly at the deadline (:func:`attnlab.core.runs.deadline`), so that a paper-scale check advances slice by
slice, on whatever machine is at hand, and its record adds the slices up.

A claim's time is estimated from the records (its last measured seconds, on this device kind if measured there,
else on the other kind, said so), plus nothing for the runs already in the store: a record's seconds count only
the runs that claim computed, so a claim that reused runs measured elsewhere is estimated low and the plan says
which runs it lacks. A claim never measured has no estimate (shown as such, and ordered first).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attnlab.core.claims import Claim, ClaimContext
from attnlab.core.config import resolve
from attnlab.core.experiment import Result, get
from attnlab.core.fingerprint import code_fingerprint, stale
from attnlab.core.runs import Interrupted, RunStore, deadline

PROBE_SECONDS = 2.0  # the longest a plan lets one claim's measure run on stored results


def entries(root: Path | None, scale: str, study: str, device: str | None) -> tuple[dict[str, dict], dict[str, dict]]:
    """The record's entries of ``study`` at ``scale`` by claim id: (this device kind's, the other kind's)."""
    from attnlab.core.record import path_for

    if root is None:
        return {}, {}
    cuda = (device or "cpu").startswith("cuda")
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


class _NotStored(Exception):
    """A probe reached a run that is not in the store: what follows it depends on its result."""


class ProbeContext(ClaimContext):
    """A claim context that runs nothing: each run the claim asks for is looked up in the store and noted; the
    first one missing stops the probe (the runs after it depend on its result)."""

    seen: list[tuple[str, str, bool]]

    def run(self, experiment: str, **overrides: Any) -> Result:
        from attnlab.core.runs import load_result

        exp = get(experiment)
        device = overrides.pop("device", self.device)
        config = resolve(exp.config, self.scale, overrides, seed=overrides.pop("seed", self.seed), device=device)
        found = self.store.lookup(exp, config)
        self.seen.append((experiment, config.hash(exp.key), found is not None))
        if found is None:
            raise _NotStored(experiment)
        return load_result(found.run_dir)[1]


@dataclass
class Step:
    """One claim of a plan: its last record entry, its estimated seconds and its runs as far as the store shows."""

    claim: Claim
    entry: dict[str, Any] | None
    seconds: float | None
    source: str
    runs: list[tuple[str, str, bool]] = field(default_factory=list)
    complete: bool = True  # False: the probe stopped at a missing run; later runs are not known yet

    stale: bool = False  # its record entry measured experiment code that has changed since


def plan(todo: list[Claim], scale: str, store: RunStore, root: Path | None, device: str | None) -> list[Step]:
    """The check's claims in :func:`order`, each with its estimate and its runs in ``store``."""
    steps = []
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
        ctx = ProbeContext(scale, store, device=device)
        ctx.seen = []
        complete = True
        try:  # a claim that computes by itself (no run) is stopped after PROBE_SECONDS: the plan measures nothing
            with deadline(PROBE_SECONDS):
                c.measure(ctx)
        except (_NotStored, Interrupted):
            complete = False
        except Exception:  # a claim whose measure fails on stored runs: the plan still lists what it saw
            pass
        steps.append(Step(c, e, seconds, source, ctx.seen, complete, bool(e) and stale(e, now[c.study])))
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
