"""On a CUDA GPU: every command with ``--device cuda``, every study's smallest experiment on CUDA against the CPU,
the memory policy on the GPU. Skipped, with the reason, where torch sees no GPU (tests/conftest.py).

CUDA draws other random numbers than the CPU from the same seed, so a stochastic observable is compared within
its statistical tolerance (stated per observable); a deterministic one (theory, exact constructions) to float64
round-off amplified by the solvers.
"""

import json
import math
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore

pytestmark = pytest.mark.cuda
runner = CliRunner()


def _ok(args):
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    return res


def test_run_on_cuda_records_the_gpu(tmp_path):
    doc = json.loads(_ok(["run", "knobs.walk", "--device", "cuda", "--set", "steps=5", "--store", str(tmp_path),
                          "--json"]).stdout)
    meta = json.loads((Path(doc["run_dir"]) / "config.json").read_text())
    d = meta["device_details"]
    assert meta["config"]["device"] == "cuda" and d["type"] == "cuda"
    assert d["name"] == torch.cuda.get_device_name(0) and d["cuda"] == torch.version.cuda
    assert d["total_memory_bytes"] == torch.cuda.get_device_properties(0).total_memory
    major, minor = torch.cuda.get_device_capability(0)
    assert d["compute_capability"] == f"{major}.{minor}" and d["driver"] and d["torch"] == torch.__version__
    cpu = json.loads(_ok(["run", "knobs.walk", "--device", "cpu", "--set", "steps=5", "--store", str(tmp_path),
                          "--json"]).stdout)
    assert doc["config_hash"] != cpu["config_hash"]  # a GPU run is its own run


