"""Benchmark of the clustering study (never run by the tests; `attnlab bench clustering`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/clustering.json`` (default benchmarks/results):

1. ``vs_pal`` — against the paper's public code itself. Baseline: facebookresearch/pal's own training script
   (``projects/visualization/train.py``, ``run_from_config``, the configuration of its ``grid`` command: d = 2,
   MLP width 32 with biases, 3 token rows, Adam 3e-3, batch 32, 2048 training and 2048 test sentences, its
   per-epoch record of train and test loss and accuracy), run unmodified from an external checkout in a
   subprocess: ``$ATTNLAB_PAL`` = the checkout's path (skipped, with the reason, when unset), interpreted by
   ``$ATTNLAB_PAL_PYTHON`` (default this Python; it needs torch, numpy and tqdm), on the CPU with the same torch
   thread count as attnlab. pal trains 5 seeds one after another (seeds 0-4), ``BENCH_EPOCHS`` epochs (default
   400). attnlab trains ``preset="pal"`` for 100 seeds (0-99) in one vectorised run, with its default record
   (mini-batch loss and 9 gradient norms every step; full-batch losses, accuracies, gradient norms, head
   monitors and a parameter snapshot every epoch) and with a record like pal's (per-epoch losses, accuracies
   and gradient norms only), in ``--rounds`` alternated rounds (``bench.against_public``, default 3: pal, attnlab,
   attnlab with pal's record, pal, …), each round's wall and CPU seconds kept, the ratio per round, its median
   and range. Target: 100 attnlab seeds in at most the time of pal's 5 (ratio ≥ 1). Wall and CPU seconds are
   both reported: on a shared machine CPU time is the fairer clock. Agreement: ``preset="pal"``
   uses pal's random streams, so seeds 0-4 are the same runs: initial weights, data and batch order equal bit
   for bit; the per-epoch train losses and final test accuracies are compared.
2. ``success`` — the runs' outcome against pal's: the fraction of seeds whose final test accuracy reaches 0.98
   after ``BENCH_EPOCHS`` epochs, pal's script for ``BENCH_PAL_SEEDS`` seeds (default 20) against attnlab's 100
   (Boschloo's and Fisher's exact two-sample tests; on the seeds both ran, which start from the same draws, the
   paired verdicts and McNemar's exact test).
3. ``in_house`` — the earlier baseline, kept as a second row and named as such: a plain one-seed-at-a-time
   PyTorch loop written here (nn.Module of the paper's model, DataLoader, torch.optim.Adam, test accuracy every
   epoch) for 5 seeds against attnlab's paper preset for 100 seeds; it is not the public code.
4. ``profile`` — where a default-record epoch of 100 seeds spends its CPU time (64 steps, the per-epoch record,
   the batch orders) and the machine's limit for the step, which is bound by dispatch, not FLOPs: the operators
   one vectorised Adam step dispatches (top-level aten calls that are not views, counted by the profiler) times
   the CPU time of one tiny kernel measured in the same run.
5. ``gpu_step`` — on CUDA only (``--device cuda``): ms per Adam step at 2 000 and 10 000 seeds, eager and as a
   captured epoch, and how many seeds of the default run fit in the device's free memory (``memory.py``).
6. ``fig14`` — Fig. 14 at paper scale: CPU time per epoch of 250 seeds at p = 3 and p = 10, extrapolated to the
   17 bars × 250 runs × (1000 or 2000) epochs of the figure.
7. ``resume`` — a run resumed from its quarter-way state against the same run uninterrupted (CPU seconds of the
   last three quarters, target ratio ≤ 1), and the CPU seconds per epoch by quarter of the long run.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.train.loop import train
from attnlab.core import bench
from attnlab.core.rng import generator

THREADS = bench.threads()
EPOCHS = int(os.environ.get("BENCH_EPOCHS", "400"))

# The public code's own script run in a fresh interpreter (pal_driver.py, passed as ``-c`` text)
PAL_DRIVER = (Path(__file__).parent / "pal_driver.py").read_text()
PAL_GRID = {"vocab_size": 2, "seq_length": 12, "sparsity_index": 5, "nb_data": 2048, "batch_size": 32, "lr": 3e-3,
            "mlp_lr_discount": None, "emb_dim": 2, "nb_emb": 3, "ffn_dim": 32, "ffn_bias": True, "ffn_dropout": 0,
            "activation": "gelu"}


def run_pal(seeds: list[int], epochs: int) -> list[dict]:
    """The public code's training script for ``seeds`` (one process, one seed after another)."""
    args = {"pal": os.environ["ATTNLAB_PAL"], "seeds": seeds, "epochs": epochs, "threads": THREADS,
            "config": PAL_GRID}
    python = os.environ.get("ATTNLAB_PAL_PYTHON", sys.executable)
    env = {**os.environ, "OMP_NUM_THREADS": str(THREADS), "MKL_NUM_THREADS": str(THREADS)}
    out = subprocess.run([python, "-c", PAL_DRIVER, json.dumps(args)], capture_output=True, text=True, env=env,
                         check=True).stdout
    return json.loads(next(line for line in out.splitlines() if line.startswith("PAL-RESULT "))[11:])


