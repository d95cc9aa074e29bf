"""Benchmark of the specialization study (never run by the tests; `attnlab bench specialization`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/specialization.json`` (default
benchmarks/results):

1. Theory, a Fig. 5 point (L=5, one-hot F=4 ν=10, H=8, B-softmax) to τ=1000:
   (a) at N_mc = 2000, the paper's algorithm (explicit Euler δ = 0.02 with autograd, one run at a time) and
       ours (adaptive RK23, hand-derived gradient, 5 seeds batched) both run to the end: time ratio per
       seed and the final losses;
   (b) at N_mc = 1e5, ours (one seed) runs to the end; the paper's time is 50 000 × its measured time per
       step (a full Euler run would take hours).
2. Simulation: tokens/s of the SGD step (D = 1000, N_b = D, L = 4, H = 2) as a fraction of this machine's
   torch.randn throughput for the same number of floats, measured in the same run.
4. The data stream: one SGD step's sequences (N_b = D, L = 10) drawn by the counter-based stream
   (``SGDStream``, chunk-independent; its two noise methods: mt19937 groups, the CPU default, and SplitMix64
   words + Box-Muller in torch ops, the GPU default) against the generator it replaced (``iter_sequences``:
   torch.randn from one mt19937 generator for the whole run, chunk-dependent), best of interleaved repeats
   (the machine is shared).
5. The paper's SGD step (Fig. 1: D = 10^4, N_b = D, L = 10, H = 2, softmax) on ``attnlab bench --device``:
   seconds per step of each available path (CPU: chunks with mt19937 noise; CUDA: one chunk with splitmix64
   noise in torch, and the fused Triton kernels where Triton is) against ``torch.randn`` of the same 10^9
   floats on that device in the same run (the machine's limit for writing them); ``fraction_of_randn`` =
   t_randn / t_step.
6. ``fused_tiles`` (CUDA with Triton): the fused step with heads as broadcast sums or padded dots and tile widths
   64-256, the Euler flow's step at N_mc = 10^5, and Fig. 1's paper-scale time estimated from both.
7. ``philox_step``: one SGD step on the ``philox`` stream (on CUDA: D = N_b = 10^4, L = 10, H = 2, softmax; on
   the CPU a tiny D = N_b = 64 that only checks the part runs): the fused one-kernel step (where Triton runs) and
   the torch step on the same stream, against ``torch.randn`` of the step's N_b·L·D floats on the same device;
   ``fraction_of_randn`` = t_randn / t_step.
3. The whole Fig. 5 sweep at quick scale (3 activations × 2 laws × 8 H × 5 seeds + the ν panel), timed.
"""

from __future__ import annotations

import torch

from attnlab.core import bench
from attnlab.core.rng import generator
from attnlab.specialization import theory, train
from attnlab.specialization.data import make_law

THREADS = bench.threads()



