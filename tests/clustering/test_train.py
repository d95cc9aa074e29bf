"""Training of paper 4's model (paper App. A, App. A.2 transfer; config errors): smoke run and its
records, bit-exact resume, seeds trained together = each seed alone, transfer mechanics, one-line config errors."""

import io

import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.model import GROUPS, init_params
from attnlab.clustering.train import make_data, train, transfer
from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get

torch.set_num_threads(1)
SMALL = {"n_train": 256, "n_test": 256, "batch_size": 32}


def _snap_equal(a, b) -> bool:
    return all(np.array_equal(a.snapshots[k], b.snapshots[k]) for k in a.snapshots)


def test_smoke_records_everything():
    """D1: d = 2, k = 5, 20 epochs, 1 seed: finite losses, per-step loss and 6 group grad norms, per-epoch metrics
    and snapshots."""
    cfg = TrainConfig(epochs=20, **SMALL)
    h = train(cfg)
    T = cfg.epochs * cfg.steps_per_epoch
    assert h.step_metrics["loss"].shape == (T, 1) and np.isfinite(h.step_metrics["loss"]).all()
    for g in (*GROUPS, "total"):
        assert h.step_metrics[f"grad_{g}"].shape == (T, 1) and (h.step_metrics[f"grad_{g}"] > 0).all()
        assert h.epoch_metrics[f"grad_{g}"].shape == (21, 1)
    total = np.sqrt(sum(h.step_metrics[f"grad_{g}"] ** 2 for g in GROUPS))
    np.testing.assert_allclose(total, h.step_metrics["grad_total"], rtol=1e-5)
    assert list(h.epochs) == list(range(21)) and list(h.snapshot_epochs) == list(range(21))
    for name in ("train_loss", "test_loss", "test_acc", "unseen_acc", "cluster_score", "attn_prefix_mass",
                 "min_xi_norm", "min_token_norm", "tv_error"):
        assert h.epoch_metrics[name].shape == (21, 1) and np.isfinite(h.epoch_metrics[name]).all(), name
    assert h.snapshots["E"].shape == (21, 1, 2, 2) and h.snapshots["W"].shape == (21, 1, 8, 2)
    assert h.epoch_metrics["train_loss"][-1, 0] < h.epoch_metrics["train_loss"][0, 0]
    assert not np.array_equal(h.snapshots["q"][0], h.snapshots["q"][-1])


def test_resume_is_bit_exact():
    """D1: a state saved after epoch 3 (through torch.save, as the run store does) reproduces epochs 4–8."""
    cfg = TrainConfig(epochs=8, n_seeds=2, **SMALL)
    saved = {}

    def on_epoch(epoch, state_fn):
        if epoch == 3:
            buf = io.BytesIO()
            torch.save(state_fn(), buf)
            saved["state"] = buf.getvalue()

    full = train(cfg, on_epoch=on_epoch)
    resumed = train(cfg, state=torch.load(io.BytesIO(saved["state"]), weights_only=False))
    assert list(resumed.epochs) == list(full.epochs)
    assert _snap_equal(full, resumed)
    for k in full.epoch_metrics:
        assert np.array_equal(full.epoch_metrics[k], resumed.epoch_metrics[k]), k
    assert np.array_equal(full.step_metrics["loss"], resumed.step_metrics["loss"])


@pytest.mark.parametrize("dtype, tol", [("float32", 1e-4), ("float64", 1e-10)])
def test_seeds_together_equal_each_alone(dtype, tol):
    together = train(TrainConfig(epochs=3, n_seeds=3, seed=0, dtype=dtype, **SMALL))
    alone = train(TrainConfig(epochs=3, n_seeds=1, seed=2, dtype=dtype, **SMALL))
    assert together.seeds[2] == alone.seeds[0] == 2
    for k in together.snapshots:
        np.testing.assert_allclose(together.snapshots[k][:, 2], alone.snapshots[k][:, 0], atol=tol, rtol=0)
    np.testing.assert_allclose(together.epoch_metrics["train_loss"][:, 2], alone.epoch_metrics["train_loss"][:, 0],
                               atol=tol, rtol=0)