def _timed_train(cfg: TrainConfig):
    t0, c0 = time.perf_counter(), time.process_time()
    hist = train(cfg)
    return time.perf_counter() - t0, time.process_time() - c0, hist


def _commit(repo: str) -> str:
    res = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True, text=True)
    return res.stdout.strip() or "unknown (not a git checkout)"


def vs_pal() -> dict:
    pal_root = os.environ.get("ATTNLAB_PAL")
    if not pal_root or not (Path(pal_root) / "projects" / "visualization" / "train.py").exists():
        return {"skipped": "set ATTNLAB_PAL to a facebookresearch/pal checkout (and ATTNLAB_PAL_PYTHON to an "
                           "interpreter with its dependencies) to time the public code"}
    run_pal([0], 1)                                                   # warm-up of both sides
    train(TrainConfig(preset="pal", n_seeds=100, epochs=1))
    full = TrainConfig(preset="pal", n_seeds=100, epochs=EPOCHS)      # the study's default record
    lean = full.model_copy(update={"step_log_every": 0, "head_metrics": False, "snapshot_every": 0})
    steps = EPOCHS * full.steps_per_epoch
    last: dict = {}

    def public() -> dict:
        pal = last["pal"] = run_pal(list(range(5)), EPOCHS)
        return {"wall_s": sum(r["wall_s"] for r in pal), "cpu_s": sum(r["cpu_s"] for r in pal),
                "iterations": 5 * steps, "threads": pal[0]["threads"],
                "versions": {"python": pal[0]["python"], "torch": pal[0]["torch"]}}

    def ours(cfg: TrainConfig = full) -> dict:
        wall, cpu, hist = _timed_train(cfg)
        if cfg is full:  # the agreement reads the default record's run
            last["hist"] = hist
        return {"wall_s": wall, "cpu_s": cpu, "iterations": 100 * steps, "threads": torch.get_num_threads()}

    def agreement(_pub: dict, _ours: dict) -> str:
        pal, hist = last["pal"], last["hist"]
        ours_acc = hist.epoch_metrics["test_acc"][-1].astype(float)
        pal_acc = np.array([r["test_acc"][-1] for r in pal])
        first = [float(abs(r["train_loss"][0] - hist.epoch_metrics["train_loss"][1, r["seed"]])) for r in pal]
        last["details"] = {
            "agreement_seeds": [r["seed"] for r in pal],
            "agreement_final_test_acc_pal": pal_acc.tolist(), "agreement_final_test_acc_ours": ours_acc[:5].tolist(),
            "agreement_same_final_test_acc": int((pal_acc == ours_acc[:5]).sum()),
            "agreement_max_abs_train_loss_diff_per_seed": [
                float(np.abs(np.array(r["train_loss"]) - hist.epoch_metrics["train_loss"][1:, r["seed"]]).max())
                for r in pal],
            "agreement_first_epoch_train_loss_diff": first,
            "success_ge_0.98_pal_5": int((pal_acc >= 0.98).sum()),
            "success_ge_0.98_ours_100": int((ours_acc >= 0.98).sum())}
        d = last["details"]
        return (f"seeds 0-4 start from the same weights, data and batches; first-epoch train loss within "
                f"{max(first):.0e}; final test accuracy equal for {d['agreement_same_final_test_acc']} of 5; "
                f"success (test accuracy ≥ 0.98) {d['success_ge_0.98_pal_5']}/5 (pal) vs "
                f"{d['success_ge_0.98_ours_100']}/100 (attnlab)")

    row = bench.against_public(
        "grid", f"pal's grid configuration (d=2, h=32, 3 token rows, batch 32, Adam 3e-3), {EPOCHS} epochs = {steps} "
                f"Adam steps a seed; pal: 5 seeds one after another, attnlab: 100 seeds in one run; {THREADS} torch "
                f"thread(s) each",
        public, ours, variants={"attnlab with a record like pal's": lambda: ours(lean)}, agreement=agreement,
        public_code={"repo": "facebookresearch/pal", "commit": _commit(pal_root),
                     "runs": "projects/visualization/train.py (run_from_config), unmodified, seeds 0-4 one after "
                             "another, with its per-epoch record; iterations = seeds × Adam steps"},
        attnlab="preset='pal', 100 seeds in one vectorised run with the default record (every step's loss and 9 "
                "gradient norms; every epoch's full-batch metrics, head monitors and a snapshot); iterations = "
                "seeds × Adam steps")
    return {**row, "details": last["details"]}


