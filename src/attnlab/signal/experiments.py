"""Experiments at initialisation, one per paper figure (paper 1; spec §4–5): config in, tables and arrays out.

Random streams: ``init`` (network weights and embeddings), ``data`` (input sequences), ``mc`` (Monte Carlo of
the theory), ``eval`` (held-out data). Multi-part experiments checkpoint after each finished part. The training
experiments (Figs. 1a/b, 1f, 4, C.2) are in ``train_experiments.py``.
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Result, experiment
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import run_units
from attnlab.signal import data, diagram, figures, rem, theory, train
from attnlab.signal.arch import beta_from_std, qk_std_from_beta
from attnlab.signal.common import corpus_tokens, cpu_rng
from attnlab.signal.configs import (
    DepthConfig,
    SALayerConfig,
    TrainabilityConfig,
    UniversalityConfig,
)
from attnlab.signal.model import attention, init_block

STUDY = "signal"


# -- Fig. 1c: trainability diagram ------------------------------------------------------------------------


def trainability(config: TrainabilityConfig, ctx: RunContext) -> Result:
    """Theory diagram (β × α_SA, L layers), α_c(L) for several ε, and the simulated diagram on a coarse grid."""
    arch = config.arch()
    betas = np.geomspace(config.beta_min, config.beta_max, config.n_beta)
    alphas = np.linspace(0.0, config.alpha_max, config.n_alpha)
    table = rem.OverlapTable(arch.T, seed=ctx.seed("mc")) if config.finite_T else None
    t0 = time.perf_counter()
    dg = diagram.trainability(arch, betas, alphas, rho0=config.rho0, eps=config.eps, table=table)
    seconds = time.perf_counter() - t0
    ac = diagram.alpha_c(arch, config.Ls, config.eps_list, rho0=config.rho0, table=table).numpy()
    arrays = {"betas": betas, "alphas": alphas, "phase": dg["phase"].numpy(), "rho_L": dg["rho_L"].numpy(),
              "entropy_1": dg["entropy_1"].numpy(), "Ls": np.asarray(config.Ls),
              "eps_list": np.asarray(config.eps_list),
              "alpha_c": ac}
    rows = [{"table": "alpha_c", "L": L, "eps": e, "alpha_c": ac[i, j]}
            for i, L in enumerate(config.Ls) for j, e in enumerate(config.eps_list)]
    finite = np.where(np.isfinite(ac), ac, np.nan)
    summary = {"diagram_seconds": seconds, "beta_c": float(dg["beta_c"]),
               "alpha_c": float(diagram.alpha_c(arch, [arch.L], [config.eps], rho0=config.rho0, table=table)[0, 0]),
               "alpha_c_min_step": float(np.nanmin(np.diff(finite, axis=0))),
               **{f"frac_{name.replace(' ', '_')}": float((dg["phase"] == k).double().mean())
                  for k, name in enumerate(diagram.PHASES)}}
    if config.sim_betas and config.sim_alphas:
        sim_arch = arch.replace(d=config.sim_d, T=config.sim_T, H=math.gcd(arch.H, config.sim_d), T_init=None)
        bb, aa = (np.asarray(v, dtype=float).ravel() for v in np.meshgrid(config.sim_betas, config.sim_alphas))
        t1 = time.perf_counter()
        with ctx.progress(1.0, "simulated diagram") as bar:
            sim = train.simulate(sim_arch, n_inits=config.n_inits, n_seqs=config.n_seqs, rho0=config.rho0, betas=bb,
                                 alphas=aa, gen=ctx.rng("init"), device=ctx.device, progress=bar.update)
        L = sim_arch.L
        red = (sim["entropy"][1] < config.tau_entropy) | (sim["ipr"][1] > config.tau_ipr)
        sim_phase = np.where(red, 2, np.where(sim["rho"][L] >= 1 - config.eps, 1, 0))
        th = theory.predict(sim_arch, sim["rho"][0], beta=torch.tensor(bb), alpha_sa=torch.tensor(aa))
        th_phase = diagram.classify(theory.theory_beta(sim_arch, torch.tensor(bb)), torch.tensor(th["rho"][L]),
                                    config.rho0, config.eps).numpy()
        arrays.update({"sim_betas": bb, "sim_alphas": aa, "sim_phase": sim_phase, "sim_theory_phase": th_phase,
                       "sim_rho_L": sim["rho"][L], "sim_entropy_1": sim["entropy"][1], "sim_ipr_1": sim["ipr"][1]})
        rows += [{"table": "sim", "beta": b, "alpha": a, "phase_sim": int(ps), "phase_theory": int(pt), "rho_L": r}
                 for b, a, ps, pt, r in zip(bb, aa, sim_phase, th_phase, sim["rho"][L], strict=True)]
        summary["sim_agreement"] = float((sim_phase == th_phase).mean())
        summary["sim_seconds"] = time.perf_counter() - t1
        summary["sim_gflop_per_s"] = sim.meta["flops"] * 2 / 1e9 / summary["sim_seconds"]
    return Result(pd.DataFrame(rows), arrays, summary)


experiment(STUDY, "fig1c", TrainabilityConfig.with_defaults("Fig1cConfig", L=60, beta=0.1),
           ref="Fig. 1c", figure=figures.trainability, headline=True,
           title="Trainability diagram β × α_SA (60 layers): entropy / rank collapse / trainable")(trainability)


# -- Figs. 1d, 1e: cosine over depth, theory vs simulation ---------------------------------------------------


def depth(config: DepthConfig, ctx: RunContext) -> Result:
    """Mean pairwise cosine over layers: random-init networks (dots, mean ± std over inits × sequences) against
    Eq. 19 iterated from the measured layer-0 cosine (asymptotic, and finite-T)."""
    arch = config.arch()
    if config.hf_std is not None:  # an off-the-shelf init: β from its Q/K std (App. B.1)
        arch = arch.replace(beta=beta_from_std(config.hf_std, arch.d, arch.H, arch.t_init, arch.beta_convention))
    pairs = list(config.pairs or itertools.product(config.betas or (arch.beta,), config.alphas))
    bb = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    aa = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    tokens, vocab = (None, None)
    if config.inputs == "corpus":
        windows, vocab = corpus_tokens(config, arch.T, ctx)
        pick = torch.randperm(windows.shape[0], generator=cpu_rng(ctx, "data"))[: config.n_seqs]
        tokens = windows[pick]

    def compute(i: int) -> dict[str, np.ndarray]:  # one configuration (β, α_SA): a checkpointed unit
        with ctx.progress(1.0, f"propagate {arch.L} layers, β={pairs[i][0]:g}, α_SA={pairs[i][1]:g}") as bar:
            sim = train.simulate(arch, n_inits=config.n_inits, n_seqs=config.n_seqs, rho0=config.rho0, tokens=tokens,
                                 vocab=vocab, emb_std=config.emb_std, betas=bb[i:i + 1], alphas=aa[i:i + 1],
                                 gen=ctx.rng(f"init/{i}"), device=ctx.device, progress=bar.update)
        out = sim.to_arrays("sim_")
        out["sim_flops"] = np.asarray(sim.meta["flops"])
        return out

    parts = run_units(ctx, list(range(len(pairs))), lambda u: compute(u.key), "configurations")
    done = {k: (np.concatenate([parts[i][k] for i in range(len(pairs))], axis=1) if parts[0][k].ndim == 2
                else parts[0][k]) for k in parts[0]}
    done["sim_flops"] = np.asarray(sum(float(parts[i]["sim_flops"]) for i in range(len(pairs))))
    sim = _layers(done, "sim_", "simulation")
    rho0 = torch.tensor(sim["rho"][0])
    th = theory.predict(arch, rho0, beta=bb, alpha_sa=aa)
    arrays = {**done, **th.to_arrays("theory_"), "betas": bb.numpy(), "alphas": aa.numpy(), "beta_theory":
              theory.theory_beta(arch, bb).numpy()}
    frames = [sim.to_frame(), th.to_frame()]
    summary = {"beta": arch.beta, "beta_theory": arch.beta_theory, "rho0": float(sim["rho"][0].mean()),
               "max_dev": float(np.nanmax(np.abs(sim["rho"] - th["rho"])))}
    if config.finite_T:
        thf = theory.predict(arch, rho0, beta=bb, alpha_sa=aa, finite_T=True, seed=ctx.seed("mc"))
        arrays.update(thf.to_arrays("finite_"))
        frames.append(thf.to_frame().assign(source="theory_finite_T"))
        summary["max_dev_finite_T"] = float(np.nanmax(np.abs(sim["rho"] - thf["rho"])))
    for i in range(len(pairs)):
        summary[f"max_dev_{i}"] = float(np.abs(sim["rho"][:, i] - th["rho"][:, i]).max())
        summary[f"rho_L_sim_{i}"] = float(sim["rho"][-1, i])
        summary[f"rho_L_theory_{i}"] = float(th["rho"][-1, i])
        summary[f"entropy_1_sim_{i}"] = float(sim["entropy"][1, i])
    return Result(pd.concat(frames, ignore_index=True), arrays, summary)


def _layers(arrays, prefix: str, source: str) -> Trajectory:
    """The stored trajectory ``prefix*`` of a depth run (without its FLOP count)."""
    keep = {k: v for k, v in arrays.items() if k.startswith(prefix) and k != f"{prefix}flops"}
    return Trajectory.from_arrays(keep, prefix, time_name="layer", source=source)


experiment(STUDY, "fig1d", DepthConfig.with_defaults(
    "Fig1dConfig", L=60, H=6, d=720, T=512, hf_std=0.02, alphas=(1.0, 2.0, 4.0), sigma_v2=0.2, sigma_w2=0.2,
    scales={"quick": {"d": 128, "H": 2, "T": 64, "n_inits": 8, "n_seqs": 4}, "paper": {}},
    doc="Fig. 1d: 60 layers, standard HF Q/K init (std 0.02: low β), α_SA ∈ {1, 2, 4}, stories corpus."),
    ref="Fig. 1d", figure=figures.depth, headline=True,
    title="Cosine over depth, theory vs simulation (60 layers, HF init, low β)")(depth)
experiment(STUDY, "fig1e", DepthConfig.with_defaults(
    "Fig1eConfig", L=12, H=6, d=720, T=512, beta=3.0, alphas=(1.0,),
    scales={"quick": {"d": 128, "H": 2, "T": 64, "n_inits": 4, "n_seqs": 4}, "paper": {}},
    doc="Fig. 1e: 12 layers in the high-variance phase (per-head β = 3), stories corpus."),
    ref="Fig. 1e", figure=figures.depth, title="Cosine over depth, high-β phase (12 layers)")(depth)
experiment(STUDY, "depth", DepthConfig.with_defaults(
    "DepthSyntheticConfig", L=24, d=128, T=64, inputs="synthetic", rho0=0.05,
    pairs=((0.1, 0.25), (0.1, 0.5), (0.1, 1.0), (0.1, 2.0), (3.0, 1.0)), n_inits=8, n_seqs=4,
    # 8 inits at quick scale: a β = 3 network attends in a frozen random pattern, so its ρ_l varies from one init
    # to the next (std 0.08 at l = 24); with 3 inits the mean wandered 0.06-0.11 from the theory, with 8 it is 0.045
    scales={"quick": {}, "paper": {"L": 60, "d": 256, "T": 128, "n_inits": 10, "n_seqs": 10}},
    doc="Spec AC-6: synthetic ρ_0 = 0.05 tokens, (β, α_SA) grid, theory vs simulation over depth."),
    ref="Figs. 1d/e (spec AC-6)", figure=figures.depth,
    title="Cosine over depth on synthetic tokens, (β, α_SA) grid")(depth)


# -- Fig. 3: one SA layer ---------------------------------------------------------------------------------


def sa_layer(config: SALayerConfig, ctx: RunContext) -> Result:
    """Output cosine and IPR of one SA head over (β, ρ): simulation, finite-T MC (mean of ratios), Eq. 14."""
    arch = config.arch(H=1)
    bb, rr = (np.asarray(v, dtype=float).ravel() for v in np.meshgrid(config.betas, config.rhos, indexing="ij"))
    C, n = bb.size, config.n_inits
    P = C * n
    qk = torch.tensor([qk_std_from_beta(b, arch.d, arch.T) for b in bb]).repeat_interleave(n).float()
    rho_slot = torch.tensor(rr).repeat_interleave(n).float()
    gen = ctx.rng("init")
    cos_out, ipr, cos_in = torch.empty(P), torch.empty(P), torch.empty(P)
    chunk = max(1, int(2e7 // (arch.T * (arch.T + 3 * arch.d))))
    with ctx.progress(P, "SA layer") as bar:
        for s in range(0, P, chunk):
            sl = slice(s, min(P, s + chunk))
            x = data.prescribed_cosine(rho_slot[sl], sl.stop - sl.start, 1, arch.T, arch.d, gen, ctx.device)
            p = init_block(arch, sl.stop - sl.start, gen, ctx.device, qk[sl].to(ctx.device))
            rec = {}
            out = attention(x, p, 1, hook=lambda name, t, rec=rec: rec.update(A=t))
            cos_in[sl], cos_out[sl] = data.mean_cosine(x)[:, 0].cpu(), data.mean_cosine(out)[:, 0].cpu()
            ipr[sl] = (rec["A"] * rec["A"]).sum(-1).mean((-1, -2, -3)).cpu()
            bar.advance(sl.stop - sl.start)
    shape = (len(config.betas), len(config.rhos))
    sim_cos = cos_out.double().reshape(C, n).mean(1).reshape(shape).numpy()
    sim_ipr = ipr.double().reshape(C, n).mean(1).reshape(shape).numpy()
    mc = rem.mc_overlaps(torch.tensor(bb), torch.tensor(rr), arch.T, config.n_rep, cpu_rng(ctx, "mc"),
                         sigma_v2=arch.sigma_v2, sigma_b2=arch.sigma_b2)
    mc_cos, mc_ipr = (mc[k].reshape(shape).numpy() for k in ("cos", "q_sa"))
    eq14 = rem.sa_cosine(torch.tensor(bb), torch.tensor(rr), sigma_v2=arch.sigma_v2,
                         sigma_b2=arch.sigma_b2).reshape(shape).numpy()
    fine_b, fine_r = np.linspace(0.02, max(config.betas), 200), np.linspace(0, 0.98, 200)
    heat = rem.sa_cosine(torch.tensor(fine_b)[None, :], torch.tensor(fine_r)[:, None]).numpy()
    B, R = np.asarray(config.betas), np.asarray(config.rhos)
    summary = {"max_dev_mc": _max_on(np.abs(sim_cos - mc_cos), B, R, (0.5, 1.0, 1.5, 2.0, 3.0), (0.05, 0.2, 0.5)),
               "max_dev_eq14_beta3": _max_on(np.abs(sim_cos - eq14), B, R, (3.0,), tuple(r for r in R if r <= 0.5)),
               "input_cos_error": float((cos_in.double() - rho_slot.double()).abs().mean())}
    stars = {}
    for j, r in enumerate(R):
        stars[r] = _crossing(B, sim_ipr[:, j], config.ipr_level)
        summary[f"beta_star_sim_rho{r:g}"] = stars[r]
        summary[f"beta_star_mc_rho{r:g}"] = _crossing(B, mc_ipr[:, j], config.ipr_level)
        summary[f"beta_star_theory_rho{r:g}"] = float(rem.beta_c(r)) / (1 - config.ipr_level)
    scaled = [stars[r] * math.sqrt(1 - r) for r in (0.0, 0.25, 0.5) if r in stars]
    summary["beta_star_scaled_spread"] = (max(scaled) / min(scaled) - 1) if len(scaled) > 1 else math.nan
    ratios = [stars[r] / (float(rem.beta_c(r)) / (1 - config.ipr_level)) for r in (0.0, 0.25, 0.5) if r in stars]
    summary["shift_ratio_min"] = min(ratios, default=math.nan)
    summary["shift_ratio_max"] = max(ratios, default=math.nan)
    rows = [{"beta": b, "rho": r, "sim_cos": sc, "mc_cos": mcc, "eq14": e, "sim_ipr": si, "mc_ipr": mi}
            for b, r, sc, mcc, e, si, mi in zip(bb, rr, sim_cos.ravel(), mc_cos.ravel(), eq14.ravel(),
                                                sim_ipr.ravel(), mc_ipr.ravel(), strict=True)]
    arrays = {"betas": B, "rhos": R, "sim_cos": sim_cos, "sim_ipr": sim_ipr, "mc_cos": mc_cos, "mc_ipr": mc_ipr,
              "eq14": eq14, "fine_betas": fine_b, "fine_rhos": fine_r, "heat": heat}
    return Result(pd.DataFrame(rows), arrays, summary)


def _max_on(a: np.ndarray, B, R, bs, rs) -> float:
    idx = [(i, j) for i, b in enumerate(B) for j, r in enumerate(R)
           if any(np.isclose(b, bs)) and any(np.isclose(r, rs))]
    return float(max(a[i, j] for i, j in idx)) if idx else math.nan


def _crossing(xs: np.ndarray, ys: np.ndarray, level: float) -> float:
    """First x where ys (increasing on average) crosses ``level``, by linear interpolation; NaN if never."""
    above = np.nonzero(ys >= level)[0]
    if above.size == 0 or above[0] == 0:
        return math.nan if above.size == 0 else float(xs[0])
    i = above[0]
    return float(xs[i - 1] + (level - ys[i - 1]) * (xs[i] - xs[i - 1]) / (ys[i] - ys[i - 1]))


experiment(STUDY, "fig3", SALayerConfig.with_defaults(
    "Fig3Config", T=512, d=512, H=1, sigma_v2=1.0, sigma_b2=0.0,
    # d = 1024 at quick scale: at d = 256 the simulated cosine sits 0.02-0.04 below the d → ∞ MC (finite-d)
    scales={"quick": {"T": 256, "d": 1024, "n_inits": 2, "betas": (0.5, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0),
                      "rhos": (0.0, 0.05, 0.2, 0.25, 0.5)}, "paper": {}},
    doc="Fig. 3: one SA head, output cosine over (β, ρ_in): Eq. 14 (left) vs experiment (right), T = d = 512."),
    ref="Fig. 3", figure=figures.sa_layer, title="SA phase diagram: Eq. 14 vs one simulated SA head")(sa_layer)


# -- universality of β_c -----------------------------------------------------------------------------------


def universality(config: UniversalityConfig, ctx: RunContext) -> Result:
    """IPR of real attention layers on orthogonal tokens vs β for several (d, H, T): the crossing β* of a fixed
    IPR level is the same for every d and H (Eq. 11 scaling), and the frozen-phase IPR does not depend on T."""
    base = config.arch()
    B = np.asarray(config.betas)
    rows, curves, summary = [], {}, {}

    def compute(combo):
        d, H, T = combo
        arch = base.replace(d=d, H=H, T=T, T_init=None)
        qk = torch.tensor([qk_std_from_beta(b, d, T) for b in B]).repeat_interleave(config.n_inits).float()
        P = qk.numel()
        out = torch.empty(P)
        chunk = max(1, int(2e7 // (T * (H * T + 3 * d))))
        gen = ctx.rng(f"init/{d}/{H}/{T}")
        for s in range(0, P, chunk):
            sl = slice(s, min(P, s + chunk))
            x = data.prescribed_cosine(0.0, sl.stop - sl.start, 1, T, d, gen, ctx.device)
            p = init_block(arch, sl.stop - sl.start, gen, ctx.device, qk[sl].to(ctx.device))
            rec = {}
            attention(x, p, H, hook=lambda name, t, rec=rec: rec.update(A=t))
            out[sl] = (rec["A"] * rec["A"]).sum(-1).mean((-1, -2, -3)).cpu()
        return out.double().reshape(B.size, config.n_inits).mean(1).numpy()

    done = run_units(ctx, [tuple(c) for c in config.combos], lambda u: compute(u.key), "(d, H, T)")
    for d, H, T in config.combos:
        ipr = done[(d, H, T)]
        curves[f"ipr_{d}_{H}_{T}"] = ipr
        star = _crossing(B, ipr, config.ipr_level)
        summary[f"beta_star_{d}_{H}_{T}"] = star
        summary[f"ipr_beta3_{d}_{H}_{T}"] = float(np.interp(3.0, B, ipr))
        rows += [{"d": d, "H": H, "T": T, "beta": b, "ipr": v} for b, v in zip(B, ipr, strict=True)]
    T0 = config.combos[0][2]
    same_T = [summary[f"beta_star_{d}_{H}_{T}"] for d, H, T in config.combos if T == T0]
    summary["beta_star_spread_dH"] = float((max(same_T) - min(same_T)) / np.mean(same_T))
    d0 = max(d for d, _, _ in config.combos)
    frozen = [summary[f"ipr_beta3_{d}_{H}_{T}"] for d, H, T in config.combos if d == d0 and H == 1]
    summary["ipr_beta3_spread_T"] = float(max(frozen) - min(frozen))
    return Result(pd.DataFrame(rows), {"betas": B, **curves}, summary)


experiment(STUDY, "universality", UniversalityConfig, ref="Eqs. 11, 13 (spec §3.2)", figure=figures.universality,
           title="β_c independent of d and H; frozen-phase IPR independent of T")(universality)

from attnlab.signal import experiments_more, train_experiments  # noqa: E402,F401  (register the other figures)
