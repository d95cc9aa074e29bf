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

Two guards make a ``pass`` mean something (``docs/claims.md``):

* ``falsify``: every asserted claim names a :class:`World` where its statement is false (a
  perturbed theory, swapped arms, a broken model) and the tests measure the claim there and expect ``fail``; or,
  where no such world can be built cheaply, one sentence saying why (listed in the docs).
* ``blocks=2``: a claim whose margin is within its seed-to-seed spread is measured on two independent seed blocks
  (master seeds :data:`BLOCK_SEEDS`); it passes only if both pass, its value is the worse block's and its detail
  gives both.
"""

from __future__ import annotations

import difflib
import math
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from attnlab.core import progress
from attnlab.core.config import SCALES, ConfigError, _clip, resolve
from attnlab.core.display import html_block, text_block
from attnlab.core.experiment import Experiment, Result
from attnlab.core.files import atomic_write_json
from attnlab.core.registry import check_study, get, load_studies
from attnlab.core.runs import RunRecord, RunStore, load_result

if TYPE_CHECKING:
    from attnlab.core.summaries import Summary

S = TypeVar("S", bound="Summary")

Relation = Literal["approx", "le", "ge", "in", "report"]
# Master seeds of a claim's independent seed blocks. Block 1 starts at 10^6 so that studies numbering their seeds
# consecutively from the master seed (clustering's seed, seed + 1, …) draw disjoint seeds in the two blocks.
BLOCK_SEEDS: tuple[int, ...] = (0, 1_000_000)


ResultFn = Callable[[str, Result], Result]


@dataclass(frozen=True)
class World:
    """A world where a claim's statement is false, and the claim measured there must say ``fail``
    (:mod:`attnlab.core.worlds` measures it there)."""

    why: str  # one sentence: what is broken, and why the statement is false there
    overrides: Mapping[str | Experiment, Mapping[str, Any]] = field(default_factory=dict)
    result: ResultFn | None = None
    patch: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    scale: str = "quick"


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

    def run(self, experiment: str | Experiment, **overrides: Any) -> Result:
        """Run (or reuse) ``experiment`` (the object, or ``study.experiment``) at this scale and device with
        ``overrides``; return its result."""
        exp = get(experiment)
        device = overrides.pop("device", self.device)
        config = resolve(exp.config, self.scale, overrides, seed=overrides.pop("seed", self.seed), device=device)
        record = self.store.run(exp, config)
        self.records.append(record)
        result = load_result(record.run_dir)[1]
        result.config = config
        return result

    @overload
    def summary(self, experiment: Experiment[S], key: None = None, **overrides: Any) -> S: ...

    @overload
    def summary(self, experiment: str | Experiment, key: str, **overrides: Any) -> Any: ...

    def summary(self, experiment: str | Experiment, key: str | None = None, **overrides: Any) -> Any:
        """The typed summary of ``experiment`` run (or reused) as :meth:`run` does (``key`` None: an instance of
        its ``Experiment(..., summary=...)`` class, :mod:`attnlab.core.summaries`), or one value of its flat
        summary (an unknown key raises a ``KeyError`` that lists the keys the run has)."""
        if key is None:
            from attnlab.core.summaries import typed

            return typed(experiment, self.run(experiment, **overrides))
        summary = self.run(experiment, **overrides).summary
        if key not in summary:
            raise KeyError(f"{get(experiment).key} has no summary key {key!r}; it has: {', '.join(sorted(summary))}")
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
    falsify: World | str | None = None  # where the statement is false (tests expect ``fail``), or why none is built
    blocks: int = 1  # independent seed blocks measured (``BLOCK_SEEDS``): 2 for a claim near its gate

    @property
    def study(self) -> str:
        return self.id.split(".", 1)[0]

    def fingerprint(self) -> str:
        """12 hex digits over what the claim asserts and how it measures it (gate, seed blocks, the source of its
        measure): a record entry with another fingerprint measured another definition of the claim."""
        import hashlib

        text = repr((self.id, self.how, self.expected, self.relation, self.tolerance, self.blocks))
        return hashlib.sha256((text + _measure_source(self.measure)).encode()).hexdigest()[:12]

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
        return "pass" if self.margin(measured) >= 0 else "fail"

    def margin(self, measured: float | None) -> float:
        """How far ``measured`` is inside the gate (negative: outside; −inf for a missing or NaN value; +inf for a
        reported claim, which has no gate)."""
        if self.relation == "report":
            return math.inf
        if measured is None or (isinstance(measured, float) and math.isnan(measured)):
            return -math.inf
        e, tol = self.expected, self.tolerance
        return {
            "approx": lambda: tol - abs(measured - e),
            "le": lambda: e + tol - measured,
            "ge": lambda: measured - (e - tol),
            "in": lambda: min(measured - e[0], e[1] - measured),
        }[self.relation]()

    def measure_blocks(self, make_ctx: Callable[[int], ClaimContext]) -> tuple[float, str]:
        """``measure`` on each of the claim's seed blocks (``make_ctx(master seed)``); one block: its value and
        detail; several: the value of the block with the smallest margin, and every block's value and detail."""
        outs = []
        for seed in BLOCK_SEEDS[: self.blocks]:
            out = self.measure(make_ctx(seed))
            if isinstance(out, Measured):
                outs.append((math.nan if out.value is None else float(out.value), out.detail))
            else:  # a bare number; None (nothing measured) is NaN, a failed verdict
                outs.append((math.nan if out is None else float(out), ""))
        if len(outs) == 1:
            return outs[0]
        worst = min(range(len(outs)), key=lambda i: self.margin(outs[i][0]))
        detail = " ".join(f"Block {i} (master seed {s}): {_fmt(v)}{'; ' + d if d else ''}."
                          for i, (s, (v, d)) in enumerate(zip(BLOCK_SEEDS, outs, strict=False)))
        return outs[worst][0], f"the worse of {len(outs)} independent seed blocks. {detail}"


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
    if not 1 <= claim.blocks <= len(BLOCK_SEEDS):
        raise ValueError(f"claim {claim.id}: blocks={claim.blocks}; allowed 1 to {len(BLOCK_SEEDS)}")
    _CLAIMS[claim.id] = claim
    return claim


