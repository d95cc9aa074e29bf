"""The configurations of a signal depth run read from its stored arrays: per-layer theory (asymptotic, finite-T)
and simulation of each, and the block map ρ_l → ρ_{l+1} (Eq. (19)) that the cobweb panel draws."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError

MAP_TOL = 1e-6  # the evaluated block map must reproduce the stored Eq. (19) iteration to this


@dataclass
class Setting:
    """One configuration of a depth run: per-layer theory (asymptotic, finite-T) and simulation, block map."""

    label: str
    theory: dict[str, np.ndarray]
    sim: dict[str, np.ndarray] = field(default_factory=dict)  # name and name_std
    finite: dict[str, np.ndarray] = field(default_factory=dict)
    grid: np.ndarray | None = None
    fmap: np.ndarray | None = None


def columns(arrays: Mapping[str, np.ndarray], prefix: str, n_layers: int, experiment: str) -> list[dict]:
    """``prefix<name>`` arrays of shape (L+1, C) → one {name: (L+1,)} per configuration."""
    keys = [k for k in arrays if k.startswith(prefix) and k not in (f"{prefix}time", f"{prefix}flops")]
    out: list[dict] = []
    for k in keys:
        a = np.asarray(arrays[k], dtype=float)
        if a.ndim != 2 or a.shape[0] != n_layers:
            raise ConfigError(f"{experiment}: array {k!r} has shape {a.shape}, expected ({n_layers}, configurations)")
        out += [{} for _ in range(a.shape[1] - len(out))]
        for i in range(a.shape[1]):
            out[i][k[len(prefix):]] = a[:, i]
    return out


def depth_settings(experiment: str, arrays: Mapping[str, np.ndarray],
                   config: Mapping[str, Any]) -> tuple[list[Setting], list[tuple[Any, Any]], dict[str, Any]]:
    """Settings of a depth run, the (β, α_SA) behind each (None: the architecture's) and architecture changes."""
    name = experiment.split(".", 1)[1]
    if "grid" in arrays and "sigma_w2s" in arrays:  # Fig. 5: per-σ_w² arrays, the map stored
        out = []
        for s in np.asarray(arrays["sigma_w2s"], dtype=float):
            tag = f"{s:g}"
            if f"theory_{tag}" not in arrays or f"map_{tag}" not in arrays:
                raise ConfigError(f"{experiment}: no theory_{tag} / map_{tag} arrays for σ_w² = {tag}")
            sim = {"rho": arrays[f"sim_{tag}"], "rho_std": arrays[f"sim_std_{tag}"]} if f"sim_{tag}" in arrays else {}
            out.append(Setting(f"σ_w²={tag}" + ("" if sim else " (theory only)"), {"rho": arrays[f"theory_{tag}"]},
                               {k: np.asarray(v, dtype=float) for k, v in sim.items()},
                               grid=np.asarray(arrays["grid"], dtype=float),
                               fmap=np.asarray(arrays[f"map_{tag}"], dtype=float)))
        return out, [], {}
    if "theory_rho" not in arrays or "sim_rho" not in arrays or "theory_time" not in arrays:
        raise ConfigError(f"this {experiment} run stores no per-layer theory and simulation arrays "
                          "(theory_rho, sim_rho)")
    n = len(arrays["theory_time"])
    theory = columns(arrays, "theory_", n, experiment)
    sim = columns(arrays, "sim_", n, experiment)
    finite = columns(arrays, "finite_", n, experiment) if "finite_rho" in arrays else [{} for _ in theory]
    if not (len(theory) == len(sim) == len(finite)):
        raise ConfigError(f"{experiment}: theory, simulation and finite-T arrays hold different numbers of "
                          f"configurations ({len(theory)}, {len(sim)}, {len(finite)})")
    C = len(theory)
    changes: dict[str, Any] = {}
    if name == "figC3" or "table_betas" in arrays:
        pairs = [(float(b), 0.0) for b in arrays["table_betas"]]
        labels = [f"β={b:g}" for b, _ in pairs]
        changes = {"alpha_sa": 0.0, "alpha_mlp": 0.0}
    elif "alphas_sim" in arrays:
        pairs = [(None, float(a)) for a in arrays["alphas_sim"]]
        labels = [f"α_SA={a:g}" for _, a in pairs]
        changes = {"L": config.get("sim_L", config.get("L"))}
    elif "betas" in arrays and "alphas" in arrays and len(arrays["betas"]) == C:
        pairs = [(float(b), float(a)) for b, a in zip(arrays["betas"], arrays["alphas"], strict=True)]
        labels = [f"β={b:.3g}, α_SA={a:g}" for b, a in pairs]
    else:
        pairs, labels = [(None, None)] * C, [f"configuration {i + 1}" for i in range(C)]
    if len(pairs) != C:
        raise ConfigError(f"{experiment}: {len(pairs)} configurations named but {C} stored")
    out = [Setting(lab, th, si, fi) for lab, th, si, fi in zip(labels, theory, sim, finite, strict=True)]
    return out, pairs, changes


def attach_maps(settings: list[Setting], pairs: list[tuple[Any, Any]], config: Mapping[str, Any],
                changes: Mapping[str, Any]) -> str | None:
    """Evaluate the asymptotic block map (Eq. (19)) of each setting once; None, or why the cobweb is not shown."""
    import torch

    from attnlab.signal import theory
    from attnlab.signal.arch import Architecture

    try:
        arch = Architecture(**{k: config[k] for k in Architecture.model_fields if k in config})
        arch = arch.replace(**{k: v for k, v in changes.items() if v is not None})
    except (ValueError, TypeError) as exc:
        return f"block map not shown: the run's config gives no architecture ({' '.join(str(exc).split())[:80]})"
    if arch.ln_position != "post":
        return "block map not shown: pre-LN propagates (q, ρ), not ρ alone"
    grid = np.linspace(0.0, 1.0, 201)
    for s, (beta, alpha) in zip(settings, pairs, strict=True):
        rho = s.theory["rho"]
        pts = torch.as_tensor(np.concatenate([grid, rho[:-1]]), dtype=torch.float64)
        fmap = theory.block(pts, arch, beta, alpha)["rho"].numpy()
        if not np.all(np.abs(fmap[len(grid):] - rho[1:]) <= MAP_TOL):
            return "block map not shown: the map evaluated from the config does not reproduce the stored iteration"
        s.grid, s.fmap = grid, fmap[: len(grid)]
    return None

