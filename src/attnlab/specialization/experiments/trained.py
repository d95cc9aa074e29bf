"""Trained models of paper 0 (theory run to convergence): final errors (Fig. 5), attention maps (Fig. 6), greedy
head pruning (Fig. 7) and the heads' cosine similarity over (ν1, ν2) (Fig. 11).

Randomness: the run's named streams ``init`` (offset by a stable checksum of each unit's key, so every point of a
sweep has its own inits), ``mc`` (training samples), ``eval`` (fresh samples for final losses and maps). Each point
is one unit of work (resumable).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pandas as pd

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit, run_units
from attnlab.specialization import costs, figures, memory, outputs, summaries, theory
from attnlab.specialization.configs import (
    AttentionMapsConfig,
    CosineGridConfig,
    FinalErrorConfig,
    PruningConfig,
    law_from,
)
from attnlab.specialization.experiments import analysis
from attnlab.specialization.theory.bayes import bayes_risk

STUDY = "specialization"


def final_key(law: str, activation: str, H: int | None = None, nu: float | None = None) -> str:
    """Summary key of E^∞ (Fig. 5): left panel at ``H`` heads, right panel at signal ``nu``; the Bayes risk is
    ``activation='bayes'`` with neither (left panel) or ``nu``."""
    return f"E_{law}_{activation}_" + (f"nu{nu:g}" if nu is not None else f"H{H}" if H is not None else "H")


def pruned_key(law: str, activation: str, k: int) -> str:
    """Summary key of the loss after pruning ``k`` heads (Fig. 7)."""
    return f"E_{law}_{activation}_pruned{k}"


def off_target_key(activation: str) -> str:
    """Summary key of the attention mass on irrelevant tokens (Fig. 6)."""
    return f"off_target_{activation}"


def _init_offset(key: Any) -> int:
    """A stable offset of the ``init`` stream per unit key (CRC-32: Python's ``hash`` of a str varies per process)."""
    return zlib.crc32(repr(key).encode()) % 1000


# -- Fig. 5: final error vs H and vs ν ---------------------------------------------------------------


def _trained(ctx, config, act: str, law, H: int, key: Any) -> dict[str, np.ndarray]:
    """Theory run to ``tau_max`` for ``config.seeds`` inits, final parameters and fresh-MC loss."""
    tr = theory.predict(act, law, config.L, H, [0.0, config.tau_max], n_seeds=config.seeds,
                        seed=ctx.seed("init", _init_offset(key)) % 2**31, mc_seed=ctx.seed("mc") % 2**31,
                        device=ctx.device, **config.theory_kwargs())
    final = analysis.final_params(tr)
    final["loss_eval"] = analysis.eval_loss(final, act, law, config.L, config.eval_mc, ctx.seed("eval") % 2**31,
                                            device=ctx.device)
    final["loss_train"] = tr["loss"][-1]
    return final


def final_error(config: FinalErrorConfig, ctx: RunContext) -> Result:
    """E^∞_σ after training (theory, fresh-MC evaluation) vs H and vs ν, three activations and the Bayes risk."""
    keys = [("H", law, act, H) for law in config.laws for act in config.activations for H in config.Hs]
    keys += [("nu", law, act, nu) for law in config.laws for act in config.activations for nu in config.nus]
    keys += [("H", law, "bayes", 0) for law in config.laws]
    keys += [("nu", law, "bayes", nu) for law in config.laws for nu in config.nus]

    def law_of(panel, law, x):
        return law_from(law, config.F_H, config.nu_H, config.nu_H, config.nu_H) if panel == "H" else \
            law_from(law, config.F_nu, x, x, x)

    def compute(u: Unit):
        key = u.key
        panel, law_name, act, x = key
        law = law_of(panel, law_name, x)
        if act == "bayes":
            risk, se = bayes_risk(law, config.L, config.bayes_mc, seed=ctx.seed("eval") % 2**31, device=ctx.device)
            return {"loss_eval": np.array([risk]), "stderr": np.array([se])}
        return _trained(ctx, config, act, law, x if panel == "H" else config.H_nu, key)

    done = run_units(ctx, keys, compute, "final errors")
    rows, arrays = [], {}
    for (panel, law, act, x), out in done.items():
        for s, loss in enumerate(np.atleast_1d(out["loss_eval"])):
            rows.append({"panel": panel, "law": law, "activation": act, "x": float(x), "seed": s,
                         "final_loss": float(loss)})
        arrays.update({f"{panel}/{law}/{act}/{x}/{k}": np.asarray(v) for k, v in out.items()})
    table = pd.DataFrame(rows)
    summary = {}
    for (panel, law, act, x), sub in table.groupby(["panel", "law", "activation", "x"]):
        key = final_key(law, act, H=int(x) if act != "bayes" else None) if panel == "H" else final_key(law, act, nu=x)
        summary[key] = float(sub["final_loss"].mean())
        if len(sub) > 1:
            summary["std_" + key[2:]] = float(sub["final_loss"].std())
    return Result(table, arrays, summary)


FIG5 = Experiment(
    STUDY, "fig5", FinalErrorConfig, final_error,
    ref="Fig. 5",
    figure=figures.final_error,
    headline=True,
    title="Final error vs H and vs signal: softmax ≥ softmax-1 ≥ B-softmax ≥ Bayes",
    memory=memory.final_error,
    cost=costs.final_error,
    outputs=outputs.FIG5,
    summary=summaries.FinalErrorSummary,
)


# -- Fig. 6: attention maps ----------------------------------------------------------------------------


def attention_maps(config: AttentionMapsConfig, ctx: RunContext) -> Result:
    """Train each activation (theory), then draw a few sequences and record σ(χ, b, v) (H × L each)."""
    law = config.theta_law()

    def compute(u: Unit) -> dict[str, np.ndarray]:
        act = u.key
        tr = theory.predict(act, law, config.L, config.H, [0.0, config.tau_max], seed=ctx.seed("init") % 2**31,
                            mc_seed=ctx.seed("mc") % 2**31, device=ctx.device, **config.theory_kwargs())
        final = analysis.final_params(tr)
        maps, eps = analysis.attention_maps(final, act, law, config.L, config.sequences, ctx.seed("eval") % 2**31)
        off = analysis.off_target_mass(final, act, law, config.L, config.eval_mc, ctx.seed("eval") % 2**31)
        return {**final, "maps": maps, "eps": eps, "off_target": off}

    done = run_units(ctx, list(config.activations), compute, "activations")
    arrays = {f"{act}/{k}": v for act, out in done.items() for k, v in out.items()}
    summary = {off_target_key(act): float(np.mean(out["off_target"])) for act, out in done.items()}
    summary.update({f"loss_train_{act}": float(np.mean(out["loss"])) for act, out in done.items()})
    table = pd.DataFrame([{"activation": a, "name": "off_target_mass", "value": summary[off_target_key(a)]}
                          for a in config.activations])
    return Result(table, arrays, summary)


FIG6 = Experiment(
    STUDY, "fig6", AttentionMapsConfig, attention_maps,
    ref="Fig. 6",
    figure=figures.attention_maps,
    title="Attention maps of trained softmax, softmax-1 and B-softmax",
    memory=memory.attention_maps,
    cost=costs.attention_maps,
    outputs=outputs.FIG6,
    summary=summaries.AttentionMapsSummary,
)


# -- Fig. 7: head pruning ----------------------------------------------------------------------------


def pruning(config: PruningConfig, ctx: RunContext) -> Result:
    """Train H heads (theory), then remove heads greedily (Fig. 7), loss on fresh MC after each removal."""
    keys = [(law, act) for law in config.laws for act in config.activations]

    def compute(u: Unit):
        key = u.key
        law_name, act = key
        law = law_from(law_name, config.F, config.nu, config.nu, config.nu)
        final = _trained(ctx, config, act, law, config.H, key)
        curves = analysis.greedy_pruning(final, act, law, config.L, config.eval_mc, ctx.seed("eval") % 2**31,
                                         device=ctx.device)
        return {**final, "curves": curves}

    done = run_units(ctx, keys, compute, "pruning")
    rows, arrays, summary = [], {}, {}
    for (law, act), out in done.items():
        curves = out["curves"]  # (S, H) loss after pruning 0..H-1 heads
        arrays.update({f"{law}/{act}/{k}": v for k, v in out.items()})
        for s, curve in enumerate(curves):
            rows += [{"law": law, "activation": act, "seed": s, "pruned": k, "loss": float(c)}
                     for k, c in enumerate(curve)]
        for k in range(curves.shape[1]):
            summary[pruned_key(law, act, k)] = float(curves[:, k].mean())
    return Result(pd.DataFrame(rows), arrays, summary)


FIG7 = Experiment(
    STUDY, "fig7", PruningConfig, pruning,
    ref="Fig. 7",
    figure=figures.pruning,
    title="Greedy head pruning of trained models (H=8, F=4, ν=10)",
    memory=memory.pruning,
    cost=costs.pruning,
    outputs=outputs.FIG7,
    summary=summaries.PruningSummary,
)


# -- Fig. 11: cosine similarity of two heads over (ν1, ν2) ----------------------------------------------


def cosine_grid(config: CosineGridConfig, ctx: RunContext) -> Result:
    """Train H = 2 heads (theory) at each (ν1, ν2) of the grid; final cosine similarity of the keys and of m."""
    keys = [(a, b) for a in config.nu1s for b in config.nu2s]

    def compute(u: Unit):
        key = u.key
        law = config.theta_law(nu1=key[0], nu2=key[1])
        tr = theory.predict(config.activation, law, config.L, config.H, [0.0, config.tau_max],
                            seed=ctx.seed("init") % 2**31, mc_seed=ctx.seed("mc") % 2**31, device=ctx.device,
                            **config.theory_kwargs())
        q, m = tr["q"][-1, 0], tr["m"][-1, 0]
        return {"cos_q": np.array(q[0, 1] / np.sqrt(q[0, 0] * q[1, 1])),
                "cos_m": np.array(m[0] @ m[1] / (np.linalg.norm(m[0]) * np.linalg.norm(m[1]))),
                "m": m, "q": q}

    done = run_units(ctx, keys, compute, "(ν1, ν2) grid")
    rows = [{"nu1": a, "nu2": b, "cos_q": float(o["cos_q"]), "cos_m": float(o["cos_m"])} for (a, b), o in done.items()]
    table = pd.DataFrame(rows)
    grid = table.pivot(index="nu1", columns="nu2", values="cos_q").to_numpy()
    arrays = {"nu1s": np.asarray(config.nu1s), "nu2s": np.asarray(config.nu2s), "cos_q": grid,
              "cos_m": table.pivot(index="nu1", columns="nu2", values="cos_m").to_numpy()}
    summary = {"monotone_up_in_nu1": analysis.monotone_fraction(grid, axis=0, increasing=True),
               "monotone_down_in_nu2": analysis.monotone_fraction(grid, axis=1, increasing=False),
               "cos_min": float(grid.min()), "cos_max": float(grid.max())}
    return Result(table, arrays, summary)


FIG11 = Experiment(
    STUDY, "fig11", CosineGridConfig, cosine_grid,
    ref="Fig. 11",
    figure=figures.cosine_grid,
    title="Final cosine similarity of two heads over (ν1, ν2), softmax",
    memory=memory.one_flow,
    cost=costs.cosine_grid,
    outputs=outputs.FIG11,
    summary=summaries.CosineGridSummary,
)
