"""Experiments of paper 2 on Potts data (one per figure): config in, tables and arrays out, no plotting.

fig2 (Fig. 2a-c), fig2d (Fig. 2d), fig3right (Fig. 3-right), consistency (check 10), equivalence (Eqs. (4)-(6)),
gibbs (App. 'Numerical details'); the Gaussian model's (fig3left, finite_l, replica) are in ``replica/experiments.py``.

Randomness: the Potts structure and the Gibbs data come from the seeds of the config (the `cpu_fig2` set-up
is fixed); the run's named streams drive the rest: ``init`` (model initialisations), ``data`` (training subsets,
mini-batch orders, the sampler runs of ``gibbs``). Every unit of work (a model, a sample size, a scan) is
checkpointed when it finishes, and the long trainings also after every epoch, so an interrupted run resumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr

from attnlab.core.experiment import Result, experiment
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, run_units
from attnlab.potts import figures, metrics
from attnlab.potts.configs import (
    ConsistencyConfig,
    EquivalenceConfig,
    Fig2Config,
    Fig2dConfig,
    Fig3RightConfig,
    GibbsConfig,
)
from attnlab.potts.data import PottsData, colour_frequencies, mean_pairwise_hamming, potts_dataset
from attnlab.potts.model import attention, factored_logits, mlm_loss, potts_representation
from attnlab.potts.pseudolikelihood import fit_lbfgs
from attnlab.potts.replica import experiments as _replica  # noqa: F401  (registers the Gaussian experiments)
from attnlab.potts.sampler import gibbs, tune_beta
from attnlab.potts.theory import potts_optimum
from attnlab.potts.train import Optim, progress_arrays, train_stacked, train_vanilla

STUDY = "potts"


def _data(config, ctx: RunContext) -> PottsData:
    ctx.log(f"sampling / reusing the Potts data set {config.spec()}")
    return potts_dataset(config.spec(), ctx.device)


def _final_metrics(prefix: str, A: torch.Tensor, J: torch.Tensor) -> dict[str, float]:
    """Mean over stacked models of the docs/studies/potts.md note 6 metrics of final maps A (S, L, L)."""
    return {f"{prefix}_corr": float(metrics.corr_offdiag(A, J).mean()),
            f"{prefix}_recon_err": float(metrics.recon_error(A, J).mean()),
            f"{prefix}_topk": float(metrics.topk_precision(A, J).mean()),
            f"{prefix}_auc": float(metrics.roc_auc(A, J).mean())}


def _epochs_to(traj: Trajectory, gap: float) -> float:
    """First epoch at which the mean gap to the optimum falls below ``gap`` (NaN: never)."""
    g = traj["gap"].mean(-1)
    hit = np.flatnonzero(g < gap)
    return float(traj.time[hit[0]]) if len(hit) else float("nan")


# -- Fig. 2a-c: factored vs vanilla -------------------------------------------------------------------------------


@experiment(STUDY, "fig2", Fig2Config, ref="Fig. 2a-c", figure=figures.fig2, headline=True,
            title="Factored vs vanilla attention on Potts data: test loss, maps, reconstruction error")
def fig2(config: Fig2Config, ctx: RunContext) -> Result:
    data = _data(config, ctx)
    J = data.potts.J

    def compute(u: Unit) -> dict[str, np.ndarray]:
        model, resume = u.key, u.resume

        def save(state: Callable[[], Any]) -> None:  # checkpoint, and show the models so far to live viewers
            u.save(state)
            ctx.publish(lambda: {**{f"{m}/{k}": v for m, a in u.done.items() for k, v in a.items()},
                                 **{f"{model}/{k}": v for k, v in progress_arrays(state()).items()},
                                 "J": J.cpu().numpy(), "optimum/test_loss": np.array([data.optimal_loss])})

        if model == "factored":
            with ctx.progress(config.epochs, "factored attention") as bar:
                seeds = [ctx.seed("init", k) % 2**62 for k in range(config.seeds)]
                fit = train_stacked("factored", data, seeds=seeds, optim=config.optim(), attn=config.attn,
                                    progress=lambda e, T: bar.update(e), checkpoint=save, resume=resume)
            extra = {"V": fit.params["V"].cpu().numpy(), "W": fit.params["W"].cpu().numpy()}
        else:
            optim = Optim("adam", config.vanilla_lr, config.vanilla_epochs, config.batch, config.schedule)
            with ctx.progress(config.vanilla_epochs, f"vanilla transformer, {model[-1]} layer(s)") as bar:
                fit = train_vanilla(data, n_layers=int(model[-1]), seed=ctx.seed("init") % 2**62, optim=optim,
                                    d=config.d, head=config.head, mask=config.vanilla_mask,
                                    eval_every=config.eval_every, n_eval=config.n_eval,
                                    progress=lambda e, T: bar.update(e), checkpoint=save, resume=resume)
            extra = {"layer_maps": fit.extra["layer_maps"].numpy(), "final_test": np.array([fit.extra["test_loss"]])}
        maps = {} if fit.epoch_maps is None else {"maps": fit.epoch_maps.cpu().numpy()}  # (E, S, L, L) float32
        return {**fit.trajectory.to_arrays("traj_"), "map": fit.maps.cpu().numpy(), **maps, **extra}

    done = run_units(ctx, list(config.models), compute, "architectures")
    arrays, frames = {}, []
    summary: dict[str, float] = {"optimal_loss": data.optimal_loss, **data.diagnostics}
    last = 0.0
    for model in config.models:
        a = done[model]
        traj = Trajectory.from_arrays(a, "traj_", time_name="epoch", source=model)
        arrays.update({f"{model}/{k}": v for k, v in a.items()})
        frames.append(traj.to_frame().assign(model=model))
        final_test = float(a["final_test"][0]) if "final_test" in a else float(traj["test_loss"][-1].mean())
        summary[f"{model}_test"] = final_test
        summary[f"{model}_gap"] = final_test - data.optimal_loss
        summary[f"{model}_epochs_to_gap_0.1"] = _epochs_to(traj, 0.1)
        summary.update(_final_metrics(model, torch.as_tensor(a["map"]), J.cpu()))
        last = max(last, float(traj.time[-1]))
        if model == "factored":
            A = torch.as_tensor(a["map"])
            iso = (J.cpu().sum(1) == 0).nonzero().flatten()
            summary["factored_isolated_sink"] = float(A[:, iso, iso].min()) if len(iso) else float("nan")
            summary["factored_value_corr"] = float(metrics.value_corr(
                torch.as_tensor(a["V"]), data.potts.U.cpu(), colour_frequencies(data.train.cpu(), data.potts.C)).mean())
    opt = potts_optimum(data, np.linspace(0, last, 2))
    arrays.update({f"optimum/{k}": v for k, v in opt.to_arrays().items()})
    arrays["J"] = J.cpu().numpy()
    summary["optimum_recon_corr"] = float(opt["corr"][0, 0])
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


# -- Fig. 2d: the mixing a of eq. (2) --------------------------------------------------------------------------------


@experiment(STUDY, "fig2d", Fig2dConfig, ref="Fig. 2d", figure=figures.fig2d,
            title="Test loss vs the position/embedding mixing a of eq. (2)")
def fig2d(config: Fig2dConfig, ctx: RunContext) -> Result:
    data = _data(config, ctx)
    a = np.repeat(np.asarray(config.a_values, float), config.seeds)
    seeds = [ctx.seed("init", k) % 2**62 for k in range(config.seeds)] * len(config.a_values)  # same inits at every a

    def compute(u: Unit) -> dict[str, np.ndarray]:
        with ctx.progress(config.epochs, f"{len(a)} models of eq. (2)") as bar:
            fit = train_stacked("perturbed", data, seeds=seeds, a=a.tolist(), optim=config.optim(),
                                progress=lambda e, T: bar.update(e), checkpoint=u.save, resume=u.resume)
        return {**fit.trajectory.to_arrays("traj_"), "map": fit.maps.cpu().numpy()}

    res = run_units(ctx, ["all"], compute, "a sweep")["all"]
    traj = Trajectory.from_arrays(res, "traj_", time_name="epoch", source="eq2")
    test = traj["test_loss"][-1].reshape(len(config.a_values), config.seeds)
    corr = traj["corr"][-1].reshape(len(config.a_values), config.seeds)
    summary: dict[str, float] = {"optimal_loss": data.optimal_loss}
    for k, av in enumerate(config.a_values):
        summary[f"test_a{av:g}"] = float(test[k].mean())
        summary[f"test_a{av:g}_std"] = float(test[k].std())
        summary[f"corr_a{av:g}"] = float(corr[k].mean())
    means = test.mean(1)
    summary["spearman_a_test"] = float(spearmanr(config.a_values, means).statistic)
    summary["margin_amax_a0"] = float(means[-1] - means[0]) if config.a_values[0] == 0 else float("nan")
    summary["best_a"] = float(config.a_values[int(means.argmin())])
    df = traj.to_frame().rename(columns={"i": "model"})  # the stacked model: a-value × replica
    comp = df["model"].astype(int)
    df["a"], df["replica"] = a[comp], comp % config.seeds
    return Result(df, {**res, "a": a}, summary)


# -- Fig. 3-right and consistency: factored PLM over the number of samples -------------------------------------------


def _pl_sweep(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> tuple[PottsData, dict]:
    """L-BFGS fits at every M: all realisations and all λ in one batched computation per M. Realisation r uses
    the first M of its own random permutation of the training set (nested subsets across M) and its own init;
    with ``warm_start`` the fit at M starts from the same realisation's fit at the previous M (the grid ascends)."""
    data = _data(config, ctx)
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