def test_transfer_mechanics():
    """D11: p = 2 → 3 adds one token row; every old tensor is carried over bitwise; Adam restarts; the new
    training set is p = 3 with labels mod 3; 5 epochs run."""
    pre = train(TrainConfig(epochs=2, n_seeds=2, **SMALL))
    before = pre.final(torch.float32)
    cfg3 = TrainConfig(p=3, epochs=5, n_seeds=2, **SMALL)
    steps = {}
    h = transfer(before, pre.spec, cfg3, on_epoch=lambda e, f: steps.setdefault(e, f()["opt"]["t"]))
    first = h.params_at(0, dtype=torch.float32)
    assert first["E"].shape == (2, 3, 2) and h.spec.p == 3 and h.task.p == 3
    assert torch.equal(first["E"][:, :2], before["E"])
    for k in ("P", "q", "V", "W", "U"):
        assert torch.equal(first[k], before[k]), k
    assert not torch.equal(first["E"][:, 2], first["E"][:, 1])
    assert int(steps[1]) == cfg3.steps_per_epoch  # a fresh Adam: one epoch of steps, not pretrain + 1
    data = make_data(cfg3.task(), cfg3, cfg3.seeds())
    assert int(data.x_train.max()) == 2
    assert torch.equal(data.y_train, data.x_train[..., :5].sum(-1) % 3)
    assert len(h.epochs) == 6 and np.isfinite(h.epoch_metrics["train_loss"]).all()
    with pytest.raises(ConfigError, match="key 'p' = 2"):              # a smaller modulus (p' = p is allowed)
        transfer(h.final(torch.float32), h.spec, TrainConfig(p=2, epochs=1, **SMALL))


BAD = [({"k": 13}, "k"), ({"p": 1}, "p"), ({"d": 0}, "d"), ({"informative": [0, 1, 2, 3, 12]}, "informative"),
       ({"batch_size": 4096}, "batch_size"), ({"p": 3, "p_new": 2}, "p_new")]


@pytest.mark.parametrize("overrides, key", BAD)
def test_config_errors_are_one_line(overrides, key):
    with pytest.raises(ConfigError) as e:
        resolve(get("clustering.transfer_circuit").config, "quick", overrides)
    msg = str(e.value)
    assert f"key '{key}'" in msg and "\n" not in msg, msg


@pytest.mark.parametrize("overrides, key", BAD[:1] + BAD[-1:])
def test_config_errors_write_nothing(tmp_path, overrides, key):
    store = tmp_path / "store"
    sets = [f"{k}={v}" for k, v in overrides.items()]
    res = CliRunner().invoke(app, ["run", "clustering.transfer_circuit", "--store", str(store),
                                   *[a for s in sets for a in ("--set", s)]])
    assert res.exit_code == 2 and f"key '{key}'" in res.stderr and not store.exists()


def test_init_params_dtype_independent():
    """Parameters are drawn in float64 and cast: float32 and float64 inits agree to float32 rounding."""
    cfg = TrainConfig()
    a = init_params(cfg.spec(), [0, 1], dtype=torch.float32)
    b = init_params(cfg.spec(), [0, 1], dtype=torch.float64)
    for k in a:
        assert torch.equal(a[k], b[k].float())


