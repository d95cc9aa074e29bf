"""``preset="pal"`` against the public code's fine-tuning and dropout runs (facebookresearch/pal,
``projects/visualization/finetune.py`` and ``train.py``), activations by any torch.nn name, and finetuning on the
same modulus.

pal's ``finetune.py --seed s`` seeds torch's generator with s, builds its model (the constructor's draws: E, P, q,
V, the MLP's and the output layer's nn.Linear defaults; no MLP table, unlike ``train.py``), loads the trained
weights over it, and then every epoch draws its DataLoader's shuffle (two 64-bit integers), one dropout mask per
batch and, in its per-epoch record (training mode, so dropout on), one mask for the train set and one for the
test set. The pinned values below were printed by torch's own DataLoader and F.dropout after that constructor.

The tests marked ``needs_pal`` run the public code itself from a checkout at ``$ATTNLAB_PAL`` (skipped, with the
reason, when it is unset), as ``benchmarks/clustering.py`` does.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.experiments.training import TransferConfig
from attnlab.clustering.model import ModelSpec, forward, grow_vocab
from attnlab.clustering.model.activations import MLP_ACTIVATIONS, REFUSED, activation
from attnlab.clustering.train import streams
from attnlab.clustering.train.loop import eval_masks, make_data, train, transfer
from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get

torch.set_num_threads(1)
PAL_ROOT = os.environ.get("ATTNLAB_PAL")
needs_pal = pytest.mark.skipif(
    not PAL_ROOT or not (Path(PAL_ROOT) / "projects" / "visualization" / "finetune.py").exists(),
    reason="set ATTNLAB_PAL to a facebookresearch/pal checkout to run the public code")
SMALL = {"n_train": 256, "n_test": 128, "head_metrics": False}

# pretrains with pal's train.py, then finetunes the final weights with its finetune.py (same seed), both with
# save_weights; prints every epoch's weights and record (this driver is ours; it only calls the public code)
DRIVER = r"""
import json, pickle, sys, tempfile
from pathlib import Path
a = json.loads(sys.argv[1])
sys.path[:0] = [str(Path(a["pal"]) / "src"), str(Path(a["pal"]) / "projects" / "visualization")]
import torch
torch.set_num_threads(1)
import train as pre, finetune as ft
pre.SAVE_DIR = ft.SAVE_DIR = save = Path(tempfile.mkdtemp(prefix="pal-ft-"))
pre.DEVICE = ft.DEVICE = torch.device("cpu")
pre.run_from_config(pre.ExperimentConfig(**a["config"], nb_epochs=a["epochs"], seed=a["seed"], interactive=False,
                                         id="pre", save_weights=True))
ft.run_from_config(ft.FinetuneConfig(unique_id="pre", vocab_size=a["p_new"], nb_epochs=a["epochs_new"],
                                     seed=a["seed"], interactive=False, save_weights=True, sparsity_index=5,
                                     nb_data=2048, batch_size=32, lr=3e-3))
out = next((save / "finetune").iterdir())
load = lambda d, n: pickle.load(open(d / n, "rb"))
w = lambda d: [{k: v.tolist() for k, v in s.items()} for s in load(d, "weights.pkl")]
rec = lambda d, n: load(d, n).tolist()
print("PAL-RESULT " + json.dumps({"pre_w": w(save / "pre"), "ft_w": w(out), "pre_loss": rec(save / "pre", "losses.pkl"),
                                  "ft_loss": rec(out, "losses.pkl"), "ft_acc": rec(out, "test_accs.pkl")}))
