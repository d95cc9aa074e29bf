"""MkDocs build hook: the tables and lists of the docs that must follow the code, generated at every build.

A page puts a marker on a line of its own and the build replaces it:

* ``<!-- attnlab:experiments STUDY -->``: the study's registered experiments (name, title, paper reference, what the
  quick and paper scales set), from :func:`attnlab.core.registry.experiments`;
* ``<!-- attnlab:claims STUDY -->``: the study's registered claims (id, paper reference, statement) joined with the
  committed record ``results/claims/<scale>/<study>[-cuda].json``: the last quick and paper verdict, measured value
  and detail of each (:mod:`attnlab.core.record`);
* ``<!-- attnlab:unfalsified STUDY -->``: the asserted claims (``all``: of every study) with no world where they
  must fail, each with the sentence that says why;
* ``<!-- attnlab:equations PACKAGE -->``: the paper's equations and appendices that the package's docstrings cite
  (``Eq. (5)``, ``Eqs. (36)-(42)``, ``App. B.1``), each with the functions, classes and modules citing it, linked to
  the API reference (:func:`attnlab.core.citations.equations`);
* ``<!-- attnlab:reference PACKAGE -->``: one mkdocstrings block (``::: module``) per public module found under the
  package's folder, so the API reference follows files that move.

Maths (``$…$``, ``$$…$$`` through ``pymdownx.arithmatex``) is typeset in the browser by MathJax 3, which the
build copies into the site (``assets/mathjax/``) from the pinned ``django-static-mathjax`` package: the site needs
no network, and neither does its build.

An unknown study or package, or a marker left in a page, is a build warning, which ``mkdocs build --strict`` turns
into a failure.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import re
import shutil
from pathlib import Path
from typing import Any

log = logging.getLogger("mkdocs.plugins.attnlab")
ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
RECORD = ROOT / "results" / "claims"
MARKER = re.compile(r"^<!--\s*attnlab:(\w+)\s+([\w.]+)\s*-->\s*$", re.MULTILINE)
FENCE = re.compile(r"(^(?:```|~~~).*?^(?:```|~~~)[ \t]*$)", re.MULTILINE | re.DOTALL)
SCALES = ("quick", "paper")
ROLE = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc|const):(?=<code>)")


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    def expand(match: re.Match) -> str:
        kind, arg = match.groups()
        maker = {"experiments": experiments_table, "claims": claims_table, "reference": reference,
                 "unfalsified": unfalsified_table, "equations": equations_table}.get(kind)
        if maker is None:
            log.warning("%s: unknown marker attnlab:%s (known: experiments, claims, unfalsified, equations, "
                        "reference)", page.file.src_path, kind)
            return match.group(0)
        try:
            return maker(arg)
        except LookupError as exc:
            log.warning("%s: %s", page.file.src_path, exc.args[0])
            return match.group(0)

    # markers inside fenced code blocks (a page showing the markers themselves) stay as they are
    parts = FENCE.split(markdown)
    return "".join(part if i % 2 else MARKER.sub(expand, part) for i, part in enumerate(parts))


MATHJAX = "assets/mathjax"
# the one bundle the pages load and what it loads on demand (input extensions, fonts, menu, accessibility), without
# the other bundles of the package
MATHJAX_SKIP = ("tex-svg*", "tex-mml-*", "tex-chtml-full*", "mml-*", "node-main.js", "svg", "svg.js", "mml", "mml.js")


def mathjax_source() -> Path:
    """The folder of MathJax's browser build (``es5``) in the installed ``django-static-mathjax`` package."""
    spec = importlib.util.find_spec("mathjax")
    folder = Path(spec.origin).parent / "static" / "mathjax" / "es5" if spec and spec.origin else None
    if folder is None or not (folder / "tex-chtml.js").exists():
        raise LookupError("MathJax is missing: the docs need the package django-static-mathjax (requirements.lock, "
                          "pip install -e '.[docs]')")
    return folder


def on_post_build(config: Any, **_: Any) -> None:
    """Copy MathJax into the built site, where ``extra_javascript`` (mkdocs.yml) loads it."""
    try:
        source = mathjax_source()
    except LookupError as exc:
        log.warning("%s", exc.args[0])
        return
    target = Path(config["site_dir"]) / MATHJAX
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns(*MATHJAX_SKIP))