@experiment(STUDY, "fig3right", Fig3RightConfig, ref="Fig. 3-right", figure=figures.pl_sweep,
            title="Factored attention on Potts data vs the number of samples (L-BFGS to convergence)")
def fig3right(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> Result:
    data, done = _pl_sweep(config, ctx)
    return _pl_result(config, data, done)


@experiment(STUDY, "consistency", ConsistencyConfig, ref="text after Eq. (6), refs [38-40]",
            figure=figures.pl_sweep, title="Consistency of the factored PL estimator along M")
def consistency(config: Fig3RightConfig | ConsistencyConfig, ctx: RunContext) -> Result:
    data, done = _pl_sweep(config, ctx)
    return _pl_result(config, data, done)


# -- MLM = pseudo-likelihood -------------------------------------------------------------------------------------------


@experiment(STUDY, "equivalence", EquivalenceConfig, ref="Eqs. (4)-(6), Eqs. (4)-(6)", figure=figures.equivalence,
            title="MLM with factored attention = pseudo-likelihood: identities and recovered couplings")
def equivalence(config: EquivalenceConfig, ctx: RunContext) -> Result:
    data = _data(config, ctx)
    potts = data.potts
    c = data.train
    W, V = potts_representation(potts, attn="linear")
    lin = factored_logits(c, W, V, "linear")
    summary: dict[str, float] = {
        "optimal_loss": data.optimal_loss, "pl_true_train": float(potts.pseudo_loglik(c)),
        "mlm_plus_pl": abs(float(mlm_loss(lin, c) + potts.pseudo_loglik(c))),
        "linear_logits_err": float((lin - potts.local_fields(c)).abs().max()),
    }
    Ws, Vs = potts_representation(potts)
    summary["softmax_rep_err"] = float((torch.log_softmax(factored_logits(c, Ws, Vs), -1)
                                        - potts.conditional_logp(c)).abs().max())
    Wn, Vn = potts_representation(potts, attn="softmax_nosink")
    summary["nosink_rep_err"] = float((torch.log_softmax(factored_logits(c, Wn, Vn, "softmax_nosink"), -1)
                                       - potts.conditional_logp(c)).abs().max())

    def compute(u: Unit) -> dict[str, np.ndarray]:
        if u.key == "adam":
            with ctx.progress(config.epochs, "factored attention (Adam)") as bar:
                fit = train_stacked("factored", data, seeds=[ctx.seed("init") % 2**62], optim=config.optim(),
                                    progress=lambda e, T: bar.update(e), checkpoint=u.save, resume=u.resume)
            return {"W": fit.params["W"].double().cpu().numpy(), "V": fit.params["V"].double().cpu().numpy()}
        fit = fit_lbfgs(c[None], data, lam=config.lam, seeds=[ctx.seed("init") % 2**62], max_iter=config.max_iter)
        return {"W": fit.W.cpu().numpy(), "V": fit.V.cpu().numpy(), "converged": fit.converged.cpu().numpy()}

    done = run_units(ctx, ["adam", "lbfgs"], compute, "estimators")
    freq = colour_frequencies(c.cpu(), potts.C)
    J, U = potts.J.cpu(), potts.U.cpu()
    maps = {}
    for kind in ("adam", "lbfgs"):
        Wk, Vk = torch.as_tensor(done[kind]["W"]), torch.as_tensor(done[kind]["V"])
        A = attention(Wk)
        maps[kind] = A
        summary[f"{kind}_test"] = float(mlm_loss(factored_logits(data.test.cpu(), Wk, Vk), data.test.cpu()).mean())
        summary[f"{kind}_gap"] = summary[f"{kind}_test"] - data.optimal_loss
        summary[f"{kind}_pl_train"] = -float(mlm_loss(factored_logits(c.cpu(), Wk, Vk), c.cpu()).mean())
        summary.update(_final_metrics(kind, A, J))
        summary[f"{kind}_value_corr"] = float(metrics.value_corr(Vk, U, freq).mean())
    summary["corr_adam_lbfgs"] = float(metrics.corr_offdiag(maps["adam"][0], maps["lbfgs"][0]))
    summary["lbfgs_converged"] = float(done["lbfgs"]["converged"].all())
    arrays = {"J": J.numpy(), "U": U.numpy(), "freq": freq.numpy(),
              **{f"{k}/{n}": v for k in done for n, v in done[k].items()},
              **{f"{k}/A": v.numpy() for k, v in maps.items()}}
    return Result(pd.DataFrame([summary]), arrays, summary)


# -- the sampler and β ------------------------------------------------------------------------------------------------


@experiment(STUDY, "gibbs", GibbsConfig, ref="App. 'Numerical details'", figure=figures.gibbs,
            title="Gibbs sampling: Hamming distance vs β (pooled chains, one chain), β tuned to the paper's 0.3")
def gibbs_scan(config: GibbsConfig, ctx: RunContext) -> Result:
    potts = config.spec().model(ctx.device)
    betas = torch.tensor(config.betas, dtype=torch.float64, device=ctx.device)
    nb = len(config.betas)
    g = ctx.rng("data")

    def compute(u: Unit) -> dict[str, np.ndarray]:
        if u.key == "pooled":  # n_chains chains per β, as the data sets of the experiments are made
            per = math.ceil(config.pilot_samples / config.n_chains)
            run = gibbs(potts, nb * config.n_chains, per, burn_in=config.burn_in, thin=config.thin, generator=g,
                        beta=betas.repeat_interleave(config.n_chains), order=config.order)
            s = run.samples.reshape(nb, config.n_chains * per, -1)
            return {"d_pooled": mean_pairwise_hamming(s, potts.C).cpu().numpy(),
                    "d_within": run.hamming_within().reshape(nb, -1).mean(-1).cpu().numpy(),
                    "energy": run.energies.reshape(nb, config.n_chains, per).mean(-1).cpu().numpy()}
        if u.key == "single":  # one chain per β (the paper's protocol), many close samples; tune β on it
            beta, d = tune_beta(potts, config.target, betas, generator=g, protocol="single",
                                n_samples=config.pilot_samples, burn_in=config.burn_in, thin=config.pilot_thin,
                                order=config.order)
            return {"d_single": d.cpu().numpy(), "beta_tuned": np.array([beta])}
        beta = float(u.done["single"]["beta_tuned"][0])  # paper-faithful chains: each one chain, thin sweeps apart
        n = config.chain_count
        state = u.resume or {"c": None, "samples": [], "energies": []}
        block = max(1, min(config.chain_samples, 20))
        with ctx.progress(config.chain_samples, f"{n} paper-faithful chain(s) at β = {beta:.3g}") as bar:
            while (have := sum(x.shape[1] for x in state["samples"])) < config.chain_samples:
                run = gibbs(potts, n, min(block, config.chain_samples - have), burn_in=config.chain_thin,
                            thin=config.chain_thin, generator=g, beta=beta, order=config.order, init=state["c"])
                state["c"] = run.samples[:, -1]
                state["samples"].append(run.samples.cpu())
                state["energies"].append(run.energies.cpu())
                bar.update(have + state["samples"][-1].shape[1])
                u.save(lambda: state)
        samples = torch.cat(state["samples"], 1)  # (chain_count, chain_samples, L)
        d = np.array([float(mean_pairwise_hamming(x, potts.C)) for x in samples])
        return {"samples": samples[0].numpy(), "energies": torch.cat(state["energies"], 1)[0].numpy(),
                "d_chain": d[:1], "d_chains": d}

    done = run_units(ctx, ["pooled", "single", "chain"], compute, "β scan and the paper-faithful chain")
    d_single = done["single"]["d_single"]
    summary: dict[str, float] = {"beta_tuned": float(done["single"]["beta_tuned"][0]), "target": config.target,
                                 "d_chain": float(done["chain"]["d_chain"][0])}
    summary["d_chain_minus_target"] = summary["d_chain"] - config.target
    d = done["chain"]["d_chains"]
    summary.update(d_chains_mean=float(d.mean()), d_chains_min=float(d.min()), d_chains_max=float(d.max()),
                   d_chains_within_tol=float((np.abs(d - config.target) <= 0.05).mean()),
                   d_pilot_tuned=float(d_single[list(config.betas).index(summary["beta_tuned"])]),
                   pilot_sweeps=float(config.pilot_samples * config.pilot_thin),
                   chain_sweeps=float(config.chain_samples * config.chain_thin))
    for b, dp, ds in zip(config.betas, done["pooled"]["d_pooled"], d_single, strict=True):
        summary[f"d_pooled_beta{b:g}"], summary[f"d_single_beta{b:g}"] = float(dp), float(ds)
    dp = done["pooled"]["d_pooled"]
    hot = [k for k, b in enumerate(config.betas) if b in (0.0, 0.5, 1.0)]
    summary["hot_min_decrease"] = float(-np.diff(dp[hot]).max()) if len(hot) > 1 else float("nan")
    df = pd.DataFrame({"beta": config.betas, "d_pooled": dp, "d_within_pooled_chains": done["pooled"]["d_within"],
                       "d_single_chain": d_single})
    arrays = {"betas": np.asarray(config.betas), **{f"{k}/{n}": v for k in ("pooled", "single", "chain")
                                                    for n, v in done[k].items()}}
    return Result(df, arrays, summary)
