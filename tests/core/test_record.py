"""The committed claims record: `check --record`, `check --since`, the README's generated tables, the report."""

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core import claims as claims_mod
from attnlab.core import record, report
from attnlab.core.runs import RunStore

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def flip():
    """A second knobs claim whose measured value the test sets (to make it pass or fail)."""
    box = {"value": 0.0}
    claims_mod.register(claims_mod.Claim("knobs.flip", "—", "flips", "box", lambda ctx: box["value"], 0.0, "approx",
                                         0.1))
    yield box
    claims_mod._CLAIMS.pop("knobs.flip")


def _check(tmp_path, *args):
    return runner.invoke(app, ["check", "knobs", "--store", str(tmp_path / "store"), *args])


def test_record_holds_date_commit_hardware_and_every_verdict(tmp_path, flip):
    res = _check(tmp_path, "--record", str(tmp_path / "claims"))
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "claims" / "quick" / "knobs.json").read_text())
    assert (doc["study"], doc["scale"], doc["device"]) == ("knobs", "quick", "cpu")
    assert doc["date"][:2] == "20" and "commit" in doc and doc["hardware"]["cpu"]["threads"] >= 1
    assert doc["hardware"]["cpu"]["torch"] and "gpu" not in doc["hardware"]
    assert doc["counts"] == {"pass": 2, "fail": 0, "reported": 0, "error": 0}
    entry = {e["claim"]: e for e in doc["claims"]}["knobs.diffusion"]
    assert set(record.ENTRY_KEYS) <= set(entry) and entry["verdict"] == "pass" and entry["runs_computed"] == 4
    assert doc["wall_seconds"] == pytest.approx(sum(e["seconds"] for e in doc["claims"]), abs=0.2)


def test_an_interrupted_check_records_the_claims_it_measured(tmp_path):
    """Ctrl-C or SIGTERM (``timeout``) during a check: exit 130, and the record holds the claims measured so far,
    marked partial; the README's tables say so."""
    from attnlab.core.runs import Interrupted

    def stop(ctx):
        raise Interrupted("signal 15")

    claims_mod.register(claims_mod.Claim("knobs.stop", "—", "stops", "raises", stop, 0.0, "approx", 0.1))
    try:
        res = _check(tmp_path, "--record", str(tmp_path / "results" / "claims"))
    finally:
        claims_mod._CLAIMS.pop("knobs.stop")
    assert res.exit_code == 130 and "interrupted after 1 claim(s)" in res.stderr, res.output
    doc = json.loads((tmp_path / "results" / "claims" / "quick" / "knobs.json").read_text())
    assert [e["claim"] for e in doc["claims"]] == ["knobs.diffusion"] and doc["counts"]["pass"] == 1
    assert doc["partial"]["claims_measured"] == 1 and doc["partial"]["claims_planned"] == 2
    assert doc["partial"]["seconds"] >= doc["wall_seconds"] - 0.1
    text = "<!-- claims-record:start -->\n<!-- claims-record:end -->\n"
    table = record.render_readme(text, tmp_path / "results" / "claims", tmp_path)
    assert "| interrupted after 0 min: 1 of 2 claims |" in table


def test_since_prints_changes_and_fails_on_a_regression(tmp_path, flip):
    claims_dir = tmp_path / "claims"
    assert _check(tmp_path, "--record", str(claims_dir)).exit_code == 0
    same = _check(tmp_path, "--since", str(claims_dir))
    assert same.exit_code == 0 and "nothing changed" in same.stderr, same.output

    flip["value"] = 0.05  # still a pass, another value
    moved = _check(tmp_path, "--since", str(claims_dir / "quick" / "knobs.json"))
    assert moved.exit_code == 0 and "knobs.flip: pass, measured 0 → 0.05" in moved.stderr, moved.output

    flip["value"] = 1.0  # a pass became a fail
    worse = _check(tmp_path, "--since", str(claims_dir), "--json")
    assert worse.exit_code == 1 and "knobs.flip: pass → fail, measured 0 → 1 (REGRESSION)" in worse.stderr
    assert "knobs.diffusion" not in worse.stderr  # unchanged: the reused runs measure the same

    missing = _check(tmp_path, "--since", str(tmp_path / "nothing"))
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


