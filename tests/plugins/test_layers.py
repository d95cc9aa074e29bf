"""The import graph is layered (issue 17): ``core`` imports no study and no sandbox; the sandbox framework imports
no study; the command line imports no study (it reaches them through the registry and the plug-ins; ``attnlab map``
is the signal study's theory applied to a user's model) and its command modules never import :mod:`attnlab.cli`,
which registers them (no loop); a study imports ``core``, the sandbox's
plug-in API (``plugin``, ``traces``) and itself only; no study imports another. Every import counts, those inside
functions too, and ``importlib.import_module("…")`` of a constant name; read with ``ast``, nothing is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from attnlab import STUDIES

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
EXAMPLE = ROOT / "examples" / "my_study"
TEST_STUDY = ROOT / "tests" / "knobs_study"
PLUGIN_API = ("attnlab.sandbox.plugin", "attnlab.sandbox.traces")


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, base: Path, tree: ast.AST | None = None) -> set[str]:
    """Every module ``path`` (or its syntax ``tree``) imports (``from a import b`` counts as ``a.b`` when ``a/b`` is a
    module or package)."""
    name = module_name(path, base)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree or ast.parse(path.read_text(), str(path))):
        if (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.add(node.args[0].value)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_pkg = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                mod = f"{base_pkg}.{node.module}" if node.module else base_pkg
            else:
                mod = node.module or ""
            out.add(mod)
            for a in node.names:
                sub = base.joinpath(*f"{mod}.{a.name}".split("."))
                if sub.with_suffix(".py").is_file() or (sub / "__init__.py").is_file():
                    out.add(f"{mod}.{a.name}")
    return out


def graph(base: Path) -> dict[str, set[str]]:
    return {module_name(p, base): imports(p, base) for p in sorted(base.rglob("*.py"))}


GRAPH = graph(SRC)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def offenders(prefix: str, forbidden) -> list[str]:
    return sorted(f"{m} imports {i}" for m, deps in GRAPH.items() if within(m, prefix) for i in deps if forbidden(i))


def is_study(module: str) -> bool:
    return any(within(module, f"attnlab.{s}") for s in STUDIES)


def test_the_graph_is_read():
    assert len(GRAPH) > 100 and "attnlab.core.experiment" in GRAPH
    assert "attnlab.core.config" in GRAPH["attnlab.core.experiment"]
    assert "attnlab.sandbox.traces" in GRAPH["attnlab.paths.views.draw"]  # `from attnlab.sandbox import traces`


def test_core_imports_no_study_and_no_sandbox():
    assert offenders("attnlab.core", lambda i: is_study(i) or within(i, "attnlab.sandbox")) == []


def test_the_sandbox_imports_no_study():
    assert offenders("attnlab.sandbox", is_study) == []


def test_the_command_line_imports_no_study_and_has_no_loop():
    cli = [m for m in GRAPH if m == "attnlab.cli" or m.startswith("attnlab.cli_")]
    assert len(cli) >= 6
    allowed = ("attnlab.cli_map", "attnlab.signal")  # `attnlab map` is paper 1's theory applied to a user's model
    bad = sorted(f"{m} imports {i}" for m in cli for i in GRAPH[m] if (is_study(i) and (m, i.split(".")[0] + "." +
                 i.split(".")[1]) != allowed) or (i == "attnlab.cli" and m != i))
    assert bad == []


def test_import_module_of_a_constant_name_counts(tmp_path):
    f = tmp_path / "attnlab" / "core" / "x.py"
    f.parent.mkdir(parents=True)
    f.write_text("import importlib\n\ndef f():\n    return importlib.import_module('attnlab.paths.model')\n")
    assert "attnlab.paths.model" in imports(f, tmp_path)


@pytest.mark.parametrize("study", STUDIES)
def test_a_study_imports_core_the_plugin_api_and_itself(study):
    def forbidden(i: str) -> bool:
        if not within(i, "attnlab"):
            return False  # the standard library and third-party packages
        return not (i in ("attnlab", "attnlab.sandbox") or within(i, "attnlab.core") or within(i, f"attnlab.{study}")
                    or any(within(i, api) for api in PLUGIN_API))

    assert offenders(f"attnlab.{study}", forbidden) == []


def test_every_study_has_its_views_package():
    for study in STUDIES:
        assert f"attnlab.{study}.views.plugin" in GRAPH, study
    assert not [m for m in GRAPH if within(m, "attnlab.sandbox") and m.split(".")[-1] in STUDIES]


@pytest.mark.parametrize("root", [EXAMPLE, TEST_STUDY], ids=["template", "test-study"])
def test_the_studies_outside_the_package_import_only_attnlab_core_and_the_plugin_api(root):
    """The template, and the test suite's study (self-contained: it imports nothing of the template either)."""
    found = {i for d in graph(root).values() for i in d}
    deps = {i for i in found if within(i, "attnlab")}
    assert deps and all(within(i, "attnlab.core") or i in PLUGIN_API or i == "attnlab.sandbox" for i in deps), deps
    assert root == EXAMPLE or not {i for i in found if within(i, "my_study")}


