"""Experiments on one attention layer (paper 1): the SA phase diagram (Fig. 3), the universality of β_c in d, H
and T (Eqs. (11), (13)), the REM order parameters against β (Figs. B.1, B.2) and the attention spectrum (Fig. C.1).

Random streams: ``init`` (network weights), ``mc`` (the score field's Monte Carlo).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.units import run_units
from attnlab.signal import costs, data, figures, memory, outputs, summaries
from attnlab.signal.arch import qk_std_from_beta
from attnlab.signal.configs import REMConfig, SALayerConfig, SpectrumConfig, UniversalityConfig
from attnlab.signal.model import attention, init_block
from attnlab.signal.theory import rem

STUDY = "signal"
F64 = torch.float64


def rem_key(kind: str, rho: float, T: int, beta: float) -> str:
    """figB1's summary key of a row statistic (``ipr`` or ``entropy``) at (ρ, T, β): one spelling for writer and
    readers (claims, views)."""
    return f"{kind}_rho{rho:g}_T{T}_beta{beta:g}"


# -- Fig. 3: one SA layer ---------------------------------------------------------------------------------


def sa_layer(config: SALayerConfig, ctx: RunContext) -> Result:
    """Output cosine and IPR of one SA head over (β, ρ): simulation, finite-T MC (mean of ratios), Eq. (14)."""
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
    mc = rem.mc_overlaps(torch.tensor(bb), torch.tensor(rr), arch.T, config.n_rep, ctx.generator("mc", "cpu"),
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


FIG3 = Experiment(
    STUDY, "fig3", SALayerConfig.with_defaults(
    "Fig3Config", T=512, d=512, H=1, sigma_v2=1.0, sigma_b2=0.0,
    # d = 1024 at quick scale: at d = 256 the simulated cosine sits 0.02-0.04 below the d → ∞ MC (finite-d)
    scales={"quick": {"T": 256, "d": 1024, "n_inits": 2, "betas": (0.5, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0),
                      "rhos": (0.0, 0.05, 0.2, 0.25, 0.5)}, "paper": {}},
    doc="Fig. 3: one SA head, output cosine over (β, ρ_in): Eq. 14 (left) vs experiment (right), T = d = 512."),
    sa_layer,
    ref="Fig. 3",
    figure=figures.sa_layer,
    title="SA phase diagram: Eq. 14 vs one simulated SA head",
    memory=memory.sa_layer,
    cost=costs.fig3,
    outputs=outputs.FIG3,
    summary=summaries.Fig3Summary,
)


# -- universality of β_c -----------------------------------------------------------------------------------


def universality(config: UniversalityConfig, ctx: RunContext) -> Result:
    """IPR of real attention layers on orthogonal tokens vs β for several (d, H, T): the crossing β* of a fixed
    IPR level is the same for every d and H (Eq. (11) scaling), and the frozen-phase IPR does not depend on T."""
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


UNIVERSALITY = Experiment(
    STUDY, "universality", UniversalityConfig, universality,
    ref="Eqs. 11, 13, Sec. 3.1",
    figure=figures.universality,
    title="β_c independent of d and H; frozen-phase IPR independent of T",
    cost=costs.universality,
    outputs=outputs.UNIVERSALITY,
    summary=summaries.UniversalitySummary,
)


# -- Figs. B.1, B.2, C.1: the REM order parameters and the spectrum ------------------------------------------


def rem_order_parameters(config: REMConfig, ctx: RunContext) -> Result:
    """Figs. B.1/B.2: IPR and S/log T of attention rows vs β for several T and ρ (simulation of the score field)
    against Eqs. (13), (B.18) and the Eq. (15) heuristic; q^SA, p^SA (full T×T matrices) against B.17."""
    B = torch.tensor(config.betas, dtype=F64)
    fine = torch.linspace(min(config.betas), max(config.betas), 400, dtype=F64)
    rows, arrays, summary = [], {"betas": B.numpy(), "fine_betas": fine.numpy()}, {}
    gen = ctx.generator("mc", "cpu")
    for rho in config.rhos:
        arrays[f"theory_ipr_rho{rho:g}"] = rem.q_sa(fine, rho).numpy()
        arrays[f"theory_entropy_rho{rho:g}"] = rem.entropy_norm(fine, rho).numpy()
        for T in config.Ts:
            st = rem.row_stats(B, rho, T, config.n_rows, config.n_rep, gen)
            heur = rem.q_sa_finite_heuristic(B, rho, T).numpy()
            arrays[f"ipr_rho{rho:g}_T{T}"] = st["ipr"].numpy()
            arrays[f"entropy_rho{rho:g}_T{T}"] = st["entropy"].numpy()
            arrays[f"heuristic_rho{rho:g}_T{T}"] = heur
            rows += [{"rho": rho, "T": T, "beta": float(b), "ipr": float(i), "entropy": float(e), "heuristic": float(h)}
                     for b, i, e, h in zip(B, st["ipr"], st["entropy"], heur, strict=True)]
            for b in (0.5, 1.0, 2.0, 3.0, 5.0):
                k = int(torch.argmin((B - b).abs()))
                if abs(float(B[k]) - b) < 1e-9:
                    summary[rem_key("ipr", rho, T, b)] = float(st["ipr"][k])
                    summary[rem_key("entropy", rho, T, b)] = float(st["entropy"][k])
        mc = rem.mc_overlaps(B, rho, config.mc_T, max(2, config.n_rep // 4), gen)
        arrays[f"mc_qSA_rho{rho:g}"] = (rho + (1 - rho) * mc["q_sa"]).numpy()
        arrays[f"mc_pSA_rho{rho:g}"] = (rho + (1 - rho) * mc["p_sa"]).numpy()
        arrays[f"mc_psa_rho{rho:g}"] = mc["p_sa"].numpy()
    summary["frozen_entropy_beta3"] = float(rem.entropy_frozen(3.0, 0.0))
    return Result(pd.DataFrame(rows), arrays, summary)


FIGB1 = Experiment(
    STUDY, "figB1", REMConfig, rem_order_parameters,
    ref="Figs. B.1, B.2 (App. B.4–B.7)",
    figure=figures.rem_order_parameters,
    title="IPR q_sa, entropy, q^SA and p^SA vs β: REM theory vs simulated attention",
    cost=costs.fig_b1,
    outputs=outputs.FIGB1,
    summary=summaries.REMSummary,
)


def spectrum(config: SpectrumConfig, ctx: RunContext) -> Result:
    """Fig. C.1: attention eigenvalues under standard init (score std fixed: bulk radius √(e^{σ²}−1)/√T) and
    under the REM rescaling σ_s² = β² log T (no 1/√T shrinkage)."""
    gen = ctx.generator("mc", "cpu")
    T = config.T_show
    settings = {"standard": lambda t: config.sigma_std,
                **{f"beta{b:g}": (lambda t, b=b: b * math.sqrt(math.log(t))) for b in config.betas}}
    arrays, summary, rows = {}, {}, []
    for name, sig in settings.items():
        eig = rem.attention_eigenvalues(sig(T), T, gen, 1)[0]
        arrays[f"eig_{name}"] = eig.numpy()
        lam = []
        for t in config.Ts:
            lam2 = float(rem.second_eigenvalue(rem.attention_eigenvalues(sig(t), t, gen, config.n_rep)).mean())
            lam.append(lam2)
            rows.append({"init": name, "T": t, "lambda2": lam2, "bulk_radius": float(rem.bulk_radius(sig(t), t))})
        arrays[f"lambda2_{name}"] = np.asarray(lam)
        arrays[f"radius_{name}"] = np.asarray([float(rem.bulk_radius(sig(t), t)) for t in config.Ts])
        slope = np.polyfit(np.log(config.Ts), np.log(lam), 1)[0]
        summary[f"slope_{name}"] = float(slope)
        summary[f"lambda2_{name}_T{T}"] = float(np.interp(T, config.Ts, lam)) if T in config.Ts else lam[-1]
        summary[f"bulk_radius_{name}_T{T}"] = float(rem.bulk_radius(sig(T), T))
    arrays["Ts"] = np.asarray(config.Ts)
    return Result(pd.DataFrame(rows), arrays, summary)


FIGC1 = Experiment(
    STUDY, "figC1", SpectrumConfig, spectrum,
    ref="Fig. C.1 (App. C.1)",
    figure=figures.spectrum,
    title="Attention spectrum: standard vs REM-rescaled initialisation",
    cost=costs.fig_c1,
    outputs=outputs.FIGC1,
    summary=summaries.SpectrumSummary,
)


