"""Benchmark of the signal study (never run by the tests; `attnlab bench signal`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/signal.json`` (default benchmarks/results):

1. Trainability diagram (Fig. 1c): 60 layers on a 200 × 200 (β, α_SA) grid, ReLU, asymptotic theory.
   Ours: one broadcast tensor computation per layer (``diagram.trainability``). Baseline: the paper's algorithm
   written plainly — for each grid point, iterate Eq. 19 with scalar ``math`` for 60 layers — timed on a
   40 × 40 sub-grid and scaled by the number of points (phases checked equal on the sub-grid).
2. α_c(L) for 7 depths × 3 ε: our grid refinement (all 21 thresholds per pass, three passes) vs a per-(L, ε)
   scalar bisection loop (44 halvings, plain ``math``).
3. Depth propagation simulation: (a) Fig. 1d quick size, d = 128, H = 2, T = 64, L = 24, 3 α_SA × 4 inits × 4
   sequences; (b) the paper's 10 inits × 10 sequences at d = 32, T = 32, L = 60. Ours: ``train.simulate`` (all
   networks × sequences in one batched computation, weights drawn block by block). Baseline: a plain loop over
   (α, init, sequence) through per-layer ``nn.Linear`` modules. Reported:
   time ratio and the achieved GFLOP/s of ours as a fraction of this machine's ``torch.matmul`` throughput
   (1024 × 1024 float32) measured in the same run.
"""

from __future__ import annotations

import math

import torch

from attnlab.core import bench
from attnlab.core.rng import generator
from attnlab.signal import train
from attnlab.signal.arch import Architecture
from attnlab.signal.theory import diagram

THREADS = bench.threads()



# -- the paper's algorithm, plainly: scalar Eq. 13 → 16 → B.22 → 19 per point ----------------------------------


def _block_scalar(rho: float, beta: float, a_sa: float, a_mlp: float, sv2: float, sw2: float, sb2: float) -> float:
    if rho >= 1:
        return 1.0
    bc = math.sqrt(2 / (1 - rho))
    qsa = max(0.0, 1 - bc / beta)
    num = sv2 * rho + sb2 + a_sa**2 * rho
    den = sv2 * (rho + (1 - rho) * qsa) + sb2 + a_sa**2
    r0 = num / den if den > 0 else 1.0
    q1 = sw2 + sb2
    c1 = min(1.0, max(-1.0, (sw2 * r0 + sb2) / q1))
    f = (math.sqrt(1 - c1 * c1) + c1 * (math.pi - math.acos(c1))) / math.pi
    q2, p2 = sw2 * q1 / 2 + sb2, sw2 * q1 / 2 * f + sb2
    return min(1.0, max(0.0, (p2 + a_mlp**2 * r0) / (q2 + a_mlp**2)))


def _phase_scalar(beta, alpha, L, eps, arch) -> int:
    if beta >= math.sqrt(2):
        return 2
    rho = 0.0
    for _ in range(L):
        rho = _block_scalar(rho, beta, alpha, arch.alpha_mlp, arch.sigma_v2, arch.sigma_w2, arch.sigma_b2)
    return 1 if rho >= 1 - eps else 0