def test_only_updates_its_claims_and_keeps_the_others(tmp_path, flip):
    claims_dir = tmp_path / "claims"
    _check(tmp_path, "--record", str(claims_dir))
    flip["value"] = 1.0
    assert _check(tmp_path, "--only", "flip", "--record", str(claims_dir)).exit_code == 1
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text())
    assert {e["claim"]: e["verdict"] for e in doc["claims"]} == {"knobs.diffusion": "pass", "knobs.flip": "fail"}
    assert doc["counts"]["fail"] == 1 and doc["counts"]["pass"] == 1
    claims_mod._CLAIMS.pop("knobs.flip")  # a claim the code no longer makes leaves the record at the next write
    try:
        assert _check(tmp_path, "--only", "diffusion", "--record", str(claims_dir)).exit_code == 0
    finally:
        claims_mod.register(claims_mod.Claim("knobs.flip", "—", "flips", "box", lambda ctx: 0.0, 0.0, "approx", 0.1))
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text())
    assert [e["claim"] for e in doc["claims"]] == ["knobs.diffusion"] and "partial" not in doc


def test_a_check_of_chosen_claims_is_recorded_as_partial_not_interrupted(tmp_path, flip):
    """``--only`` into a new record: it holds 1 of the study's 2 claims and says so; the rest completes it."""
    claims_dir = tmp_path / "claims"
    assert _check(tmp_path, "--only", "flip", "--record", str(claims_dir)).exit_code == 0
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text())
    assert doc["partial"]["claims_measured"] == 1 and doc["partial"]["claims_planned"] == 2
    assert doc["partial"]["interrupted"] is False
    text = "<!-- claims-record:start -->\n<!-- claims-record:end -->\n"
    assert "| 1 of 2 claims in 0 min |" in record.render_readme(text, claims_dir, tmp_path)
    assert _check(tmp_path, "--only", "diffusion", "--record", str(claims_dir)).exit_code == 0
    assert "partial" not in json.loads((claims_dir / "quick" / "knobs.json").read_text())


def test_compare_prefers_the_record_of_the_same_device_kind(tmp_path):
    res = claims_mod.ClaimResult("knobs.a", "—", "s", "h", 1.0, "= 1", 0.1, "pass", "quick", 0.1)
    cpu = {"device": "cpu", "claims": [{**record._entry(res.to_json()), "measured": 2.0}]}
    gpu = {"device": "cuda", "claims": [record._entry(res.to_json())]}
    assert [c.claim for c in record.compare([gpu, cpu], [res], "cpu")] == ["knobs.a"]
    assert record.compare([cpu, gpu], [res], "cuda") == []
    nan = claims_mod.ClaimResult("knobs.a", "—", "s", "h", float("nan"), "= 1", 0.1, "fail", "quick", 0.1)
    assert record._entry(nan.to_json())["measured"] is None