def success_stats(pal_acc: np.ndarray, ours_acc: np.ndarray, threshold: float = 0.98) -> dict:
    """Success (final test accuracy ≥ threshold) of pal's seeds 0..n-1 against attnlab's seeds 0..m-1: Boschloo's
    and Fisher's exact two-sample tests, and on the seeds both ran (the same streams) the paired agreement with
    McNemar's exact test on the discordant seeds."""
    from scipy import stats

    a, b = pal_acc >= threshold, ours_acc >= threshold
    table = [[int(a.sum()), int((~a).sum())], [int(b.sum()), int((~b).sum())]]
    k = min(len(a), len(b))
    only_pal, only_ours = int((a[:k] & ~b[:k]).sum()), int((~a[:k] & b[:k]).sum())
    mcnemar = stats.binomtest(only_pal, only_pal + only_ours, 0.5).pvalue if only_pal + only_ours else 1.0
    return {"threshold": threshold, "pal": f"{table[0][0]}/{len(a)}", "ours": f"{table[1][0]}/{len(b)}",
            "boschloo_p_two_sided": float(stats.boschloo_exact(table).pvalue),
            "fisher_p_two_sided": float(stats.fisher_exact(table)[1]),
            "paired_seeds": k, "paired_same_verdict": int((a[:k] == b[:k]).sum()), "paired_pal_only": only_pal,
            "paired_ours_only": only_ours, "mcnemar_exact_p": float(mcnemar)}


def success() -> dict:
    """Success at ``BENCH_EPOCHS`` (default 400) epochs: pal's own script for ``BENCH_PAL_SEEDS`` seeds (default 20)
    against ``preset="pal"`` for 100 seeds (the pal-like record)."""
    if not os.environ.get("ATTNLAB_PAL"):
        return {"skipped": "set ATTNLAB_PAL to a facebookresearch/pal checkout"}
    n = int(os.environ.get("BENCH_PAL_SEEDS", "20"))
    pal = run_pal(list(range(n)), EPOCHS)
    hist = train(TrainConfig(preset="pal", n_seeds=100, epochs=EPOCHS, step_log_every=0, head_metrics=False,
                             snapshot_every=0))
    return {"workload": f"pal's grid configuration, {EPOCHS} epochs; pal seeds 0-{n - 1}, attnlab seeds 0-99",
            **success_stats(np.array([r["test_acc"][-1] for r in pal]), hist.epoch_metrics["test_acc"][-1])}


