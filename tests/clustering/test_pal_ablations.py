"""pal's ablations (facebookresearch/pal, ``projects/visualization/train.py``, its ``grid --ablation X``): the
``ffn_dim`` ablation's 10 000-row MLP table (``pal_table_rows``) and the seven ablation grids shipped as JSONL
files (``attnlab sweep clustering.train --configs pal_<X>``).

pal's script, in words: ``grid`` crosses one-value lists (vocabulary 2, length 12, sparsity 5, 2048 sentences, batch
32, 1000 epochs, lr 3e-3, no MLP discount, d = 2, 3 token rows, MLP width 32 with biases, no dropout, gelu, seed 0)
and replaces one of them by the ablation's list: batch size 2^0 … 2^11; lr 20 points log-spaced from 1 to 1e-4;
the MLP discount δ 20 points log-spaced from 1e-2 to 1e2 (its MLP learns at lr/δ); the width 20 points log-spaced
from 10 to 10^4, cast to int, with its MAX_FFN_DIM (the rows of the U(−1, 1) table drawn first) at 10 000 instead
of 2048; biases on and off; dropout 20 points evenly spaced from 0 to 0.9; seeds 0 … 99. The pinned numbers were
printed by the public code itself (``--seed 0``, ``ffn_dim`` 10 and 1128 with MAX_FFN_DIM 10 000).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.cli_run import _configs_file
from attnlab.clustering import streams
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.train import train
from attnlab.core.config import ConfigError, resolve
from attnlab.core.points import parse_configs
from attnlab.core.registry import get

torch.set_num_threads(1)
PAL_ROOT = os.environ.get("ATTNLAB_PAL")
needs_pal = pytest.mark.skipif(
    not PAL_ROOT or not (Path(PAL_ROOT) / "projects" / "visualization" / "train.py").exists(),
    reason="set ATTNLAB_PAL to a facebookresearch/pal checkout to run the public code")
ABLATION = {"preset": "pal", "pal_table_rows": 10_000}


# ----------------------------------------------------------------------------------------------- the table's rows
def test_table_rows_key_keeps_run_ids_and_needs_pal_streams():
    exp = get("clustering.train")
    pal = resolve(exp.config, "quick", {"preset": "pal"})
    assert pal.pal_table_rows == streams.PAL_TABLE_ROWS == 2048
    assert resolve(exp.config, "quick", {"preset": "pal", "pal_table_rows": 2048}).hash(exp.key) == pal.hash(exp.key)
    assert resolve(exp.config, "quick", ABLATION).hash(exp.key) != pal.hash(exp.key)
    with pytest.raises(ConfigError) as e:
        resolve(exp.config, "quick", {"pal_table_rows": 10_000})
    assert "key 'pal_table_rows'" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("h, w_last, u_0, b_u", [
    (10, [0.4741054177284241, -0.41634613275527954], [-0.26026973128318787, -0.2327243536710739],
     [0.08479880541563034, -0.06215943396091461]),
    (1128, [0.5932101607322693, 0.051490046083927155], [-0.02450581267476082, -0.021912265568971634],
     [0.00798426941037178, -0.005852649454027414])])
def test_ffn_dim_ablation_initial_weights_are_pals(h, w_last, u_0, b_u):
    """pal's ``grid --ablation ffn_dim`` run (seed 0, MAX_FFN_DIM 10 000) starts from these weights, bit for bit;
    from the default 2048-row table every weight drawn after the table (E, P, q, V) comes out different."""
    spec = TrainConfig(preset="pal", h=h).spec()
    p, _ = streams.pal_init(spec, 0, 10_000)
    exact = {"E": [[-1.129825234413147, -1.38056218624115], [-0.2612644135951996, -0.05005044490098953],
                   [-0.8647071123123169, 0.23860840499401093]],
             "q": [0.32290005683898926, -0.25214242935180664],
             "V": [[-0.04659688100218773, 0.4946885108947754], [-0.4164755940437317, 0.03829614445567131]],
             "bU": b_u}
    for k, v in exact.items():
        torch.testing.assert_close(p[k], torch.tensor(v), rtol=0, atol=0, msg=k)
    torch.testing.assert_close(p["W"][0], torch.tensor([-0.005293981172144413, 0.37932288646698]), rtol=0, atol=0)
    torch.testing.assert_close(p["W"][-1], torch.tensor(w_last), rtol=0, atol=0)
    torch.testing.assert_close(p["U"][:, 0], torch.tensor(u_0), rtol=0, atol=0)
    torch.testing.assert_close(p["bW"][0], torch.tensor(-0.27234524488449097), rtol=0, atol=0)
    default, _ = streams.pal_init(spec, 0)
    assert torch.equal(default["W"], p["W"])                # the table's first rows are the same numbers
    assert not any(torch.equal(default[k], p[k]) for k in ("E", "P", "q", "V"))


def test_ffn_dim_ablation_first_epochs_are_pals():
    """Two epochs of the ffn_dim = 10 ablation run: the test accuracy pal printed, exactly, and its train loss."""
    h = train(TrainConfig(**ABLATION, h=10, epochs=2, head_metrics=False, snapshot_every=0))
    assert h.epoch_metrics["test_acc"][1:, 0].tolist() == [0.48486328125, 0.5166015625]
    np.testing.assert_allclose(h.epoch_metrics["train_loss"][1:, 0], [0.9972866177558899, 0.7573922872543335],
                               rtol=0, atol=1e-6)


# ----------------------------------------------------------------------------------------------- against pal
# runs pal's train.py for one config with save_weights and prints every epoch's weights (this driver is ours; it
# only calls the public code)
DRIVER = r"""
import json, pickle, sys, tempfile
from pathlib import Path
a = json.loads(sys.argv[1])
sys.path[:0] = [str(Path(a["pal"]) / "src"), str(Path(a["pal"]) / "projects" / "visualization")]
import torch
torch.set_num_threads(1)
import train as pre
pre.SAVE_DIR = save = Path(tempfile.mkdtemp(prefix="pal-ablation-"))
pre.DEVICE = torch.device("cpu")
pre.run_from_config(pre.ExperimentConfig(**a["config"], interactive=False, id="run", save_weights=True))
w = [{k: v.tolist() for k, v in s.items()} for s in pickle.load(open(save / "run" / "weights.pkl", "rb"))]
print("PAL-RESULT " + json.dumps({"w": w, "loss": pickle.load(open(save / "run" / "losses.pkl", "rb")).tolist()}))
"""
NAMES = {"token_emb.weight": "E", "pos_emb.weight": "P", "softmax.query.weight": "q", "softmax.value.weight": "V",
         "mlp.fc1.weight": "W", "mlp.fc1.bias": "bW", "mlp.fc2.weight": "U", "mlp.fc2.bias": "bU"}


@needs_pal
@pytest.mark.parametrize("h", [10, 1128])
def test_against_public_ffn_dim_ablation(h):
    """pal's ffn_dim ablation run (seed 0, MAX_FFN_DIM 10 000, 2 epochs) against ``pal_table_rows=10000``: the
    same initial weights exactly, every weight within 1e-5 after each epoch (measured: ≤ 4.2e-7 at h = 10,
    ≤ 2.9e-6 at h = 1128, in W and bW, Adam magnifying rounding where a neuron's gradient is tiny; with the
    default 2048-row table: 4.7 at every epoch) and the train loss within 1e-6."""
    config = {"vocab_size": 2, "seq_length": 12, "sparsity_index": 5, "nb_data": 2048, "batch_size": 32,
              "nb_epochs": 2, "lr": 3e-3, "emb_dim": 2, "nb_emb": 3, "ffn_dim": h, "ffn_bias": True,
              "ffn_dropout": 0, "activation": "gelu", "seed": 0, "MAX_FFN_DIM": 10_000}
    python = os.environ.get("ATTNLAB_PAL_PYTHON", sys.executable)
    out = subprocess.run([python, "-c", DRIVER, json.dumps({"pal": PAL_ROOT, "config": config})], check=True,
                         capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout
    res = json.loads(next(line for line in out.splitlines() if line.startswith("PAL-RESULT "))[11:])
    ours = train(TrainConfig(**ABLATION, h=h, epochs=2, head_metrics=False))
    for e, state in enumerate(res["w"]):
        pal = {NAMES[k]: torch.tensor(v) for k, v in state.items() if k in NAMES}
        pal["q"] = pal["q"][0]
        mine = {k: v[0] for k, v in ours.params_at(e, dtype=torch.float32).items()}
        diff = max(float((pal[k] - mine[k]).abs().max()) for k in pal)
        assert diff == 0 if e == 0 else diff < 1e-5, (e, diff)
    np.testing.assert_allclose(ours.epoch_metrics["train_loss"][1:, 0], res["loss"], rtol=0, atol=1e-6)


# ----------------------------------------------------------------------------------------------- the grids
def _pal_grid(ablation: str) -> list[dict]:
    """pal's configurations of ``grid --ablation X`` (its keys), from the value lists its script states."""
    base = {"vocab_size": 2, "seq_length": 12, "sparsity_index": 5, "nb_data": 2048, "batch_size": 32,
            "nb_epochs": 1000, "lr": 3e-3, "mlp_lr_discount": None, "emb_dim": 2, "nb_emb": 3, "ffn_dim": 32,
            "ffn_bias": True, "ffn_dropout": 0, "activation": "gelu", "seed": 0, "MAX_FFN_DIM": 2048}
    values = {"batch_size": {"batch_size": [2 ** i for i in range(12)]},
              "lr": {"lr": np.logspace(0, -4, num=20).tolist()},
              "mlp_lr": {"mlp_lr_discount": np.logspace(-2, 2, num=20).tolist()},
              "ffn_dim": {"ffn_dim": np.logspace(1, 4, 20).astype(int).tolist(), "MAX_FFN_DIM": [10_000]},
              "ffn_bias": {"ffn_bias": [True, False]},
              "ffn_dropout": {"ffn_dropout": np.linspace(0, 0.9, 20).tolist()},
              "seed": {"seed": list(range(100))}}[ablation]
    key = next(iter(values))
    return [{**base, **{k: v[0] for k, v in values.items()}, key: v} for v in values[key]]