"""
NAMES = {"token_emb.weight": "E", "pos_emb.weight": "P", "softmax.query.weight": "q", "softmax.value.weight": "V",
         "mlp.fc1.weight": "W", "mlp.fc1.bias": "bW", "mlp.fc2.weight": "U", "mlp.fc2.bias": "bU"}


def _pal_run(dropout: float, epochs: int, epochs_new: int) -> dict:
    config = {"vocab_size": 2, "seq_length": 12, "sparsity_index": 5, "nb_data": 2048, "batch_size": 32, "lr": 3e-3,
              "emb_dim": 2, "nb_emb": 3, "ffn_dim": 32, "ffn_bias": True, "ffn_dropout": dropout, "activation": "gelu"}
    args = {"pal": PAL_ROOT, "seed": 0, "epochs": epochs, "p_new": 3, "epochs_new": epochs_new, "config": config}
    python = os.environ.get("ATTNLAB_PAL_PYTHON", sys.executable)
    out = subprocess.run([python, "-c", DRIVER, json.dumps(args)], capture_output=True, text=True, check=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"}).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("PAL-RESULT "))[11:])


def _ours(state: dict) -> dict[str, torch.Tensor]:
    p = {NAMES[k]: torch.tensor(v) for k, v in state.items() if k in NAMES}
    p["q"] = p["q"][0]
    return {k: v[None] for k, v in p.items()}


def _max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[k] - b[k]).abs().max()) for k in a)


# ----------------------------------------------------------------------------------------------- without pal
def test_finetune_draw_order_pinned():
    """Seed 0's fine-tuning batch orders and dropout masks (p = 0.3) under pal's streams: the first 8 indices of
    epochs 1 and 2 and the first 16 keep flags of unit 0, as torch's DataLoader and F.dropout drew them after
    pal's model constructor (3 token rows, d = 2, h = 32 with biases)."""
    spec = TrainConfig(preset="pal").spec()
    g = streams.finetune_gens("pal", spec, [0])[0]
    pinned = [([199, 717, 1589, 1198, 648, 902, 1122, 1935], [1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 0, 1, 0, 1, 1]),
              ([482, 719, 240, 384, 1375, 1487, 1162, 507], [0, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1])]
    for order8, keep16 in pinned:
        assert streams.epoch_order("pal", g, 2048)[:8].tolist() == order8
        keep = streams.pal_dropout(g, 0.3, [32] * 64, 2)
        assert keep.shape == (2, 2048) and torch.unique(keep).tolist() == [0.0, pytest.approx(1 / 0.7)]
        assert (keep[0, :16] > 0).int().tolist() == keep16
        streams.pal_dropout(g, 0.3, [2048, 2048], 2)            # the record's two masks (train set, test set)
    # train.py's generator is elsewhere: it drew the 2048 × 6 MLP table first
    assert streams.epoch_order("pal", streams.pal_init(spec, 0)[1], 2048)[:8].tolist() != pinned[0][0]


def test_transfer_uses_finetune_order_and_attnlab_keeps_its_own():
    """transfer() under pal's streams batches in the finetune order; under attnlab's (default) the seed's
    "batch" stream, exactly as before (the same run as train() with the grown parameters)."""
    pre = train(TrainConfig(epochs=1, n_seeds=2, **SMALL))
    cfg = TrainConfig(p=3, epochs=2, n_seeds=2, **SMALL)
    h = transfer(pre.final(torch.float32), pre.spec, cfg)
    grown, spec3 = grow_vocab(pre.final(torch.float32), pre.spec, 3, cfg.seeds())
    ref = train(cfg, params=grown, spec=spec3)
    np.testing.assert_array_equal(h.snapshots["E"], ref.snapshots["E"])
    pal = TrainConfig(preset="pal", epochs=1, n_seeds=1, **SMALL)
    pre = train(pal)
    new = pal.model_copy(update={"p": 3})
    a = transfer(pre.final(torch.float32), pre.spec, new)
    b = transfer(pre.final(torch.float32), pre.spec, new, batch_gens=streams.finetune_gens("pal", pre.spec, [0]))
    c = transfer(pre.final(torch.float32), pre.spec, new, batch_gens=[streams.pal_init(new.spec(), 0)[1]])
    np.testing.assert_array_equal(a.snapshots["W"], b.snapshots["W"])
    assert not np.array_equal(a.snapshots["W"][-1], c.snapshots["W"][-1])


def test_eval_dropout_on_measures_with_masks():
    """eval_dropout='on' measures the record with the dropout masks (the train loss differs from the
    dropout-free one already at epoch 0); 'off' (default) is the dropout-free model; the training is the same."""
    cfg = TrainConfig(epochs=1, n_seeds=2, mlp_dropout=0.5, **SMALL)
    off, on = train(cfg), train(cfg.model_copy(update={"eval_dropout": "on"}))
    plain = train(cfg.model_copy(update={"mlp_dropout": 0.0}))
    np.testing.assert_array_equal(off.epoch_metrics["train_loss"][0], plain.epoch_metrics["train_loss"][0])
    assert (on.epoch_metrics["train_loss"][0] != off.epoch_metrics["train_loss"][0]).all()
    on_cfg = cfg.model_copy(update={"eval_dropout": "on"})
    data = make_data(on_cfg.task(), on_cfg, on_cfg.seeds())
    keep = eval_masks(on_cfg, on_cfg.spec(), data, 0, None)                # each seed's "dropout:eval:0" stream
    assert keep["test"].shape == (2, 2, 128) and abs((keep["test"] == 0).float().mean().item() - 0.5) < 0.05
    z = forward(on.params_at(0, dtype=torch.float32), data.x_test, on.spec, mlp_keep=keep["test"].transpose(1, 2))
    np.testing.assert_array_equal(on.epoch_metrics["test_acc"][0],
                                  (z["logits"].argmax(-1) == data.y_test).float().mean(1).numpy())
    np.testing.assert_array_equal(on.snapshots["W"], off.snapshots["W"])
    assert TrainConfig().eval_dropout == "off" and "eval_dropout" not in TrainConfig().model_dump(exclude_defaults=True)


