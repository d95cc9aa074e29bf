"""The docs build hook (docs/hooks.py): the study pages' generated tables follow the registry and the committed
record, markers in code blocks stay, an unknown study is a build warning (a failure under --strict)."""

from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest

from attnlab.core.claims import claims
from attnlab.core.registry import experiments

HOOKS = Path(__file__).resolve().parents[2] / "docs" / "hooks.py"


@pytest.fixture
def hooks(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("attnlab_docs_hooks", HOOKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "ROOT", tmp_path)
    monkeypatch.setattr(module, "RECORD", tmp_path / "results" / "claims")
    return module


def page(text: str, hooks) -> str:
    return hooks.on_page_markdown(text, page=SimpleNamespace(file=SimpleNamespace(src_path="studies/x.md")))


def test_experiments_table_lists_every_registered_experiment_with_its_scales(hooks):
    out = page("# p\n\n<!-- attnlab:experiments potts -->\n", hooks)
    for exp in experiments("potts"):
        assert f"`{exp.key}`" in out
    fig3left = next(line for line in out.splitlines() if "`potts.fig3left`" in line)
    assert "`L=200`" in fig3left and "★" in fig3left  # quick scale's override; a headline experiment


def test_claims_table_joins_the_registry_with_the_newest_record_entry(hooks, tmp_path):
    first, second = [c.id for c in claims("potts", "quick")][:2]
    entry = {"verdict": "pass", "measured": 0.0123, "expected": "≤ 0.05", "detail": "gap 0.012 | at L = 200"}
    record = {"study": "potts", "scale": "quick", "device": "cpu", "date": "2026-01-02T00:00:00", "commit": "abc",
              "counts": {"pass": 1}, "claims": [{"claim": first, "date": "2026-01-02T00:00:00", **entry}]}
    (tmp_path / "results" / "claims" / "quick").mkdir(parents=True)
    (tmp_path / "results" / "claims" / "quick" / "potts.json").write_text(json.dumps(record))
    cuda = {**record, "device": "cuda", "date": "2026-01-03T00:00:00",
            "claims": [{"claim": first, "date": "2026-01-03T00:00:00", **entry, "verdict": "fail"}]}
    (tmp_path / "results" / "claims" / "quick" / "potts-cuda.json").write_text(json.dumps(cuda))
    out = page("<!-- attnlab:claims potts -->", hooks)
    rows = {line.split("|")[1].strip(" `"): line for line in out.splitlines() if line.startswith("| `")}
    assert set(rows) == {c.id for c in claims("potts")}
    assert "**fail** (GPU) 0.0123 (expected ≤ 0.05): gap 0.012 \\| at L = 200" in rows[first]  # the newer entry
    assert "not measured yet" in rows[second]


def test_markers_in_code_blocks_stay_and_unknown_ones_warn(hooks, caplog):
    text = "```markdown\n<!-- attnlab:claims mystudy -->\n```\n"
    assert page(text, hooks) == text
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.attnlab"):
        page("<!-- attnlab:claims nostudy -->\n<!-- attnlab:tables potts -->\n", hooks)
    assert "no registered study 'nostudy'" in caplog.text and "unknown marker attnlab:tables" in caplog.text


def test_reference_lists_the_public_modules_found_in_the_source_tree(hooks):
    out = page("<!-- attnlab:reference attnlab.core -->", hooks)
    assert "::: attnlab.core.trajectory" in out and "::: attnlab.core.claims" in out
    assert "._" not in out


def test_sphinx_roles_in_docstrings_render_as_plain_code(hooks):
    html = "see :func:<code>resolve</code> and :class:<code>Config</code>; a:b:<code>c</code>"
    assert hooks.on_page_content(html) == "see <code>resolve</code> and <code>Config</code>; a:b:<code>c</code>"


def test_mathjax_is_copied_into_the_site_and_its_absence_is_a_warning(hooks, tmp_path, monkeypatch, caplog):
    site = tmp_path / "site"
    hooks.on_post_build({"site_dir": str(site)})
    bundle = site / hooks.MATHJAX / "tex-chtml.js"
    assert bundle.stat().st_size > 100_000  # the browser build itself, served by the site (mkdocs.yml loads it)
    assert list((site / hooks.MATHJAX / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert not (site / hooks.MATHJAX / "tex-svg.js").exists()  # only what the pages load
    monkeypatch.setattr(hooks.importlib.util, "find_spec", lambda name: None)
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.attnlab"):
        hooks.on_post_build({"site_dir": str(tmp_path / "other")})
    assert "MathJax is missing" in caplog.text and not (tmp_path / "other").exists()
