"""Test set-up: one BLAS/torch thread (2-core machines), quiet progress, the toy plug-in study."""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ["ATTNLAB_QUIET"] = "1"
PLUGINS = Path(__file__).parent / "plugins"
sys.path.insert(0, str(PLUGINS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))
os.environ["ATTNLAB_PLUGINS"] = "attnlab_toy"

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
    from attnlab.core.experiment import get
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
    from attnlab.core.experiment import get
    from attnlab.core.memory import measured_peak

    def measure(key: str, overrides: dict) -> tuple[int, int]:
        exp = get(key)
        cfg = resolve(exp.config, "quick", overrides)
        return exp.memory(cfg)[0], measured_peak(key, cfg)["peak"]

    return measure