@pytest.mark.parametrize("n_train", [256, 240])
def test_training_matches_a_plain_pytorch_loop(n_train):
    """One seed of the vectorised trainer follows, step by step, the textbook loop: the model of eqs. (1)-(4)
    written out, torch.optim.Adam, the same data and batch order (this caught fused CPU Adam misreading
    non-contiguous gradients); with 240 points the last batch of each epoch has 16."""
    import math

    import torch.nn.functional as F

    from attnlab.clustering.model import init_params
    from attnlab.clustering.train import make_data
    from attnlab.core.rng import stream_seed

    cfg = TrainConfig(d=4, k=3, n_train=n_train, n_test=64, epochs=2, head_metrics=False, snapshot_every=0,
                      mlp_lr_factor=0.5, dtype="float64")
    ours = train(cfg).final()
    spec = cfg.spec()
    p = {k: v[0].clone().requires_grad_(True) for k, v in init_params(spec, [0], dtype=torch.float64).items()}
    data = make_data(cfg.task(), cfg, [0])
    x, y = data.x_train[0], data.y_train[0]
    opt = torch.optim.Adam([{"params": [p[k] for k in "EPqV"], "lr": cfg.lr},
                            {"params": [p["W"], p["U"]], "lr": cfg.lr * 0.5}])
    g = torch.Generator().manual_seed(stream_seed(0, "batch"))
    for _ in range(cfg.epochs):
        order = torch.randperm(cfg.n_train, generator=g)
        for i in range(cfg.steps_per_epoch):
            b = order[i * cfg.batch_size:(i + 1) * cfg.batch_size]
            e = p["E"][x[b]] + p["P"]
            z = e / e.norm(dim=-1, keepdim=True)
            a = torch.softmax(z @ p["q"] / math.sqrt(cfg.d), -1)
            xi = (a.unsqueeze(-1) * z).sum(1) @ p["V"].T
            psi = xi + F.gelu((xi / xi.norm(dim=-1, keepdim=True)) @ p["W"].T) @ p["U"].T
            loss = F.cross_entropy(psi @ p["E"].T, y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
    for k, v in p.items():
        torch.testing.assert_close(ours[k][0], v.detach(), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("preset", ["paper", "pal"])
def test_evaluation_on_the_enumerated_space_equals_forward_passes(preset):
    """At p = 2, N = 12 the per-epoch record is read from one pass over the 4096 sentences (train loss and its
    gradient weighted by each sentence's multiplicity in the train set, test/unseen by lookup); every metric
    equals the forward passes over the train, test and unseen sets and the probe grid."""
    from attnlab.clustering.train import evaluate

    cfg = TrainConfig(n_seeds=3, preset=preset, dtype="float64", **SMALL)
    task, spec = cfg.task(), cfg.spec()
    data = make_data(task, cfg, cfg.seeds())
    assert data.space is not None and data.space.train_counts.sum(1).eq(cfg.n_train).all()
    params = {k: (v + 0.3 * torch.randn_like(v)).requires_grad_(True)
              for k, v in init_params(spec, cfg.seeds(), dtype=torch.float64).items()}
    fast = evaluate(params, data, spec, task, head_metrics=True)
    data.space = None
    slow = evaluate(params, data, spec, task, head_metrics=True)
    assert list(fast) == list(slow)
    for k in slow:
        torch.testing.assert_close(fast[k].double(), slow[k].double(), rtol=1e-9, atol=1e-10, msg=k)
    assert (fast["train_acc"] < 1).all() and (fast["grad_total"] > 0).all()  # a model still learning: not trivial


def test_sparse_step_record_keeps_every_kth_step():
    """step_log_every = 3 keeps steps 3, 6, 9, ... of the every-step record, across epochs and partial batches."""
    cfg = TrainConfig(n_train=100, n_test=64, epochs=3, head_metrics=False, snapshot_every=0, n_seeds=2)
    every = train(cfg)
    third = train(cfg.model_copy(update={"step_log_every": 3}))
    assert every.step_metrics["loss"].shape == (12, 2)
    np.testing.assert_array_equal(third.step_metrics["loss"], every.step_metrics["loss"][2::3])
    np.testing.assert_array_equal(third.step_metrics["grad_total"], every.step_metrics["grad_total"][2::3])
    assert list(third.steps) == [3, 6, 9, 12]


def test_capturable_adam_equals_eager_adam():
    """The graph path's Adam (step count kept as a tensor) makes the same updates as the eager one."""
    from attnlab.clustering.step import Adam, Flat

    params = init_params(TrainConfig(preset="pal").spec(), [0, 1], dtype=torch.float64)
    a, b = Flat(params), Flat(params)
    ea, ca = Adam(a, 3e-3, 0.5, (0.9, 0.999), 1e-8, 0.0), Adam(b, 3e-3, 0.5, (0.9, 0.999), 1e-8, 0.0)
    ca.capturable()
    g = torch.Generator().manual_seed(0)
    for _ in range(4):
        grad = torch.randn(a.data.shape, generator=g, dtype=torch.float64)
        ea.step(a.data, grad)
        ca.step(b.data, grad)
    torch.testing.assert_close(b.data, a.data, rtol=1e-13, atol=1e-16)
    assert int(ca.t_dev) == ea.t == 4


@pytest.mark.cuda
@pytest.mark.parametrize("preset", ["paper", "pal"])
def test_cuda_graph_epochs_equal_eager_epochs(preset):
    """On CUDA the captured epoch replays the eager steps' kernels: the same parameters and records."""
    cfg = TrainConfig(preset=preset, n_seeds=8, epochs=3, n_train=256, n_test=128, head_metrics=False)
    graph = train(cfg, device="cuda")
    eager = train(cfg.model_copy(update={"cuda_graph": False}), device="cuda")
    cpu = train(cfg)
    for k in graph.snapshots:
        np.testing.assert_allclose(graph.snapshots[k], eager.snapshots[k], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(graph.snapshots[k], cpu.snapshots[k], rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(graph.step_metrics["loss"], eager.step_metrics["loss"], rtol=1e-6, atol=1e-7)


def test_prefetched_batch_order_changes_nothing():
    """Drawing the next epoch's order early (the CUDA default) gives the same run, and resumes bit-exactly from a
    checkpoint that holds the prefetched draws."""
    cfg = TrainConfig(epochs=4, n_seeds=2, mlp_dropout=0.2, **SMALL)
    plain = train(cfg, prefetch=False)
    states = {}
    early = train(cfg, prefetch=True, on_epoch=lambda e, f: states.setdefault(e, f()))
    assert _snap_equal(plain, early)
    assert states[2]["pending"] is not None
    resumed = train(cfg, prefetch=True, state=states[2])
    assert _snap_equal(plain, resumed)
    assert np.array_equal(plain.step_metrics["loss"], resumed.step_metrics["loss"])