def _fake_record(root: Path, study: str, scale: str, gpu: bool, n_pass: int, wall: float,
                 planned: int | None = None, first: int = 0) -> None:
    hw = {"cpu": {"cpu": "Some CPU", "threads": 2, "cores": 2, "torch": "2.13.0"}}
    if gpu:
        hw["gpu"] = {"name": "NVIDIA H100 80GB HBM3"}
    rows = [{"claim": f"{study}.c{first + i}", "verdict": "pass" if i < n_pass else "reported", "measured": 1.0,
             "seconds": wall / 3} for i in range(3)]
    doc = {"study": study, "scale": scale, "device": "cuda" if gpu else "cpu", "date": "2026-01-02T03:04:05",
           "commit": "abcdef0123456789", "hardware": hw, "wall_seconds": wall, "runs_reused": 0,
           "counts": record.counts(rows), "claims": rows}
    if planned:
        doc["partial"] = {"claims_measured": 3, "claims_planned": planned, "seconds": 282.0}
    path = record.path_for(root, scale, study, "cuda" if gpu else None)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def test_readme_blocks_are_generated_from_the_records(tmp_path):
    text = ("# x\n<!-- claims-record:start -->\nstale\n<!-- claims-record:end -->\nmiddle\n"
            "<!-- gpu-table:start -->\n<!-- gpu-table:end -->\nend\n")
    root = tmp_path / "results" / "claims"
    empty = record.render_readme(text, root, tmp_path)
    assert "No committed record yet" in empty and "stale" not in empty and empty.endswith("end\n")
    assert re.search(r"\| potts \| 0 of \d+ \| 0 \| 0 \| 0 \| 0 \| — \| — \|", empty)
    _fake_record(root, "potts", "quick", False, 2, 360.0)
    _fake_record(root, "potts", "paper", False, 1, 7200.0)
    _fake_record(root, "signal", "paper", True, 3, 600.0)
    out = record.render_readme(empty, root, tmp_path)
    assert record.render_readme(out, root, tmp_path) == out  # idempotent
    assert ("| potts | quick | CPU, 2 threads | 2 | 0 | 1 | 0 | 6 min | 2026-01-02, abcdef0123 (claim definitions "
            "not kept: `check --since` compares) | [potts.json](results/claims/quick/potts.json) |") in out
    assert re.search(r"\| potts \| 3 of \d+ \| 1 \| 0 \| 2 \| 0 \| — \| 2\.0 h \|", out)
    assert re.search(r"\| signal \| 3 of \d+ \| 3 \| 0 \| 0 \| 0 \| 10 min \(NVIDIA H100 80GB HBM3\) \| — \|", out)
    _fake_record(root, "paths", "paper", True, 2, 300.0, planned=9)
    out = record.render_readme(out, root, tmp_path)
    assert re.search(r"\| paths \| 3 of \d+ \| 2 \| 0 \| 1 \| 0 \| 5 min \(NVIDIA H100 80GB HBM3\) \| — \|", out)
    _fake_record(root, "paths", "paper", False, 1, 7200.0, planned=9, first=3)  # the CPU measured three others
    out = record.render_readme(out, root, tmp_path)
    assert re.search(r"\| paths \| 6 of \d+ \| 3 \| 0 \| 3 \| 0 \| 5 min \(NVIDIA H100 80GB HBM3\) \| 2\.0 h \|", out)
    assert out.count("middle") == 1


def test_the_readme_matches_the_committed_records():
    """The README's generated tables are what `python -m attnlab.core.record README.md` writes (never drift)."""
    text = (ROOT / "README.md").read_text()
    assert "<!-- claims-record:start -->" in text and "<!-- gpu-table:start -->" in text
    assert record.render_readme(text, ROOT / "results" / "claims", ROOT) == text, \
        "README tables are stale: run `python -m attnlab.core.record README.md`"


def test_report_shows_the_committed_record(tmp_path):
    root = tmp_path / "claims"
    _fake_record(root, "paths", "quick", False, 2, 60.0)
    html = report.build(RunStore(tmp_path / "store"), None, records=root)
    assert "Committed claims record" in html and "paths.c0" in html and "2 pass, 0 fail, 1 reported" in html


def test_a_record_says_which_verdicts_measured_a_definition_changed_since(tmp_path, flip):
    """Each entry keeps its claim's definition fingerprint: a gate changed since (or a claim removed) is counted in
    the README's table and named by `check --since`, so a verdict of an old definition is never passed off."""
    claims_dir = tmp_path / "claims"
    assert _check(tmp_path, "--record", str(claims_dir)).exit_code == 0
    doc = json.loads((claims_dir / "quick" / "knobs.json").read_text()) | {"path": str(claims_dir / "quick" / "x")}
    assert record.redefined(doc) == 0 and all(e["definition"] for e in doc["claims"])
    claims_mod.register(claims_mod.Claim("knobs.flip", "—", "flips", "box", lambda ctx: 0.0, 0.0, "approx", 0.5))
    assert record.redefined(doc) == 1
    assert "(1 measured a definition changed since)" in record.claims_table([doc], tmp_path)
    res = _check(tmp_path, "--only", "diffusion", "--since", str(claims_dir))
    assert "1 claim(s) measured a definition changed since" in res.stderr, res.output
    old = doc | {"claims": [{k: v for k, v in e.items() if k != "definition"} for e in doc["claims"]]}
    assert record.redefined(old) is None and "definitions not kept" in record.claims_table([old], tmp_path)
