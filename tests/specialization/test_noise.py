"""The SGD's counter-based data stream: the bits, the statistics, and independence from the chunking."""

import math

import numpy as np
import pytest
import torch

from attnlab.specialization.data import FlipSpike, SGDStream, noise, sample_spikes
from attnlab.specialization.train import simulate_sgd

torch.set_num_threads(1)
LAW = FlipSpike(2.0, 2.0)


def test_words_are_splitmix64_at_the_counter_of_each_token():
    """Every token against a pure-Python SplitMix64 at c = (t·N_b + i)·W + j (int64 wrap-around included)."""
    keys = [noise.seed_key(3), noise.seed_key(4)]
    # the reference is SplitMix64: its published first outputs from seed 0
    assert [noise.mix64(k * noise.GAMMA) for k in (1, 2, 3)] == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                                                0x06C45D188009454F]
    S, n, L, D, N_b, first = 2, 3, 5, 7, 10, 2
    W = noise.words(L, D)  # L·D = 35 is odd: the last word gives one normal
    for step in (0, 5):
        out = torch.empty(S, n, L, D)
        noise.fill_gaussian(out, noise.step_keys(keys, step, N_b, W), first, N_b, "splitmix64")
        flat = out.view(S, n, L * D).double().numpy()
        for s in range(S):
            for i in range(n):
                for j in range(W):
                    z = noise.mix64(keys[s] + ((step * N_b + first + i) * W + j) * noise.GAMMA)
                    angle = np.float32(z - 2**64 if z >= 2**63 else z) * np.float32(math.pi * 2.0**-63)
                    u1 = (np.float32(z & 0xFFFFFF) + np.float32(1)) * np.float32(2.0**-24)
                    r = np.sqrt(np.float32(-2) * np.log(u1))
                    assert abs(flat[s, i, 2 * j] - r * np.cos(angle)) < 2e-6
                    if 2 * j + 1 < L * D:
                        assert abs(flat[s, i, 2 * j + 1] - r * np.sin(angle)) < 2e-6


def test_mt19937_groups_are_randn_seeded_by_the_counter():
    """mt19937: group g's tokens are torch.randn from a generator seeded with the word at its first counter."""
    L, D, N_b, step = 4, 30, 50, 3
    key, W = noise.seed_key(8), noise.words(L, D)
    R = noise.group_size("mt19937", "cpu", L, D)
    assert R == 2**16 // (L * D)
    out = noise.fill_gaussian(torch.empty(1, N_b, L, D), noise.step_keys([key], step, N_b, W), 0, N_b, "mt19937")
    g = torch.Generator().manual_seed(noise.mix64(key + (step * N_b) * W * noise.GAMMA) >> 1)
    assert torch.equal(out[0, :R], torch.randn(min(R, N_b), L, D, generator=g))


@pytest.mark.parametrize("method", noise.METHODS)
def test_noise_is_standard_gaussian_and_uncorrelated(method):
    n, L, D = 400, 5, 100
    out = torch.empty(1, n, L, D)
    noise.fill_gaussian(out, noise.step_keys([noise.seed_key(0)], 7, n, noise.words(L, D)), 0, n, method)
    x = out.double().reshape(-1)
    N = x.numel()
    assert abs(x.mean()) < 5 / math.sqrt(N) and abs(x.var() - 1) < 5 * math.sqrt(2 / N)
    assert abs(float((x**4).mean()) - 3) < 0.05  # Gaussian kurtosis
    # tail: P(|z| > 3) = 0.0027
    assert abs(float((x.abs() > 3).double().mean()) - 0.0027) < 0.0005
    flat = out.view(n, L * D).double()
    # the cos and sin of the same words, and neighbouring sequences, are uncorrelated
    for a, b in ((flat[:, 0::2], flat[:, 1::2]), (flat[:-1], flat[1:])):
        c = float((a * b).mean())
        assert abs(c) < 5 / math.sqrt(a.numel()), c


@pytest.mark.parametrize("method, tile", [("splitmix64", 2**16), ("splitmix64", 150), ("splitmix64", 32),
                                          ("mt19937", 2**16), ("mt19937", 240)])