# ----------------------------------------------------------------------------------------------- in-house loop
class InHouseNet(nn.Module):
    """The paper's model written the usual way, one model per loop (an in-house baseline, not the public code)."""

    def __init__(self, p: int = 2, N: int = 12, d: int = 2, h: int = 8) -> None:
        super().__init__()
        self.E, self.P = nn.Embedding(p, d), nn.Embedding(N, d)
        self.q = nn.Parameter(torch.randn(d))
        self.V, self.W, self.U = nn.Linear(d, d, bias=False), nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.E(x) + self.P.weight
        z = e / e.norm(dim=-1, keepdim=True)
        a = torch.softmax(z @ self.q / math.sqrt(z.shape[-1]), -1)
        xi = self.V((a.unsqueeze(-1) * z).sum(1))
        return (xi + self.U(F.gelu(self.W(xi / xi.norm(dim=-1, keepdim=True))))) @ self.E.weight.T


def in_house_seed(seed: int, epochs: int) -> tuple[float, float]:
    g = generator(seed)
    x, xt = torch.randint(0, 2, (2048, 12), generator=g), torch.randint(0, 2, (2048, 12), generator=g)
    y, yt = x[:, :5].sum(1) % 2, xt[:, :5].sum(1) % 2
    torch.manual_seed(seed)
    model = InHouseNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    c0 = time.process_time()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            acc = (model(xt).argmax(-1) == yt).float().mean().item()
    return time.process_time() - c0, acc


def in_house() -> dict:
    epochs = int(os.environ.get("BENCH_INHOUSE_EPOCHS", "20"))
    in_house_seed(0, 1)
    train(TrainConfig(n_seeds=100, epochs=1))
    t_loop = sum(in_house_seed(s, epochs)[0] for s in range(5))
    c0 = time.process_time()
    train(TrainConfig(n_seeds=100, epochs=epochs))
    t_ours = time.process_time() - c0
    return {"workload": f"IN-HOUSE baseline (a plain loop written in benchmarks/clustering.py, not pal): the paper "
                        f"preset (h = 8, 2 token rows), {epochs} epochs, CPU seconds scaled to 1000 epochs",
            "in_house_loop_5_seeds_cpu_s": t_loop * 1000 / epochs, "ours_100_seeds_cpu_s": t_ours * 1000 / epochs,
            "ratio_loop5_over_ours100": t_loop / t_ours, "per_seed_speedup": (t_loop / 5) / (t_ours / 100)}


# ----------------------------------------------------------------------------------------------- machine limit
def _cpu_seconds(fn, repeat: int) -> float:
    """CPU seconds per call of ``fn`` (after one warm-up call): the fair clock on a shared machine."""
    fn()
    c0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - c0) / repeat


def _stepper(S: int, device: torch.device | str = "cpu"):
    """A pal-preset Stepper of S seeds and one random batch (one-hot tokens and labels) on ``device``."""
    from attnlab.clustering.train import streams
    from attnlab.clustering.train.runner import Stepper
    from attnlab.clustering.train.step import Adam, Flat, one_hot

    cfg = TrainConfig(preset="pal", n_seeds=S)
    params, _ = streams.initial("pal", cfg.spec(), cfg.seeds(), torch.float32, device)
    flat = Flat(params)
    g = generator(0)
    xb = one_hot(torch.randint(0, 2, (S, 12, 32), generator=g), 2, torch.float32).to(device)
    yb = one_hot(torch.randint(0, 2, (S, 32), generator=g), 3, torch.float32).to(device)
    return Stepper(flat, Adam(flat, 3e-3, 1.0, (0.9, 0.999), 1e-8, 0.0), cfg.spec(), None), xb, yb


