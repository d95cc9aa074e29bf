"""The papers' equations in the code: one citation style, and a study's equation → code table built from it.

Docstrings and comments cite a paper one way (issue 30), so that ``grep "Eq. (12)"`` lands on the code:

* equations in parentheses: ``Eq. (12)``, ``Eq. (B.18)``, ``Eqs. (4)-(6)``, ``Eqs. (8), (36)-(42)``;
* appendices, sections and figures with a full stop: ``App. B.1``, ``Sec. 3.2``, ``Secs. 3-4``, ``Fig. 2a``,
  ``Figs. 1-3``.

:func:`normalise` rewrites a text into that style (``eq. 12``, ``Eqs. 17–18``, ``§3.2``, ``Figs 2, 5`` …);
a text already in it comes back unchanged, which is what the style test checks. :func:`docstring_spans` finds the
docstrings and comments of a source file, :func:`cited` the equations and appendices one docstring cites, and
:func:`equations` the whole table of a package: citation → the modules, classes and functions whose docstrings
cite it. The docs build (``docs/hooks.py``, marker ``<!-- attnlab:equations PACKAGE -->``) prints it on each
study page. Nothing is imported: the package's files are read as syntax trees.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

_NUM = r"(?:[A-H]\.)?\d+[a-z]?"
#: the head of an equation citation in any style: ``Eq.``, ``eqs``, ``Equation`` …, before its first number
_EQ_HEAD = re.compile(rf"\b(?:[Ee]qs?|[Ee]quations?)\b\.?[ \t]*(?=\(?{_NUM})")
_ITEM = re.compile(rf"\(({_NUM})\)|({_NUM})(?![\w.]?\d)")
_SEP = re.compile(r"[ \t]*([-–—/])[ \t]*|(,)[ \t]*|[ \t]+(and|or)[ \t]+")
_NOT_NEXT = re.compile(r"-[A-Za-z](?!\.\d)|\w")  # "Eq. 17, 2-D": the 2 is not a second equation
_FIG = re.compile(r"\b(?:[Ff]ig(?:ure)?)(s?)\b\.?[ \t]*(?=(?:[A-H]\.)?\d)")
_SEC = re.compile(r"§(§?)[ \t]*(?=\d)|\b(?:Section|Sec)(s?)\b\.?[ \t]*(?=\d)")
_SEC_RANGE = re.compile(r"\d+(?:\.\d+)*[ \t]*[-–][ \t]*\d")
_APP = re.compile(r"\b(?:Appendix|App)\b\.?[ \t]*(?=[A-H](?:\.\d|\b))")


def _separator(sep: re.Match) -> str:
    if sep.group(1):
        return "/" if sep.group(1) == "/" else "-"
    return ", " if sep.group(2) else f" {sep.group(3)} "


def _items(text: str, start: int) -> tuple[list[str], list[str], int]:
    """The numbers of the equation citation starting at ``start`` (after its head), the separators between them
    (``-``, ``/``, ``, ``, `` and ``, `` or ``) and where the citation ends."""
    items, seps, pos = [], [], start
    item = _ITEM.match(text, pos)
    while item is not None:
        items.append(item.group(1) or item.group(2))
        pos = item.end()
        sep = _SEP.match(text, pos)
        item = _ITEM.match(text, sep.end()) if sep else None
        if item is None or _NOT_NEXT.match(text, item.end()):
            break
        seps.append(_separator(sep))
    return items, seps, pos


def normalise(text: str) -> str:
    """``text`` with every citation of an equation, appendix, section or figure in the one style."""
    out, pos = [], 0
    for m in _EQ_HEAD.finditer(text):
        if m.start() < pos:
            continue
        items, seps, end = _items(text, m.end())
        if not items:
            continue
        body = "".join(f"({n})" + (seps[i] if i < len(seps) else "") for i, n in enumerate(items))
        out += [text[pos:m.start()], ("Eqs. " if len(items) > 1 else "Eq. ") + body]
        pos = end
    text = "".join(out) + text[pos:]
    text = _FIG.sub(lambda m: f"Fig{m.group(1)}. ", text)
    text = _SEC.sub(lambda m: "Secs. " if (m.group(1) or m.group(2) or _SEC_RANGE.match(text, m.end())) else "Sec. ",
                    text)
    return _APP.sub("App. ", text)


def docstring_spans(source: str) -> list[tuple[int, int, str]]:
    """``(start, end, kind)`` character offsets in ``source`` of its docstrings (``kind`` "doc": of the module, its
    classes and functions), comments ("comment") and the texts that cite the paper to a reader ("text": a config
    field's ``description=``, a claim's reference, the second argument of ``claim(...)`` or its ``ref=``); none of
    them is code a fingerprint counts (:mod:`attnlab.core.fingerprint`, ``Claim.fingerprint``)."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    tree = ast.parse(source)
    docs = {(d.lineno, d.end_lineno) for d in _docstrings(tree).values()}
    texts = _cited_texts(tree)
    spans = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT or (tok.type == tokenize.STRING and (tok.start[0], tok.end[0]) in docs):
            spans.append((starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1],
                          "comment" if tok.type == tokenize.COMMENT else "doc"))
        elif tok.type == tokenize.STRING and any(a <= (*tok.start,) and (*tok.end,) <= b for a, b in texts):
            spans.append((starts[tok.start[0] - 1] + tok.start[1], starts[tok.end[0] - 1] + tok.end[1], "text"))
    return spans


