"""A paper's claims as code: what is measured, what is expected, the tolerance, the verdict.

A study registers its claims in ``<study>/claims.py``::

    register(Claim(
        id="specialization.bayes_softmax_optimal", ref="Prop. IV.2",
        statement="B-softmax with H ≥ |supp P_θ| reaches the Bayes risk",
        how="reduced loss of the Prop. IV.2 parameters minus the Bayes risk, same MC samples",
        measure=lambda ctx: ..., expected=0.0, relation="approx", tolerance=0.01,
    ))

``measure(ctx)`` returns the measured number, or a :class:`Measured` (number + a one- or two-sentence
``detail`` with numbers: what was measured, at which scale, and, for a reported claim or an event that never
happened, why it differs from the paper); it usually calls ``ctx.run("fig5", H=4)`` so that the experiment
runs once into the run store and claims reuse it. An event that never happens (a split not reached, no
spike) is ``Measured(nan, "…")``: a failed verdict that says why, never an exception. Relations:

* ``approx``  |measured − expected| ≤ tolerance
* ``le`` / ``ge``  measured ≤ expected + tolerance / measured ≥ expected − tolerance
* ``in``  expected = (lo, hi), lo ≤ measured ≤ hi
* ``report``  measured and shown, never asserted (for a statement of the paper that does not hold as printed)
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from attnlab.core import progress
from attnlab.core.config import SCALES, ConfigError, resolve
from attnlab.core.display import html_block, text_block
from attnlab.core.experiment import Result, check_study, get, load_studies
from attnlab.core.files import atomic_write_json
from attnlab.core.runs import RunRecord, RunStore, load_result

Relation = Literal["approx", "le", "ge", "in", "report"]


@dataclass(frozen=True)
class Measured:
    """A claim's measured value with the sentence that explains it (shown beside the verdict)."""

    value: float
    detail: str = ""


@dataclass
class ClaimContext:
    """What a claim's ``measure`` sees: the scale, the device its experiments run on (``None``: each config's
    default, the CPU), and a way to (re)use experiment runs."""

    scale: str
    store: RunStore
    seed: int = 0
    records: list[RunRecord] = field(default_factory=list)
    device: str | None = None

    def run(self, experiment: str, **overrides: Any) -> Result:
        """Run (or reuse) ``study.experiment`` at this scale and device with ``overrides``; return its result."""
        exp = get(experiment)
        device = overrides.pop("device", self.device)
        config = resolve(exp.config, self.scale, overrides, seed=overrides.pop("seed", self.seed), device=device)
        record = self.store.run(exp, config)
        self.records.append(record)
        return load_result(record.run_dir)[1]

    def summary(self, experiment: str, key: str, **overrides: Any) -> Any:
        """One summary value of ``study.experiment`` run (or reused) as :meth:`run` does; an unknown key raises a
        ``KeyError`` that lists the keys the run has."""
        summary = self.run(experiment, **overrides).summary
        if key not in summary:
            raise KeyError(f"{experiment} has no summary key {key!r}; it has: {', '.join(sorted(summary))}")
        return summary[key]


@dataclass(frozen=True)
class Claim:
    id: str
    ref: str
    statement: str
    how: str
    measure: Callable[[ClaimContext], float | Measured]
    expected: float | tuple[float, float] | None = None
    relation: Relation = "approx"
    tolerance: float = 0.0
    scales: tuple[str, ...] = SCALES

    @property
    def study(self) -> str:
        return self.id.split(".", 1)[0]

    def expected_text(self) -> str:
        e = self.expected
        match self.relation:
            case "approx":
                return f"= {_fmt(e)}"
            case "le":
                return f"≤ {_fmt(e)}"
            case "ge":
                return f"≥ {_fmt(e)}"
            case "in":
                assert isinstance(e, tuple)
                return f"in [{_fmt(e[0])}, {_fmt(e[1])}]"
            case _:
                return "(reported)" if e is None else f"paper: {_fmt(e)} (reported)"

    def verdict(self, measured: float) -> str:
        if self.relation == "report":
            return "reported"
        if measured is None or (isinstance(measured, float) and math.isnan(measured)):
            return "fail"
        e, tol = self.expected, self.tolerance
        ok = {
            "approx": lambda: abs(measured - e) <= tol,
            "le": lambda: measured <= e + tol,
            "ge": lambda: measured >= e - tol,
            "in": lambda: e[0] <= measured <= e[1],
        }[self.relation]()
        return "pass" if ok else "fail"