def profile() -> dict:
    """Where a default-record epoch of 100 pal-preset seeds spends its CPU time, and the dispatch floor of a step."""
    from torch.profiler import profile as torch_profile

    from attnlab.clustering.train.loop import _leaves, epoch_draws, evaluate, make_data

    stepper, xb, yb = _stepper(100)
    step_s = _cpu_seconds(lambda: stepper(xb, yb, None), 200)
    with torch_profile() as prof:
        stepper(xb, yb, None)
    meta = {"view", "transpose", "unsqueeze", "squeeze", "slice", "select", "expand", "t", "permute", "detach",
            "alias", "as_strided"}                                    # metadata only: no kernel of their own
    kernels = sum(1 for e in prof.events() if e.name.startswith("aten::") and e.name[6:] not in meta
                  and (e.cpu_parent is None or not e.cpu_parent.name.startswith("aten::")))
    a, b = torch.zeros(1), torch.zeros(1)
    latency = _cpu_seconds(lambda: torch.add(a, b), 100_000)
    cfg = TrainConfig(preset="pal", n_seeds=100)
    data = make_data(cfg.task(), cfg, cfg.seeds())
    record_s = _cpu_seconds(lambda: evaluate(_leaves(stepper.flat), data, cfg.spec(), cfg.task(), True), 5)
    gens = [generator(s) for s in range(100)]
    draws_s = _cpu_seconds(lambda: epoch_draws(cfg, gens, [], cfg.spec()), 5)
    return {"workload": "pal preset, 100 seeds: one Adam step (closed-form step, packed Adam, gradient norms), the "
                        "default per-epoch record, one epoch's batch orders; CPU seconds",
            "step_ms_cpu": step_s * 1e3, "step_operators": kernels, "tiny_kernel_us": latency * 1e6,
            "dispatch_floor_ms_per_step": kernels * latency * 1e3, "floor_over_step": kernels * latency / step_s,
            "record_ms_per_epoch": record_s * 1e3, "batch_orders_ms_per_epoch": draws_s * 1e3,
            "epoch_ms_estimate": 64 * step_s * 1e3 + record_s * 1e3 + draws_s * 1e3}


def gpu_step() -> dict:
    """On CUDA (``attnlab bench clustering --device cuda``): ms per Adam step of the pal preset at 2 000 and 10 000
    seeds, eager and as a captured epoch (``EpochRunner``), and the seeds that fit in the device's memory."""
    from attnlab.clustering.memory import max_seeds
    from attnlab.clustering.train.runner import EpochRunner
    from attnlab.core.memory import free_bytes

    device = bench.device()
    if device.type != "cuda":
        return {"skipped": f"needs --device cuda (ran on {device})"}
    out = {"device": torch.cuda.get_device_name(device)}
    for S in (2000, 10_000):
        stepper, xb, yb = _stepper(S, device)
        xs, ys = xb.repeat(1, 1, 1, 64), yb.repeat(1, 1, 64)                # one epoch: 64 batches of 32
        for graph in (False, True):
            key = f"ms_per_step_{S}_seeds_{'graph' if graph else 'eager'}"
            try:
                runner = EpochRunner(stepper, 64, 32, graph)
                runner.run(xs, ys, None)
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(5):
                    runner.run(xs, ys, None)
                torch.cuda.synchronize()
            except Exception as exc:  # a capture that fails leaves the eager rows measured
                out[key] = f"{type(exc).__name__}: {exc}"[:2000]
                continue
            out[key] = (time.perf_counter() - t0) / 320 * 1e3
    free = free_bytes(device)
    out["free_gb"] = free / 1e9
    out["seeds_fitting_default_run"] = max_seeds(TrainConfig(device="cuda"), free)
    out["seeds_fitting_pal_preset"] = max_seeds(TrainConfig(preset="pal", device="cuda"), free)
    return out


