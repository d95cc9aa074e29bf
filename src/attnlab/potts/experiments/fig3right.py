"""Fig. 3-right of paper 2 and the consistency of the pseudo-likelihood estimator (text after Eq. (6)): factored
attention fitted by L-BFGS along the number of samples M; configs, runs and declarations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from pydantic.fields import FieldInfo

from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit, run_units
from attnlab.potts import costs, figures, metrics
from attnlab.potts.configs import TINY_DATA, PLFit, PottsDataConfig
from attnlab.potts.data.sets import PottsData
from attnlab.potts.experiments.common import potts_data
from attnlab.potts.summaries import PLSummary
from attnlab.potts.train.pseudolikelihood import fit_lbfgs

STUDY = "potts"


def _default(key: str, value):
    """PLFit's field ``key`` with a new default (type, bounds and description kept)."""
    return FieldInfo.merge_field_infos(PLFit.model_fields[key], default=value)


class Fig3RightConfig(PottsDataConfig, PLFit):
    """Fig. 3-right: test loss of factored attention vs the number of samples (L-BFGS)."""

    # quick: the grid of check 20 (M <= 200) at the paper's small λ, 4 realisations
    scales = {"quick": {"Ms": (1, 2, 3, 5, 10, 15, 20, 30, 40, 60, 80, 120, 200), "lams": (1e-4,), "n_real": 4},
              "paper": {}}


class ConsistencyConfig(PottsDataConfig, PLFit):
    """PL consistency (check 10): corr(A, J) and test - optimal along M (L-BFGS, reg 'sum', λ = 1e-2)."""

    Ms: tuple[int, ...] = _default("Ms", (120, 400, 1000, 3000))
    lams: tuple[float, ...] = _default("lams", (1e-2,))
    n_real: int = _default("n_real", 3)
    max_iter: int = _default("max_iter", 3000)
    warm_start: bool = _default("warm_start", False)
    scales = {"quick": {"Ms": (120, 400, 3000), "n_real": 2}, "paper": {}}


PL_ARRAYS = {  # every M's fits: one per (λ, realisation)
    "Ms": ("len(Ms)",),
    "lams": ("len(lams)",),
    "M{Ms}/V": ("len(lams)", "n_real", "C", "C"),
    "M{Ms}/W": ("len(lams)", "n_real", "L", "L"),
    "M{Ms}/converged M{Ms}/corr M{Ms}/grad_norm M{Ms}/n_iter M{Ms}/test M{Ms}/train M{Ms}/train_acc": (
        "len(lams)", "n_real"),
}


