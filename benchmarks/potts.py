"""Benchmark of the potts study (never run by the tests; `attnlab bench potts`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/potts.json`` (default benchmarks/results):

1. Gibbs sampling of the `cpu_fig2` model (L = C = 20, ER(0.2) J, Gaussian U, β = 1): chain-sweeps per second of
   the vectorised sampler (1000 chains, chromatic order, incremental fields) against the paper's algorithm written
   plainly — one chain, cyclic site order, the conditional (5) recomputed from the current state at every update
   (numpy) — and against the vectorised sampler running one and 30 chains; the time to sample the `cpu_fig2`
   train and test sets (30 chains, 21 800 + 8 600 sweeps).
2. MLM training of factored attention (M = 3000, batch 100, Adam): training sequences per second of 16 models
   stacked in one computation against the same 16 models trained one after the other (autograd, one model at a time),
   and the closed-form loss-and-gradient of the L-BFGS objective against autograd.
3. The machine's limit, measured in the same run: the FLOP rate of the stacked training step, counting the dense
   products that eq. (4) defines (A·s, (A s)·Vᵀ and their backward; the code does A·s as a scatter-add), as a
   fraction of torch.matmul's throughput on one large float32 product.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core import bench
from attnlab.core.rng import generator
from attnlab.potts.data.potts import PottsSpec
from attnlab.potts.data.sampler import gibbs
from attnlab.potts.data.sets import sample_dataset
from attnlab.potts.model import factored_logits, factored_loss_grad, mlm_loss
from attnlab.potts.train.mlm import Optim, init_params, model_generators

THREADS = bench.threads()



def plain_gibbs(J: np.ndarray, U: np.ndarray, beta: float, sweeps: int, rng: np.random.Generator) -> np.ndarray:
    """The paper's sampler written plainly: one chain, sites 0..L-1 in turn, eq. (5) from the current state."""
    L, C = J.shape[0], U.shape[0]
    c = rng.integers(0, C, L)
    for _ in range(sweeps):
        for i in range(L):
            field = beta * (J[i] @ U[c])  # (C,): β Σ_j J_ij U[c_j, α]
            p = np.exp(field - field.max())
            c[i] = min(int(np.searchsorted(np.cumsum(p), rng.random() * p.sum())), C - 1)
    return c


def sampling() -> dict:
    spec = PottsSpec()
    potts = spec.model()
    J, U = potts.J.numpy(), potts.U.numpy()
    plain_sweeps = 200
    t_plain, _ = bench.timed(lambda: plain_gibbs(J, U, 1.0, plain_sweeps, np.random.default_rng(0)))
    n_chains, sweeps = 1000, 200
    g = generator(0)
    gibbs(potts, n_chains, 1, burn_in=5, thin=1, generator=g)  # warm-up
    t_many, _ = bench.timed(lambda: gibbs(potts, n_chains, 1, burn_in=sweeps, thin=1, generator=g))
    t_one, _ = bench.timed(lambda: gibbs(potts, 1, 1, burn_in=sweeps, thin=1, generator=g))
    t_seq, _ = bench.timed(lambda: gibbs(potts, n_chains, 1, burn_in=sweeps, thin=1, generator=g, order="sequential"))
    t30, _ = bench.timed(lambda: gibbs(potts, 30, 1, burn_in=sweeps, thin=1, generator=g))
    t_data, _ = bench.timed(lambda: sample_dataset(spec))  # the cpu_fig2 data set: train + test sequences
    plain = plain_sweeps / t_plain
    ours = n_chains * sweeps / t_many
    return {
        "workload": f"Gibbs sweeps of cpu_fig2 (L = C = 20, β = 1); ours: {n_chains} chains × {sweeps} sweeps",
        "plain_one_chain_sweeps_per_s": plain, "ours_chain_sweeps_per_s": ours,
        "ours_sequential_order_chain_sweeps_per_s": n_chains * sweeps / t_seq,
        "ours_single_chain_sweeps_per_s": sweeps / t_one, "speedup_vs_plain": ours / plain,
        "ours_30_chains_chain_sweeps_per_s": 30 * sweeps / t30,
        "cpu_fig2_data_set_seconds": t_data,
    }


