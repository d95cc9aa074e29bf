"""Benchmark of the clustering study (never run by the tests; `attnlab bench clustering`).

Workloads and ratios, written as JSON to ``$ATTNLAB_BENCH_OUT/clustering.json`` (default benchmarks/results):

1. Seeds: the default run (p=2, N=12, k=5, d=2, h=8, 2048 points, batch 32, Adam 3e-3; 1000 epochs = 64 000
   Adam steps) for 100 seeds, vectorised in one computation, with the study's default record (mini-batch loss
   and gradient norms every step; full-batch losses, accuracies, gradient norms, clustering-head monitors and a
   parameter snapshot every epoch), against the anchor's
   design: a plain one-seed-at-a-time PyTorch loop (nn.Module, DataLoader with shuffling, torch.optim.Adam,
   test accuracy every epoch) for 5 seeds. Both are timed over ``BENCH_EPOCHS`` epochs (default 20) and scaled
   to 1000 epochs (``--full`` runs all 1000); the target is ratio ≥ 1 (100 of ours in at most the time of 5).
2. Machine limit: this workload is bound by per-kernel dispatch, not FLOPs (66 parameters). The floor is the
   number of aten kernels one vectorised step launches (counted by the profiler) times the latency of one tiny
   kernel on this machine; the ratio floor / step time says how close the step is to it.
3. Fig. 14 at paper scale: time per epoch of 250 seeds at p = 3 and p = 10 (the cheapest and dearest bars),
   extrapolated to the 17 bars × 250 runs × (1000 or 2000) epochs of the figure.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.train import train
from attnlab.core import bench

THREADS = bench.threads()
FULL = "--full" in sys.argv
EPOCHS = 1000 if FULL else int(os.environ.get("BENCH_EPOCHS", "20"))


class AnchorNet(nn.Module):
    """The paper's model written the usual way, one model per process/loop (the anchor's design)."""

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


def anchor_seed(seed: int, epochs: int) -> tuple[float, float]:
    g = torch.Generator().manual_seed(seed)
    x, xt = torch.randint(0, 2, (2048, 12), generator=g), torch.randint(0, 2, (2048, 12), generator=g)
    y, yt = x[:, :5].sum(1) % 2, xt[:, :5].sum(1) % 2
    torch.manual_seed(seed)
    model = AnchorNet()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
        with torch.no_grad():
            acc = (model(xt).argmax(-1) == yt).float().mean().item()
    return time.perf_counter() - t0, acc


def seeds_vs_anchor() -> dict:
    anchor_seed(0, 1)  # warm-up of both sides (first-call costs would otherwise be scaled ×1000/EPOCHS)
    train(TrainConfig(n_seeds=100, epochs=1))
    anchor = [anchor_seed(s, EPOCHS) for s in range(5)]
    t_anchor = sum(t for t, _ in anchor)
    cfg = TrainConfig(n_seeds=100, epochs=EPOCHS)  # the default record: every step, every epoch, every snapshot
    t0 = time.perf_counter()
    hist = train(cfg)
    t_ours = time.perf_counter() - t0
    lean = TrainConfig(n_seeds=100, epochs=EPOCHS, step_log_every=64, log_every=10, head_metrics=False)
    t1 = time.perf_counter()
    train(lean)
    t_lean = time.perf_counter() - t1
    scale = 1000 / EPOCHS
    return {
        "workload": f"default run, 64 steps/epoch, timed over {EPOCHS} epochs, scaled to 1000 epochs",
        "anchor_5_seeds_s": t_anchor * scale, "anchor_ms_per_step": t_anchor / (5 * EPOCHS * 64) * 1e3,
        "ours_100_seeds_full_record_s": t_ours * scale,
        "ours_100_seeds_lean_record_s": t_lean * scale,
        "ratio_anchor5_over_ours100": t_anchor / t_ours,
        "ratio_anchor5_over_ours100_lean": t_anchor / t_lean,
        "per_seed_speedup": (t_anchor / 5) / (t_ours / 100),
        "final_train_loss_ours_first5": hist.epoch_metrics["train_loss"][-1, :5].tolist(),
        "final_test_acc_anchor": [a for _, a in anchor],
    }


def dispatch_floor() -> dict:
    from torch.profiler import profile

    cfg = TrainConfig(n_seeds=100, epochs=1, step_log_every=0, log_every=1, head_metrics=False)
    t_epoch = _epoch_time(cfg)
    with profile() as prof:
        train(TrainConfig(n_seeds=100, epochs=1, step_log_every=0, head_metrics=False, snapshot_every=0))
    n_ops = sum(e.count for e in prof.key_averages() if e.key.startswith("aten::") and "empty" not in e.key)
    a, b = torch.zeros(1), torch.zeros(1)
    for _ in range(1000):
        torch.add(a, b)
    t0 = time.perf_counter()
    for _ in range(100_000):
        torch.add(a, b)
    latency = (time.perf_counter() - t0) / 100_000
    per_step_ops = n_ops / 64
    step_s = t_epoch / 64
    return {"aten_ops_per_step_approx": per_step_ops, "tiny_kernel_latency_us": latency * 1e6,
            "floor_ms_per_step": per_step_ops * latency * 1e3, "ours_ms_per_step_S100": step_s * 1e3,
            "floor_over_ours": per_step_ops * latency / step_s}


def _epoch_time(cfg: TrainConfig, epochs: int = 3) -> float:
    train(cfg.model_copy(update={"epochs": 1}))
    t0 = time.perf_counter()
    train(cfg.model_copy(update={"epochs": epochs}))
    return (time.perf_counter() - t0) / epochs


def fig14_feasibility() -> dict:
    """Per-epoch cost of one Fig. 14 bar (250 seeds, the figure's record: full-batch metrics every 50 epochs):
    the training epoch from the difference of a 5- and a 1-epoch run (same setup and evaluations), plus 1/50 of
    one evaluation."""
    from attnlab.clustering.model import init_params
    from attnlab.clustering.train import evaluate, make_data

    out = {}
    for p in (3, 10):
        cfg = TrainConfig(p=p, n_seeds=250, epochs=1, step_log_every=0, log_every=50, head_metrics=False,
                          snapshot_every=0)
        train(cfg.model_copy(update={"n_seeds": 2}))  # warm-up
        t1, _ = bench.timed(lambda cfg=cfg: train(cfg))
        t5, _ = bench.timed(lambda cfg=cfg: train(cfg.model_copy(update={"epochs": 5})))
        task, spec, seeds = cfg.task(), cfg.spec(), cfg.seeds()
        data = make_data(task, cfg, seeds)
        leaves = {k: v.requires_grad_(True) for k, v in init_params(spec, seeds).items()}
        t0 = time.perf_counter()
        evaluate(leaves, data, spec, task, False)
        t_eval = time.perf_counter() - t0
        out[f"s_per_epoch_250_seeds_p{p}"] = (t5 - t1) / 4 + t_eval / cfg.log_every
        out[f"s_per_evaluation_250_seeds_p{p}"] = t_eval
    mean_epoch = (out["s_per_epoch_250_seeds_p3"] + out["s_per_epoch_250_seeds_p10"]) / 2
    epochs = 9 * 1000 + 8 * 2000  # 9 from-scratch bars, 8 finetune bars (1000 on p=2 + 1000 on p')
    out["fig14_paper_scale_hours_one_process"] = mean_epoch * epochs / 3600
    out["note"] = "17 bars × 250 runs; each bar is one vectorised 250-seed run; dask spreads bars over machines"
    return out


def main() -> None:
    out_dir = Path(os.environ.get("ATTNLAB_BENCH_OUT", "benchmarks/results"))
    out_dir.mkdir(parents=True, exist_ok=True)
    res = {"machine": {"platform": platform.platform(), "threads": THREADS, "torch": torch.__version__},
           "seeds_vs_anchor": seeds_vs_anchor(), "dispatch_floor": dispatch_floor(),
           "fig14": fig14_feasibility()}
    (out_dir / "clustering.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
