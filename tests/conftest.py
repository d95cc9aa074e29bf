"""Test set-up: one BLAS/torch thread (2-core machines), quiet progress, the two studies installed from outside.

Two studies are found through their entry points, as any third-party study: the template ``examples/my_study``
(study ``toy``: a seeded random walk and its sandbox view; the tests of the template as a template use it) and the
test suite's own ``tests/knobs_study`` (study ``knobs``: the same walk with the knobs the tests turn, ``sleep``,
``fail_at``, ``need_gib``, ``gpu``, and a gallery of sandbox panels; every other test uses it). ``make`` installs both
(``pip install --no-deps --no-build-isolation -e examples/my_study -e tests/knobs_study``). Where one is not
installed the tests still find it, through the deprecated variables, and ``tests/plugins/test_entry_points.py`` fails
saying how to install it.
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import entry_points
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["ATTNLAB_QUIET"] = "1"
ROOT = Path(__file__).resolve().parents[1]
# study name → (its directory, the module of its Study object, the module of its sandbox plug-in)
INSTALLED_FROM = {"toy": (ROOT / "examples" / "my_study", "my_study.study", "my_study.views.plugin"),
                  "knobs": (ROOT / "tests" / "knobs_study", "knobs_study.study", "knobs_study.views")}
_missing = [s for s in INSTALLED_FROM if s not in {ep.name for ep in entry_points(group="attnlab.studies")}]
if _missing:
    for var, sep, index in (("PYTHONPATH", os.pathsep, 0), ("ATTNLAB_PLUGINS", ",", 1),
                            ("ATTNLAB_SANDBOX_PLUGINS", ",", 2)):
        added = [str(INSTALLED_FROM[s][index]) for s in _missing]
        os.environ[var] = sep.join(filter(None, [*added, os.environ.get(var)]))
    sys.path[:0] = [str(INSTALLED_FROM[s][0]) for s in _missing]
    from attnlab.core import registry as _experiment

    _experiment._DEPRECATED_SAID.update({"ATTNLAB_PLUGINS", "ATTNLAB_SANDBOX_PLUGINS"})  # said once, here
    print(f"tests: {', '.join(str(INSTALLED_FROM[s][0].relative_to(ROOT)) for s in _missing)} not installed "
          f"(pip install --no-deps --no-build-isolation -e DIR): found through the deprecated ATTNLAB_PLUGINS / "
          "ATTNLAB_SANDBOX_PLUGINS", file=sys.stderr)

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """``@pytest.mark.cuda`` tests run only where torch sees a CUDA device; elsewhere they skip and say why."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason=f"needs a CUDA GPU; torch {torch.__version__} sees none on this machine")
    for item in items:
        if item.get_closest_marker("cuda") is not None:
            item.add_marker(skip)


@pytest.fixture
def store(tmp_path):
    from attnlab.core.runs import RunStore

    return RunStore(tmp_path / "store")


@pytest.fixture(scope="session")
def run_cases(tmp_path_factory):
    """``run_cases(study, cases)``: each experiment ``study.name`` of ``cases`` (name → overrides) once at quick
    scale through one fresh store; returns name → (config, run record)."""
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    def run(study: str, cases: dict) -> dict:
        store = RunStore(tmp_path_factory.mktemp("store"))
        out = {}
        for name, overrides in cases.items():
            exp = get(f"{study}.{name}")
            cfg = resolve(exp.config, "quick", overrides)
            out[name] = (cfg, store.run(exp, cfg))
        return out

    return run


@pytest.fixture(scope="session")
def model_vs_peak():
    """``model_vs_peak(key, overrides)``: (its memory model's bytes, the peak bytes a run adds, measured in a fresh
    process by core.memory.measured_peak) of experiment ``key`` at quick scale with ``overrides``."""
    from attnlab.core.config import resolve
    from attnlab.core.memory import measured_peak
    from attnlab.core.registry import get

    def measure(key: str, overrides: dict) -> tuple[int, int]:
        exp = get(key)
        cfg = resolve(exp.config, "quick", overrides)
        return exp.memory(cfg)[0], measured_peak(key, cfg)["peak"]

    return measure


@pytest.fixture
def killed_and_resumed(tmp_path, monkeypatch):
    """``run(exp, config, when)`` → (the uninterrupted result, the checkpoint state the kill happened at, the
    resumed run's record and result): the run is stopped as Ctrl-C stops it at the first checkpoint written (every
    offer is written) whose state satisfies ``when(state)``, then run again from its checkpoint."""
    from attnlab.core.runs import RunContext, RunStore, load_result

    def run(exp, config, when):
        clean = load_result(RunStore(tmp_path / "clean").run(exp, config).run_dir)[1]
        original, killed_at = RunContext.checkpoint, []

        def checkpoint(self, state, force=False):
            wrote = original(self, state, force)
            if wrote and not killed_at and when(state()):
                killed_at.append(state())
                raise KeyboardInterrupt
            return wrote

        store = RunStore(tmp_path / "killed", checkpoint_every=0)
        monkeypatch.setattr(RunContext, "checkpoint", checkpoint)
        with pytest.raises(KeyboardInterrupt):
            store.run(exp, config)
        assert store.status(config.hash(exp.key))["status"] == "interrupted"
        monkeypatch.setattr(RunContext, "checkpoint", original)
        record = store.run(exp, config)
        assert "resumed from checkpoint" in (record.run_dir / "log.txt").read_text()
        resumed = load_result(record.run_dir)[1]
        assert clean.arrays.keys() == resumed.arrays.keys()
        return clean, killed_at[0], resumed

    return run


# -- the browser (Debian's Chromium driven by Playwright: the sandbox's page, attnlab map's page) --------------------
CHROMIUM = os.environ.get("ATTNLAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def skip_or_fail(reason: str) -> None:
    """Skip a browser test where there is no browser; on CI (``$CI``), fail: CI must run them."""
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def playwright():
    """Playwright, driving Debian's Chromium (its own browser download does not work here)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("the browser tests need playwright (pinned in requirements.lock; pip install playwright)")
    if not Path(CHROMIUM).exists():
        skip_or_fail(f"the browser tests need Debian's Chromium at {CHROMIUM}: `apt-get install chromium` "
                     "(`make test` installs it when run as root)")
    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def chromium_options() -> dict:
    """How every browser test launches Chromium (``playwright.chromium.launch(**chromium_options)``)."""
    return {"executable_path": CHROMIUM, "headless": True, "args": CHROMIUM_ARGS}