@dataclass
class ClaimResult:
    claim: str
    ref: str
    statement: str
    how: str
    measured: float | None
    expected: str
    tolerance: float
    verdict: str  # pass | fail | reported | error
    scale: str
    seconds: float
    detail: str = ""
    runs_computed: int = 0  # experiment runs this measurement computed …
    runs_reused: int = 0  # … and found finished in the store (its seconds then exclude them)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def _title(self) -> str:
        got = "—" if self.measured is None else f"{self.measured:.4g}"
        return f"ClaimResult({self.claim}: {self.verdict}, measured {got}, expected {self.expected}, {self.scale})"

    def _rows(self) -> list[tuple[str, Any]]:
        return [("ref", self.ref), ("statement", self.statement), ("detail", self.detail),
                ("seconds", round(self.seconds, 1))]

    def __repr__(self) -> str:
        return text_block(self._title(), self._rows())

    def _repr_html_(self) -> str:
        return html_block(self._title(), self._rows())


_CLAIMS: dict[str, Claim] = {}


def register(claim: Claim) -> Claim:
    if claim.relation not in ("approx", "le", "ge", "in", "report"):
        raise ValueError(f"claim {claim.id}: unknown relation {claim.relation!r}")
    if claim.relation == "in" and not (isinstance(claim.expected, tuple) and len(claim.expected) == 2):
        raise ValueError(f"claim {claim.id}: relation 'in' needs expected=(lo, hi)")
    _CLAIMS[claim.id] = claim
    return claim


def claim(id: str, ref: str, statement: str, how: str, measure: Callable[[ClaimContext], float | Measured],
          expected: float | tuple[float, float] | None = None, relation: Relation = "approx", tolerance: float = 0.0,
          scales: tuple[str, ...] = SCALES) -> Claim:
    """Build and :func:`register` a :class:`Claim` (``id`` is ``study.name``): the one helper every study's
    ``claims`` module uses."""
    return register(Claim(id, ref, statement, how, measure, expected, relation, tolerance, tuple(scales)))


def claims(study: str | None = None, scale: str | None = None) -> list[Claim]:
    load_studies()
    check_study(study)
    return [
        c for c in _CLAIMS.values() if (study is None or c.study == study) and (scale is None or scale in c.scales)
    ]


def check(study: str | None, scale: str, store: RunStore, only: list[str] | None = None,
          device: str | None = None) -> list[ClaimResult]:
    """Measure every claim of ``study`` (all studies if None) that holds at ``scale``, its experiments on ``device``.

    Results are also written, after every claim, to ``<store>/claims/<study>-<scale>.json`` for the report.
    """
    return list(iter_check(study, scale, store, only, device))


def to_check(study: str | None, scale: str, only: list[str] | None = None) -> list[Claim]:
    """The claims a check of ``study`` at ``scale`` measures (``only``: these ids; unknown ids are one line)."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not allowed; allowed: {', '.join(SCALES)}")
    todo = [c for c in claims(study, scale) if not only or c.id in only or c.id.split(".", 1)[1] in only]
    _check_only(study, scale, only or [], todo)
    return todo


def iter_check(study: str | None, scale: str, store: RunStore, only: list[str] | None = None,
               device: str | None = None) -> Iterator[ClaimResult]:
    """:func:`check`, one result at a time: an interrupted check still has the claims it measured."""
    todo = to_check(study, scale, only)
    results = []
    for claim in progress.track(todo, f"claims ({scale})"):
        ctx = ClaimContext(scale, store, device=device)
        t0 = time.perf_counter()
        try:
            out = claim.measure(ctx)
            measured, detail = (float(out.value), out.detail) if isinstance(out, Measured) else (float(out), "")
            verdict = claim.verdict(measured)
        except Exception as exc:  # a claim that cannot be measured fails, with the reason shown
            measured, verdict = None, "error"
            detail = "".join(traceback.format_exception_only(exc)).strip()
        results.append(
            ClaimResult(
                claim.id, claim.ref, claim.statement, claim.how, measured, claim.expected_text(),
                claim.tolerance, verdict, scale, time.perf_counter() - t0, detail,
                sum(not r.reused for r in ctx.records), sum(r.reused for r in ctx.records),
            )
        )
        name = claim.id.split(".", 1)[0]  # written after every claim: an interrupted check keeps what it measured
        rows = [r.to_json() for r in results if r.claim.startswith(name + ".")]
        atomic_write_json(store.root / "claims" / f"{name}-{scale}.json", rows)
        yield results[-1]


def _check_only(study: str | None, scale: str, only: list[str], todo: list[Claim]) -> None:
    """``--only`` names known claims that hold at ``scale``: an unknown id never makes a vacuous pass."""
    every = claims(study)
    known = {c.id for c in every} | {c.id.split(".", 1)[1] for c in every}
    unknown = [o for o in only if o not in known]
    where = f" of {study}" if study else ""
    if unknown:
        raise ConfigError(f"unknown claim id {unknown[0]!r}{where}; allowed: {', '.join(c.id for c in every)}")
    if only and not todo:
        raise ConfigError(f"no claim named by --only {', '.join(only)} is measured at scale {scale!r}; claims{where} "
                          f"at {scale}: {', '.join(c.id for c in claims(study, scale)) or 'none'}")


def failed(results: list[ClaimResult]) -> list[ClaimResult]:
    return [r for r in results if r.verdict in ("fail", "error")]


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)
