"""Experiments at initialisation, continued: α_c(L) (spec AC-7), the tanh depth transition (Fig. 5), the REM
order parameters (Figs. B.1, B.2), the attention spectrum (Fig. C.1) and the block without skips (Fig. C.3)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Result, experiment
from attnlab.core.runs import RunContext
from attnlab.core.units import run_units
from attnlab.signal import diagram, figures, rem, theory, train
from attnlab.signal.common import cpu_rng
from attnlab.signal.configs import AlphaCConfig, NoSkipConfig, REMConfig, SpectrumConfig, TanhConfig

STUDY = "signal"
F64 = torch.float64


def alpha_critical(config: AlphaCConfig, ctx: RunContext) -> Result:
    """α_c(L, ε) by bisection, and random networks at L = sim_L over α_SA: ρ_L measured vs Eq. 19."""
    arch = config.arch()
    ac = diagram.alpha_c(arch, config.Ls, config.eps_list, rho0=config.rho0).numpy()
    mlp_only = diagram.rho_L(arch, torch.tensor([1e6]), config.Ls, rho0=config.rho0)[:, 0].numpy()
    sim_arch = arch.replace(L=config.sim_L)
    alphas = np.asarray(config.sim_alphas, dtype=float)
    with ctx.progress(1.0, f"propagate {config.sim_L} layers") as bar:
        sim = train.simulate(sim_arch, n_inits=config.n_inits, n_seqs=config.n_seqs, rho0=config.rho0, alphas=alphas,
                             gen=ctx.rng("init"), device=ctx.device, progress=bar.update)
    th = theory.predict(sim_arch, sim["rho"][0], alpha_sa=torch.tensor(alphas))
    a_sim = float(diagram.alpha_c(sim_arch, [config.sim_L], [config.sim_eps], rho0=config.rho0)[0, 0])
    collapsed_sim = sim["rho"][-1] >= 1 - config.sim_eps
    collapsed_theory = alphas < a_sim
    finite = np.where(np.isfinite(ac), ac, np.nan)
    summary = {"alpha_c_sim_L": a_sim, "alpha_c_min_step": float(np.nanmin(np.diff(finite, axis=0))),
               "classification_agreement": float((collapsed_sim == collapsed_theory).mean()),
               "max_dev": float(np.abs(sim["rho"][-1] - th["rho"][-1]).max()),
               "max_dev_all_layers": float(np.nanmax(np.abs(sim["rho"] - th["rho"])))}
    for i, L in enumerate(config.Ls):
        summary[f"rho_L_mlp_only_L{L}"] = float(mlp_only[i])
        for j, e in enumerate(config.eps_list):
            summary[f"alpha_c_L{L}_eps{e:g}"] = float(ac[i, j])
    rows = [{"L": L, "eps": e, "alpha_c": ac[i, j]} for i, L in enumerate(config.Ls)
            for j, e in enumerate(config.eps_list)]
    arrays = {"Ls": np.asarray(config.Ls), "eps_list": np.asarray(config.eps_list), "alpha_c": ac,
              "mlp_only": mlp_only, "alphas_sim": alphas, **sim.to_arrays("sim_"), **th.to_arrays("theory_")}
    return Result(pd.DataFrame(rows), arrays, summary)


experiment(STUDY, "alphac", AlphaCConfig, ref="Fig. 1c, Sec. 3.3 (spec §4, AC-7)", figure=figures.alpha_critical,
           title="Critical residual strength α_c(L) and the simulated check")(alpha_critical)


def tanh_depth(config: TanhConfig, ctx: RunContext) -> Result:
    """Fig. 5: the block map F(ρ) for tanh MLPs (left) and ρ_l over depth (right, simulation dots); ReLU has no
    non-trivial fixed point, tanh has one above σ_w,c² (where F'(1) = 1)."""
    base = config.arch(activation="tanh")
    grid = torch.linspace(0.0, 1.0, 201, dtype=F64)
    maps, iters, summary = {}, {}, {}
    for s in config.sigma_w2s:
        a = base.replace(sigma_w2=s)
        maps[s] = theory.block(grid, a)["rho"].numpy()
        iters[s] = theory.iterate(config.rho0, a)["rho"].numpy()
        fp = theory.fixed_points(a)
        summary[f"rho_star_{s:g}"] = fp[-1] if fp else 1.0
        summary[f"slope_{s:g}"] = theory.slope_at_one(a)
    relu = base.replace(activation="relu", sigma_w2=2.0)
    summary["relu_fixed_points"] = len(theory.fixed_points(relu))
    summary["sigma_w2_c"] = theory.critical_sigma_w2(base)

    def compute(s):
        a = base.replace(sigma_w2=s)
        with ctx.progress(1.0, f"tanh σ_w²={s:g}, {a.L} layers") as bar:
            sim = train.simulate(a, n_inits=config.n_inits, n_seqs=config.n_seqs, rho0=config.rho0,
                                 gen=ctx.rng(f"init/{s}"), device=ctx.device, progress=bar.update)
        return {k: v[:, 0] for k, v in sim.observables.items() if k in ("rho", "rho_std")}

    done = run_units(ctx, list(config.sim_sigma_w2s), lambda u: compute(u.key), "σ_w² values")
    rows = []
    for s in config.sim_sigma_w2s:
        sim, th = done[s], theory.iterate(done[s]["rho"][0], base.replace(sigma_w2=s))["rho"].numpy()
        summary[f"rho_L_sim_{s:g}"] = float(sim["rho"][-1])
        summary[f"rho_L_theory_{s:g}"] = float(th[-1])
        summary[f"max_dev_{s:g}"] = float(np.abs(sim["rho"] - th).max())
        rows += [{"sigma_w2": s, "layer": layer, "rho_sim": r, "rho_std": e, "rho_theory": t}
                 for layer, (r, e, t) in enumerate(zip(sim["rho"], sim["rho_std"], th, strict=True))]
    arrays = {"grid": grid.numpy(), "sigma_w2s": np.asarray(config.sigma_w2s),
              "sim_sigma_w2s": np.asarray(config.sim_sigma_w2s),
              **{f"map_{s:g}": m for s, m in maps.items()}, **{f"theory_{s:g}": v for s, v in iters.items()},
              **{f"sim_{s:g}": done[s]["rho"] for s in config.sim_sigma_w2s},
              **{f"sim_std_{s:g}": done[s]["rho_std"] for s in config.sim_sigma_w2s}}
    return Result(pd.DataFrame(rows), arrays, summary)


experiment(STUDY, "fig5", TanhConfig.with_defaults(
    "Fig5Config", L=200, d=512, T=128, beta=0.1, alpha_sa=1.0, alpha_mlp=1.0, sigma_v2=1.0, sigma_b2=0.0,
    activation="tanh", scales=TanhConfig.scales,
    doc="Fig. 5: tanh MLP, low β, α = 1, σ_v² = 1, σ_b² = 0: block map and 200-layer propagation from ρ_0 = 0.1."),
    ref="Fig. 5", figure=figures.tanh_depth, title="tanh: a non-trivial fixed point above a critical σ_w²")(tanh_depth)


def rem_order_parameters(config: REMConfig, ctx: RunContext) -> Result:
    """Figs. B.1/B.2: IPR and S/log T of attention rows vs β for several T and ρ (simulation of the score field)
    against Eq. 13, B.18 and the Eq. 15 heuristic; q^SA, p^SA (full T×T matrices) against B.17."""
    B = torch.tensor(config.betas, dtype=F64)
    fine = torch.linspace(min(config.betas), max(config.betas), 400, dtype=F64)
    rows, arrays, summary = [], {"betas": B.numpy(), "fine_betas": fine.numpy()}, {}
    gen = cpu_rng(ctx, "mc")
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
                    summary[f"ipr_rho{rho:g}_T{T}_beta{b:g}"] = float(st["ipr"][k])
                    summary[f"entropy_rho{rho:g}_T{T}_beta{b:g}"] = float(st["entropy"][k])
        mc = rem.mc_overlaps(B, rho, config.mc_T, max(2, config.n_rep // 4), gen)
        arrays[f"mc_qSA_rho{rho:g}"] = (rho + (1 - rho) * mc["q_sa"]).numpy()
        arrays[f"mc_pSA_rho{rho:g}"] = (rho + (1 - rho) * mc["p_sa"]).numpy()
        arrays[f"mc_psa_rho{rho:g}"] = mc["p_sa"].numpy()
    summary["frozen_entropy_beta3"] = float(rem.entropy_frozen(3.0, 0.0))
    return Result(pd.DataFrame(rows), arrays, summary)


experiment(STUDY, "figB1", REMConfig, ref="Figs. B.1, B.2 (App. B.4–B.7)", figure=figures.rem_order_parameters,
           title="IPR q_sa, entropy, q^SA and p^SA vs β: REM theory vs simulated attention")(rem_order_parameters)


def spectrum(config: SpectrumConfig, ctx: RunContext) -> Result:
    """Fig. C.1: attention eigenvalues under standard init (score std fixed: bulk radius √(e^{σ²}−1)/√T) and
    under the REM rescaling σ_s² = β² log T (no 1/√T shrinkage)."""
    gen = cpu_rng(ctx, "mc")
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


experiment(STUDY, "figC1", SpectrumConfig, ref="Fig. C.1 (App. C.1)", figure=figures.spectrum,
           title="Attention spectrum: standard vs REM-rescaled initialisation")(spectrum)


def no_skip(config: NoSkipConfig, ctx: RunContext) -> Result:
    """Fig. C.3: α_SA = α_MLP = 0. ρ after one block over (β, ρ_in) and ρ_l over (β, l) from ρ_0; a low-β block
    maps every input to ρ = 1, high β survives a few blocks; simulation at a few β."""
    arch = config.arch(alpha_sa=0.0, alpha_mlp=0.0)
    B = torch.tensor(config.betas, dtype=F64)
    R = torch.tensor(config.rhos, dtype=F64)
    one = theory.block(R[:, None], arch, B[None, :])["rho"].numpy()
    depth = theory.iterate(config.rho0, arch, beta=B)["rho"].numpy()
    tb = np.asarray(config.table_betas, dtype=float)
    with ctx.progress(1.0, "no-skip blocks") as bar:
        sim = train.simulate(arch, n_inits=config.n_inits, n_seqs=config.n_seqs, rho0=config.rho0, betas=tb,
                             gen=ctx.rng("init"), device=ctx.device, progress=bar.update)
    th = theory.predict(arch, sim["rho"][0], beta=torch.tensor(tb))
    thf = theory.predict(arch, sim["rho"][0], beta=torch.tensor(tb), finite_T=True, seed=ctx.seed("mc"))
    summary = {"T": arch.T, "d": arch.d, "rho1_beta0.5": float(theory.block(config.rho0, arch, 0.5)["rho"]),
               "max_dev": float(np.abs(sim["rho"] - th["rho"]).max()),
               "max_dev_finite_T": float(np.abs(sim["rho"] - thf["rho"]).max())}
    rows = []
    for i, b in enumerate(tb):
        summary[f"max_dev_beta{b:g}"] = float(np.abs(sim["rho"][:, i] - th["rho"][:, i]).max())
        summary[f"max_dev_finite_T_beta{b:g}"] = float(np.abs(sim["rho"][:, i] - thf["rho"][:, i]).max())
        for layer in (1, 2, 5, 10):
            if layer <= arch.L:
                summary[f"rho_{layer}_beta{b:g}"] = float(th["rho"][layer, i])
                rows.append({"beta": b, "layer": layer, "rho_theory": th["rho"][layer, i],
                             "rho_sim": sim["rho"][layer, i]})
    arrays = {"betas": B.numpy(), "rhos": R.numpy(), "one_block": one, "depth": depth, "table_betas": tb,
              **sim.to_arrays("sim_"), **th.to_arrays("theory_"), **thf.to_arrays("finite_")}
    return Result(pd.DataFrame(rows), arrays, summary)


experiment(STUDY, "figC3", NoSkipConfig.with_defaults(
    "FigC3Config", L=10, sigma_w2=2.0, sigma_v2=1.0, sigma_b2=0.0, scales=NoSkipConfig.scales,
    doc="Fig. C.3: no skip connections, σ_w² = 2, σ_v² = 1, σ_b² = 0, ρ_0 = 0.01."),
    ref="Fig. C.3 (App. C.3)", figure=figures.no_skip, title="Propagation without residual connections")(no_skip)