def on_page_content(html: str, **_: Any) -> str:
    """Docstrings written for Sphinx cite code as ``:func:`name```: keep the code, drop the role's name."""
    return ROLE.sub("", html)


# -- the registry ---------------------------------------------------------------------------------------------------
@functools.cache
def _registry() -> tuple[dict[str, list], dict[str, list]]:
    """Experiments and claims of every study, by study (imports the studies once per build)."""
    from attnlab.core.claims import claims
    from attnlab.core.registry import experiments

    by_study: dict[str, list] = {}
    for exp in experiments():
        by_study.setdefault(exp.study, []).append(exp)
    claims_by: dict[str, list] = {}
    for c in claims():
        claims_by.setdefault(c.study, []).append(c)
    return by_study, claims_by


def _study(study: str, table: dict[str, list]) -> list:
    if study not in table:
        raise LookupError(f"no registered study {study!r}; known: {', '.join(sorted(table))}")
    return table[study]


def _cell(text: Any) -> str:
    """Text as one Markdown table cell: one line, pipes and brackets escaped (a detail's "[block 0 …] [block 1 …]"
    would otherwise read as reference links)."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


SCRIPT = re.compile(r"([\^_])\{([^{}]*)\}")


def _prose(text: Any) -> str:
    """A table cell for a claim's statement: its plain-text maths (``σ^{2(L+1)}``, ``Σ_{ℓ≠ε}``) with the braced
    scripts as HTML super- and subscripts, which the reader sees typeset rather than as TeX."""
    def script(m: re.Match) -> str:
        tag = "sup" if m.group(1) == "^" else "sub"
        return f"<{tag}>{m.group(2)}</{tag}>"

    return SCRIPT.sub(script, _cell(text))


def _overrides(values: dict[str, Any]) -> str:
    return ", ".join(f"`{k}={_value(v)}`" for k, v in values.items())


def _value(v: Any) -> str:
    if isinstance(v, tuple | list):
        return "[" + ",".join(_value(x) for x in v) + "]"
    return f"{v:g}" if isinstance(v, float) else str(v)


def experiments_table(study: str) -> str:
    rows = [
        "| experiment | what it runs | paper | quick scale sets | paper scale sets |",
        "|---|---|---|---|---|",
    ]
    for exp in _study(study, _registry()[0]):
        scales = exp.config.scales
        quick = _overrides(scales.get("quick", {})) or "the paper's values"
        paper = _overrides(scales.get("paper", {})) or "the paper's values"
        star = " ★" if exp.headline else ""
        rows.append(f"| `{exp.key}`{star} | {_cell(exp.title)} | {_cell(exp.ref)} | {_cell(quick)} | {_cell(paper)} |")
    note = ("\n\nGenerated from the registry at build time. ★: a headline experiment (`attnlab reproduce` runs it). "
            f"Run one with `attnlab run {study}.NAME [--scale paper] [--set KEY=VALUE]`; "
            f"`attnlab list {study} --params` lists every parameter with its paper default.\n")
    return "\n".join(rows) + note


# -- the committed record -------------------------------------------------------------------------------------------
def _record(study: str, scale: str) -> tuple[dict[str, dict], list[str]]:
    """Entries of the study's committed records at ``scale`` (CPU and GPU; the newer entry of a claim wins) and a
    line per record file read."""
    entries: dict[str, dict] = {}
    seen = []
    for path in sorted((RECORD / scale).glob(f"{study}.json")) + sorted((RECORD / scale).glob(f"{study}-cuda.json")):
        doc = json.loads(path.read_text())
        seen.append(f"`{path.relative_to(ROOT)}` ({doc.get('device', 'cpu')}, {doc.get('date', '?')[:10]}, "
                    f"commit {str(doc.get('commit', '?'))[:8]}: {_counts(doc.get('counts', {}))})")
        for e in doc.get("claims", []):
            old = entries.get(e["claim"])
            if old is None or str(e.get("date", "")) >= str(old.get("date", "")):
                entries[e["claim"]] = {**e, "device": doc.get("device", "cpu")}
    return entries, seen


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "empty"


def _verdict(entry: dict | None, measured_here: bool) -> str:
    if not measured_here:
        return "not at this scale"
    if entry is None:
        return "not measured yet"
    value = entry.get("measured")
    shown = f" {value:.4g}" if isinstance(value, int | float) else ""
    gpu = " (GPU)" if str(entry.get("device", "cpu")).startswith("cuda") else ""
    detail = f": {entry['detail']}" if entry.get("detail") else ""
    return f"**{entry['verdict']}**{gpu}{shown} (expected {entry.get('expected', '?')}){detail}"


def claims_table(study: str) -> str:
    registered = _study(study, _registry()[1])
    records = {scale: _record(study, scale) for scale in SCALES}
    rows = ["| claim | paper | statement | last quick verdict | last paper verdict |", "|---|---|---|---|---|"]
    for c in registered:
        cells = [_verdict(records[s][0].get(c.id), s in c.scales) for s in SCALES]
        rows.append(f"| `{c.id}` | {_cell(c.ref)} | {_prose(c.statement)} | {_cell(cells[0])} | {_cell(cells[1])} |")
    read = [line for s in SCALES for line in records[s][1]]
    source = (("the verdicts from " + "; ".join(read)) if read
              else "no committed record of this study yet (`make check` writes one)")
    head = (f"{len(registered)} claims registered; {source}. Generated at build time from the registry and "
            f"`results/claims/` ([how the record is kept](../claims.md)); `attnlab check {study}` measures them "
            "again.\n\n")
    return head + "\n".join(rows) + "\n"


def unfalsified_table(study: str) -> str:
    """The asserted claims of ``study`` (``all``: every study) with no world where they fail, and why."""
    from attnlab.core.worlds import asserted, unfalsified

    todo = unfalsified(None if study == "all" else study)
    n = len(asserted(None if study == "all" else study))
    rows = ["| claim | paper | why no world where it fails is built |", "|---|---|---|"]
    rows += [f"| `{c.id}` | {_cell(c.ref)} | {_prose(c.falsify or 'not written yet')} |" for c in todo]
    return (f"{n - len(todo)} of {n} asserted claims are measured in a world where they must fail (the tests "
            f"expect `fail` there); the other {len(todo)}:\n\n" + "\n".join(rows) + "\n")


# -- the paper's equations in the code ------------------------------------------------------------------------------
def _citer(citer: Any, package: str, shown: set[str]) -> str:
    """A module, class or function citing the paper, as a cross-reference into the API reference where that shows
    it (mkdocs-autorefs resolves ``[text][identifier]``), else as code."""
    name = f"`{citer.path.removeprefix(package + '.')}`"
    return f"[{name}][{citer.path}]" if citer.documented and citer.module in shown else name


def equations_table(package: str) -> str:
    """The paper's equations and appendices cited in ``package``'s docstrings → the code citing them."""
    from attnlab.core.citations import equations

    table = equations(package)
    shown = set(_modules(package))
    rows = ["| paper | functions and classes | modules |", "|---|---|---|"]
    for citation, citers in table.items():
        code = ", ".join(_citer(c, package, shown) for c in citers if c.qualname) or "—"
        modules = ", ".join(_citer(c, package, shown) for c in citers if not c.qualname) or "—"
        rows.append(f"| {citation} | {code} | {modules} |")
    head = (f"{len(table)} equations and appendices of the paper cited by `{package}`, generated at build time "
            "from the docstrings (`attnlab.core.citations`): `grep -rn \"Eq. (5)\"` finds the same places. A "
            "private helper is shown without a link ([how a study gets this table](../adding-a-study.md)).\n\n")
    return head + "\n".join(rows) + "\n"


# -- the API reference ----------------------------------------------------------------------------------------------
def _modules(package: str) -> list[str]:
    """Public modules under ``package``'s folder (depth first, in name order): no ``_private`` ones, no tests."""
    folder = SRC.joinpath(*package.split("."))
    if not (folder / "__init__.py").exists():
        raise LookupError(f"no package {package!r} under src/")
    out = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts) or any(p in ("static", "tests") for p in parts):
            continue
        if path.name == "__init__.py" and not _has_docstring(path):
            continue
        out.append(".".join(parts))
    return out


def _has_docstring(path: Path) -> bool:
    import ast

    return ast.get_docstring(ast.parse(path.read_text())) is not None


def reference(package: str) -> str:
    blocks = [f"::: {module}\n    options:\n      members_order: source\n" for module in _modules(package)]
    return "\n".join(blocks)