def claim(id: str, ref: str, statement: str, how: str, measure: Callable[[ClaimContext], float | Measured],
          expected: float | tuple[float, float] | None = None, relation: Relation = "approx", tolerance: float = 0.0,
          scales: tuple[str, ...] = SCALES, *, falsify: World | str | None = None, blocks: int = 1) -> Claim:
    """Build and :func:`register` a :class:`Claim` (``id`` is ``study.name``): the one helper every study's
    ``claims`` module uses."""
    return register(Claim(id, ref, statement, how, measure, expected, relation, tolerance, tuple(scales), falsify,
                          blocks))


def attach(claim_id: str, falsify: World | str) -> Claim:
    """Name the world where the registered claim ``claim_id`` is false, for a study that keeps its worlds in a
    module of their own (``signal/claims/worlds.py``) rather than beside each ``claim(...)``."""
    from dataclasses import replace

    if claim_id not in _CLAIMS:
        raise ValueError(f"no registered claim {claim_id!r} to attach a world to")
    return register(replace(_CLAIMS[claim_id], falsify=falsify))


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
    return list(iter_check(to_check(study, scale, only), scale, store, device))


def to_check(study: str | None, scale: str, only: list[str] | None = None) -> list[Claim]:
    """The claims a check of ``study`` at ``scale`` measures (``only``: these ids; unknown ids are one line)."""
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not allowed; allowed: {', '.join(SCALES)}")
    todo = [c for c in claims(study, scale) if not only or c.id in only or c.id.split(".", 1)[1] in only]
    _check_only(study, scale, only or [], todo)
    return todo


def iter_check(todo: list[Claim], scale: str, store: RunStore, device: str | None = None) -> Iterator[ClaimResult]:
    """Measure the claims ``todo`` (:func:`to_check`, or ``--budget``'s order) one at a time: an interrupted check
    still has the claims it measured."""
    results = []
    for claim in progress.track(todo, f"claims ({scale})"):
        ctxs: list[ClaimContext] = []

        def make_ctx(seed: int, ctxs: list[ClaimContext] = ctxs) -> ClaimContext:
            ctxs.append(ClaimContext(scale, store, seed=seed, device=device))
            return ctxs[-1]

        t0 = time.perf_counter()
        try:
            measured, detail = claim.measure_blocks(make_ctx)
            verdict = claim.verdict(measured)
        except Exception as exc:  # a claim that cannot be measured fails, with the reason shown
            measured, verdict = None, "error"
            detail = "".join(traceback.format_exception_only(exc)).strip()
        results.append(
            ClaimResult(
                claim.id, claim.ref, claim.statement, claim.how, measured, claim.expected_text(),
                claim.tolerance, verdict, scale, time.perf_counter() - t0, detail,
                sum(not r.reused for c in ctxs for r in c.records), sum(r.reused for c in ctxs for r in c.records),
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
        close = difflib.get_close_matches(unknown[0], sorted(known), n=4, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}?" if close else "none is close"
        raise ConfigError(f"unknown claim id {_clip(unknown[0])}{where} ({hint}); `attnlab list --claims"
                          f"{' ' + study if study else ''}` lists all {len(every)}")
    if only and not todo:
        raise ConfigError(f"no claim named by --only {', '.join(only)} is measured at scale {scale!r}; claims{where} "
                          f"at {scale}: {', '.join(c.id for c in claims(study, scale)) or 'none'}")


def failed(results: list[ClaimResult]) -> list[ClaimResult]:
    return [r for r in results if r.verdict in ("fail", "error")]


def _measure_source(fn: Callable[..., Any]) -> str:
    """The text of a measure: a function's source, a lambda's own expression (not the statement around it, so that
    a world named beside it does not count), with its defaults and closure values where they are plain data."""
    import inspect

    plain = (str, int, float, bool, type(None))

    def data(values: Any) -> str:
        flat = [v for v in values if isinstance(v, plain) or (isinstance(v, tuple | dict) and all(
            isinstance(x, plain) for x in (v.values() if isinstance(v, dict) else v)))]
        return repr(flat)

    try:
        lines, _ = inspect.findsource(fn)
        code = fn.__code__
    except (OSError, TypeError, AttributeError):
        return getattr(fn, "__qualname__", "")
    if fn.__name__ == "<lambda>":
        pos = [p for p in code.co_positions() if None not in p]
        first, last = min(p[0] for p in pos), max(p[1] for p in pos)
        text = lines[first - 1:last]
        text[-1] = text[-1][:max(p[3] for p in pos if p[1] == last)]
        text[0] = text[0][min(p[2] for p in pos if p[0] == first):]
        body = "".join(text)
    else:
        body = inspect.getsource(fn)
    cells = [c.cell_contents for c in fn.__closure__ or ()]
    return body + data(fn.__defaults__ or ()) + data(cells)


def _fmt(x: Any) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return str(x)