def _pl_sweep(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> tuple[PottsData, dict]:
    """L-BFGS fits at every M: all realisations and all λ in one batched computation per M. Realisation r uses
    the first M of its own random permutation of the training set (nested subsets across M) and its own init;
    with ``warm_start`` the fit at M starts from the same realisation's fit at the previous M (the grid ascends)."""
    data = potts_data(config, ctx)
    n_train = data.train.shape[0]
    perm_gen = torch.Generator(device=data.train.device)
    perms = []
    for r in range(config.n_real):
        perm_gen.manual_seed(ctx.seed("data", r) % 2**62)
        perms.append(torch.randperm(n_train, generator=perm_gen, device=data.train.device))
    perms = torch.stack(perms)
    lams = torch.tensor(config.lams, dtype=torch.float64).repeat_interleave(config.n_real)
    inits = [ctx.seed("init", k) % 2**62 for k in range(config.n_real)] * len(config.lams)
    shape = (len(config.lams), config.n_real)

    def compute(u: Unit) -> dict[str, np.ndarray]:
        M = u.key
        c = data.train[perms[:, :M]].repeat(len(config.lams), 1, 1)  # (n_lam · n_real, M, L)
        k = config.Ms.index(M)
        prev = u.done.get(config.Ms[k - 1]) if config.warm_start and k > 0 else None
        init = None if prev is None else tuple(torch.as_tensor(prev[n]).flatten(0, 1) for n in ("W", "V"))
        fit = fit_lbfgs(c, data, lam=lams.to(c.device), reg_form=config.reg_form, attn=config.attn, seeds=inits,
                        max_iter=config.max_iter, gtol=config.gtol, init=init)
        A = fit.A(config.attn).cpu()
        out = {"test": fit.test_loss, "train": fit.train_loss, "corr": metrics.corr_offdiag(A, data.potts.J.cpu()),
               "converged": fit.converged, "n_iter": fit.n_iter, "grad_norm": fit.grad_norm,
               "train_acc": fit.train_acc}
        res = {k: v.cpu().numpy().reshape(shape) for k, v in out.items()}
        return {**res, "W": fit.W.cpu().numpy().reshape(*shape, *fit.W.shape[-2:]),
                "V": fit.V.cpu().numpy().reshape(*shape, *fit.V.shape[-2:])}

    return data, run_units(ctx, list(config.Ms), compute, "sample sizes")


FIT_REPORT = ("test", "train", "corr", "train_acc", "n_iter", "grad_norm", "converged")  # one row per fit


def _pl_result(config: Fig3RightConfig | ConsistencyConfig, data: PottsData, done: dict) -> Result:
    rows, arrays = [], {}
    for M in config.Ms:
        for k, lam in enumerate(config.lams):
            for r in range(config.n_real):
                rows.append({"M": M, "alpha": M / data.potts.L, "lam": lam, "realisation": r,
                             **{key: float(done[M][key][k, r]) for key in FIT_REPORT}})
        arrays.update({f"M{M}/{key}": v for key, v in done[M].items()})
    df = pd.DataFrame(rows)
    df["gap"] = df["test"] - data.optimal_loss
    summary: dict[str, float] = {"optimal_loss": data.optimal_loss, "L": float(data.potts.L),
                                 "converged_fraction": float(df["converged"].mean()),
                                 "max_grad_norm": float(df["grad_norm"].max()), "max_n_iter": float(df["n_iter"].max())}
    means = df.groupby(["lam", "M"])[["test", "gap", "corr", "train"]].mean()
    for lam in config.lams:
        m = means.loc[lam]
        for M in config.Ms:
            for key in ("test", "corr", "gap"):
                summary[metrics.pl_key(key, lam, M)] = float(m.loc[M, key])
        summary.update(metrics.sweep_shape(df[df["lam"] == lam], lam))
        corr, gap, nan = m["corr"].to_numpy(), m["gap"].to_numpy(), float("nan")
        summary[metrics.pl_key("min_corr_increase", lam)] = float(np.diff(corr).min()) if len(corr) > 1 else nan
        summary[metrics.pl_key("min_gap_decrease", lam)] = float(-np.diff(gap).max()) if len(gap) > 1 else nan
    arrays["Ms"], arrays["lams"] = np.asarray(config.Ms), np.asarray(config.lams)
    return Result(df, arrays, summary)


def fig3right(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> Result:
    data, done = _pl_sweep(config, ctx)
    return _pl_result(config, data, done)


def consistency(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> Result:
    data, done = _pl_sweep(config, ctx)
    return _pl_result(config, data, done)


FIG3RIGHT = Experiment(
    STUDY, "fig3right", Fig3RightConfig, fig3right, ref="Fig. 3-right", figure=figures.pl_sweep, cost=costs.pl_sweep,
    title="Factored attention on Potts data vs the number of samples (L-BFGS to convergence)", summary=PLSummary,
    outputs=declare(arrays=PL_ARRAYS,
                    tiny={**TINY_DATA, "Ms": [1, 5, 20], "lams": [1e-2], "n_real": 2, "max_iter": 40}))
CONSISTENCY = Experiment(
    STUDY, "consistency", ConsistencyConfig, consistency, ref="text after Eq. (6), refs [38-40]",
    figure=figures.pl_sweep, cost=costs.pl_sweep, title="Consistency of the factored PL estimator along M",
    summary=PLSummary, outputs=declare(arrays=PL_ARRAYS,
                    tiny={**TINY_DATA, "Ms": [20, 100], "n_real": 2, "max_iter": 40}))
