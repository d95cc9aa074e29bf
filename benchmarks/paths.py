"""Benchmark of the paths study (never run by the tests; `attnlab bench paths`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/paths.json`` (default benchmarks/results):

1. The saddle point of the Markov task (P = 100, N = 10, τ = 0.01, σ² = 1, 4 paths, readout t* = 1) to
   max|∂S/∂U| < 1e-5 from the GP start:
   (a) the paper's algorithm (App. E, public code): Adam, lr 0.1, float64, full matrices symmetrised on use,
       the kernel K = Σ U C rebuilt each step by a 3-operand einsum over the path features, autograd
       gradient — implemented plainly here;
   (b) ours: Cholesky-parametrised L-BFGS with the analytic gradient over precomputed path-kernel blocks
       (block precomputation included in the time);
   time ratio, steps, and the agreement of the two U*.
2. One action-and-gradient evaluation at P = 1600 (4 paths) with precomputed blocks and Cholesky solves, against
   this machine's float64 torch.matmul throughput measured in the same run (fraction of the limit).
3. The full width sweep N ∈ {10, 20, 50, ..., 10⁴} (10 widths, warm-started) of the Markov task, timed.
4. Gibbs sweeps per second at N = 10 and N = 50 (2 chains batched, P = 100, P* = 1000).
"""

from __future__ import annotations

import torch

from attnlab.core import bench
from attnlab.paths import data, kernels, theory, train

THREADS = bench.threads()
F64 = torch.float64



def markov(P: int, P_test: int = 1000, seed: int = 0) -> kernels.Problem:
    G = torch.Generator
    return data.markov_problem(data.MarkovTask(), "all", P, P_test, data=G().manual_seed(seed),
                               test=G().manual_seed(seed + 1000), heads=G().manual_seed(seed + 1))


def adam_anchor(pb: kernels.Problem, N: float, tau: float, lr: float = 0.1, tol: float = 1e-5,
                max_steps: int = 50_000) -> tuple[list[torch.Tensor], int]:
    """App. E as the public code runs it: Adam on full matrices (symmetrised on use, no PD constraint), the
    kernel by einsum over the path features every step, autograd gradient, stop at max|∂S/∂U| < tol."""
    Hs, n, P, D, s2 = pb.Hs, pb.n, pb.P, pb.D, pb.sigma2
    alpha = P / N
    Ms = [u.clone().requires_grad_() for u in theory.gp_levels(Hs, s2)]
    opt = torch.optim.Adam(Ms, lr=lr)
    Hx = [*Hs, 1]
    eye = torch.eye(P, dtype=F64)
    for step in range(1, max_steps + 1):
        Us = [(M + M.T) / 2 for M in Ms]
        S = 0.0
        for ell, U in enumerate(Us):
            W = Us[ell + 1] if ell + 1 < len(Us) else torch.ones(1, 1, dtype=F64)
            m = W.shape[0]
            blocks = sum(U[h * m:(h + 1) * m, h * m:(h + 1) * m] for h in range(Hx[ell]))
            S = S + torch.trace(blocks @ torch.linalg.inv(W)) / s2 - torch.logdet(U) + Hx[ell] * torch.logdet(W)
        K = s2 / (n * D) * torch.einsum("ab,pad,qbd->pq", Us[0], pb.Xi, pb.Xi)
        A = K + tau * eye
        E = (torch.logdet(A) + pb.y @ torch.linalg.solve(A, pb.y)) / P
        S = S + alpha * E
        opt.zero_grad()
        S.backward()
        if max(float(M.grad.abs().max()) for M in Ms) < tol:
            return [((M + M.T) / 2).detach() for M in Ms], step - 1
        opt.step()
    return [((M + M.T) / 2).detach() for M in Ms], max_steps


def saddle_point() -> dict:
    pb = markov(100)
    N, tau, tol = 10.0, 0.01, 1e-5
    t_adam, (U_adam, steps) = bench.timed(lambda: adam_anchor(pb, N, tau, tol=tol))

    def ours():
        kern = kernels.PathKernels(pb.Xi, pb.sigma2)
        return theory.solve(theory.Action(kern, pb.y, tau, N, pb.Hs, pb.sigma2), tol=tol)

    ours()  # warm-up (first-call allocations, scipy import)
    t_ours, sp = bench.timed(ours, repeat=5)
    return {"workload": "Markov task saddle point, P=100, N=10, τ=0.01, σ²=1, Hs=[2,2], to max|∂S/∂U| < 1e-5",
            "paper_adam_s": t_adam, "paper_adam_steps": steps, "ours_s": t_ours, "ours_iterations": sp.n_iter,
            "ours_evaluations": sp.n_eval, "speedup": t_adam / t_ours, "ours_max_grad": sp.max_grad,
            "max_abs_diff_U": float((U_adam[0] - sp.U).abs().max()), "S": sp.S}


def iteration_at_1600() -> dict:
    pb = markov(1600, P_test=10)
    t_blocks, kern = bench.timed(lambda: kernels.PathKernels(pb.Xi, pb.sigma2, "blocks"))
    act = theory.Action(kern, pb.y, 0.01, 100.0, pb.Hs, pb.sigma2)
    par = theory.CholeskyParams(act.sizes)
    As = par.unpack(par.pack(theory.gp_levels(pb.Hs)))
    act(As)
    t_it, _ = bench.timed(lambda: par.grad(As, act(As).grads), repeat=10)
    P, m = pb.P, kern.iu.shape[1]
    flops = 4 * m * P * P + P**3  # K and ⟨M, C⟩ over the blocks, Cholesky (P³/3) and its inverse (2P³/3)
    a = torch.randn(P, P, dtype=F64)
    b = torch.randn(P, P, dtype=F64)
    a @ b
    t_mm, _ = bench.timed(lambda: a @ b, repeat=10)
    rate = 2 * P**3 / t_mm
    return {"workload": f"one action + analytic gradient, P={P}, 4 paths, {m} precomputed P×P blocks "
                        f"({m * P * P * 8 / 2**20:.0f} MiB), float64, {THREADS} thread(s)",
            "s_per_iteration": t_it, "block_precompute_s": t_blocks, "flops_per_iteration": flops,
            "matmul_float64_gflops": rate / 1e9, "fraction_of_matmul_throughput": flops / t_it / rate}


def width_sweep() -> dict:
    pb = markov(100)
    Ns = [10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000]
    theory.predict(pb, [10.0], 0.01)  # warm-up
    t, tr = bench.timed(lambda: theory.predict(pb, Ns, 0.01, tol=1e-8))
    return {"workload": "Markov task, 10 widths N = 10 … 10⁴ warm-started, τ = 0.01, tol 1e-8, plus predictions "
                        "on P* = 1000", "seconds": t, "solver_iterations": tr.meta["n_iter"],
            "accuracy": dict(zip(map(str, Ns), tr["accuracy"].tolist(), strict=True))}


def gibbs() -> dict:
    pb = markov(100)
    out = {"workload": "blocked Gibbs, 2 chains batched, P=100, P*=1000, all blocks + recording every sweep"}
    for N in (10, 50):
        s = train.GibbsSampler(pb, N, 0.01, 2, torch.Generator().manual_seed(0))
        s.run(0, 5)
        t, _ = bench.timed(lambda s=s: (s.sweep(), s.record()), repeat=100)
        out[f"sweeps_per_s_N{N}"] = 1 / t
    return out


if __name__ == "__main__":
    bench.main("paths", {"saddle": saddle_point, "p1600": iteration_at_1600, "sweep": width_sweep, "gibbs": gibbs},
               THREADS)