def trainability() -> dict:
    arch = Architecture(beta=0.1, L=60)
    n, L, eps = 200, 60, 1e-2
    betas = torch.logspace(-2, math.log10(5), n, dtype=torch.float64)
    alphas = torch.linspace(0, 10, n, dtype=torch.float64)
    diagram.trainability(arch, betas[:4], alphas[:4], L=2)  # warm-up
    t_ours, d = bench.timed(lambda: diagram.trainability(arch, betas, alphas, L=L, eps=eps), repeat=3)
    sub = 40
    bi, ai = range(0, n, n // sub), range(0, n, n // sub)
    t_sub, phases = bench.timed(lambda: [[_phase_scalar(float(betas[i]), float(alphas[j]), L, eps, arch) for i in bi]
                                         for j in ai])
    same = all(phases[jj][ii] == int(d["phase"][j, i]) for jj, j in enumerate(ai) for ii, i in enumerate(bi))
    t_loop = t_sub * (n * n) / (len(bi) * len(ai))
    return {"workload": f"Fig. 1c diagram: {n}×{n} (β, α_SA), L = {L}, ReLU, asymptotic theory",
            "ours_s": t_ours, "plain_loop_s_extrapolated": t_loop, "plain_loop_subgrid_points": len(bi) * len(ai),
            "speedup": t_loop / t_ours, "phases_agree_on_subgrid": same}


def alpha_c() -> dict:
    arch = Architecture(beta=0.1)
    Ls, eps = [6, 12, 24, 48, 60, 96, 200], [1e-1, 1e-2, 1e-3]
    t_ours, ac = bench.timed(lambda: diagram.alpha_c(arch, Ls, eps, rho0=0.05))

    def plain():
        out = []
        for L in Ls:
            for e in eps:
                lo, hi = 0.0, 1e4
                for _ in range(44):
                    mid = 0.5 * (lo + hi)
                    rho = 0.05
                    for _ in range(L):
                        rho = _block_scalar(rho, 0.1, mid, 1.0, 0.2, 0.2, 4e-4)
                    lo, hi = (lo, mid) if rho < 1 - e else (mid, hi)
                out.append(0.5 * (lo + hi))
        return out

    t_loop, ref = bench.timed(plain)
    err = max(abs(float(a) - b) for a, b in zip(ac.flatten(), ref, strict=True))
    return {"workload": f"α_c(L) for L ∈ {Ls} × ε ∈ {eps} (to ~1e-6 relative)", "ours_s": t_ours,
            "plain_loop_s": t_loop, "speedup": t_loop / t_ours, "max_abs_difference": err}


def _matmul_gflops(n: int = 1024, repeat: int = 10) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.matmul(a, b)
    t, _ = bench.timed(lambda: torch.matmul(a, b), repeat)
    return 2 * n**3 / t / 1e9


def _plain_simulation(arch: Architecture, alphas, n_inits: int, n_seqs: int) -> float:
    """The per-network, per-sequence loop a notebook would write (nn.Linear per layer, one sequence at a time)."""
    nn = torch.nn
    g = generator(0)
    d, T, H = arch.d, arch.T, arch.H
    dk = d // H
    out = []
    for alpha in alphas:
        for _ in range(n_inits):
            layers = []
            for _ in range(arch.L):
                q, k, v = (nn.Linear(d, d, bias=b) for b in (False, False, True))
                w1, w2 = nn.Linear(d, arch.ff), nn.Linear(arch.ff, d)
                with torch.no_grad():
                    for lin, std in ((q, arch.qk_std), (k, arch.qk_std), (v, math.sqrt(arch.sigma_v2 / d)),
                                     (w1, math.sqrt(arch.sigma_w2 / d)), (w2, math.sqrt(arch.sigma_w2 / arch.ff))):
                        lin.weight.normal_(0, std, generator=g)
                        if lin.bias is not None:
                            lin.bias.normal_(0, math.sqrt(arch.sigma_b2), generator=g)
                layers.append((q, k, v, w1, w2))
            for _ in range(n_seqs):
                x = torch.randn(T, d, generator=g)
                x = x * math.sqrt(d) / x.norm(dim=-1, keepdim=True)
                with torch.no_grad():
                    for q, k, v, w1, w2 in layers:
                        Q, K, V = (f(x).reshape(T, H, dk).transpose(0, 1) for f in (q, k, v))
                        A = torch.softmax(Q @ K.transpose(-1, -2) / math.sqrt(dk), -1)
                        h = alpha * x + (A @ V).transpose(0, 1).reshape(T, d)
                        h = h * math.sqrt(d) / h.norm(dim=-1, keepdim=True)
                        y = arch.alpha_mlp * h + w2(torch.relu(w1(h)))
                        x = y * math.sqrt(d) / y.norm(dim=-1, keepdim=True)
                xn = x / x.norm(dim=-1, keepdim=True)
                out.append(float((xn.sum(0).pow(2).sum() - T) / (T * (T - 1))))
    return len(out)


def _simulation(arch: Architecture, alphas, n_inits: int, n_seqs: int, peak: float) -> dict:
    train.simulate(arch, n_inits=1, n_seqs=1, L=1)  # warm-up
    t_ours, sim = bench.timed(lambda: train.simulate(arch, n_inits=n_inits, n_seqs=n_seqs, alphas=alphas,
                                                     gen=generator(0)))
    t_plain, _ = bench.timed(lambda: _plain_simulation(arch, alphas, n_inits, n_seqs))
    flops = 2 * sim.meta["flops"]  # multiply-adds → FLOPs
    ours = flops / t_ours / 1e9
    return {"workload": f"depth simulation: d={arch.d}, H={arch.H}, T={arch.T}, L={arch.L}, {len(alphas)} α_SA × "
                        f"{n_inits} inits × {n_seqs} sequences, float32, {THREADS} thread(s)",
            "ours_s": t_ours, "plain_loop_s": t_plain, "speedup": t_plain / t_ours, "gflop": flops / 1e9,
            "ours_gflop_per_s": ours, "matmul_peak_gflop_per_s": peak, "fraction_of_matmul_peak": ours / peak}


def simulation() -> dict:
    """Fig. 1d quick size (matmul-bound per sequence) and the paper's 10 × 10 averaging at small width, where a
    per-network loop is dominated by per-layer overhead."""
    peak = _matmul_gflops()
    return {"fig1d_quick": _simulation(Architecture(d=128, H=2, T=64, L=24, beta=0.025), [1.0, 2.0, 4.0], 4, 4, peak),
            "many_small": _simulation(Architecture(d=32, H=1, T=32, L=60, beta=0.1), [1.0, 2.0, 4.0], 10, 10, peak)}


if __name__ == "__main__":
    bench.main("signal", {"trainability": trainability, "alpha_c": alpha_c, "simulation": simulation}, THREADS)
