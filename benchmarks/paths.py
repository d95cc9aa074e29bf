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
4b. ``ess``: effective samples per second of blocked Gibbs against HMC and NUTS (:mod:`attnlab.paths.train.hmc`) on the
   same problem at N = 10 and 50, τ = 0.01, for the entries of U and f at monitored test points (:func:`ess_rates`).
5. ``anchor``: against the paper's public code (tiberilor/attention-paths-interplay), run for real beside attnlab
   by :mod:`benchmarks.paths_anchor` (its doc says exactly how: the repository's own 4-path Markov script,
   unmodified, with its LOOP_RUN flags, float64, one thread). Located by ``$ATTNLAB_PATHS_ANCHOR`` (the
   repository's root) and ``$ATTNLAB_PATHS_ANCHOR_PYTHON`` (an interpreter with its requirements: torch, einops,
   numpy, jax, numpyro, arviz); the part is skipped, saying so, when they are absent. Cases: P = 100 and P = 400
   at N = 10, τ = 0.01 (the paper's setting, the public code's last-token readout), and P = 100 with per-layer
   widths (10, 20, 15) and variances (1.2, 0.8, 1.5, 0.9). Per case, in ``--rounds`` alternated rounds
   (``bench.against_public``, default 3): the public code's script (wall and CPU time, Adam steps), then, on the
   tokens and heads it drew, attnlab's tokens → U (path features, kernel blocks, L-BFGS to max|∂S/∂U| ≤ 1e-8,
   the public code stopping at 1e-5); the ratio per round, its median and range; the
   machine's limit is the float64 GEMM the features cannot avoid (the layer-1 random head, P·T × D × D), timed
   in the same run. Agreement: features, the action at the public code's U, U, test accuracy and predictor,
   the Hessian's eigenvalues. It also states U1[0,0] of attnlab's paper preset (readout t* = 1) on its own
   streams beside the public code's (last token) — the two defaults differ in the readout only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from attnlab.core import bench
from attnlab.core.rng import generator
from attnlab.paths import model
from attnlab.paths.data import markov as data
from attnlab.paths.theory import diagnostics, kernels, problems
from attnlab.paths.theory import saddle as theory
from attnlab.paths.train import gibbs as train
from attnlab.paths.train import hmc

THREADS = bench.threads()
F64 = torch.float64



def markov(P: int, P_test: int = 1000, seed: int = 0) -> kernels.Problem:
    return problems.markov_problem(data.MarkovTask(), "all", P, P_test, data=generator(seed),
                                   test=generator(seed + 1000), heads=generator(seed + 1))


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
        s = train.GibbsSampler(pb, N, 0.01, 2, generator(0))
        s.run(0, 5)
        t, _ = bench.timed(lambda s=s: (s.sweep(), s.record()), repeat=100)
        out[f"sweeps_per_s_N{N}"] = 1 / t
    return out


def ess_rates(N: int = 10, P: int = 100, P_test: int = 1000, tau: float = 0.01, chains: int = 4,
              burn_in: int = 500, samples: int = 1000, hmc_steps: int = 16, nuts_depth: int = 10,
              samplers: tuple[str, ...] = ("gibbs", "hmc", "nuts")) -> dict:
    """Effective samples per second of blocked Gibbs, HMC and NUTS on one problem, every transition kept (thin 1).

    ESS: Geyer's initial monotone sequence, chains combined (:func:`train.effective_sample_size`), per observable
    the experiments read — the entries of U and f(x*) at 8 monitored test points; reported as the minimum and the
    median over them. Seconds: the kept transitions with their recording (burn-in, and for HMC its step-size
    adaptation, timed apart)."""
    pb = markov(P, P_test)
    kern = kernels.PathKernels(pb.Xi)
    out = {}
    for name in samplers:
        g = generator(0)
        if name == "gibbs":
            s = train.GibbsSampler(pb, N, tau, chains, g, kern)
        else:
            s = hmc.HMCSampler(pb, N, tau, chains, g, kern, steps=hmc_steps, kernel=name, max_depth=nuts_depth)
            s.adapt_until = burn_in
        t0 = time.perf_counter()
        for _ in range(burn_in):
            s.sweep()
        t1 = time.perf_counter()
        for _ in range(samples):
            s.sweep()
            s.record()
        t2 = time.perf_counter()
        st = s.stats()
        ess = train.effective_sample_size(st._monitored())
        row = {"burn_in_s": t1 - t0, "sampling_s": t2 - t1, "ess_min": float(np.nanmin(ess)),
               "ess_median": float(np.nanmedian(ess)), "rhat_max": st.rhat(),
               "ess_per_s_min": float(np.nanmin(ess)) / (t2 - t1),
               "ess_per_s_median": float(np.nanmedian(ess)) / (t2 - t1)}
        if name != "gibbs":
            row.update(step_size=s.eps.tolist(), acceptance=s.acceptance().tolist(),
                       leapfrogs_per_transition=s.leapfrogs / chains / s.sweeps)
        out[name] = row
    for name in set(samplers) & {"hmc", "nuts"}:
        if "gibbs" in out:
            for q in ("min", "median"):
                out[f"ratio_{name}_over_gibbs_{q}"] = out[name][f"ess_per_s_{q}"] / out["gibbs"][f"ess_per_s_{q}"]
    return out


