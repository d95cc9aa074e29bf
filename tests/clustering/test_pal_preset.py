"""``preset="pal"`` is the model of facebookresearch/pal (projects/visualization/train.py, its ``grid`` defaults).

The public code's definitions, in words (read off its model, data and training loop; none of its code):
- token table nn.Embedding(3, d) and positions nn.Embedding(N, d): N(0, 1) entries; the token table is also the
  output layer (tied), so there are 3 logits although the tokens are 0 and 1;
- query nn.Linear(d, 1, bias=False) and value nn.Linear(d, d, bias=False): U(±1/sqrt(d)) entries (nn.Linear's
  kaiming_uniform with a = √5);
- RMSNorm without gain before the attention and before the MLP: y = x / (sqrt(mean_i x_i²) + 1e-5), the eps
  added to the root mean square, not under the root;
- MLP d → 32 → d with biases and GeLU (erf form), initialised from a table of U(−1, 1) numbers with one row of
  2d + 2 entries per neuron: receptor row[:d]/sqrt(d), assembler row[d:2d]/sqrt(h), bias row[2d]/sqrt(d); the
  output bias is the first d entries of the last column /sqrt(h);
- Adam(lr 3e-3, betas (0.9, 0.999), eps 1e-8), batch 32 reshuffled every epoch, 2048 training and 2048 test
  sentences drawn uniformly with replacement, success = final test accuracy.
The numbers pinned at the end were printed by the public code itself (``train.py`` with ``--seed 0``).
"""

import math

import numpy as np
import pytest
import torch

from attnlab.clustering import streams
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.model import MLP_ACTIVATIONS, ModelSpec, forward, init_params, normalize
from attnlab.clustering.train import train
from attnlab.core.config import ConfigError

torch.set_num_threads(1)
PAL = TrainConfig(preset="pal")


def _ks(sample: np.ndarray, cdf) -> float:
    """Kolmogorov-Smirnov statistic of a sample against a continuous CDF."""
    x = np.sort(sample)
    n = len(x)
    f = cdf(x)
    return float(max((np.arange(1, n + 1) / n - f).max(), (f - np.arange(n) / n).max()))


def _uniform_cdf(b: float):
    return lambda x: np.clip((x + b) / (2 * b), 0, 1)