def test_stream_data_do_not_depend_on_the_chunk_nor_the_other_seeds(method, tile, monkeypatch):
    """One group; groups of 2 sequences cut by the chunks; a sequence's words over several tiles."""
    monkeypatch.setattr(noise, "TILE_WORDS", tile)
    monkeypatch.setattr(noise, "GROUP_FLOATS", tile)
    L, D, N_b = 4, 30, 50
    K_star = torch.stack([sample_spikes(2, D, generator=torch.Generator().manual_seed(s)) for s in (0, 1)])
    pair, alone = SGDStream(LAW, [5, 9], N_b, L, D, method=method), SGDStream(LAW, [9], N_b, L, D, method=method)
    eps, theta = pair.labels(3)
    whole = pair.tokens(torch.empty(2, N_b, L, D), 3, 0, eps, theta, K_star)
    buf = torch.empty(2, 7, L, D)
    pieces = [pair.tokens(buf[:, : min(7, N_b - lo)], 3, lo, eps, theta, K_star).clone() for lo in range(0, N_b, 7)]
    assert torch.equal(torch.cat(pieces, 1), whole)
    e1, t1 = alone.labels(3)
    assert torch.equal(e1[0], eps[1]) and torch.equal(t1[0], theta[1])
    assert torch.equal(alone.tokens(torch.empty(1, N_b, L, D), 3, 0, e1, t1, K_star[1:]), whole[1:])
    # the planted spike: y = X_ε carries θ K*
    assert not torch.equal(pair.labels(4)[1], theta)  # another step, other labels


@pytest.mark.parametrize("dtype, tol, method", [(torch.float64, 1e-12, "mt19937"), (torch.float32, 2e-5, "mt19937"),
                                                (torch.float64, 1e-12, "splitmix64")])
def test_trajectory_is_the_same_for_any_chunk(dtype, tol, method):
    """Chunks of 7, 83 and N_b = 200 sequences: the same data bit for bit, so the same trajectory up to the
    round-off of adding the batch's sums in another order (float64: 1e-12; float32: 2e-5 after 30 steps)."""
    kw = dict(H=2, L=4, D=200, activation="softmax1", tau_max=0.6, seeds=[0, 1], record_every=0.2, dtype=dtype,
              noise_method=method)
    runs = [simulate_sgd(LAW, chunk=c, **kw) for c in (7, 83, 200)]
    assert runs[0].trajectory.meta["chunk"] == 7 and runs[2].trajectory.meta["chunk"] == 200
    for other in runs[1:]:
        torch.testing.assert_close(other.K, runs[0].K, rtol=tol, atol=tol)
        for name in ("m", "q", "b", "v", "loss"):
            np.testing.assert_allclose(other.trajectory[name], runs[0].trajectory[name], rtol=tol, atol=tol)
    assert np.abs(runs[0].trajectory["m"][-1] - runs[0].trajectory["m"][0]).max() > 0.05  # it did move


FUSED_CHECK = """
import torch
from attnlab.specialization.data import FlipSpike
from attnlab.specialization.train import simulate_sgd
for H, L, act in ((2, 3, "softmax1"), (5, 3, "softmax1"), (2, 10, "softmax")):  # heads summed, heads as dots
    kw = dict(H=H, L=L, D=40, activation=act, tau_max=0.1, seeds=[0, 1], record_every=0.05, batch=9,
              noise_method="splitmix64")
    fused = simulate_sgd(FlipSpike(2.0, 2.0), fused_step=True, {device}**kw)
    ref = simulate_sgd(FlipSpike(2.0, 2.0), fused_step=False, chunk=4, {device}**kw)
    assert fused.trajectory.meta["fused_step"] and not ref.trajectory.meta["fused_step"]
    for name in ("m", "q", "b", "v", "loss"):
        d = abs(fused.trajectory[name] - ref.trajectory[name]).max()
        assert d < 1e-5, (H, L, name, d)
print("ok")
"""


def _run_fused_check(device: str, env: dict) -> None:
    import os
    import subprocess
    import sys

    code = FUSED_CHECK.format(device=f"device={device!r}, " if device != "cpu" else "")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env},
                         timeout=900)
    assert res.returncode == 0 and res.stdout.strip().endswith("ok"), res.stderr[-3000:]


def test_fused_step_matches_the_torch_step_in_the_triton_interpreter():
    """The Triton kernels (run by Triton's CPU interpreter) against the chunked torch step on the same stream."""
    pytest.importorskip("triton", reason="Triton is not installed (the CPU wheel of torch ships none)")
    _run_fused_check("cpu", {"TRITON_INTERPRET": "1"})


@pytest.mark.cuda
def test_fused_step_matches_the_torch_step_on_cuda():
    pytest.importorskip("triton", reason="Triton is not installed")
    _run_fused_check("cuda", {})