def fig14() -> dict:
    """CPU seconds per epoch of one Fig. 14 bar (250 seeds, the figure's record: full-batch metrics every 50
    epochs): one epoch of the 64 Adam steps and batch orders, plus 1/50 of one evaluation."""
    from attnlab.clustering.train import streams
    from attnlab.clustering.train.loop import _leaves, epoch_draws, evaluate, make_data
    from attnlab.clustering.train.runner import EpochRunner, Stepper
    from attnlab.clustering.train.step import Adam, Flat, one_hot

    out = {}
    for p in (3, 10):
        cfg = TrainConfig(p=p, n_seeds=250, step_log_every=0, log_every=50, head_metrics=False, snapshot_every=0)
        task, spec, seeds = cfg.task(), cfg.spec(), cfg.seeds()
        data = make_data(task, cfg, seeds)
        params, gens = streams.initial("attnlab", spec, seeds, torch.float32, "cpu")
        flat = Flat(params)
        runner = EpochRunner(Stepper(flat, Adam(flat, 3e-3, 1.0, (0.9, 0.999), 1e-8, 0.0), spec, None), 64, 32, False)
        ix = torch.arange(250)[:, None]

        def epoch(runner=runner, data=data, gens=gens, cfg=cfg, spec=spec, ix=ix, p=p):
            order, _ = epoch_draws(cfg, gens, [], spec)
            runner.run(one_hot(data.x_train[ix, order].transpose(1, 2), p, torch.float32),
                       one_hot(data.y_train[ix, order], spec.n_emb, torch.float32), None)

        t_epoch = _cpu_seconds(epoch, 2)
        t_eval = _cpu_seconds(lambda flat=flat, data=data, spec=spec, task=task: evaluate(
            _leaves(flat), data, spec, task, False), 1)
        out[f"cpu_s_per_epoch_250_seeds_p{p}"] = t_epoch + t_eval / cfg.log_every
        out[f"cpu_s_per_evaluation_250_seeds_p{p}"] = t_eval
    mean_epoch = (out["cpu_s_per_epoch_250_seeds_p3"] + out["cpu_s_per_epoch_250_seeds_p10"]) / 2
    epochs = 9 * 1000 + 8 * 2000  # 9 from-scratch bars, 8 finetune bars (1000 on p=2 + 1000 on p')
    out["fig14_paper_scale_cpu_hours_one_process"] = mean_epoch * epochs / 3600
    out["note"] = "17 bars × 250 runs; each bar is one vectorised 250-seed run; dask spreads bars over machines"
    return out


def resume() -> dict:
    """A resumed run against the same run uninterrupted, and the time per epoch over a long run. One
    ``BENCH_RESUME_EPOCHS``-epoch run (default 2000; 16 seeds, the default record) takes a checkpoint's copy of its
    state every 100 epochs, as the store does every 30 s, and keeps the one at a quarter of the run; the same
    configuration then resumes from that state and runs the last three quarters. Reported: CPU seconds per epoch
    by quarter of the uninterrupted run (constant if nothing grows with the run's length) and the resumed part's
    CPU seconds against the uninterrupted run's over the same epochs (target: ratio ≤ 1)."""
    epochs = int(os.environ.get("BENCH_RESUME_EPOCHS", "2000"))
    cfg = TrainConfig(k=5, n_seeds=16, epochs=epochs)
    quarter, marks, saved = epochs // 4, [], {}

    def on_epoch(done: int, state_fn) -> None:
        if done % 100 == 0 or done == quarter:
            state = state_fn()
            if done == quarter:
                saved["state"] = state
        marks.append(time.process_time())

    start = time.process_time()
    full = train(cfg, on_epoch=on_epoch)
    per_epoch = np.diff([start, *marks])
    resumed_marks: list[float] = []
    start = time.process_time()
    again = train(cfg, state=saved["state"], on_epoch=lambda done, state_fn: resumed_marks.append(time.process_time()))
    resumed = float(resumed_marks[-1] - start)
    uninterrupted = float(per_epoch[quarter:].sum())
    same = bool(np.array_equal(full.epoch_metrics["test_acc"], again.epoch_metrics["test_acc"]))
    return {"epochs": epochs, "seeds": 16, "cpu_s_per_epoch_by_quarter": [float(q.mean()) for q in
                                                                         np.array_split(per_epoch, 4)],
            "uninterrupted_last_three_quarters_cpu_s": uninterrupted, "resumed_last_three_quarters_cpu_s": resumed,
            "ratio_resumed_over_uninterrupted": resumed / uninterrupted, "resumed_equals_uninterrupted": same,
            "load_1min": os.getloadavg()[0]}


if __name__ == "__main__":
    bench.main("clustering", {"vs_pal": vs_pal, "success": success, "in_house": in_house, "profile": profile,
                              "gpu_step": gpu_step, "fig14": fig14, "resume": resume}, threads=THREADS)