def runtime_imports(path: Path, base: Path) -> set[str]:
    """:func:`imports` less those made only for type checkers (inside ``if TYPE_CHECKING:``)."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", "")) == "TYPE_CHECKING":
            node.body = [ast.Pass()]
    return imports(path, base, tree)


def loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while (w := stack.pop()) != v:
                group.append(w)
            if group:
                out.append(sorted([v, *group]))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_spine_has_no_import_loop():
    """Core, the command line and the sandbox: no two modules import each other, directly or through others, at
    run time (function-level imports count; ``TYPE_CHECKING`` imports do not)."""
    spine = {module_name(p, SRC): p for p in sorted(SRC.rglob("*.py"))
             if not is_study(module_name(p, SRC)) and module_name(p, SRC) != "attnlab"}
    assert "attnlab.cli" in spine and "attnlab.core.device" in spine and "attnlab.sandbox.plugin" in spine
    graph = {m: {i for i in runtime_imports(p, SRC) if i in spine and i != m} for m, p in spine.items()}
    assert loops(graph) == []


def test_a_loop_through_a_function_level_import_is_found(tmp_path):
    pkg = tmp_path / "attnlab" / "core"
    pkg.mkdir(parents=True)
    (pkg / "a.py").write_text("from attnlab.core import b\n")
    (pkg / "b.py").write_text("def f():\n    from attnlab.core.a import x\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from attnlab.core import a\n")
    graph = {f"attnlab.core.{n}": runtime_imports(pkg / f"{n}.py", tmp_path) for n in "abc"}
    assert loops(graph) == [["attnlab.core.a", "attnlab.core.b"]]
    assert "attnlab.core.a" not in graph["attnlab.core.c"]


# a study's rooms in the order imports run (docs/adding-a-study.md): a room imports only rooms of its own rank or
# below; the rooms not named here (configs, keys, outputs, summaries, costs, memory, ...) are free
RANK = {"data": 0, "model": 0, "theory": 1, "train": 1, "analysis": 1, "figures": 2, "experiments": 3, "claims": 4,
        "views": 4, "study": 5}


def room(module: str, study: str) -> str | None:
    parts = module.split(".")
    return parts[2] if parts[:2] == ["attnlab", study] and len(parts) > 2 else None


def rank_breaks(graph: dict[str, set[str]], study: str) -> list[str]:
    breaks = []
    for mod, deps in graph.items():
        here = RANK.get(room(mod, study))
        for dep in deps:
            there = RANK.get(room(dep, study))
            if here is not None and there is not None and there > here:
                breaks.append(f"{mod} ({room(mod, study)}) imports {dep} ({room(dep, study)})")
    return sorted(breaks)


@pytest.mark.parametrize("study", STUDIES)
def test_a_study_imports_no_room_above_its_own(study):
    assert not rank_breaks(GRAPH, study)


def test_a_room_importing_one_above_it_is_found():
    fake = {"attnlab.s.theory.saddle": {"attnlab.s.train.optimizers", "attnlab.s.data"},
            "attnlab.s.analysis.circuits": {"attnlab.s.experiments.training"}}
    assert rank_breaks(fake, "s") == ["attnlab.s.analysis.circuits (analysis) imports attnlab.s.experiments.training "
                                      "(experiments)"]
