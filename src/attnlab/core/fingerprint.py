"""Which code a claims record measured: a fingerprint of a study's experiment sources, by behaviour.

A record entry keeps the fingerprint of the code it measured; :func:`stale` tells whether today's code is another.
The fingerprint covers the study's package less what cannot change a measured value (its claims, views, renderers,
memory and cost models, typed summaries), and reads each file as Python syntax without its docstrings and without
the keywords of its config fields that only document them or refuse input (:data:`FIELD_DOCS`: a description, a
bound): documenting a parameter, bounding it or rewording a docstring keeps every record current, while any change
to what runs (a statement, a default, a type; comments and layout aside) makes the entries measured before it stale.

It can be computed for the working tree or for any commit of the checkout (read through git), so that a record
whose entries were written before fingerprints existed, or under another fingerprint, is compared the same way.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import subprocess
from collections.abc import Iterable
from pathlib import Path
from typing import Any

#: modules (and packages) of a study that cannot change a measured value (``summaries``: the typed readers of what a
#: run returned, :mod:`attnlab.core.summaries`)
NOT_MEASURED = ("claims", "views", "render", "memory", "costs", "summaries")
#: keywords of an ``Experiment(...)`` declaration that cannot change a measured value: its typed summary (a reader)
EXPERIMENT_DOCS = ("summary",)
#: keywords of a config field (``Field(...)``) that document it or refuse input, never change a valid run's value
FIELD_DOCS = ("description", "title", "examples", "json_schema_extra", "ge", "gt", "le", "lt", "multiple_of",
              "min_length", "max_length", "pattern")


def _measured(relative: Path) -> bool:
    return not any(part in NOT_MEASURED or part.startswith(("claims", "__pycache__"))
                   for part in relative.with_suffix("").parts)


def study_root(study: str) -> Path | None:
    """The folder of ``study``'s package (or of its one registering module); None for an unknown study."""
    from attnlab.core.registry import study_modules

    module = study_modules().get(study)
    if module is None:
        return None
    package = importlib.import_module(module)
    return Path(next(iter(package.__path__))) if hasattr(package, "__path__") else Path(package.__file__).parent


def study_files(study: str) -> tuple[Path, list[Path]] | None:
    """The study's folder and the source files its experiments run (:data:`NOT_MEASURED` aside)."""
    root = study_root(study)
    if root is None:
        return None
    return root, sorted(f for f in root.rglob("*.py") if _measured(f.relative_to(root)))


def normalised(source: str) -> bytes:
    """``source`` as its syntax tree without docstrings, ``description=`` keywords, an ``Experiment``'s
    :data:`EXPERIMENT_DOCS`, or a ``Field``'s :data:`FIELD_DOCS` (a ``Field(x)`` left with nothing else is ``x``, an
    ``Annotated[T, Field(bounds)]`` is ``T``; comments and layout are not in the tree): what the fingerprint hashes.
    A file that does not parse is hashed as it is."""
    try:
        tree = _BareFields().visit(ast.parse(source))
    except SyntaxError:
        return source.encode()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
        if isinstance(node, ast.Call):
            drop = FIELD_DOCS if _calls(node, "Field") else (
                ("description", *EXPERIMENT_DOCS) if _calls(node, "Experiment") else ("description",))
            node.keywords = [k for k in node.keywords if k.arg not in drop]
    return ast.dump(tree, include_attributes=False).encode()


def _calls(node: ast.Call, name: str) -> bool:
    """Whether ``node`` calls ``name`` (``Field(...)`` or ``pydantic.Field(...)``)."""
    return (isinstance(node.func, ast.Name) and node.func.id == name) or (
        isinstance(node.func, ast.Attribute) and node.func.attr == name)


def _docs_only(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and _calls(node, "Field") and all(k.arg in FIELD_DOCS for k in node.keywords)


class _BareFields(ast.NodeTransformer):
    """``Field(x, <only FIELD_DOCS keywords>)`` → ``x``: a default given its description is the same default; and
    ``Annotated[T, Field(<only FIELD_DOCS>)]`` → ``T``: an element type given its bounds is the same type."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if _docs_only(node) and len(node.args) == 1 and not isinstance(node.args[0], ast.Starred):
            return node.args[0]
        return node

    def visit_ImportFrom(self, node: ast.ImportFrom) -> ast.AST | None:
        """The names the two forms above need (``typing.Annotated``, ``pydantic.Field``) are not imported either, nor
        a study's typed summaries (a module of :data:`NOT_MEASURED`, named in the left-out ``summary=``)."""
        if (node.module or "").rpartition(".")[2] == "summaries":
            return None
        if node.module in ("typing", "pydantic"):
            node.names = [a for a in node.names if a.name not in ("Annotated", "Field")]
        else:  # ``from attnlab.<study> import figures, summaries``
            node.names = [a for a in node.names if a.name != "summaries" or a.asname is not None]
        return node if node.names else None

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        self.generic_visit(node)
        name = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", "")
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else []
        if name == "Annotated" and len(parts) >= 2 and all(_docs_only(m) and not m.args for m in parts[1:]):
            return parts[0]
        return node


def _digest(files: Iterable[tuple[str, str]]) -> str:
    h = hashlib.sha256()
    for name, source in sorted(files):
        h.update(name.encode() + b"\0" + normalised(source) + b"\0")
    return h.hexdigest()[:12]


def code_fingerprint(study: str, commit: str | None = None) -> str | None:
    """12 hex digits over ``study``'s experiment code in the working tree, or at ``commit`` of its git checkout
    (None: an unknown study, or a commit this checkout does not have)."""
    root = study_root(study)
    if root is None:
        return None
    if commit is None:
        _, files = study_files(study)
        return _digest((str(f.relative_to(root)), f.read_text()) for f in files)
    return _at_commit(root, commit.removesuffix("-dirty"))


def _git(root: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _at_commit(root: Path, commit: str) -> str | None:
    prefix = _git(root, "rev-parse", "--show-prefix")
    names = _git(root, "ls-tree", "-r", "--name-only", "--full-name", commit, "--", ".") if prefix is not None else None
    if not names:
        return None
    files = []
    for name in names.split():
        relative = Path(name).relative_to(prefix.strip()) if prefix.strip() else Path(name)
        if name.endswith(".py") and _measured(relative):
            source = _git(root, "show", f"{commit}:{name}")
            if source is None:
                return None
            files.append((str(relative), source))
    return _digest(files)


def stale(entry: dict[str, Any], now: str | None) -> bool:
    """Whether a record entry measured experiment code other than ``now`` (today's fingerprint of its study)."""
    return now is not None and entry.get("code") not in (None, now)