def theory_point() -> dict:
    law = make_law("onehot", 4, nu=10.0)
    L, H, act, tau = 5, 8, "bsoftmax", 1000.0
    res = {"workload": "Fig. 5 point: L=5, one-hot F=4 ν=10, H=8, B-softmax, τ=1000"}

    # (a) both to the end at N_mc = 2000
    t_euler, tr_e = bench.timed(lambda: theory.predict(act, law, L, H, [0.0, tau], n_mc=2000, solver="euler",
                                                       dt=0.02, grad="autograd"))
    _, tr_1 = bench.timed(lambda: theory.predict(act, law, L, H, [0.0, tau], n_mc=2000, solver="adaptive", dt=0.1))
    t_fast, tr_f = bench.timed(lambda: theory.predict(act, law, L, H, [0.0, tau], n_seeds=5, n_mc=2000,
                                                      solver="adaptive", dt=0.1))
    res["n_mc_2000"] = {
        "paper_euler_s_per_run": t_euler, "ours_s_per_run_5_seeds_batched": t_fast / 5,
        "speedup": t_euler / (t_fast / 5),
        "final_loss_euler": float(tr_e["loss"][-1, 0]), "final_loss_ours_same_init": float(tr_1["loss"][-1, 0]),
        "final_loss_ours_5_seeds": tr_f["loss"][-1].tolist(),
    }

    # (b) N_mc = 1e5: paper's Euler per step (extrapolated to 50 000 steps) vs ours to the end
    samples = theory.mc_samples(law, L, H, 100_000, seed=0)
    prep = samples.prepare()
    init = theory.theory_init(H, 4, seed=0)
    steps = 20
    t_step, _ = bench.timed(
        lambda: theory.autograd_loss_and_grad(init["m"], init["r"], init["b"], init["v"], prep, act), repeat=steps)
    t_ours, tr = bench.timed(lambda: theory.predict(act, law, L, H, [0.0, tau], n_seeds=1, n_mc=100_000,
                                                    solver="adaptive", dt=0.1))
    euler_total = t_step * tau / 0.02
    res["n_mc_1e5"] = {
        "paper_euler_s_per_step": t_step, "paper_euler_s_per_run_extrapolated": euler_total,
        "ours_s_per_run": t_ours, "speedup": euler_total / t_ours,
        "final_losses_ours": tr["loss"][-1].tolist(), "gradient_evaluations": tr.meta["n_grad"],
    }
    return res


def simulation() -> dict:
    D, L, H = 1000, 4, 2
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    steps, gamma = 50, 0.02

    def run(n_steps: int):
        return train.simulate_sgd(law, H=H, L=L, D=D, tau_max=n_steps * gamma, gamma=gamma,
                                  record_every=n_steps * gamma)

    run(2)  # warm-up: first-touch of buffers and lazy initialisation are not per-step costs
    t_sgd, _ = bench.timed(lambda: run(steps))
    t_sgd /= steps + 1  # the recorded final point draws one more batch
    n = D * L * D  # floats drawn per step (N_b = D sequences of L tokens of dimension D)
    buf = torch.empty(n)
    g = generator(0)
    t_rng, _ = bench.timed(lambda: torch.randn(n, generator=g, out=buf), repeat=10)
    return {
        "workload": f"SGD step, D={D}, N_b=D, L={L}, H={H}, softmax, float32, {THREADS} thread(s)",
        "s_per_step": t_sgd, "tokens_per_s": D * L / t_sgd, "randn_s_for_same_floats": t_rng,
        "fraction_of_randn_throughput": t_rng / t_sgd,
    }


def fig5_quick() -> dict:
    import tempfile

    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.runs import RunStore

    exp = get("specialization.fig5")
    cfg = resolve(exp.config, "quick")
    with tempfile.TemporaryDirectory() as d:
        t, _ = bench.timed(lambda: RunStore(d).run(exp, cfg))
    return {"workload": f"fig5 at quick scale: {len(cfg.activations)} activations × {len(cfg.laws)} laws × "
                        f"H ∈ {list(cfg.Hs)} × {cfg.seeds} seeds + ν ∈ {list(cfg.nus)}, N_mc={cfg.n_mc}, "
                        f"τ={cfg.tau_max}", "seconds": t, "limit_s": 1800}


def _best(fns, repeat: int) -> list[float]:
    """Best time of each function over ``repeat`` interleaved rounds (a shared machine's load hits both)."""
    times = [[] for _ in fns]
    for _ in range(repeat):
        for ts, fn in zip(times, fns, strict=True):
            ts.append(bench.timed(fn)[0])
    return [min(ts) for ts in times]


