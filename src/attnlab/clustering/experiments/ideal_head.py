"""Fig. 1 of paper 4 (Sec. 3, Prop. 1): the ideal head built by hand, its clusters, accuracy and gradient at every
scale of its attention, and where the construction breaks; config, run and declaration."""

from __future__ import annotations

from typing import Any

import pandas as pd
import torch
from pydantic import Field, model_validator

from attnlab.clustering import costs, outputs
from attnlab.clustering.analysis import heads
from attnlab.clustering.data import Task
from attnlab.clustering.figures import training as figures
from attnlab.clustering.keys import check_key, scaled_key
from attnlab.clustering.model import ModelSpec, forward
from attnlab.clustering.summaries import training as summaries
from attnlab.clustering.theory import construction, gradients
from attnlab.core.config import Config
from attnlab.core.experiment import Experiment, Result
from attnlab.core.rng import generator
from attnlab.core.runs import RunContext

STUDY = "clustering"


#: (p, N, k, d, h) of the C3 construction checks besides the visual case: 6, 21, 10, 35 clusters
C3_CONFIGS = ((2, 12, 5, 3, 12), (3, 12, 5, 4, 16), (3, 8, 3, 4, 16), (5, 8, 3, 6, 24))


class IdealHeadConfig(Config):
    """Fig. 1: the explicit clustering head of paper Sec. 3, Fig. 1 (no training); C3 cluster counts and the C4 scaling.
    Quick = paper (≈ 5 s on one core)."""

    p: int = Field(2, ge=2, le=97, description="modulus p = vocabulary size (paper Sec. 2)")
    N: int = Field(12, ge=1, le=64, description="sequence length N (paper Sec. 2)")
    k: int = Field(5, ge=1, le=64, description="number of informative positions k (paper Sec. 2)")
    d: int = Field(2, ge=1, le=64, description="embedding dimension d of the constructed head (Sec. 3.2)")
    h: int = Field(8, ge=1, le=1024, description="MLP width h of the constructed head (Sec. 3.2)")
    a: float = Field(1.0, gt=0, description="token scale")
    b: float = Field(1.0, gt=0, description="informative-position scale")
    R: float = Field(10.0, gt=0, description="spurious-position scale")
    beta: float = Field(20.0, gt=0, description="query scale")
    lam: float = Field(10.0, gt=0, description="receptor scale λ")
    mu: float = Field(10.0, gt=0, description="assembler scale μ")
    scale_factors: tuple[float, ...] = Field(
        (0.1, 0.2, 0.3, 0.5, 1.0), description="factors c: one head with (λ, μ) = (10c, 10c) each (Prop. 1 caveat, C4)",
        json_schema_extra={"allowed": "any finite numbers (c > 0 keeps the construction's signs)"})
    check_configs: tuple[tuple[int, int, int, int, int], ...] = Field(
        C3_CONFIGS, description="(p, N, k, d, h) of further constructions whose clusters are counted (C3)",
        json_schema_extra={"allowed": "(p, N, k, d, h) tuples with p ≥ 2, 1 ≤ k ≤ N, p^k ≤ 2^20, h ≥ k(p−1)+1 and "
                                      "d ≥ p+1 (or p = d = 2)"})
    n_sample: int = Field(20_000, ge=100, le=10_000_000,
                          description="sentences drawn when p^N > 2^16 (else all of them)")

    scales = {"quick": {}, "paper": {}}

    @model_validator(mode="after")
    def _buildable(self):
        for p, N, k, d, h in [(self.p, self.N, self.k, self.d, self.h), *self.check_configs]:
            construction.build_clustering_head(p, N, k, d, h)  # raises "key 'h' = …" / "key 'd' = …"
        return self


def _sentences(task: Task, n: int, seed: int) -> torch.Tensor:
    if task.space <= 2**16:
        return task.enumerate()
    return task.sample(n, generator(seed))


def ideal_head_metrics(params: dict, spec: ModelSpec, task: Task, x: torch.Tensor) -> dict[str, Any]:
    """Accuracy, CE and ||∇_{q,V,W,U} L|| on sentences x, and the head metrics on the probe grid."""
    y = task.labels(x)
    with torch.no_grad():
        z = forward(params, x, spec, tokens=False)["logits"][0]
    grads = gradients.autograd_grads(params, x, y, spec)
    out: dict[str, Any] = {
        "accuracy": float((z.argmax(-1) == y).double().mean()),
        "ce": float(torch.nn.functional.cross_entropy(z, y)),
        "grad_norm": float(torch.sqrt(sum(g.pow(2).sum() for g in grads.values()))),
        **{f"grad_{g}": float(v.norm()) for g, v in grads.items()},
    }
    out.update({k: float(v[0]) for k, v in heads.head_metrics(params, spec, task).items()})
    out["n_clusters"] = int(heads.n_clusters(params, spec, task)[0])
    out["n_multisets"] = task.n_classes
    out["head_type"] = heads.head_type({**out, "test_acc": out["accuracy"]})[0]
    return out


def fig1(config: IdealHeadConfig, ctx: RunContext) -> Result:
    """The Sec. 3.2 construction for (p, N, k, d, h), its metrics (C3), the Prop. 1 caveat (C4) and other sizes."""
    consts = {k: getattr(config, k) for k in ("a", "b", "R", "beta", "lam", "mu")}
    task = Task(config.p, config.N, config.k)
    params, spec = construction.build_clustering_head(config.p, config.N, config.k, config.d, config.h, **consts)
    x = _sentences(task, config.n_sample, ctx.seed("eval"))
    main = ideal_head_metrics(params, spec, task, x)
    summary = {k: v for k, v in main.items()}
    rows = [{"kind": "construction", "c": 1.0, **main}]
    for c in config.scale_factors:
        prm, _ = construction.build_clustering_head(config.p, config.N, config.k, config.d, config.h,
                                              **{**consts, "lam": 10 * c, "mu": 10 * c})
        m = ideal_head_metrics(prm, spec, task, x)
        rows.append({"kind": "scaled", "c": c, **m})
        summary[scaled_key("grad_norm", c)], summary[scaled_key("accuracy", c)] = m["grad_norm"], m["accuracy"]
    for i, (p, N, k, d, h) in enumerate(config.check_configs):
        t = Task(p, N, k)
        prm, sp = construction.build_clustering_head(p, N, k, d, h, **consts)
        m = ideal_head_metrics(prm, sp, t, _sentences(t, config.n_sample, ctx.seed("eval") + i + 1))
        rows.append({"kind": "check", "c": 1.0, "config": f"p={p},N={N},k={k},d={d},h={h}", **m})
        for key in ("n_clusters", "n_multisets", "accuracy", "grad_norm", "attn_prefix_mass"):
            summary[check_key(key, p, N, k, d)] = m[key]
    arrays = {f"ideal/{k}": v[0].numpy() for k, v in params.items()}
    return Result(pd.DataFrame(rows), arrays, summary)


FIG1 = Experiment(
    STUDY, "fig1", IdealHeadConfig, fig1,
    ref="Fig. 1",
    figure=figures.fig1,
    headline=True,
    title="Ideal clustering head (§3.2 construction): stationary, C(k+p−1,k) clusters",
    cost=costs.fig1,
    outputs=outputs.FIG1,
    summary=summaries.Fig1Summary,
)