def test_cuda_index_out_of_range_is_one_line(tmp_path):
    n = torch.cuda.device_count()
    res = runner.invoke(app, ["run", "knobs.walk", "--device", f"cuda:{n}", "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and f"this machine has {n} CUDA device(s)" in res.stderr
    assert not (tmp_path / "s").exists()
    _ok(["run", "knobs.walk", "--device", f"cuda:{n - 1}", "--set", "steps=2", "--store", str(tmp_path / "s")])


def test_sweep_on_cuda_local_and_dask(tmp_path):
    for executor in ("local", "dask"):
        if executor == "dask":
            pytest.importorskip("distributed")
        res = _ok(["sweep", "knobs.walk", "--grid", "steps=2,3", "--device", "cuda", "--executor", executor,
                   "--store", str(tmp_path / executor), "--json"])
        assert json.loads(res.stdout)["failed"] == 0
        metas = [json.loads(p.read_text()) for p in (tmp_path / executor).glob("runs/knobs.walk/*/config.json")]
        assert len(metas) == 2 and all(m["device_details"]["type"] == "cuda" for m in metas)


def test_check_and_reproduce_on_cuda(tmp_path):
    _ok(["check", "knobs", "--device", "cuda", "--store", str(tmp_path / "s"), "--record", str(tmp_path / "claims")])
    rec = json.loads((tmp_path / "claims" / "quick" / "knobs-cuda.json").read_text())
    assert rec["device"] == "cuda" and rec["hardware"]["gpu"]["name"] == torch.cuda.get_device_name(0)
    assert rec["counts"]["pass"] >= 1
    metas = [json.loads(p.read_text()) for p in (tmp_path / "s").glob("runs/knobs.walk/*/config.json")]
    assert metas and all(m["config"]["device"] == "cuda" for m in metas)
    _ok(["reproduce", "knobs", "--device", "cuda", "--store", str(tmp_path / "r"), "--html", str(tmp_path / "r.html")])
    assert all(json.loads(p.read_text())["config"]["device"] == "cuda"
               for p in (tmp_path / "r").glob("runs/knobs.walk/*/config.json"))


def test_bench_on_cuda_writes_the_gpu_record(tmp_path, monkeypatch):
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "knobs.py").write_text(
        "import torch\nfrom attnlab.core import bench\nDEV = bench.device()\n"
        "def step():\n    t, _ = bench.timed(lambda: torch.randn(2**20, device=DEV), repeat=5)\n"
        "    return {'workload': 'randn 2^20 floats', 'seconds': t, 'device': str(DEV)}\n"
        "bench.main('knobs', {'step': step})\n")
    monkeypatch.chdir(tmp_path)
    _ok(["bench", "knobs", "--device", "cuda", "--record", "--out", str(tmp_path / "scratch")])
    (path,) = (tmp_path / "results" / "benchmarks").glob("knobs-*.json")
    doc = json.loads(path.read_text())
    assert doc["device"] == "cuda" and doc["note"] == "" and doc["cuda"] == torch.version.cuda
    assert path.name != "knobs-cpu.json" and doc["rows"][0]["device"].startswith("cuda")


def test_run_that_would_not_fit_the_gpu_exits_2(tmp_path, monkeypatch):
    monkeypatch.delenv("ATTNLAB_FREE_BYTES", raising=False)
    total = torch.cuda.get_device_properties(0).total_memory
    res = runner.invoke(app, ["run", "knobs.walk", "--device", "cuda", "--set", f"need_gib={2 * total / 2**30:.1f}",
                              "--store", str(tmp_path / "s")])
    assert res.exit_code == 2 and "but cuda:0 has" in res.stderr and not (tmp_path / "s").exists()


# -- every study's smallest experiment, CUDA against CPU ------------------------------------------------------

EXACT = 1e-6  # deterministic: float64 round-off through the solvers
SMALL = {
    "specialization.fig1": ({"n_mc": 4000, "D": 48, "tau_max": 1.0, "record_every": 0.5},
                            {"loss_final_theory_softmax": 0.05, "bayes_risk": 0.05, "loss_final_sim_softmax": 0.15}),
    "signal.fig1c": ({"n_beta": 20, "n_alpha": 20, "L": 6, "Ls": [3, 6], "sim_betas": [0.1, 3.0],
                      "sim_alphas": [0.5, 4.0], "sim_d": 32, "sim_T": 16, "n_inits": 1, "n_seqs": 1},
                     {"beta_c": EXACT, "alpha_c": 1e-3, "frac_trainable": 0.03}),
    "signal.depth": ({"L": 4, "d": 32, "T": 16, "finite_T": False, "n_inits": 8},
                     {"rho_L_sim_0": 0.05, "entropy_1_sim_0": 0.02, "entropy_1_sim_4": 0.1}),
    "potts.replica": ({"nus": [3.0], "lams": [1e-2, 1e-1], "alpha_max": 3.0, "n_nodes": 200},
                      {"peak_alpha_nu3_lam0.01_exact": EXACT, "peak_alpha_nu3_lam0.1_exact": EXACT,
                       "rho_nu3_exact": EXACT, "ols_alpha2": EXACT, "excess_slope_16_64": 1e-4}),
    "potts.fig3left": ({"L": 30, "alphas": [0.5, 2.0], "n_real": 40, "lams": [1e-2]},
                       {"theory_argmax_alpha_lam0.01_exact": EXACT, "sim_eps_g_minus_rho_delta_at_0.5_lam0.01": 0.05}),
    "paths.fig2d": ({"P": 100, "P_test": 1000}, {"top5_overlap_fw": 0.15, "top5_overlap_gp": 0.15}),
    "clustering.fig1": ({"check_configs": [[3, 8, 3, 4, 16]], "n_sample": 500, "scale_factors": [0.1, 0.2, 1.0]},
                        {"accuracy": EXACT, "n_clusters": EXACT, "accuracy_c0.2": EXACT,
                         "n_clusters_p3_N8_k3_d4": EXACT, "cluster_score": 1e-3}),
}


@pytest.mark.parametrize("key", sorted(SMALL))
def test_smallest_experiment_on_cuda_matches_the_cpu(tmp_path, key):
    overrides, tolerances = SMALL[key]
    exp = get(key)
    store = RunStore(tmp_path)
    runs = {dev: store.run(exp, resolve(exp.config, "quick", overrides, device=dev)).summary for dev in ("cpu", "cuda")}
    for name, tol in tolerances.items():
        cpu, gpu = runs["cpu"][name], runs["cuda"][name]
        assert cpu is not None and gpu is not None and math.isfinite(cpu) and math.isfinite(gpu), (name, cpu, gpu)
        limit = tol * max(1.0, abs(cpu)) if tol == EXACT else tol
        assert abs(cpu - gpu) <= limit, f"{key} {name}: cpu {cpu} vs cuda {gpu} (tolerance {limit})"
    if key == "paths.fig2d":  # the figure's point on both devices: the renormalised kernel aligns better than the GP's
        assert runs["cpu"]["top5_ratio"] > 1 and runs["cuda"]["top5_ratio"] > 1


def test_memory_models_on_cuda_bound_the_allocated_peak():
    """The study memory models, checked against torch.cuda.max_memory_allocated (within a factor 2)."""
    from attnlab.core.memory import measured_peak

    cases = {"potts.fig3left": {"L": 100, "n_real": 50, "alphas": [0.5, 2.0, 8.0], "lams": [0.01]},
             "signal.depth": {"d": 512, "T": 256, "H": 2, "n_seqs": 8, "n_inits": 4, "L": 2, "finite_T": False,
                              "pairs": [[0.1, 1.0]]},
             "paths.fig2d": {"P_test": 2000, "T": 20, "N0": 300},
             "specialization.fig5": {"Hs": [8], "nus": [], "laws": ["flip"], "activations": ["softmax"], "seeds": 5,
                                     "n_mc": 20_000, "eval_mc": 40_000, "bayes_mc": 1000, "tau_max": 2.0}}
    for key, overrides in cases.items():
        exp = get(key)
        cfg = resolve(exp.config, "quick", overrides, device="cuda")
        need = exp.memory(cfg)[0]
        peak = measured_peak(key, cfg)["peak"]
        assert peak / 2 <= need <= 2 * peak, f"{key}: model {need / 2**20:.0f} MiB, allocated {peak / 2**20:.0f} MiB"
