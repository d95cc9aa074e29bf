"""One citation style in the code's docstrings and comments (issue 30: ``grep "Eq. (12)"`` lands on the code), and
the equation → code table each study page prints from it (``attnlab.core.citations``)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest

from attnlab.core.citations import cited, docstring_spans, equations, normalise, rewrite

SRC = Path(__file__).resolve().parents[2] / "src" / "attnlab"
#: files whose docstrings state the other styles on purpose, or wait for their own change (paths' modules other
#: than claims and theory were being reworked when the style was set: rewrite them with
#: ``python -m attnlab.core.citations FILE`` and drop them here)
NOT_YET = {"core/citations.py"}  # its docstring shows the other styles on purpose


@pytest.mark.parametrize(("text", "canonical"), [
    ("eq. (2)'s", "Eq. (2)'s"), ("(Eq. 13)", "(Eq. (13))"), ("Eq. 19.", "Eq. (19)."), ("Eq. B.3", "Eq. (B.3)"),
    ("Eqs. 17–18, B.20-B.22)", "Eqs. (17)-(18), (B.20)-(B.22))"), ("eqs. (3)-(4) and (17)", "Eqs. (3)-(4) and (17)"),
    ("Eq. 8/19", "Eqs. (8)/(19)"), ("Equation 7", "Eq. (7)"), ("Eq. 17, 2-D", "Eq. (17), 2-D"),
    ("Figs 2, 5", "Figs. 2, 5"), ("Figure 3b", "Fig. 3b"), ("paper §4.2-4.3, §2", "paper Secs. 4.2-4.3, Sec. 2"),
    ("Section 3.2", "Sec. 3.2"), ("Appendix B.1", "App. B.1"), ("App B", "App. B"),
])
def test_normalise_rewrites_each_style_into_the_one(text, canonical):
    assert normalise(text) == canonical
    assert normalise(canonical) == canonical


@pytest.mark.parametrize("text", ["Eq. (12)", "Eqs. (4)-(6)", "Eqs. (8), (36)-(42)", "App. B.1", "Sec. 3.2",
                                  "Fig. 2a", "``fig1c`` and fig2", "the equation of motion", "eq2_forward"])
def test_text_in_the_style_or_without_citations_is_left_alone(text):
    assert normalise(text) == text


def test_rewrite_touches_docstrings_and_comments_only():
    source = 'def f():\n    """Eq. 12."""\n    return g(ref="Eq. 12")  # eq. 12\n'
    assert rewrite(source) == 'def f():\n    """Eq. (12)."""\n    return g(ref="Eq. 12")  # Eq. (12)\n'


def test_cited_expands_ranges_and_lists():
    assert cited("the iteration of eqs. (36)-(38) and Eq. 8; App. B.1") == [
        "Eq. (36)", "Eq. (37)", "Eq. (38)", "Eq. (8)", "App. B.1"]
    assert cited("Eqs. (B.20)-(B.22), (1)/(3)") == ["Eq. (B.20)", "Eq. (B.21)", "Eq. (B.22)", "Eq. (1)", "Eq. (3)"]


def _measures() -> dict[Path, list[tuple[int, int]]]:
    """The lines of every claim's measure: its source is the claim's definition, so its docstring stays as is."""
    from attnlab.core.claims import claims

    out: dict[Path, list[tuple[int, int]]] = {}
    for c in claims():
        try:
            lines, start = inspect.getsourcelines(c.measure)
        except (OSError, TypeError):
            continue
        out.setdefault(Path(inspect.getsourcefile(c.measure)).resolve(), []).append((start, start + len(lines)))
    return out


def test_docstrings_and_comments_cite_the_papers_in_one_style():
    measures = _measures()
    off = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).as_posix() in NOT_YET:
            continue
        source = path.read_text()
        for start, end, kind in docstring_spans(source):
            line = source.count("\n", 0, start) + 1
            if normalise(source[start:end]) != source[start:end] and not any(
                    a <= line <= b for a, b in measures.get(path.resolve(), [])):
                off.append(f"{path.relative_to(SRC)}:{line} ({kind})")
    assert not off, "citations in another style than Eq. (12), Eqs. (4)-(6), App. B.1, Sec. 3.2, Fig. 2a: " + (
        ", ".join(off) + " (python -m attnlab.core.citations FILE rewrites them)")


def test_study_tables_list_the_code_citing_each_equation():
    potts = equations("attnlab.potts")
    assert any(c.module in ("attnlab.potts.model", "attnlab.potts.data.potts") and c.qualname for c in potts["Eq. (5)"])
    signal = equations("attnlab.signal")
    assert "attnlab.signal.model.layer_norm" in {c.path for c in signal["Eq. (1)"]}
    assert list(signal)[:3] == ["Eq. (1)", "Eq. (2)", "Eq. (3)"]  # the paper's order, appendices last
    assert list(signal)[-1].startswith("App. ")
    for study in ("specialization", "paths", "clustering"):
        assert any(k.startswith("Eq. (") for k in equations(f"attnlab.{study}")), study


def test_a_function_citing_an_equation_shows_up(tmp_path, monkeypatch):
    pkg = tmp_path / "toystudy"
    (pkg / "theory").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""A toy study (paper 9)."""\n')
    (pkg / "theory" / "__init__.py").write_text("")
    (pkg / "theory" / "flow.py").write_text(
        '"""The flow of Eqs. (4)-(6)."""\n\n\nclass Flow:\n    """App. B.2."""\n\n    def step(self):\n'
        '        """One step of Eq. (5)."""\n\n\ndef _helper():\n    """Eq. 7, in another style."""\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "toystudy", raising=False)
    table = equations("toystudy")
    assert list(table) == ["Eq. (4)", "Eq. (5)", "Eq. (6)", "Eq. (7)", "App. B.2"]
    assert [(c.path, c.documented) for c in table["Eq. (5)"]] == [
        ("toystudy.theory.flow", True), ("toystudy.theory.flow.Flow.step", True)]
    assert [(c.path, c.documented) for c in table["Eq. (7)"]] == [("toystudy.theory.flow._helper", False)]
    with pytest.raises(LookupError):
        equations("toystudy_missing")
