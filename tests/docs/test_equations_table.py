"""The study pages' equation → code table (marker ``<!-- attnlab:equations PACKAGE -->`` of docs/hooks.py): a row
per cited equation, the citing code linked into the API reference where that shows it."""

from __future__ import annotations

import importlib.util
import logging
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

HOOKS = Path(__file__).resolve().parents[2] / "docs" / "hooks.py"


@pytest.fixture
def hooks():
    spec = importlib.util.spec_from_file_location("attnlab_docs_hooks_equations", HOOKS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def page(text: str, hooks) -> str:
    return hooks.on_page_markdown(text, page=SimpleNamespace(file=SimpleNamespace(src_path="studies/x.md")))


def _rows(out: str) -> dict[str, str]:
    return {line.split("|")[1].strip(): line for line in out.splitlines() if line.startswith("| Eq") or
            line.startswith("| App")}


def test_a_study_page_gets_its_table_from_the_docstrings(hooks):
    rows = _rows(page("<!-- attnlab:equations attnlab.potts -->\n", hooks))
    assert "Eq. (5)" in rows and "Eq. (42)" in rows
    assert "][attnlab.potts." in rows["Eq. (5)"]  # linked into the API reference
    signal = _rows(page("<!-- attnlab:equations attnlab.signal -->\n", hooks))
    assert "[`model.layer_norm`][attnlab.signal.model.layer_norm]" in signal["Eq. (1)"]


def test_private_code_is_named_without_a_link_and_an_unknown_package_warns(hooks, tmp_path, monkeypatch, caplog):
    pkg = tmp_path / "toyeq"
    pkg.mkdir()
    (pkg / "__init__.py").write_text('"""Toy (paper 9): Eq. (1)."""\n')
    (pkg / "model.py").write_text('"""The model."""\n\n\ndef f():\n    """Eq. (2)."""\n\n\ndef _g():\n'
                                  '    """Eqs. (2)-(3)."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toyeq", raising=False)
    monkeypatch.setattr(hooks, "SRC", tmp_path)
    rows = _rows(page("<!-- attnlab:equations toyeq -->\n", hooks))
    assert list(rows) == ["Eq. (1)", "Eq. (2)", "Eq. (3)"]
    assert rows["Eq. (1)"].split("|")[2:4] == [" — ", " [`toyeq`][toyeq] "]
    assert "[`model.f`][toyeq.model.f], `model._g`" in rows["Eq. (2)"]
    with caplog.at_level(logging.WARNING, logger="mkdocs.plugins.attnlab"):
        assert page("<!-- attnlab:equations nopackage.sub -->", hooks) == "<!-- attnlab:equations nopackage.sub -->"
    assert "no package 'nopackage.sub'" in caplog.text
