"""Fig. 10 of paper 4 (App. B): the curvature of the normalisations near the origin, the Jacobian norm of
sphere, RMSNorm and the smooth norms against the radius; config, run and declaration."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab.clustering import costs, outputs
from attnlab.clustering.configs import CurvatureConfig
from attnlab.clustering.figures import spikes as spike_figures
from attnlab.clustering.model import ModelSpec, normalize
from attnlab.clustering.summaries import spikes as summaries
from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext

STUDY = "clustering"
F64 = torch.float64


def jacobian_norm(norm: str, r: np.ndarray, d: int = 2, eps: float = 1e-5, angle: float = 0.3) -> np.ndarray:
    """Operator norm of the Jacobian of the normaliser at x = r·(cos a, sin a, 0…) for each r (float64)."""
    spec = ModelSpec(d=d, norm=norm, norm_eps=eps)
    u = torch.zeros(d, dtype=F64)
    u[0], u[1] = math.cos(angle), math.sin(angle)
    out = []
    for ri in r:
        jac = torch.autograd.functional.jacobian(lambda x: normalize(x, spec), float(ri) * u)
        out.append(float(torch.linalg.matrix_norm(jac, ord=2)))
    return np.array(out)


def _moves(norm: str, r: np.ndarray, eta: float, eps: float) -> dict[str, np.ndarray]:
    """||f(x+δ) − f(x)|| at ||x|| = r for δ = −η x/||x|| (the Sec. 4.4 step) and δ ⊥ x of size η."""
    spec = ModelSpec(d=2, norm=norm, norm_eps=eps)
    x = torch.as_tensor(r, dtype=F64)[:, None] * torch.tensor([1.0, 0.0], dtype=F64)
    f = lambda z: normalize(z, spec)  # noqa: E731
    back = x - eta * torch.tensor([1.0, 0.0], dtype=F64)
    side = x + eta * torch.tensor([0.0, 1.0], dtype=F64)
    return {"back": (f(back) - f(x)).norm(dim=-1).numpy(), "side": (f(side) - f(x)).norm(dim=-1).numpy()}


def fig10(config: CurvatureConfig, ctx: RunContext) -> Result:
    """Jacobian norms (sphere = 1/r; smooth ≤ 1.5) and the effect of the same update near / far from 0."""
    r = np.logspace(math.log10(config.r_min), math.log10(config.r_max), config.n_r)
    arrays: dict[str, np.ndarray] = {"r": r}
    summary: dict[str, Any] = {}
    for norm in ("sphere", "smooth", "smooth_inf", "rmsnorm"):
        jac = jacobian_norm(norm, r, eps=config.norm_eps)
        arrays[f"jac/{norm}"] = jac
        summary[f"max_jac_{norm}"] = float(jac.max())
        for name, mv in _moves(norm, r, config.eta, config.norm_eps).items():
            arrays[f"move_{name}/{norm}"] = mv
    summary["max_rel_err_sphere_vs_1_over_r"] = float(np.abs(arrays["jac/sphere"] * r - 1).max())
    direction = np.array([math.cos(0.6), math.sin(0.6)])
    delta = config.eta * np.array([math.cos(0.6 + 1.9), math.sin(0.6 + 1.9)])  # mostly sideways, a bit back
    for tag, rr in (("near", config.r_near), ("far", config.r_far)):
        x0 = rr * direction
        x1 = x0 + delta
        arrays[f"picture/{tag}"] = np.stack([x0, x1, x0 / np.linalg.norm(x0), x1 / np.linalg.norm(x1)])
        cos = float(np.clip((x0 @ x1) / np.linalg.norm(x0) / np.linalg.norm(x1), -1, 1))
        summary[f"angle_deg_{tag}"] = math.degrees(math.acos(cos))
    summary["eta"] = config.eta
    frame = pd.DataFrame([{"norm": n, "r": ri, "jacobian_norm": j} for n in ("sphere", "smooth", "smooth_inf",
                          "rmsnorm") for ri, j in zip(r, arrays[f"jac/{n}"], strict=True)])
    return Result(frame, arrays, summary)


FIG10 = Experiment(
    STUDY, "fig10", CurvatureConfig, fig10,
    ref="Fig. 10, §4.4",
    figure=spike_figures.curvature,
    title="High-curvature normalisation: x ↦ x/||x|| near the origin",
    cost=costs.fig10,
    outputs=outputs.FIG10,
    summary=summaries.CurvatureSummary,
)
