"""What ``attnlab list`` shows, without importing the studies: their experiments (reference, title, scales, every
parameter) and claims as plain data, cached on disk under a key made of the sources' sizes and times.

Importing the five studies imports torch and takes seconds; their catalogue does not change until their code does.
The first ``attnlab list`` after a change builds it (importing everything, as before) and writes
``$XDG_CACHE_HOME/attnlab/catalog-<key>.json`` (else ``~/.cache``); the next ones read it in milliseconds. The key
covers every ``.py`` file of attnlab and of each installed study plugin (entry point group ``attnlab.studies``),
so an edit, an upgrade or a new plugin builds a new catalogue; an unwritable cache only costs the speed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

GROUP = "attnlab.studies"
VERSION = 1  # of the catalogue's format


def _roots() -> list[Path]:
    """attnlab's package folder and each study plugin's, found without importing them."""
    roots = [Path(__file__).resolve().parents[1]]
    for ep in entry_points(group=GROUP):
        top = ep.module.split(".")[0]
        if top == "attnlab":
            continue
        spec = importlib.util.find_spec(top)
        if spec is not None and spec.origin:
            roots.append(Path(spec.origin).resolve().parent)
    return roots


def key() -> str:
    """16 hex digits over the format version, Python's version, the plugins and every source file's size and time."""
    h = hashlib.sha256(f"{VERSION} {sys.version} {sorted((e.name, e.module) for e in entry_points(group=GROUP))}"
                       .encode())
    for root in _roots():
        for f in sorted(root.rglob("*.py")):
            st = f.stat()
            h.update(f"{f} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnlab"


def build() -> dict[str, Any]:
    """The catalogue from the live registry (imports every study)."""
    from attnlab.core.claims import claims
    from attnlab.core.config import SCALES
    from attnlab.core.registry import experiments, known_studies

    exps = [{"experiment": e.key, "study": e.study, "ref": e.ref, "title": e.title, "headline": e.headline,
             "doc": " ".join((e.config.__doc__ or "").split()),
             "scales": {s: e.config.scales.get(s, {}) for s in SCALES}, "parameters": e.config.parameters()}
            for e in experiments()]
    rows = [{"claim": c.id, "study": c.study, "ref": c.ref, "scales": list(c.scales), "relation": c.relation,
             "statement": c.statement} for c in claims()]
    return json.loads(json.dumps({"studies": list(known_studies()), "experiments": exps, "claims": rows},
                                 default=str))


def load() -> dict[str, Any]:
    """The catalogue: from the cache when the sources are those it was built from, else built and cached. A process
    that has imported the registry already (a notebook, a test that registers an experiment) reads it live."""
    if "attnlab.core.registry" in sys.modules:
        return build()
    path = cache_dir() / f"catalog-{key()}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        pass
    cat = build()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for old in path.parent.glob("catalog-*.json"):  # one catalogue kept: the sources' current one
            old.unlink(missing_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(cat))
        tmp.replace(path)
    except OSError:
        pass
    return cat
