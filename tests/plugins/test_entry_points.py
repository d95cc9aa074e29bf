"""Plug-ins through entry points (issue 17): the five studies, the template ``examples/my_study`` (study ``toy``) and
the test suite's study ``tests/knobs_study`` (``knobs``) register the same way, under ``attnlab.studies`` and
``attnlab.views``; the old variables still work for one release, with a one-line warning."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points

import pytest

from attnlab import STUDIES
from attnlab.core.config import ConfigError
from attnlab.core.registry import get, known_studies, load_studies, study_modules
from attnlab.sandbox import plugin

INSTALL = "pip install --no-deps --no-build-isolation -e examples/my_study -e tests/knobs_study (what `make` does)"
# the studies installed from outside the package: name → (their attnlab.studies entry point, their attnlab.views one)
OUTSIDE = {"knobs": ("knobs_study.study:STUDY", "knobs_study.views"),
           "toy": ("my_study.study:STUDY", "my_study.views.plugin")}


def test_the_studies_the_template_and_the_test_study_are_installed_entry_points():
    studies = {ep.name: ep.value for ep in entry_points(group="attnlab.studies")}
    views = {ep.name: ep.value for ep in entry_points(group="attnlab.views")}
    assert set(OUTSIDE) <= set(studies) & set(views), f"the template or the test study is not installed: {INSTALL}"
    # every entry point names a Study object (docs/adding-a-study.md)
    assert studies == {**{s: f"attnlab.{s}.study:STUDY" for s in STUDIES},
                       **{s: study for s, (study, _) in OUTSIDE.items()}}
    assert views == {**{s: f"attnlab.{s}.views.plugin" for s in STUDIES}, **{s: v for s, (_, v) in OUTSIDE.items()}}


def test_the_template_and_the_test_study_are_found_through_their_entry_points_not_a_variable():
    if not set(OUTSIDE) <= {ep.name for ep in entry_points(group="attnlab.studies")}:
        pytest.fail(f"the template or the test study is not installed: {INSTALL}")
    assert "ATTNLAB_PLUGINS" not in os.environ and "ATTNLAB_SANDBOX_PLUGINS" not in os.environ
    assert list(study_modules()) == [*STUDIES, *sorted(OUTSIDE)]  # the built-ins first, in their order, then by name
    assert known_studies()[: len(STUDIES) + 2] == [*STUDIES, *sorted(OUTSIDE)]
    for study in OUTSIDE:
        assert get(f"{study}.walk").memory is not None and get(f"{study}.walk").figure is not None
        assert plugin.plugin_for(f"{study}.walk").study == study
    assert list(plugin.view_modules()) == [*STUDIES, *sorted(OUTSIDE)]


def test_an_unknown_study_is_one_line():
    with pytest.raises(ConfigError, match=rf"^unknown study 'nope'; allowed: {', '.join(STUDIES)}"):
        load_studies(["nope"])


LEGACY = textwrap.dedent('''
    from attnlab.core.config import Config
    from attnlab.core.experiment import Result
    from attnlab.core.registry import experiment

    class C(Config):
        scales = {"quick": {}, "paper": {}}

    @experiment("legacy", "noop", C)
    def noop(config, ctx):
        return Result(summary={"x": 1.0})
''')
LEGACY_VIEW = textwrap.dedent('''
    from attnlab.sandbox.plugin import StudyPlugin, register

    class P(StudyPlugin):
        study = "legacy"
        openers = {"noop": lambda *a: None}

    register(P())
''')
PROBE = ("from attnlab.core.registry import get; from attnlab.sandbox.plugin import plugins, plugin_for; "
         "get('legacy.noop'); get('legacy.noop'); plugins(); print(plugin_for('legacy.noop').study)")


def test_the_deprecated_variables_still_work_with_one_line_each(tmp_path):
    (tmp_path / "legacy_study.py").write_text(LEGACY)
    (tmp_path / "legacy_view.py").write_text(LEGACY_VIEW)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "ATTNLAB_PLUGINS": "legacy_study", "ATTNLAB_SANDBOX_PLUGINS": "legacy_view"}
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "legacy"
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 2, lines  # one line per variable, once per process
    assert lines[0].startswith("attnlab: $ATTNLAB_PLUGINS is deprecated") and "'attnlab.studies'" in lines[0]
    assert lines[1].startswith("attnlab: $ATTNLAB_SANDBOX_PLUGINS is deprecated") and "'attnlab.views'" in lines[1]


def test_a_variable_naming_a_missing_module_is_one_line(monkeypatch):
    monkeypatch.setenv("ATTNLAB_PLUGINS", "no_such_study_module")
    with pytest.raises(ConfigError, match=r"^ATTNLAB_PLUGINS names 'no_such_study_module', which cannot be"):
        load_studies()


def test_a_registry_name_imported_from_its_old_module_says_where_it_moved():
    with pytest.raises(ImportError, match=r"moved to attnlab.core.registry: write `from attnlab.core.registry import "
                                          r"load_studies`"):
        from attnlab.core.experiment import load_studies  # noqa: F401
    import attnlab.core.experiment as old

    with pytest.raises(AttributeError):
        old.nothing_like_this  # noqa: B018
