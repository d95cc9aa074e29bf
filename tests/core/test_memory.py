"""The memory policy: free memory per device, budgets, chunk sizes, and "would not fit" before a run starts."""

import json
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core import memory
from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get

runner = CliRunner()
CPU = torch.device("cpu")


def test_cpu_free_bytes_is_the_kernels_available_memory():
    free = memory.free_bytes(CPU)
    meminfo = {ln.split(":")[0]: int(ln.split()[1]) * 1024 for ln in Path("/proc/meminfo").read_text().splitlines()}
    assert 0 < free <= meminfo["MemTotal"]
    assert abs(free - min(meminfo["MemAvailable"], memory._cgroup_room() or free)) < 2**30  # moves a little


def test_budget_and_chunk_size_follow_free_memory(monkeypatch):
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", "1000")
    assert memory.free_bytes("cpu") == 1000
    assert memory.budget(CPU) == 500 and memory.budget(CPU, 0.1) == 100
    assert memory.chunk_size(10_000, 10, CPU) == 50
    assert memory.chunk_size(20, 10, CPU) == 20  # never more than there are items
    assert memory.chunk_size(10_000, 10, CPU, fraction=1.0) == 100
    assert memory.chunk_size(10_000, 10_000, CPU, at_least=3) == 3  # the floor wins over the budget
    with pytest.raises(ConfigError, match="fraction"):
        memory.budget(CPU, 0.0)


def test_require_raises_one_line_naming_need_free_device_and_remedy(monkeypatch):
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(2 * 2**30))
    memory.require(2**30, CPU, "a batch")
    with pytest.raises(memory.WouldNotFit) as err:
        memory.require(3 * 2**30, CPU, "fig1's SGD batch", reduce="lower N_b")
    msg = str(err.value)
    assert isinstance(err.value, ConfigError) and "\n" not in msg
    assert msg == "fig1's SGD batch needs 3 GiB but the CPU has 2 GiB free; lower N_b"


@pytest.mark.parametrize("version", [1, 2])
def test_cgroup_limit_caps_the_cpus_room(tmp_path, version):
    if version == 2:
        files = {"memory.max": "1000000", "memory.current": "300000", "memory.stat": "anon 1\ninactive_file 50000\n"}
    else:
        (tmp_path / "memory").mkdir()
        files = {"memory/memory.limit_in_bytes": "1000000", "memory/memory.usage_in_bytes": "300000",
                 "memory/memory.stat": "cache 9\ntotal_inactive_file 50000\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    assert memory._cgroup_room(tmp_path) == 1_000_000 - 300_000 + 50_000
    (tmp_path / next(iter(files))).write_text("max\n" if version == 2 else str(2**63 - 4096))
    assert memory._cgroup_room(tmp_path) is None
    assert memory._cgroup_room(tmp_path / "absent") is None


def test_run_that_would_not_fit_exits_2_and_writes_nothing(tmp_path):
    store = tmp_path / "s"
    res = runner.invoke(app, ["run", "knobs.walk", "--set", "need_gib=1e6", "--store", str(store)])
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("error: knobs.walk (cpu) needs 1e+06 GiB but the CPU has")
    assert line.endswith("free; lower need_gib")
    assert not store.exists()


def test_memory_model_is_checked_before_running_not_when_reusing(tmp_path, monkeypatch, store):
    exp = get("knobs.walk")
    cfg = resolve(exp.config, "quick", {"need_gib": 1.0, "steps": 2})
    first = store.run(exp, cfg)
    monkeypatch.setenv("ATTNLAB_FREE_BYTES", str(2**20))  # now 1 MiB "free": the finished run is still reused
    assert store.run(exp, cfg).reused
    with pytest.raises(memory.WouldNotFit):
        store.run(exp, cfg, force=True)
    assert json.loads((first.run_dir / "summary.json").read_text())  # nothing was cleared


@pytest.mark.cuda
def test_cuda_free_bytes_is_mem_get_info_plus_the_allocator_cache(monkeypatch):
    """Free = the driver's free memory + what torch's cache holds unused (earlier tests leave cached blocks: a
    new tensor may come from them, unseen by the driver, and must still count as used)."""
    monkeypatch.delenv("ATTNLAB_FREE_BYTES", raising=False)
    dev = torch.device("cuda")
    free, total = torch.cuda.mem_get_info(dev)
    cached = torch.cuda.memory_reserved(dev) - torch.cuda.memory_allocated(dev)
    before = memory.free_bytes(dev)
    assert abs(before - free - cached) < 64 * 2**20 and before <= total
    block = torch.empty(2**28, dtype=torch.uint8, device=dev)  # 256 MiB less free, from the cache or the driver
    assert memory.free_bytes(dev) <= before - 200 * 2**20
    del block
    assert memory.chunk_size(10**12, 1, dev) <= total // 2
    with pytest.raises(memory.WouldNotFit, match="cuda:0"):
        memory.require(2 * total, dev, "twice the GPU")
