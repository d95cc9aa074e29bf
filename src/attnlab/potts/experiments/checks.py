"""The identities of Eqs. (4)-(6) of paper 2 (masked language modelling with factored attention is the
pseudo-likelihood of the Potts model) and its sampler (App. 'Numerical details'): configs, runs, declarations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch
from pydantic import Field, field_validator

from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from attnlab.core.runs import RunContext
from attnlab.core.units import Unit, run_units
from attnlab.potts import costs, figures, metrics
from attnlab.potts.configs import TINY_DATA, PottsDataConfig, Training
from attnlab.potts.data.potts import colour_frequencies, mean_pairwise_hamming
from attnlab.potts.data.sampler import gibbs, tune_beta
from attnlab.potts.experiments.common import final_metrics, potts_data
from attnlab.potts.model import attention, factored_logits, mlm_loss, potts_representation
from attnlab.potts.summaries import EquivalenceSummary, GibbsSummary
from attnlab.potts.train.mlm import train_stacked
from attnlab.potts.train.pseudolikelihood import fit_lbfgs

STUDY = "potts"


class EquivalenceConfig(PottsDataConfig, Training):
    """MLM = pseudo-likelihood (Eqs. (4)-(6)): exact identities at the true couplings, and factored attention trained
    by Adam vs the factored PLM solved by L-BFGS on the same data."""

    lam: float = Field(1e-2, ge=0, le=1000,
                       description="λ of the L-BFGS PLM (reg 'sum': λ/(2M)||θ||², 3e-6 per sample)")
    max_iter: int = Field(1000, ge=10, le=100_000, description="L-BFGS iteration cap of the PLM fit")


class GibbsConfig(PottsDataConfig):
    """The sampler and β (App. 'Numerical details', docs/studies/potts.md note 1): Hamming distance vs β pooled over
    chains and within one chain, β tuned
    to the paper's target, and a paper-faithful single chain at the tuned β."""

    betas: tuple[float, ...] = Field((0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.5, 3.0),
                                     min_length=2, description="β grid (fine where one chain crosses d_H = 0.3)",
                                     json_schema_extra={"allowed": "two or more numbers, each ≥ 0"})
    pilot_samples: int = Field(300, ge=2, le=100_000, description="saved configurations per β in the scan")
    pilot_thin: int = Field(20, ge=1, description="sweeps between pilot samples of the single-chain scan")
    target: float = Field(0.3, gt=0, lt=1, description="target mean Hamming distance (paper: 0.3)")
    chain_samples: int = Field(4000, ge=2, le=1_000_000, description="saved configurations of the paper-faithful chain")
    chain_thin: int = Field(10_000, ge=1, description="sweeps between them (paper: 10000)")
    chain_count: int = Field(8, ge=1, le=1000, description="independent paper-faithful chains at the tuned β (one "
                                                           "computation; the first is the one shown)")
    # paper: the paper's thinning, 300 samples per chain rather than its 4000 (8 chains × 3·10⁶ sweeps)
    scales = {"quick": {"chain_samples": 200, "chain_thin": 500}, "paper": {"chain_samples": 300}}

    @field_validator("betas")
    @classmethod
    def _betas_nonnegative(cls, v):
        if any(b < 0 for b in v):
            raise ValueError(f"key 'betas' = {list(v)}: inverse temperatures must be >= 0")
        return v


def equivalence(config: EquivalenceConfig, ctx: RunContext) -> Result:
    data = potts_data(config, ctx)
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
        summary.update(final_metrics(kind, A, J))
        summary[f"{kind}_value_corr"] = float(metrics.value_corr(Vk, U, freq).mean())
    summary["corr_adam_lbfgs"] = float(metrics.corr_offdiag(maps["adam"][0], maps["lbfgs"][0]))
    summary["lbfgs_converged"] = float(done["lbfgs"]["converged"].all())
    arrays = {"J": J.numpy(), "U": U.numpy(), "freq": freq.numpy(),
              **{f"{k}/{n}": v for k in done for n, v in done[k].items()},
              **{f"{k}/A": v.numpy() for k, v in maps.items()}}
    return Result(pd.DataFrame([summary]), arrays, summary)


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


EQUIVALENCE = Experiment(
    STUDY, "equivalence", EquivalenceConfig, equivalence, ref="Eqs. (4)-(6)", figure=figures.equivalence,
    cost=costs.equivalence, summary=EquivalenceSummary,
    title="MLM with factored attention = pseudo-likelihood: identities and recovered couplings",
    outputs=declare(
        arrays={
            "J": ("L", "L"),
            "U": ("C", "C"),
            "adam/A adam/W lbfgs/A lbfgs/W": (1, "L", "L"),
            "adam/V lbfgs/V": (1, "C", "C"),
            "freq": ("C",),
            "lbfgs/converged": (1,),
        },
        tiny={**TINY_DATA, "epochs": 2, "max_iter": 40}))
GIBBS = Experiment(
    STUDY, "gibbs", GibbsConfig, gibbs_scan, ref="App. 'Numerical details'", figure=figures.gibbs, cost=costs.gibbs,
    summary=GibbsSummary,
    title="Gibbs sampling: Hamming distance vs β (pooled chains, one chain), β tuned to the paper's 0.3",
    outputs=declare(
        arrays={
            "betas pooled/d_pooled pooled/d_within single/d_single": ("len(betas)",),
            "chain/d_chain single/beta_tuned": (1,),
            "chain/d_chains": ("chain_count",),
            "chain/energies": ("chain_samples",),
            "chain/samples": ("chain_samples", "L"),
            "pooled/energy": ("len(betas)", "n_chains"),
        },
        tiny={"L": 8, "C": 6, "betas": [0.0, 0.5, 1.0], "n_chains": 4, "pilot_samples": 8, "burn_in": 10, "thin": 2,
              "pilot_thin": 2, "chain_samples": 5, "chain_thin": 3}))