def test_finetune_on_the_same_modulus():
    """p' = p (pal's finetune.py allows it): no new token row, every tensor carried over, a fresh Adam and a new
    training set; the loss keeps falling from where pretraining left it."""
    pre = train(TrainConfig(epochs=3, n_seeds=2, **SMALL))
    h = transfer(pre.final(torch.float32), pre.spec, TrainConfig(p=2, epochs=3, n_seeds=2, seed=0, **SMALL))
    first = h.params_at(0, dtype=torch.float32)
    for k, v in pre.final(torch.float32).items():
        assert torch.equal(first[k], v), k
    assert h.spec == pre.spec and np.isfinite(h.epoch_metrics["train_loss"]).all()
    assert resolve(TransferConfig, "quick", {"p_new": 2}).p_new == 2
    with pytest.raises(ConfigError, match="key 'p_new'"):
        resolve(get("clustering.transfer_circuit").config, "quick", {"p": 3, "p_new": 2})


# ----------------------------------------------------------------------------------------------- activations
def test_every_torch_nn_activation_is_accepted_or_refused_with_a_reason():
    for cls in torch.nn.modules.activation.__all__:
        low = {"leakyrelu": "leaky_relu", "logsoftmax": "log_softmax"}.get(cls.lower(), cls.lower())
        if low in REFUSED:
            with pytest.raises(ConfigError, match=REFUSED[low].split(" (")[0]):
                ModelSpec(activation=cls)
        else:
            assert ModelSpec(activation=cls).activation == low, cls


@pytest.mark.parametrize("name, x, y", [("rrelu", -3.0, -3.0 * (1 / 8 + 1 / 3) / 2), ("hardshrink", 0.4, 0.0),
                                        ("softshrink", 0.7, 0.2), ("RReLU", 2.0, 2.0)])
def test_new_activations_values(name, x, y):
    assert activation(name)(torch.tensor([x], dtype=torch.float64)).item() == pytest.approx(y, rel=1e-12)


@pytest.mark.parametrize("name", ["rrelu", "hardshrink", "softshrink"])
def test_new_activations_train_and_match_autograd(name):
    h = train(TrainConfig(activation=name, epochs=2, n_seeds=2, dtype="float64", **SMALL))
    assert np.isfinite(h.epoch_metrics["train_loss"]).all() and h.spec.activation == name
    assert h.epoch_metrics["train_loss"][-1].mean() < h.epoch_metrics["train_loss"][0].mean()


def test_unknown_activation_is_one_line_with_close_matches():
    with pytest.raises(ConfigError) as e:
        resolve(get("clustering.train").config, "quick", {"activation": "gleu"})
    msg = str(e.value)
    assert "\n" not in msg and "key 'activation'" in msg and "did you mean gelu" in msg, msg
    assert TrainConfig(activation="GELU").activation == "gelu"
    assert MLP_ACTIVATIONS[:20][-1] == "identity"          # today's names, in today's order, first


# ----------------------------------------------------------------------------------------------- against pal
@needs_pal
@pytest.mark.parametrize("dropout", [0.0, 0.3])
def test_against_public_finetune(dropout):
    """pal's train.py (seed 0, 2 epochs) then finetune.py (p = 3, seed 0, 2 epochs), with dropout 0 and 0.3
    (record with the dropout on, as pal's): attnlab's pretraining and its transfer of pal's pretrained weights
    agree with them in every weight to 1e-6 after each epoch (measured: ≤ 4.5e-7; with train.py's order for the
    fine-tuning, as before, 6.9e-2 after one epoch), and in the per-epoch train loss to 1e-6."""
    res = _pal_run(dropout, 2, 2)
    on = {"mlp_dropout": dropout, "eval_dropout": "on" if dropout else "off", "head_metrics": False}
    pre = train(TrainConfig(preset="pal", epochs=2, **on))
    for e, w in enumerate(res["pre_w"]):
        assert _max_diff(_ours(w), pre.params_at(e, dtype=torch.float32)) < 1e-6, e
    np.testing.assert_allclose(pre.epoch_metrics["train_loss"][1:, 0], res["pre_loss"], rtol=0, atol=1e-6)
    spec = TrainConfig(preset="pal", mlp_dropout=dropout).spec()
    h = transfer(_ours(res["pre_w"][-1]), spec, TrainConfig(preset="pal", p=3, epochs=2, **on))
    for e, w in enumerate(res["ft_w"]):
        assert _max_diff(_ours(w), h.params_at(e, dtype=torch.float32)) < 1e-6, e
    np.testing.assert_allclose(h.epoch_metrics["train_loss"][1:, 0], res["ft_loss"], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(h.epoch_metrics["test_acc"][1:, 0], res["ft_acc"])
