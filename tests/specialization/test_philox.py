"""The ``philox`` token stream (Triton's tl.randn4x at each token's counter) and its fused Triton SGD step."""

import math
import os
import subprocess
import sys

import pytest
import torch

from attnlab.specialization.data import FlipSpike, philox, sample_spikes
from attnlab.specialization.train import fused_philox, simulate_sgd

torch.set_num_threads(1)
LAW = FlipSpike(2.0, 2.0)


def _interpret(code: str) -> str:
    """Run ``code`` in a fresh Python under Triton's CPU interpreter; its stdout."""
    pytest.importorskip("triton", reason="Triton is not installed (the CPU wheel of torch ships none)")
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": "1"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def test_philox_is_the_published_philox4x32_10():
    """Random123's known answer for Philox-4x32-10 at counter 0, key 0 (kat_vectors)."""
    zero = torch.zeros(1, dtype=torch.int64)
    words = [int(w) for w in philox.philox4x32(zero, zero, 0, 0)]
    assert words == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]


REFERENCE_CHECK = """
import torch, triton, triton.language as tl
from attnlab.specialization.data import philox

@triton.jit
def draw(seed, off_ptr, n_ptr, n4_ptr, w_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = i < n
    off = tl.load(off_ptr + i, mask=m, other=0)
    tl.store(n_ptr + i, tl.randn(seed, off), mask=m)
    a, b, c, d = tl.randn4x(seed, off)
    tl.store(n4_ptr + 4 * i, a, mask=m)
    tl.store(n4_ptr + 4 * i + 1, b, mask=m)
    tl.store(n4_ptr + 4 * i + 2, c, mask=m)
    tl.store(n4_ptr + 4 * i + 3, d, mask=m)
    w0, w1, w2, w3 = tl.randint4x(seed, off)
    tl.store(w_ptr + 4 * i, w0.to(tl.int64), mask=m)
    tl.store(w_ptr + 4 * i + 1, w1.to(tl.int64), mask=m)
    tl.store(w_ptr + 4 * i + 2, w2.to(tl.int64), mask=m)
    tl.store(w_ptr + 4 * i + 3, w3.to(tl.int64), mask=m)

n = 3000
off = torch.cat([torch.arange(1000), torch.randint(0, 2**62, (2000,), generator=torch.Generator().manual_seed(0))])
for seed in (0, 987654321, 2**40 + 3, 2**63 - 1):
    z, z4, w = torch.empty(n), torch.empty(n, 4), torch.empty(n, 4, dtype=torch.int64)
    draw[(n // 512 + 1,)](seed, off, z, z4, w, n, BLOCK=512)
    assert torch.equal(w, torch.stack(philox.randint4x(seed, off), -1)), seed
    ref4 = torch.stack(philox.randn4x(seed, off), -1)
    print(seed, float((z - philox.randn(seed, off)).abs().max()), float((z4 - ref4).abs().max()))
"""


def test_reference_equals_tl_randn_in_the_triton_interpreter():
    """Words bit for bit (tl.randint4x), normals (tl.randn, tl.randn4x) within 1e-6: a few float32 ulp of
    log/sin/cos at |z| ≤ 5.7; offsets up to 2^62 (both 32-bit halves of the counter), seeds over 2^32."""
    out = _interpret(REFERENCE_CHECK)
    diffs = [float(x) for line in out.strip().splitlines() for x in line.split()[1:]]
    assert len(diffs) == 8 and max(diffs) < 1e-6, out