def paper_step(steps: int = 10) -> dict:
    from attnlab.specialization.train import fused

    dev = bench.device()
    D, L, H, gamma = 10_000, 10, 2, 0.02
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    floats = D * L * D
    piece = floats if dev.type == "cuda" else 2**22  # the CPU writes the same floats into a reused 16 MiB buffer
    buf = torch.empty(piece, device=dev)
    g = generator(0, dev)
    t_randn = min(bench.timed(lambda: [torch.randn(piece, generator=g, out=buf) for _ in range(floats // piece)])[0]
                  for _ in range(3))
    paths = {"chunks_mt19937": {"noise_method": "mt19937", "fused_step": False}} if dev.type == "cpu" else {
        "one_chunk_splitmix64": {"noise_method": "splitmix64", "fused_step": False}}
    if fused.available(dev, D):
        paths["fused_triton"] = {"noise_method": "splitmix64", "fused_step": True}
    rows = {}
    for name, kw in paths.items():
        def run(n_steps: int, kw=kw):
            return train.simulate_sgd(law, H=H, L=L, D=D, tau_max=n_steps * gamma, gamma=gamma, device=dev,
                                      record_taus=[0.0], **kw)

        try:
            run(1)  # warm-up: CUDA context, Triton's compilation, the allocator's first blocks
            t1, res = bench.timed(lambda: run(1))  # one update (+ the recorded batch at τ = 0) and the set-up
            t_many, _ = bench.timed(lambda: run(1 + steps))
        except Exception as exc:  # one path failing (a Triton build, say) leaves the others measured
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            continue
        per_step = (t_many - t1) / steps  # the set-up cancels
        rows[name] = {"s_per_step": per_step, "fraction_of_randn": t_randn / per_step,
                      "chunk": res.trajectory.meta["chunk"]}
    return {"workload": f"SGD step, D = N_b = {D}, L = {L}, H = {H}, softmax, float32 ({floats:.3g} floats per "
                        f"step), device {dev}, {THREADS} thread(s)", "randn_s_same_floats": t_randn, "paths": rows}


def fused_tiles(steps: int = 20) -> dict:
    """On CUDA with Triton: the fused step's seconds per step for heads as broadcast sums or padded dots and
    several tile widths, the Euler flow's seconds per step at N_mc = 10^5, and Fig. 1's paper-scale estimate."""
    import functools

    from attnlab.specialization.train import fused

    dev = bench.device()
    if not fused.available(dev, 10_000):
        return {"skipped": f"needs Triton and CUDA (ran on {dev})"}
    law, orig = make_law("flip", 2, nu1=2.0, nu2=2.0), fused.chunk_sums

    def run(n: int):
        return train.simulate_sgd(law, H=2, L=10, D=10_000, tau_max=n * 0.02, gamma=0.02, device=dev,
                                  record_taus=[0.0], fused_step=True, noise_method="splitmix64")

    rows = {}
    try:
        for sum_heads, block_d in ((4, 64), (4, 128), (0, 64), (4, 256)):
            fused.chunk_sums = functools.partial(orig, block_d=block_d, sum_heads=sum_heads)
            run(1)
            t1, _ = bench.timed(lambda: run(1))
            t_many, _ = bench.timed(lambda: run(1 + steps))
            rows[f"sum_heads{sum_heads}_bd{block_d}"] = (t_many - t1) / steps
    finally:
        fused.chunk_sums = orig

    def flow(n: int):
        return theory.predict("softmax", law, 10, 2, [0.0, n * 0.02], n_mc=100_000, solver="euler", dt=0.02,
                              device=dev)

    flow(2)
    t1, _ = bench.timed(lambda: flow(10))
    t_many, _ = bench.timed(lambda: flow(210))
    flow_step = (t_many - t1) / 200
    return {"workload": "fused SGD step at D = N_b = 10^4, L = 10, H = 2 (softmax, float32); the Euler flow at "
                        "N_mc = 10^5 (float64); Fig. 1 = 6 000 steps of each",
            "s_per_step": rows, "theory_euler_s_per_step_nmc1e5": flow_step,
            "fig1_paper_estimate_s": 6000 * (min(rows.values()) + flow_step)}


def philox_step(steps: int = 5) -> dict:
    from attnlab.specialization.data import philox, sample_spikes
    from attnlab.specialization.train import fused_philox
    from attnlab.specialization.train.sgd import _chunk_sums_gram

    dev = bench.device()
    D, L, H = (10_000, 10, 2) if dev.type == "cuda" else (64, 10, 2)
    n, floats = D, D * L * D
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    stream = philox.PhiloxStream(law, [0], n, L, D, device=dev)
    K_star = sample_spikes(2, D, generator=generator(0), device=dev)[None]
    K, b, v = torch.randn(1, H, D, device=dev) / D**0.5, torch.zeros(1, H, device=dev), torch.ones(1, device=dev)
    eps, theta = stream.labels(0)
    buf = torch.empty(floats, device=dev)
    g = generator(0, dev)
    t_randn = min(bench.timed(lambda: torch.randn(floats, generator=g, out=buf))[0] for _ in range(3))

    def torch_step(t=[0]):  # noqa: B006  (a new step every call)
        t[0] += 1
        X = stream.tokens(buf.view(1, n, L, D), t[0], 0, eps, theta, K_star)
        return _chunk_sums_gram(X, eps, K, b, v, "softmax")

    paths = {"torch_step": torch_step}
    if fused_philox.available(dev):
        paths["fused_kernel"] = lambda: fused_philox.step_sums(stream.philox_keys, 1, n, eps, theta, K_star, K, b,
                                                               v, "softmax", L)
    rows = {}
    for name, fn in paths.items():
        try:
            fn()  # warm-up: Triton's compilation, the allocator
            t = min(bench.timed(fn)[0] for _ in range(steps))
        except Exception as exc:  # one path failing leaves the others measured
            rows[name] = {"error": f"{type(exc).__name__}: {exc}"[:2000]}
            continue
        rows[name] = {"s_per_step": t, "fraction_of_randn": t_randn / t}
    return {"workload": f"one SGD step on the philox stream, D = N_b = {D}, L = {L}, H = {H}, softmax, float32 "
                        f"({floats:.3g} floats), device {dev}, {THREADS} thread(s); best of {steps}",
            "randn_s_same_floats": t_randn, "paths": rows}


def _stream_row(D: int, L: int) -> dict:
    from attnlab.specialization.data import SGDStream, iter_sequences, sample_spikes

    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    n = D
    K_star = sample_spikes(2, D, generator=generator(0))
    buf = torch.empty(1, n, L, D)
    g = generator(1)
    counters = {m: SGDStream(law, [1], n, L, D, method=m) for m in ("mt19937", "splitmix64")}

    def old():
        for _ in iter_sequences(law, K_star, n, L=L, generator=g, chunk=n, out=buf[0]):
            pass

    def new(method, step=[0]):  # noqa: B006  (a counter across calls: every call draws a new step)
        step[0] += 1
        eps, theta = counters[method].labels(step[0])
        counters[method].tokens(buf, step[0], 0, eps, theta, K_star[None])

    t_old, t_mt, t_sm = _best([old, lambda: new("mt19937"), lambda: new("splitmix64")], repeat=5)
    floats = n * L * D
    return {"workload": f"one step's sequences, N_b = D = {D}, L = {L} ({floats:.3g} floats), 1 seed, float32, "
                        f"{THREADS} thread(s)",
            "old_chunk_dependent_randn_s": t_old, "counter_mt19937_groups_s": t_mt, "counter_splitmix64_s": t_sm,
            "cost_ratio_mt19937_over_old": t_mt / t_old, "cost_ratio_splitmix64_over_old": t_sm / t_old,
            "ns_per_float": {"old": t_old / floats * 1e9, "mt19937": t_mt / floats * 1e9,
                             "splitmix64": t_sm / floats * 1e9}}


def stream() -> dict:
    return {"rows": [_stream_row(D, L) for D, L in ((500, 10), (2000, 10))]}


if __name__ == "__main__":
    bench.main("specialization", {"theory": theory_point, "simulation": simulation, "fig5": fig5_quick,
                                  "stream": stream, "paper_step": paper_step,
                                  "fused_tiles": fused_tiles, "philox_step": philox_step}, THREADS)
