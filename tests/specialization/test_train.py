"""SGD of eqs. (5)-(6): gradients, chunking, seed batching, resume, recording, early-phase physics (Prop. III.3)."""

import numpy as np
import pytest
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.specialization.data import FlipSpike, make_law, sample_sequences, sample_spikes
from attnlab.specialization.train import batch_loss_and_grad, record_steps, simulate_sgd

torch.set_num_threads(1)
F64 = torch.float64
ACTS = ["softmax", "softmax1", "bsoftmax"]
LAW = FlipSpike(2.0, 2.0)


def _batch(S=2, n=24, L=4, D=40, H=3, dtype=F64):
    g = torch.Generator().manual_seed(0)
    ks = sample_spikes(2, D, generator=g, dtype=dtype)
    data = [sample_sequences(LAW, ks, n, L=L, generator=g, dtype=dtype) for _ in range(S)]
    X, y = torch.stack([d.X for d in data]), torch.stack([d.y for d in data])
    K = torch.randn(S, H, D, generator=g, dtype=dtype) * 0.5
    b, v = torch.randn(S, H, generator=g, dtype=dtype), 1 + 0.1 * torch.randn(S, generator=g, dtype=dtype)
    return X, y, K, b, v


@pytest.mark.parametrize("act", ACTS)
def test_gradient_analytic_equals_autograd_and_chunked_equals_unchunked(act):
    X, y, K, b, v = _batch()
    ref = batch_loss_and_grad(X, y, K, b, v, act, method="autograd")
    whole = batch_loss_and_grad(X, y, K, b, v, act)
    chunked = batch_loss_and_grad(X, y, K, b, v, act, chunk=7)
    frozen = {"softmax": (True, True), "softmax1": (False, False), "bsoftmax": (False, True)}[act]
    for i, name in enumerate(["loss", "K", "b", "v"]):
        if i >= 2 and frozen[i - 2]:  # activation ignores b / v: no gradient, parameter stays frozen
            assert ref[i] is None and whole[i] is None and chunked[i] is None, name
            continue
        torch.testing.assert_close(whole[i], ref[i], rtol=1e-10, atol=1e-12)
        torch.testing.assert_close(chunked[i], ref[i], rtol=1e-10, atol=1e-12)
    assert whole[1].abs().max() > 1e-3
    if act == "bsoftmax":  # invariance under b -> b + c: Σ_h ∂L/∂b_h = 0
        assert whole[2].sum(-1).abs().max() < 1e-12
    # chunked float32 accumulation stays close to float64
    g32 = batch_loss_and_grad(X.float(), y.float(), K.float(), b.float(), v.float(), act, chunk=5)
    torch.testing.assert_close(g32[1].double(), ref[1], rtol=1e-4, atol=1e-5)


def test_seed_alone_equals_seed_in_batch():
    kw = dict(H=2, L=4, D=48, activation="softmax1", tau_max=0.3, chunk=16, record_every=0.1)
    together = simulate_sgd(LAW, seeds=[3, 5, 7], **kw)
    alone = simulate_sgd(LAW, seeds=[5], **kw)
    for name in ("K", "b", "v", "K_star", "K0"):
        assert torch.equal(getattr(together, name)[1], getattr(alone, name)[0]), name
    for name in together.trajectory.names:
        np.testing.assert_array_equal(together.trajectory[name][:, 1], alone.trajectory[name][:, 0])
    # different seeds really differ
    assert not torch.equal(together.K[0], together.K[1])


@pytest.mark.parametrize("act", ["softmax", "bsoftmax"])
def test_resume_is_bit_identical(act):
    kw = dict(H=2, L=4, D=40, activation=act, gamma=0.05, seeds=[0, 1], chunk=15, record_every=0.1)
    saved = {}

    def on_step(step, state_fn):
        saved[step] = state_fn()

    full = simulate_sgd(LAW, tau_max=0.6, on_step=on_step, checkpoint_every=4, **kw)
    assert sorted(saved) == [4, 8, 12]
    for step in (4, 8, 12):
        resumed = simulate_sgd(LAW, tau_max=0.6, state=saved[step], **kw)
        for name in ("K", "b", "v", "K_star", "K0"):
            assert torch.equal(getattr(resumed, name), getattr(full, name)), (step, name)
        np.testing.assert_array_equal(resumed.trajectory.time, full.trajectory.time)
        for name in full.trajectory.names:
            np.testing.assert_array_equal(resumed.trajectory[name], full.trajectory[name])
    # extending a finished run from its final state equals one longer run
    short = simulate_sgd(LAW, tau_max=0.3, **kw)
    extended = simulate_sgd(LAW, tau_max=0.6, state=short.state, **kw)
    assert torch.equal(extended.K, full.K)
    np.testing.assert_array_equal(extended.trajectory["loss"], full.trajectory["loss"])
    # a state from other settings is refused; another chunk is the same run
    with pytest.raises(ValueError, match="other settings"):
        simulate_sgd(LAW, tau_max=0.6, state=saved[4], **{**kw, "batch": 41})
    other = simulate_sgd(LAW, tau_max=0.6, state=saved[4], **{**kw, "chunk": 16})
    torch.testing.assert_close(other.K, full.K, rtol=1e-5, atol=1e-6)