def sampler_ess() -> dict:
    """ESS/s of Gibbs vs HMC and NUTS on the Fig. 2c problem (P = 100, P* = 1000, τ = 0.01) at N = 10 and 50.

    ``$ATTNLAB_BENCH_ESS_SAMPLES`` (default 300) kept transitions per chain after 200 of burn-in, 4 chains. NUTS
    takes about 1.3 s (N = 10) and 4 s (N = 50) per transition on one thread (its trees reach ~900 leapfrog steps),
    so the default part runs about 45 minutes, nearly all of it NUTS."""
    n = int(os.environ.get("ATTNLAB_BENCH_ESS_SAMPLES", "300"))
    return {"workload": f"Markov task P=100, P*=1000, τ=0.01, 4 chains, burn-in 200, {n} kept transitions (thin 1); "
                        "HMC: 16 leapfrog steps; NUTS: ≤ 2^10 − 1; dual-averaging step size (target 0.8)",
            **{f"N{N}": ess_rates(N, burn_in=200, samples=n) for N in (10, 50)}}


ANCHOR_CASES = ((100, (10, 10, 10), (1.0, 1.0, 1.0, 1.0)), (400, (10, 10, 10), (1.0, 1.0, 1.0, 1.0)),
                (100, (10, 20, 15), (1.2, 0.8, 1.5, 0.9)))


def run_anchor(repo: str, python: str, P: int, widths, variances, tau: float = 0.01, P_test: int = 1000) -> dict:
    """The public code's run of one case (benchmarks/paths_anchor.py in its own interpreter), as arrays."""
    out = Path(tempfile.mkdtemp()) / "anchor.npz"
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "MKL_NUM_THREADS": str(THREADS)}
    subprocess.run([python, "-P", str(Path(__file__).with_name("paths_anchor.py")), repo, str(out), str(P),
                    " ".join(map(str, widths)), str(tau), " ".join(map(str, variances)), str(P_test)],
                   check=True, env=env, capture_output=True)
    return dict(np.load(out))


def tokens_to_U(z: dict):
    """attnlab from the public code's tokens and heads to U: path features, kernel blocks, L-BFGS to 1e-8."""
    F = torch.float64
    X, y = torch.as_tensor(z["X_train"], dtype=F), torch.as_tensor(z["y_train"], dtype=F)
    heads = [torch.as_tensor(z["heads1"], dtype=F), torch.as_tensor(z["heads2"], dtype=F)]
    widths, var, tau = tuple(z["widths"].tolist()), tuple(z["variances"].tolist()), float(z["tau"])
    Xi = model.path_features(X, heads, -1)
    kern = kernels.PathKernels(Xi, var[0])
    return Xi, kern, theory.solve(theory.Action(kern, y, tau, widths, (2, 2), variances=var), tol=1e-8)


def against_anchor(z: dict) -> dict:
    """How attnlab's result on the public code's tokens and heads agrees with the public code's, and the
    features' time against the machine's limit (timing of tokens → U: :func:`anchor_case`)."""
    F = torch.float64
    X, y = torch.as_tensor(z["X_train"], dtype=F), torch.as_tensor(z["y_train"], dtype=F)
    Xt, yt = torch.as_tensor(z["X_test"], dtype=F), torch.as_tensor(z["y_test"], dtype=F)
    heads = [torch.as_tensor(z["heads1"], dtype=F), torch.as_tensor(z["heads2"], dtype=F)]
    widths, var, tau, Hs = tuple(z["widths"].tolist()), tuple(z["variances"].tolist()), float(z["tau"]), (2, 2)
    t_feat = min(bench.timed(lambda: model.path_features(X, heads, -1))[0] for _ in range(3))
    Xi, kern, sp = tokens_to_U(z)
    act = theory.Action(kern, y, tau, widths, Hs, variances=var)
    U_anchor = [torch.as_tensor(z["U1"]), torch.as_tensor(z["U2"]), torch.tensor([[float(z["u"])]], dtype=F)]
    at_anchor = act.at(U_anchor)
    pr = kernels.predict(kern, sp.U, y, tau, model.path_features(Xt, heads, -1))
    eig = diagnostics.hessian_eigenvalues(act, sp.Us)
    P, T, D = X.shape
    a, b = torch.randn(P * T, D, dtype=F), torch.randn(D, D, dtype=F)
    t_gemm = min(bench.timed(lambda: a @ b, repeat=5)[0] for _ in range(3))
    return {"anchor_data_s": float(z["data_seconds"]), "ours_features_s": t_feat,
            "features_gemm_limit_s": t_gemm, "features_over_limit": t_feat / t_gemm,
            "agree_features_max_abs": float((Xi - torch.as_tensor(z["features"])).abs().max()),
            "agree_action_at_anchor_U": abs(float(at_anchor.S) - float(z["S"])),
            "our_max_grad_at_anchor_U": max(float(g.abs().max()) for g in at_anchor.grads),
            "agree_U_rel": float((sp.U - U_anchor[0]).abs().max() / U_anchor[0].abs().max()),
            "agree_U_abs": float((sp.U - U_anchor[0]).abs().max()), "U11_anchor": float(z["U1"][0, 0]),
            "U11_ours": float(sp.U[0, 0]), "accuracy_anchor": float(z["accuracy"]), "accuracy_ours": pr.accuracy(yt),
            "agree_test_mean_max_abs": float((pr.mean - torch.as_tensor(z["test_mean"])).abs().max()),
            "agree_hessian_eigs_rel": float(np.abs(np.sort(eig) - np.sort(z["hessian_eigs"])).max()
                                            / np.abs(z["hessian_eigs"]).max()),
            "hessian_min_eig": float(eig.min())}


