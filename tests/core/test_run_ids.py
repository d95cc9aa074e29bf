"""Run ids stay valid: the config hash of every experiment's default config at each scale, and the runs each potts
claim reads at the quick scale, are those recorded in ``run_ids.json`` (computed before typed summaries), so the
stored runs and the committed claim records (``results/claims``) keep naming the same runs.

The committed records carry, per claim, its value, verdict, fingerprints (``code``, ``definition``) and how many runs
it computed and reused, not the run ids themselves: the test checks the ids through ``run_ids.json`` and that every
potts quick record entry that read runs names a claim whose runs are known there."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from attnlab.core.claims import claims
from attnlab.core.config import SCALES, resolve
from attnlab.core.plan import ProbeContext
from attnlab.core.registry import get
from attnlab.core.runs import RunStore

HERE = Path(__file__).resolve().parent
KNOWN = json.loads((HERE / "run_ids.json").read_text())
RECORDS = sorted((HERE.parents[1] / "results" / "claims").glob("**/*.json"))


@pytest.mark.parametrize("key", sorted(KNOWN["defaults"]))
def test_default_run_ids_are_unchanged(key):
    exp = get(key)
    assert {s: resolve(exp.config, s).hash(exp.key) for s in SCALES} == KNOWN["defaults"][key]


def _probed(claim, store: RunStore) -> list[str]:
    seen: list = []

    def probe(seed: int) -> ProbeContext:
        ctx = ProbeContext("quick", store, seed=seed)
        ctx.seen, ctx.rates = seen, {}
        return ctx

    with contextlib.suppress(Exception):  # a claim stopped by a stand-in's NaN: the runs it asked for so far
        claim.measure_blocks(probe)
    return [f"{r.experiment} {r.run_id}" for r in seen]


def test_the_potts_claims_read_the_runs_they_read_before(tmp_path):
    store = RunStore(tmp_path)  # empty: every run stands in, nothing runs
    now = {c.id: _probed(c, store) for c in claims("potts", "quick")}
    assert set(now) == set(KNOWN["claims"])
    changed = {k: (sorted(set(v)), sorted(set(KNOWN["claims"][k]))) for k, v in now.items()
               if set(v) != set(KNOWN["claims"][k])}
    assert not changed


@pytest.mark.parametrize("path", RECORDS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_committed_record_names_runs_we_can_still_name(path):
    doc = json.loads(path.read_text())
    entries = doc["claims"] if isinstance(doc, dict) else doc
    assert entries, f"{path} records no claim"
    for e in entries:
        assert {"claim", "measured", "verdict", "runs_computed", "runs_reused"} <= set(e), e.get("claim")
        if path.match("quick/potts.json"):
            read = e["runs_computed"] + e["runs_reused"]
            assert bool(read) == bool(KNOWN["claims"].get(e["claim"])), (
                f"{e['claim']}: the record read {read} runs, run_ids.json names {KNOWN['claims'].get(e['claim'])}")
