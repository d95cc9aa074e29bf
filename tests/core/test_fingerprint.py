"""The code fingerprint a record entry keeps: blind to documentation, not to behaviour; the same read from the
working tree or from a commit, so records written under another fingerprint are compared the same way."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from attnlab.core.fingerprint import _measured, code_fingerprint, normalised, stale

BASE = '''"""A module."""
from pydantic import Field


class C:
    """A config."""

    n: int = Field(3, ge=1, description="the size")


def f(x):
    """Doubles."""
    return 2 * x  # a comment
'''


def test_documentation_and_input_bounds_do_not_count_behaviour_does():
    documented = (BASE.replace('"the size"', '"the number of heads, N in Eq. (3)"').replace("Doubles.", "Twice x.")
                  .replace("# a comment", "# another").replace('"""A config."""\n', "").replace("ge=1", "ge=1, le=64"))
    assert normalised("x: str = 'cosine'\n") == normalised("x: str = Field('cosine', description='the schedule')\n")
    assert normalised("from typing import Any\nx: tuple[float, ...] = (1.0,)\n") == normalised(
        "from typing import Annotated, Any\nfrom pydantic import Field\n"
        "x: tuple[Annotated[float, Field(gt=0, le=10)], ...] = Field((1.0,), description='rates')\n")
    assert normalised("x: tuple[float, ...] = (1.0,)\n") != normalised(
        "x: tuple[Annotated[float, Field(alias='y')], ...] = (1.0,)\n")
    assert normalised(documented) == normalised(BASE)
    for change in (("Field(3", "Field(4"), ("int", "float"), ("Field(3, ge=1", "Field(3, alias='m', ge=1"),
                   ("2 * x", "3 * x"), ("return 2 * x", "return x * 2")):
        assert normalised(BASE.replace(*change)) != normalised(BASE), change


def test_a_typed_summary_reader_does_not_count_what_the_experiment_runs_does():
    """``Experiment(..., summary=Cls)`` and a study's ``summaries`` module only read what a run returned."""
    plain = 'FIG = Experiment("s", "fig", Config, run, ref="Fig. 1")\n'
    assert normalised(plain.replace(")\n", ", summary=FigSummary)\n")) == normalised(plain)
    assert normalised("from attnlab.s.summaries import FigSummary\n" + plain) == normalised(plain)
    assert normalised("from attnlab.s import figures, summaries\n") == normalised("from attnlab.s import figures\n")
    assert normalised("from attnlab.s import summaries\n") == normalised("")
    assert normalised("from attnlab.s import summaries as figures\n") != normalised("")  # another name is code
    assert normalised(plain.replace("run,", "other_run,")) != normalised(plain)
    assert normalised(plain.replace(")\n", ", memory=model)\n")) != normalised(plain)  # only the reader is left out
    assert not _measured(Path("summaries.py")) and _measured(Path("experiments/fig2.py"))
    # the module imported by name for those keywords is not read either; any other import is
    imports = "from attnlab.s import costs, outputs\n"
    assert normalised(imports.replace("outputs", "outputs, summaries") + plain) == normalised(imports + plain)
    assert normalised("from attnlab.s import summaries\n" + plain) == normalised(plain)
    assert normalised(imports.replace("outputs", "outputs, figures") + plain) != normalised(imports + plain)
    assert normalised("from attnlab.s import summaries as sm\n" + plain) != normalised(plain)


def test_importing_a_study_s_summaries_module_does_not_count_other_imports_do():
    """``from attnlab.<study> import …, summaries`` (for ``summary=summaries.X``) is left out; nothing else is."""
    plain = "from attnlab.study import costs, outputs, theory\nFIG = Experiment(s, f, C, run, outputs=outputs.F)\n"
    typed = ("from attnlab.study import costs, outputs, summaries, theory\n"
             "FIG = Experiment(s, f, C, run, outputs=outputs.F, summary=summaries.FigSummary)\n")
    assert normalised(typed) == normalised(plain)
    assert normalised("from attnlab.study import summaries\nx = 1\n") == normalised("x = 1\n")
    assert normalised(plain.replace("costs, ", "costs, data, ")) != normalised(plain)
    assert normalised(plain.replace("costs, ", "costs, summaries as s, ")) != normalised(plain)  # a renamed name


def test_stale_compares_an_entry_with_today():
    assert stale({"code": "a"}, "b") and not stale({"code": "a"}, "a")
    assert not stale({}, "a") and not stale({"code": "a"}, None)


def test_the_working_tree_and_its_commit_give_one_fingerprint():
    root = subprocess.run(["git", "rev-parse", "--show-toplevel"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--", "examples/my_study"], capture_output=True, text=True,
                           cwd=root or None)
    if not root or dirty.returncode or dirty.stdout.strip():
        pytest.skip("needs a git checkout whose example study is committed as it is")
    assert code_fingerprint("toy") == code_fingerprint("toy", "HEAD") is not None
    assert code_fingerprint("toy", "0" * 40) is None  # a commit the checkout does not have