def _cited_texts(tree: ast.Module) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """``((line, col), (end line, end col))`` of each ``description=`` value and each claim's reference."""
    nodes = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        nodes += [k.value for k in node.keywords if k.arg == "description"]
        if getattr(node.func, "id", getattr(node.func, "attr", None)) == "claim":
            nodes += [k.value for k in node.keywords if k.arg == "ref"] + node.args[1:2]
    return [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in nodes]


def _docstrings(tree: ast.Module) -> dict[tuple[str, bool], ast.Constant]:
    """Docstring nodes by (qualified name, documented): ``""`` for the module; documented is False inside a
    function (a local helper the API reference does not show) or for a private name."""
    out: dict[tuple[str, bool], ast.Constant] = {}

    def visit(node: ast.AST, qualname: str, documented: bool) -> None:
        body = getattr(node, "body", [])
        if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            out[(qualname, documented)] = body[0].value
        for child in body:
            if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{qualname}.{child.name}" if qualname else child.name
                visit(child, name, documented and not child.name.startswith("_") and not isinstance(
                    node, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(tree, "", True)
    return out


_APP_CITE = re.compile(r"\bApp\. ([A-H](?:\.\d+)*)")


def cited(doc: str) -> list[str]:
    """The equations (``Eq. (12)``; a range as each equation in it) and appendices (``App. B.1``) a text cites, in
    the one style and in order of first citation."""
    text, out = normalise(doc), []
    for m in _EQ_HEAD.finditer(text):
        items, seps, _ = _items(text, m.end())
        numbers = items[:1]
        for i, sep in enumerate(seps):
            numbers += (_between(items[i], items[i + 1]) if sep == "-" else []) + [items[i + 1]]
        out += [f"Eq. ({n})" for n in numbers]
    out += [f"App. {m.group(1)}" for m in _APP_CITE.finditer(text)]
    return list(dict.fromkeys(out))


def _between(first: str, last: str) -> list[str]:
    """The equations strictly inside a range: ``(4)-(6)`` → 5, ``(B.20)-(B.22)`` → B.21; none for another form."""
    a, b = (re.fullmatch(r"((?:[A-H]\.)?)(\d+)", n) for n in (first, last))
    if a is None or b is None or a.group(1) != b.group(1) or not 0 < int(b.group(2)) - int(a.group(2)) <= 50:
        return []
    return [f"{a.group(1)}{k}" for k in range(int(a.group(2)) + 1, int(b.group(2)))]


@dataclass(frozen=True)
class Citer:
    """A module, class or function whose docstring cites a paper: ``module`` dotted, ``qualname`` "" for the
    module itself; ``documented`` when the API reference shows it (public, not local to a function)."""

    module: str
    qualname: str
    documented: bool

    @property
    def path(self) -> str:
        return f"{self.module}.{self.qualname}" if self.qualname else self.module


def equations(package: str) -> dict[str, list[Citer]]:
    """Citation (``Eq. (5)``, ``App. B.1``) → the modules, classes and functions of ``package`` (any installed
    package, read without importing it) whose docstrings cite it; equations in the paper's order, then appendices."""
    try:
        spec = importlib.util.find_spec(package)
    except ImportError:  # a parent package missing
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise LookupError(f"no package {package!r}")
    root = Path(next(iter(spec.submodule_search_locations)))
    table: dict[str, list[Citer]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        public = not any(p.startswith("_") for p in parts)
        for (qualname, documented), node in _docstrings(ast.parse(path.read_text())).items():
            for citation in cited(node.value):
                table.setdefault(citation, []).append(Citer(".".join(parts), qualname, documented and public))
    return {k: sorted(v, key=lambda c: _late(c.module, package)) for k, v in sorted(table.items(),
                                                                                 key=lambda kv: _order(kv[0]))}


#: rooms that serve an experiment rather than compute the paper's objects: listed after the others
LATE = ("configs", "experiments", "figures", "outputs", "claims", "costs", "memory", "views")


def _late(module: str, package: str) -> int:
    room = module.removeprefix(package).lstrip(".").split(".")[0]
    return LATE.index(room) + 1 if room in LATE else 0


def _order(citation: str) -> tuple:
    """Equations before appendices; main-text equations before appendix ones (``B.3``), by number."""
    m = re.fullmatch(r"Eq\. \(((?:[A-H]\.)?)(\d+)([a-z]?)\)", citation)
    if m:
        return (0, m.group(1), int(m.group(2)), m.group(3))
    return (1, citation, 0, "")


def rewrite(source: str) -> str:
    """``source`` with its docstrings and comments in the one style (:func:`normalise`) and its code untouched, so
    that the code fingerprint (:mod:`attnlab.core.fingerprint`) is the same. Not for a claim's measure function:
    its source, docstring included, is the claim's definition (``Claim.fingerprint``), which the style test
    leaves as it is."""
    out, pos = [], 0
    for start, end, _ in docstring_spans(source):
        out += [source[pos:start], normalise(source[start:end])]
        pos = end
    return "".join(out) + source[pos:]


if __name__ == "__main__":  # python -m attnlab.core.citations FILE.py ...: rewrite files in place
    import sys

    for name in sys.argv[1:]:
        file = Path(name)
        text = file.read_text()
        if (new := rewrite(text)) != text:
            file.write_text(new)
            print(f"{name}: rewritten")