def _commit(repo: str) -> str:
    res = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True)
    return res.stdout.strip() or "unknown (not a git checkout)"


def anchor_case(repo: str, python: str, P: int, widths, var) -> dict:
    """One case in alternated rounds (bench.against_public): the public code's script, then attnlab's tokens → U
    on the tokens and heads that round's public run drew (warmed up once, untimed, before the first round)."""
    last: dict = {}

    def public() -> dict:
        z = last["z"] = run_anchor(repo, python, P, widths, var)
        return {"wall_s": float(z["seconds"]), "cpu_s": float(z["cpu_seconds"]), "iterations": int(z["adam_steps"]),
                "threads": int(z["threads"]), "versions": {"python": str(z["python_version"]),
                                                          "torch": str(z["torch_version"])}}

    def ours() -> dict:
        if not last.get("warm"):
            last["warm"] = tokens_to_U(last["z"])
        t0, c0 = time.perf_counter(), time.process_time()
        _, _, sp = tokens_to_U(last["z"])
        return {"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "iterations": sp.n_eval,
                "threads": torch.get_num_threads()}

    def agreement(_pub: dict, _ours: dict) -> str:
        last["details"] = a = against_anchor(last["z"])
        return (f"features {a['agree_features_max_abs']:.0e}, action at its U {a['agree_action_at_anchor_U']:.0e}, "
                f"U {a['agree_U_rel']:.0e} relative, test accuracy {a['accuracy_anchor']:.3f} (public) / "
                f"{a['accuracy_ours']:.3f}, Hessian eigenvalues {a['agree_hessian_eigs_rel']:.0e} relative")

    default = len(set(widths)) == 1 and set(var) == {1.0}
    row = bench.against_public(
        f"P={P}" + ("" if default else " widths variances"),
        f"Markov task of Fig. 2c, the public code's tokens and heads, P={P}, widths {list(widths)}, σ² {list(var)}, "
        f"τ=0.01, last-token readout", public, ours, agreement=agreement,
        public_code={"repo": "tiberilor/attention-paths-interplay", "commit": _commit(repo),
                     "runs": "its 4-path Markov script, unmodified (data, heads, Adam lr 0.1 to max|∂S/∂U| < 1e-5); "
                             "iterations = Adam steps"},
        attnlab="path features, kernel blocks, L-BFGS to max|∂S/∂U| ≤ 1e-8; iterations = action evaluations")
    return {**row, "details": last["details"]}


def anchor() -> dict:
    repo, python = os.environ.get("ATTNLAB_PATHS_ANCHOR"), os.environ.get("ATTNLAB_PATHS_ANCHOR_PYTHON")
    if not repo or not Path(repo, "hidden_markov_chain_classification").is_dir() or not python:
        return {"skipped": "set ATTNLAB_PATHS_ANCHOR (attention-paths-interplay's root) and "
                           "ATTNLAB_PATHS_ANCHOR_PYTHON (a Python with its requirements) to run the public code"}
    out = {}
    for P, widths, var in ANCHOR_CASES:
        row = anchor_case(repo, python, P, widths, var)
        out[row["name"]] = row
        print(row["name"], row["ratio_wall"], row["agreement"], file=sys.stderr, flush=True)
    pb = markov(100)
    pb_last = problems.markov_problem(data.MarkovTask(), "all", 100, 10, data=generator(0),
                                      test=generator(1000), heads=generator(1),
                                      readout=-1)
    out["defaults"] = {"workload": "U1[0,0] at N = 10, P = 100: attnlab's paper preset (readout t* = 1, its own "
                                   "streams, seed 0) and the same streams read at the last token",
                       "paper_preset": float(theory.sweep(pb, [10.0], 0.01)[0].U[0, 0]),
                       "last_token": float(theory.sweep(pb_last, [10.0], 0.01)[0].U[0, 0])}
    return out


if __name__ == "__main__":
    bench.main("paths", {"saddle": saddle_point, "p1600": iteration_at_1600, "sweep": width_sweep, "gibbs": gibbs,
                         "ess": sampler_ess, "anchor": anchor}, THREADS)