def _as_attnlab(pal: dict) -> dict:
    """pal's keys in attnlab's (docs/benchmarks.md's parity table)."""
    discount = pal["mlp_lr_discount"]
    return {"preset": "pal", "p": pal["vocab_size"], "N": pal["seq_length"], "k": pal["sparsity_index"],
            "n_train": pal["nb_data"], "n_test": pal["nb_data"], "batch_size": pal["batch_size"],
            "epochs": pal["nb_epochs"], "lr": pal["lr"], "mlp_lr_factor": 1.0 if discount is None else 1 / discount,
            "d": pal["emb_dim"], "n_emb": pal["nb_emb"], "h": pal["ffn_dim"], "mlp_bias": pal["ffn_bias"],
            "mlp_dropout": pal["ffn_dropout"], "eval_dropout": "on" if pal["ffn_dropout"] else "off",
            "activation": pal["activation"], "seed": pal["seed"], "pal_table_rows": pal["MAX_FFN_DIM"],
            "streams": "pal", "n_seeds": 1}


@pytest.mark.parametrize("ablation, count", [("batch_size", 12), ("lr", 20), ("mlp_lr", 20), ("ffn_dim", 20),
                                             ("ffn_bias", 2), ("ffn_dropout", 20), ("seed", 100)])
def test_shipped_grid_is_pals_ablation(ablation, count):
    """``--configs pal_<X>`` names a shipped file whose every line validates (at either scale: the lines carry
    pal's k and epochs) and is pal's configuration at that point of its ablation, in pal's order."""
    path = _configs_file("clustering.train", Path(f"pal_{ablation}"))
    lines = parse_configs(path)
    assert len(lines) == count == len(_pal_grid(ablation))
    cls = get("clustering.train").config
    for line, pal in zip(lines, _pal_grid(ablation), strict=True):
        overrides = {k: v for k, v in line.items() if k != "__where__"}
        for scale in ("quick", "paper"):
            cfg = resolve(cls, scale, overrides)
            assert {k: getattr(cfg, k) for k in _as_attnlab(pal)} == _as_attnlab(pal), line["__where__"]


def test_configs_name_resolution():
    assert _configs_file("clustering.train", Path("x/y.jsonl")) == Path("x/y.jsonl")        # a path stays a path
    assert _configs_file("clustering.fig16", Path("pal_lr")).name == "pal_lr.jsonl"        # any experiment of it
    with pytest.raises(ConfigError, match="pal_ffn_dim") as e:
        _configs_file("clustering.train", Path("pal_nope"))
    assert "\n" not in str(e.value)
