"""``--device cpu|cuda|cuda:N``: validated before any work, threaded through every command, recorded per run."""

import json
import sys

import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core import device as dev
from attnlab.core.claims import ClaimContext
from attnlab.core.config import Config, ConfigError, resolve
from attnlab.core.runs import RunStore

runner = CliRunner()
NO_CUDA = not torch.cuda.is_available()


def test_config_device_accepts_cuda_n_and_rejects_anything_else():
    assert resolve(Config, "quick", {}, device="cuda:3").device == "cuda:3"
    for bad in ("gpu", "cuda:", "cuda:-1", "CPU", "cuda:0:1"):
        with pytest.raises(ConfigError, match=r"key 'device' = .*allowed: cpu, cuda, cuda:N"):
            resolve(Config, "quick", {}, device=bad)


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_resolve_device_without_cuda_is_one_line():
    assert dev.resolve_device("cpu") == torch.device("cpu")
    with pytest.raises(ConfigError, match=r"CUDA is not available on this machine .*use --device cpu"):
        dev.resolve_device("cuda:0")


def test_resolve_device_index_out_of_range(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert dev.resolve_device("cuda:1") == torch.device("cuda:1")
    with pytest.raises(ConfigError, match=r"'cuda:2': this machine has 2 CUDA device\(s\): cuda:0, cuda:1"):
        dev.resolve_device("cuda:2")


def test_cpu_details_and_run_config_json(store):
    d = dev.details(torch.device("cpu"))
    assert d["type"] == "cpu" and d["threads"] == torch.get_num_threads() and d["torch"] == torch.__version__
    assert d["cpu"] and d["cpu"] != "unknown"
    from attnlab.core.registry import get

    exp = get("knobs.walk")
    rec = store.run(exp, resolve(exp.config, "quick", {"steps": 2}))
    meta = json.loads((rec.run_dir / "config.json").read_text())
    assert meta["device_details"] == {**d, "cores": meta["device_details"]["cores"]}


def test_driver_version_falls_back_to_unknown(monkeypatch):
    dev.driver_version.cache_clear()
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    try:
        assert dev.driver_version() == "unknown"
    finally:
        dev.driver_version.cache_clear()


def test_cuda_details_read_properties(monkeypatch):
    """The CUDA branch of details() with torch's CUDA calls stubbed: the fields a GPU run records."""

    class Props:
        name, total_memory, major, minor, multi_processor_count = "NVIDIA H100 80GB HBM3", 85 * 2**30, 9, 0, 132

    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: Props())
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    monkeypatch.setattr(dev, "driver_version", lambda: "580.65")
    d = dev.details(torch.device("cuda:0"))
    assert d["name"] == "NVIDIA H100 80GB HBM3" and d["compute_capability"] == "9.0" and d["driver"] == "580.65"
    assert d["total_memory_gib"] == 85.0 and d["cudnn"] == 91002 and d["cuda"] == torch.version.cuda


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
@pytest.mark.parametrize("args", [
    ["run", "knobs.walk"], ["sweep", "knobs.walk", "--grid", "steps=2,3"], ["check", "knobs"], ["reproduce", "knobs"],
    ["bench", "specialization"],
])
@pytest.mark.parametrize("name", ["cuda", "cuda:1", "tpu"])
def test_every_command_refuses_a_device_it_cannot_use(tmp_path, args, name):
    store = tmp_path / "s"
    res = runner.invoke(app, [*args, "--device", name, *([] if args[0] == "bench" else ["--store", str(store)])])
    assert res.exit_code == 2, res.output
    line = res.stderr.strip()
    assert "\n" not in line and line.startswith("error: key 'device' = ")
    assert ("allowed: cpu, cuda, cuda:N" if name == "tpu" else "CUDA is not available") in line
    assert not store.exists()


@pytest.mark.skipif(not NO_CUDA, reason="this machine has CUDA")
def test_claims_run_their_experiments_on_the_claim_contexts_device(tmp_path):
    ctx = ClaimContext("quick", RunStore(tmp_path), device="cuda")
    with pytest.raises(ConfigError, match="CUDA is not available"):
        ctx.run("knobs.walk", steps=2)
    cpu = ClaimContext("quick", RunStore(tmp_path), device="cpu")
    assert cpu.run("knobs.walk", steps=2).summary and cpu.records[0].status == "done"


def test_check_on_cpu_records_the_device(tmp_path):
    res = runner.invoke(app, ["check", "knobs", "--device", "cpu", "--store", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    metas = [json.loads(p.read_text()) for p in tmp_path.glob("runs/knobs.walk/*/config.json")]
    assert len(metas) == 4 and all(m["config"]["device"] == "cpu" and m["device_details"]["type"] == "cpu"
                                   for m in metas)


@pytest.mark.parametrize("name", ["cuda:x", "tpu", "cuda"])
def test_one_parser_one_message_at_config_cli_and_bench(monkeypatch, tmp_path, name):
    """A bad name is refused in the same words by the config, the parser, the command line and a benchmark's
    device(); ``cuda`` without CUDA is a good spelling (the config keeps it) that the parser refuses."""
    from attnlab.core import bench

    if name == "cuda" and not NO_CUDA:
        pytest.skip("this machine has CUDA")
    with pytest.raises(ConfigError) as parsed:
        dev.parse(name)
    want = str(parsed.value)
    assert want.startswith(f"key 'device' = {name!r}: ") and "\n" not in want
    if name == "cuda":
        assert resolve(Config, "quick", {}, device=name).device == "cuda" and "use --device cpu" in want
    else:
        with pytest.raises(ConfigError) as configured:
            resolve(Config, "quick", {}, device=name)
        assert str(configured.value) == want == f"key 'device' = {name!r}: allowed: cpu, cuda, cuda:N"
    monkeypatch.setenv("ATTNLAB_BENCH_DEVICE", name)
    with pytest.raises(ConfigError) as benched:
        bench.device()
    assert str(benched.value) == want
    res = runner.invoke(app, ["run", "toy.walk", "--device", name, "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and res.stderr.strip() == f"error: {want}"


def test_kind_index_and_label_read_names_devices_and_recorded_descriptions():
    assert [dev.kind(x) for x in (None, "cpu", "cuda", "cuda:3", torch.device("cpu"), "cuda (NVIDIA H200)",
                                  "cpu (1 threads)")] == ["cpu", "cpu", "cuda", "cuda", "cpu", "cuda", "cpu"]
    assert [dev.index(x) for x in ("cpu", "cuda", "cuda:0", "cuda:12")] == [None, None, 0, 12]
    with pytest.raises(ConfigError, match="allowed: cpu, cuda, cuda:N"):
        dev.index("gpu:1")
    assert dev.label("cpu") == "the CPU" and dev.label(torch.device("cuda:2")) == "cuda:2"
    assert dev.resolve_device is dev.parse  # the former name still works
    long = "cuda:" + "9" * 200 + "x"
    with pytest.raises(ConfigError) as exc:
        dev.check_name(long)
    assert len(str(exc.value)) < 140 and str(exc.value).endswith("…: allowed: cpu, cuda, cuda:N")


def test_the_config_checks_the_spelling_without_importing_torch():
    import subprocess

    code = "import sys, attnlab.core.config, attnlab.core.device; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