def _normal_cdf(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


@pytest.fixture(scope="module")
def pal_init():
    spec = PAL.spec()
    params, _ = streams.initial("pal", spec, list(range(1500)), torch.float64, "cpu")
    return spec, {k: v.numpy() for k, v in params.items()}


def test_preset_is_pal_architecture():
    spec = PAL.spec()
    assert (spec.norm, spec.rms_eps, spec.norm_eps, spec.norm_gain) == ("rmsnorm", "outside", 1e-5, False)
    assert (spec.h, spec.n_emb, spec.mlp_bias, spec.activation, spec.mlp_dropout) == (32, 3, True, "gelu", 0.0)
    assert (spec.q_init, spec.mlp_init, PAL.streams) == ("uniform", "nested", "pal")
    assert (PAL.lr, PAL.batch_size, PAL.beta1, PAL.beta2, PAL.adam_eps, PAL.weight_decay) == (3e-3, 32, 0.9, 0.999,
                                                                                              1e-8, 0.0)
    assert (PAL.n_train, PAL.n_test, PAL.test_mode, PAL.mlp_lr_factor) == (2048, 2048, "iid", 1.0)


def test_query_and_value_laws(pal_init):
    """q and V ~ U(±1/sqrt(2)) (not N(0, 1)): KS distance below the 1 % critical value 1.63/sqrt(n)."""
    _, p = pal_init
    b = 1 / math.sqrt(2)
    for name in ("q", "V"):
        x = p[name].ravel()
        assert np.abs(x).max() <= b
        assert _ks(x, _uniform_cdf(b)) < 1.63 / math.sqrt(len(x)), name
    normal_ks = _ks(p["q"].ravel(), _normal_cdf)
    assert normal_ks > 0.1   # the paper preset's N(0, 1) query would be rejected


def test_embedding_laws(pal_init):
    _, p = pal_init
    for name in ("E", "P"):
        x = p[name].ravel()
        assert _ks(x, _normal_cdf) < 1.63 / math.sqrt(len(x)), name


def test_mlp_laws_and_variances(pal_init):
    """Receptors and their biases U(±1/sqrt(d)) (variance 1/(3d) = 1/6), assemblers and the output bias
    U(±1/sqrt(h)) (variance 1/(3h) = 1/96)."""
    _, p = pal_init
    for name, bound in (("W", 1 / math.sqrt(2)), ("bW", 1 / math.sqrt(2)), ("U", 1 / math.sqrt(32)),
                        ("bU", 1 / math.sqrt(32))):
        x = p[name].ravel()
        assert np.abs(x).max() <= bound
        assert abs(x.var() / (bound**2 / 3) - 1) < 8 / math.sqrt(len(x)), name
        assert _ks(x, _uniform_cdf(bound)) < 1.63 / math.sqrt(len(x)), name


def test_mlp_nesting_across_widths():
    """Neuron i's draws do not depend on the width: widening 16 → 32 keeps receptors and biases and rescales the
    assemblers and the output bias by sqrt(16/32), in both streams."""
    for kind in ("pal", "attnlab"):
        narrow = ModelSpec(h=16, mlp_bias=True, mlp_init="nested", q_init="uniform", n_emb=3)
        wide = ModelSpec(h=32, mlp_bias=True, mlp_init="nested", q_init="uniform", n_emb=3)
        a, _ = streams.initial(kind, narrow, [3, 4], torch.float64, "cpu")
        b, _ = streams.initial(kind, wide, [3, 4], torch.float64, "cpu")
        torch.testing.assert_close(b["W"][:, :16], a["W"], rtol=0, atol=1e-7)
        torch.testing.assert_close(b["bW"][:, :16], a["bW"], rtol=0, atol=1e-7)
        torch.testing.assert_close(b["U"][:, :, :16] * math.sqrt(2), a["U"], rtol=1e-6, atol=1e-7)
        torch.testing.assert_close(b["bU"] * math.sqrt(2), a["bU"], rtol=1e-6, atol=1e-7)
        for k in ("E", "P", "q", "V"):
            assert torch.equal(a[k], b[k]), (kind, k)


def test_rmsnorm_eps_outside_the_root():
    """y = x / (sqrt(mean x²) + eps): on (1e-3, 0) the rms is 7.0711e-4, so y_0 = 1e-3 / 7.1711e-4 = 1.39448;
    with the eps under the root (torch's RMSNorm) it would be 1e-3 / sqrt(5e-7 + 1e-5) = 0.30861."""
    x = torch.tensor([[1e-3, 0.0], [3.0, 4.0]], dtype=torch.float64)
    y = normalize(x, PAL.spec())
    assert y[0, 0].item() == pytest.approx(1e-3 / (math.sqrt(0.5e-6) + 1e-5), rel=1e-12)
    assert y[0, 0].item() == pytest.approx(1.39448, rel=1e-5)
    assert y[1, 1].item() == pytest.approx(4 / (math.sqrt(12.5) + 1e-5), rel=1e-12)
    inside = normalize(x, ModelSpec(norm="rmsnorm", rms_eps="inside"))
    assert inside[0, 0].item() == pytest.approx(0.30861, rel=1e-4)


def test_forward_is_pal_formula():
    """ζ = E ψ over the 3 token rows, ψ = ξ + U GeLU(W RMS(ξ) + bW) + bU, ξ = Σ_t softmax(q·z/√d)_t V z_t, with
    z_t = RMS(E x_t + P t)."""
    spec = PAL.spec()
    p, _ = streams.initial("pal", spec, [0], torch.float64, "cpu")
    p = {k: v[0] for k, v in p.items()}
    x = torch.randint(0, 2, (5, 12), generator=torch.Generator().manual_seed(1))

    def rms(v):
        return v / (v.pow(2).mean(-1, keepdim=True).sqrt() + 1e-5)

    z = rms(p["E"][x] + p["P"])
    a = torch.softmax(z @ p["q"] / math.sqrt(2), -1)
    xi = (a[..., None] * (z @ p["V"].T)).sum(1)
    psi = xi + torch.nn.functional.gelu(rms(xi) @ p["W"].T + p["bW"]) @ p["U"].T + p["bU"]
    ours = forward({k: v[None] for k, v in p.items()}, x, spec)["logits"][0]
    assert ours.shape == (5, 3)
    torch.testing.assert_close(ours, psi @ p["E"].T, rtol=1e-12, atol=1e-12)


def test_pal_streams_reproduce_the_public_code_seed_0():
    """Seed 0 of the preset starts from the weights the public code's ``--seed 0`` run starts from (numbers it
    printed), and its first-epoch test accuracy and train loss (also printed by it) come out the same."""
    p, _ = streams.pal_init(PAL.spec(), 0)
    torch.testing.assert_close(p["E"], torch.tensor([[-1.9131492376327515, 1.1562200784683228],
                                                     [0.08657555282115936, -0.5681413412094116],
                                                     [-0.7542804479598999, 1.6719352006912231]]), rtol=0, atol=0)
    torch.testing.assert_close(p["q"], torch.tensor([-0.019616996869444847, -0.00607420364394784]), rtol=0, atol=0)
    torch.testing.assert_close(p["W"][0], torch.tensor([-0.005293981172144413, 0.37932288646698]), rtol=0, atol=0)
    torch.testing.assert_close(p["U"][:, 0], torch.tensor([-0.1454951912164688, -0.13009686768054962]), rtol=0,
                               atol=0)
    torch.testing.assert_close(p["bU"], torch.tensor([0.0474039725959301, -0.034748177975416183]), rtol=0, atol=0)
    h = train(PAL.model_copy(update={"epochs": 2, "head_metrics": False, "snapshot_every": 0}))
    assert h.epoch_metrics["test_acc"][1:, 0].tolist() == [0.49365234375, 0.4833984375]
    np.testing.assert_allclose(h.epoch_metrics["train_loss"][1:, 0], [0.7164837121963501, 0.7041908502578735],
                               rtol=1e-6)


def test_pal_data_stream():
    """pal's data: numpy default_rng(seed), the training set's integers first, the test set's next."""
    x, xt = streams.pal_data(PAL.task(), 2048, 2048, 7)
    rng = np.random.default_rng(7)
    assert np.array_equal(x.numpy(), rng.integers(0, 2, (2048, 12)))
    assert np.array_equal(xt.numpy(), rng.integers(0, 2, (2048, 12)))


# ----------------------------------------------------------------------------------------------- new options
@pytest.mark.parametrize("name", MLP_ACTIVATIONS)
def test_every_activation_trains(name):
    h = train(TrainConfig(activation=name, epochs=2, n_train=128, n_test=64, head_metrics=False, n_seeds=2))
    assert np.isfinite(h.epoch_metrics["train_loss"]).all()
    assert h.spec.activation == name


def test_dropout_masks_law_and_evaluation():
    """Dropout on the MLP's output: a fraction p of the entries zeroed, the rest scaled by 1/(1−p); evaluation
    runs without it (the record at epoch 0 equals the dropout-free model's)."""
    from attnlab.clustering.train import dropout_masks

    gens = [torch.Generator().manual_seed(s) for s in range(4)]
    m = dropout_masks(gens, 0.3, 2, 20_000, torch.zeros(()))
    assert torch.unique(m).tolist() == [0.0, pytest.approx(1 / 0.7)]
    assert abs((m == 0).float().mean().item() - 0.3) < 0.01
    cfg = TrainConfig(epochs=1, n_train=128, n_test=64, head_metrics=False, n_seeds=2)
    a, b = train(cfg.model_copy(update={"mlp_dropout": 0.5})), train(cfg)
    assert np.array_equal(a.epoch_metrics["train_loss"][0], b.epoch_metrics["train_loss"][0])
    assert not np.array_equal(a.epoch_metrics["train_loss"][1], b.epoch_metrics["train_loss"][1])


@pytest.mark.parametrize("overrides, key", [({"activation": "softmax"}, "activation"),
                                            ({"mlp_dropout": 1.0}, "mlp_dropout"),
                                            ({"streams": "pal", "q_init": "normal"}, "q_init"),
                                            ({"preset": "pal", "norm_gain": True}, "norm_gain"),
                                            ({"rms_eps": "both"}, "rms_eps")])
def test_new_option_errors_are_one_line(overrides, key):
    with pytest.raises(ConfigError) as e:
        from attnlab.core.config import resolve
        from attnlab.core.registry import get

        resolve(get("clustering.train").config, "quick", overrides)
    msg = str(e.value)
    assert f"key '{key}'" in msg and "\n" not in msg, msg


def test_attnlab_streams_keep_q_law_per_option():
    """The paper preset keeps its resolution q ~ N(0, 1); q_init='uniform' gives U(±1/sqrt(d)) in its streams too."""
    p = init_params(ModelSpec(q_init="uniform"), list(range(2000)), dtype=torch.float64)["q"].numpy().ravel()
    assert _ks(p, _uniform_cdf(1 / math.sqrt(2))) < 1.63 / math.sqrt(len(p))
    n = init_params(ModelSpec(), list(range(2000)), dtype=torch.float64)["q"].numpy().ravel()
    assert _ks(n, _normal_cdf) < 1.63 / math.sqrt(len(n))
    with pytest.raises(ConfigError, match="key 'activation'"):
        ModelSpec(activation="nope")