def training() -> dict:
    spec = PottsSpec()
    M, L, C, B, S, steps = 3000, spec.L, spec.C, 100, 16, 30
    g = generator(0)
    train = torch.randint(0, C, (M, L), generator=g)
    opt = Optim()

    def stacked() -> None:
        gens = [model_generators(s)[0] for s in range(S)]
        params = {k: v.requires_grad_(True) for k, v in init_params("factored", S, L, C, gens, torch.float32).items()}
        o = torch.optim.Adam(list(params.values()), lr=opt.lr)
        for _ in range(steps):
            idx = torch.randint(0, M, (S, B), generator=g)
            c = train[idx]
            loss = mlm_loss(factored_logits(c, params["W"], params["V"]), c)
            o.zero_grad()
            loss.sum().backward()
            o.step()

    def one_at_a_time() -> None:
        for s in range(S):
            gens = [model_generators(s)[0]]
            p = init_params("factored", 1, L, C, gens, torch.float32)
            W, V = p["W"][0].requires_grad_(True), p["V"][0].requires_grad_(True)
            o = torch.optim.Adam([W, V], lr=opt.lr)
            for _ in range(steps):
                c = train[torch.randint(0, M, (B,), generator=g)]
                loss = mlm_loss(factored_logits(c, W, V), c)
                o.zero_grad()
                loss.backward()
                o.step()

    stacked()
    t_stacked, _ = bench.timed(stacked)
    t_loop, _ = bench.timed(one_at_a_time)
    seqs = S * steps * B
    # matmul FLOPs of one stacked step: forward Y = A s (L·L·nC), h = Y Vᵀ (nL·C·C); backward ≈ 2× forward
    flops_step = 3 * 2 * S * B * (L * L * C + L * C * C)
    n = 1024
    a, b = torch.randn(n, n, generator=g), torch.randn(n, n, generator=g)
    t_mm, _ = bench.timed(lambda: a @ b, repeat=10)
    matmul_flops = 2 * n**3 / t_mm
    achieved = flops_step * steps / t_stacked

    # L-BFGS objective: closed-form gradient vs autograd, 20 problems of M = 400, float64
    c = train[:400].repeat(20, 1, 1)
    W = torch.randn(20, L, L, generator=g, dtype=torch.float64)
    V = torch.randn(20, C, C, generator=g, dtype=torch.float64)

    def autograd_eval():
        w, v = W.clone().requires_grad_(True), V.clone().requires_grad_(True)
        loss = mlm_loss(factored_logits(c, w, v), c)
        return torch.autograd.grad(loss.sum(), (w, v))

    t_closed, _ = bench.timed(lambda: factored_loss_grad(c, W, V), repeat=5)  # the L-BFGS objective
    t_auto, _ = bench.timed(autograd_eval, repeat=5)
    return {
        "workload": f"factored attention, Adam, batch {B} sequences of L = {L}, C = {C}; {S} models × {steps} steps",
        "stacked_sequences_per_s": seqs / t_stacked, "one_at_a_time_sequences_per_s": seqs / t_loop,
        "speedup_stacked": t_loop / t_stacked,
        "matmul_gflops": matmul_flops / 1e9, "training_step_gflops": achieved / 1e9,
        "fraction_of_matmul_throughput": achieved / matmul_flops,
        "pl_objective": {"workload": "loss + gradient of 20 factored PL problems, M = 400, float64",
                         "closed_form_s": t_closed, "autograd_s": t_auto, "speedup": t_auto / t_closed},
    }


if __name__ == "__main__":
    bench.main("potts", {"sampling": sampling, "training": training}, THREADS)