def test_recording_shapes_progress_and_frozen_parameters():
    calls = []
    res = simulate_sgd(
        make_law("gaussian", 3, nu1=3.0, nu2=1.0),
        H=4, L=3, D=30, activation="bsoftmax", tau_max=0.2, gamma=0.02, seeds=[1, 2],
        record_taus=[0.0, 0.1, 0.2], progress=lambda done, total: calls.append((done, total)),
    )  # fmt: skip
    tr = res.trajectory
    assert isinstance(tr, Trajectory) and tr.time_name == "tau" and tr.source == "simulation"
    np.testing.assert_allclose(tr.time, [0.0, 0.1, 0.2])
    shapes = {"m": (3, 2, 4, 3), "q": (3, 2, 4, 4), "p": (3, 2, 3, 3), "rr": (3, 2, 4, 4)}
    shapes.update({"b": (3, 2, 4), "v": (3, 2), "loss": (3, 2)})
    assert {k: tr[k].shape for k in shapes} == shapes
    assert calls == [(t, 10) for t in range(1, 11)]
    assert res.K.shape == (2, 4, 30) and res.K_star.shape == (2, 3, 30)
    # recorded values agree with the final tensors; B-softmax: Σ_h b_h = 0 and v frozen (eq. (4))
    np.testing.assert_allclose(tr["b"][-1], res.b.double().numpy())
    np.testing.assert_allclose(tr["m"][-1], (res.K.double() @ res.K_star.double().mT).numpy())
    assert np.abs(tr["b"][-1]).max() > 1e-4 and np.abs(tr["b"].sum(-1)).max() < 1e-6
    assert (tr["v"] == 1).all()
    assert record_steps(1.0, 0.02, record_every=0.5) == [0, 25, 50]
    with pytest.raises(ValueError, match="record_taus"):
        simulate_sgd(LAW, H=2, L=3, D=20, tau_max=0.1, record_taus=[0.5])


def test_sgd_unspecialized_phase_aligns_with_mean():
    """Prop. III.3 at small D: the loss decreases and every head aligns with E θ = (√ν1, 0)."""
    res = simulate_sgd(LAW, H=2, L=5, D=300, activation="softmax", tau_max=4.0, seeds=[0], record_every=1.0)
    tr = res.trajectory
    loss, m = tr["loss"][:, 0], tr["m"][:, 0]  # (T,), (T, H, F)
    assert loss[0] > 0.75 and loss[-1] < loss[0] - 0.15
    assert (m[-1, :, 0] - m[0, :, 0] > 0.3).all()  # m_h1 grows along the mean direction
    cos = m[-1, :, 0] / np.linalg.norm(m[-1], axis=-1)
    assert (cos > 0.9).all()
    assert np.abs(m[-1, 0, 1] - m[-1, 1, 1]) < 0.15  # not yet specialized
    assert (tr["b"] == 0).all() and (tr["v"] == 1).all()  # softmax: b, v frozen


def test_softmax1_initial_rates_match_reduced_gradient():
    """Lemma A.4, SGD side: the initial batch loss and dv/dτ equal Ẽ and −∂_v Ẽ of the reduced loss (10),
    evaluated in the exact Gaussian-column form χ_{:,ℓ} ~ N(δ_{ℓε} mθ, q) at the run's own m(0), q(0).

    (At η = 1, r ≈ I, ∂_v Ẽ > 0, so v first *decreases*: the r = 0 signs of (A18)-(A19) do not carry over.)
    """
    from attnlab.specialization.model.activations import softmax1
    from attnlab.specialization.model.attention import symsqrt

    res = simulate_sgd(LAW, H=2, L=5, D=500, activation="softmax1", tau_max=0.06, batch=2000, seeds=[0, 1])
    tr = res.trajectory
    g = torch.Generator().manual_seed(0)
    xi = torch.randn(100_000, 2, 5, generator=g, dtype=F64)
    theta = LAW.sample(100_000, generator=g, dtype=F64)
    for s in range(2):
        m, q = torch.from_numpy(tr["m"][0, s]), torch.from_numpy(tr["q"][0, s])
        chi = torch.einsum("hk,nkl->nhl", symsqrt(q), xi)
        chi[:, :, 0] += theta @ m.T
        v = torch.tensor(1.0, dtype=F64, requires_grad=True)
        w = softmax1(chi, torch.zeros(2, dtype=F64), v).mean(-2)
        loss_red = ((w**2).sum(-1) - 2 * w[:, 0] + 1).mean()
        (grad_v,) = torch.autograd.grad(loss_red, v)
        assert abs(tr["loss"][0, s] - loss_red.item()) < 0.025
        rate = (tr["v"][-1, s] - 1) / 0.06
        assert grad_v.item() > 0.02 and abs(rate + grad_v.item()) < 0.015, (rate, grad_v.item())
    assert (tr["b"][-1] != 0).all()


def test_gram_chunk_sums_equal_the_direct_ones():
    """The one-pass Gram form used by simulate_sgd equals the direct analytic sums (y = X_ε)."""
    from attnlab.specialization.train.sgd import _chunk_sums, _chunk_sums_gram

    g = torch.Generator().manual_seed(3)
    S, n, L, D, H = 2, 16, 5, 40, 3
    X = torch.randn(S, n, L, D, generator=g, dtype=torch.float64)
    eps = torch.randint(L, (S, n), generator=g)
    y = X[torch.arange(S)[:, None], torch.arange(n)[None], eps]
    K = torch.randn(S, H, D, generator=g, dtype=torch.float64) / D**0.5
    b = torch.randn(S, H, generator=g, dtype=torch.float64)
    v = torch.rand(S, generator=g, dtype=torch.float64) + 0.5
    for act in ("softmax", "softmax1", "bsoftmax"):
        direct = _chunk_sums(X, y, K, b, v, act)
        gram = _chunk_sums_gram(X, eps, K, b, v, act)
        for a, c in zip(direct, gram, strict=True):
            assert (a is None) == (c is None)
            if a is not None:
                torch.testing.assert_close(a, c, rtol=1e-10, atol=1e-12)