def test_token_is_randn4x_at_its_counter_in_any_chunk_and_order():
    """Token (t, i, ℓ, d) = randn4x(key, ((t·N_b + i)·L + ℓ)·⌈D/4⌉ + ⌊d/4⌋)[d mod 4], whichever chunk (and in
    which order) it is drawn in and whatever seeds are drawn beside it; D = 30 is not a multiple of 4."""
    L, D, N_b, step = 3, 30, 20, 4
    K_star = torch.stack([sample_spikes(2, D, generator=torch.Generator().manual_seed(s)) for s in (0, 1)])
    pair, alone = philox.PhiloxStream(LAW, [5, 9], N_b, L, D), philox.PhiloxStream(LAW, [9], N_b, L, D)
    eps, theta = pair.labels(step)
    whole = pair.tokens(torch.empty(2, N_b, L, D), step, 0, eps, theta, K_star)
    buf = torch.empty(2, 7, L, D)
    pieces = {lo: pair.tokens(buf[:, : min(7, N_b - lo)], step, lo, eps, theta, K_star).clone()
              for lo in reversed(range(0, N_b, 7))}
    assert torch.equal(torch.cat([pieces[lo] for lo in sorted(pieces)], 1), whole)
    e1, t1 = alone.labels(step)
    assert torch.equal(alone.tokens(torch.empty(1, N_b, L, D), step, 0, e1, t1, K_star[1:]), whole[1:])
    noise = philox.fill(torch.empty(2, N_b, L, D), pair.philox_keys, step, 0, N_b)
    W = philox.words_per_row(D)
    for s, i, ell, d in ((0, 0, 0, 0), (1, 13, 2, 29), (0, 19, 1, 6), (1, 7, 0, 27)):
        off = torch.tensor([((step * N_b + i) * L + ell) * W + d // 4])
        assert torch.equal(noise[s, i, ell, d : d + 1], philox.randn4x(philox.seed_key([5, 9][s]), off)[d % 4])
    spike = (theta[..., None] * K_star[:, None]).sum(-2)  # θ K* planted at ε only
    planted = whole - noise
    rows = planted[torch.arange(2)[:, None], torch.arange(N_b), eps]
    torch.testing.assert_close(rows, spike, rtol=0, atol=1e-6)
    assert float(planted.abs().sum()) == pytest.approx(float(rows.abs().sum()), abs=1e-4)


def test_philox_noise_is_standard_gaussian_and_independent_across_counters():
    keys = [philox.seed_key(0), philox.seed_key(1)]
    n, L, D = 300, 5, 100
    out = philox.fill(torch.empty(2, n, L, D), keys, 7, 0, n)
    x = out.double().reshape(-1)
    N = x.numel()
    assert abs(float(x.mean())) < 5 / math.sqrt(N) and abs(float(x.var()) - 1) < 5 * math.sqrt(2 / N)
    assert abs(float((x**4).mean()) - 3) < 0.05  # Gaussian kurtosis
    assert abs(float((x.abs() > 3).double().mean()) - 0.0027) < 0.0005
    nxt = philox.fill(torch.empty(2, n, L, D), keys, 8, 0, n).double()
    o = out.double()
    # lanes of one word (d, d+1), neighbouring words, positions, sequences, steps and seeds: uncorrelated
    for a, b in ((o[..., 0::4], o[..., 1::4]), (o[..., 0::4], o[..., 2::4]), (o[..., :-4], o[..., 4:]),
                 (o[:, :, :-1], o[:, :, 1:]), (o[:, :-1], o[:, 1:]), (o, nxt), (o[0], o[1])):
        c = float((a * b).mean())
        assert abs(c) < 5 / math.sqrt(a.numel()), c


def test_counter_bound_covers_fig1_and_raises_beyond():
    """Fig. 1 at D = N_b = 10^4, L = 10, τ = 120 / γ = 0.02: 6001 · 10^4 · 10 · 2500 ≈ 2^40.4 offsets."""
    philox.check_counters(round(120 / 0.02) + 1, 10_000, 10, 10_000)
    with pytest.raises(ValueError, match="exceed 2\\^63"):
        philox.check_counters(2**36, 10_000, 10, 10_000)
    with pytest.raises(ValueError, match="exceed 2\\^63"):
        simulate_sgd(LAW, H=1, L=10, D=10_000, tau_max=2.0**41, gamma=1.0, record_taus=[0.0],
                     noise_method="philox")


def test_sgd_on_the_philox_stream_in_torch_does_not_depend_on_the_chunk(monkeypatch):
    monkeypatch.setenv("ATTNLAB_TRITON", "0")  # the fallback: no Triton, the torch step on the same stream
    assert not fused_philox.available("cpu")
    kw = dict(H=2, L=4, D=60, activation="softmax1", tau_max=0.2, seeds=[0, 1], record_every=0.1, batch=30,
              noise_method="philox", dtype=torch.float64)
    runs = [simulate_sgd(LAW, chunk=c, **kw) for c in (7, 30)]
    assert runs[0].trajectory.meta["noise"] == "philox" and not runs[0].trajectory.meta["fused_step"]
    torch.testing.assert_close(runs[0].K, runs[1].K, rtol=1e-12, atol=1e-12)
    other = simulate_sgd(LAW, chunk=30, **{**kw, "noise_method": "mt19937"})
    assert not torch.equal(other.K, runs[1].K)  # another stream, other tokens (same labels, same init)
    with pytest.raises(ValueError, match="fused_step needs Triton"):
        simulate_sgd(LAW, fused_step=True, **kw)
    with pytest.raises(ValueError, match="state comes from a run with other settings"):
        simulate_sgd(LAW, state=other.state, **{**kw, "tau_max": 0.3})


FUSED_CHECK = """
import torch
from attnlab.specialization.data import FlipSpike, philox, sample_spikes
from attnlab.specialization.train import fused_philox, simulate_sgd
from attnlab.specialization.train.sgd import _chunk_sums_gram
torch.manual_seed(0)
law, S, worst = FlipSpike(2.0, 2.0), 2, 0.0
for act, H, L, D, n in (("softmax", 1, 3, 64, 8), ("softmax1", 2, 5, 61, 6), ("bsoftmax", 3, 3, 40, 6),
                        ("softmax", 3, 5, 23, 5), ("softmax1", 3, 3, 32, 5), ("bsoftmax", 2, 5, 17, 5)):
    stream = philox.PhiloxStream(law, [0, 3], n, L, D)
    K_star = torch.stack([sample_spikes(2, D, generator=torch.Generator().manual_seed(i)) for i in range(S)])
    K, b, v = 3 * torch.randn(S, H, D) / D**0.5, 0.3 * torch.randn(S, H), 1 + 0.1 * torch.randn(S)
    eps, theta = stream.labels(5)
    X = stream.tokens(torch.empty(S, n, L, D), 5, 0, eps, theta, K_star)
    ref = _chunk_sums_gram(X, eps, K, b, v, act)
    got = fused_philox.step_sums(stream.philox_keys, 5, n, eps, theta, K_star, K, b, v, act, L, seq_block=4)
    for r, g, name in zip(ref, got, "lKbv"):
        assert (r is None) == (g is None), (act, name)
        if r is not None:
            err = float((r - g).abs().max() / r.abs().max())
            worst = max(worst, err)
            assert err < 2e-6, (act, H, L, D, name, err)
print("worst", worst)
"""

SGD_CHECK = """
import torch
from attnlab.specialization.data import FlipSpike
from attnlab.specialization.train import simulate_sgd
law = FlipSpike(2.0, 2.0)
kw = dict(H=2, L=3, D=24, activation="bsoftmax", tau_max=0.04, seeds=[0, 1], record_every=0.02, batch=6,
          noise_method="philox")
fused, ref = simulate_sgd(law, **kw), simulate_sgd(law, fused_step=False, chunk=4, **kw)
assert fused.trajectory.meta["fused_step"] and not ref.trajectory.meta["fused_step"]
for name in ("m", "q", "b", "loss"):
    d = abs(fused.trajectory[name] - ref.trajectory[name]).max()
    assert d < 1e-5, (name, d)
print("ok")
"""


def test_fused_philox_step_matches_the_torch_step_in_the_triton_interpreter():
    """One kernel per step (Triton's CPU interpreter) against the torch step on the same tokens: three activations,
    H ∈ {1, 2, 3}, L ∈ {3, 5}, D not a multiple of 4, blocks cut mid-batch; relative error < 2e-6."""
    out = _interpret(FUSED_CHECK)
    assert "worst" in out, out


def test_sgd_takes_the_fused_philox_step_where_triton_runs():
    """The default fused_step on the philox stream is the kernel (here in the interpreter); two SGD steps agree
    with the torch step (chunks of 4) to 1e-5."""
    assert _interpret(SGD_CHECK).strip().endswith("ok")
