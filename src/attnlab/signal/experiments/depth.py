"""Experiments over depth (paper 1): the trainability diagram (Fig. 1c), the cosine over depth against Eq. (19)
(Figs. 1d, 1e, and a synthetic (β, α_SA) grid), the critical residual strength α_c(L) (Sec. 3.3), the tanh
depth transition (Fig. 5) and the block without skips (Fig. C.3, App. C.3).

Random streams: ``init`` (network weights and embeddings), ``data`` (input sequences), ``mc`` (Monte Carlo of
the theory). Multi-part experiments checkpoint after each finished part (``run_units``).
"""

from __future__ import annotations

import itertools
import math
import time

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Experiment, Result
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import run_units
from attnlab.signal import costs, figures, memory, outputs, summaries, theory, train
from attnlab.signal.arch import beta_from_std
from attnlab.signal.configs import AlphaCConfig, DepthConfig, NoSkipConfig, TanhConfig, TrainabilityConfig
from attnlab.signal.data import corpus
from attnlab.signal.theory import diagram, rem

STUDY = "signal"
F64 = torch.float64


def tanh_key(kind: str, sigma_w2: float) -> str:
    """fig5's summary key of ``kind`` (``rho_star``, ``slope``, ``rho_L_sim``, ``rho_L_theory``, ``max_dev``)
    at σ_w²."""
    return f"{kind}_{sigma_w2:g}"


def no_skip_key(kind: str, beta: float) -> str:
    """figC3's summary key of ``kind`` (``max_dev``, ``max_dev_finite_T``) at one simulated β."""
    return f"{kind}_beta{beta:g}"


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


FIG1C = Experiment(
    STUDY, "fig1c", TrainabilityConfig.with_defaults("Fig1cConfig", L=60, beta=0.1),
    trainability,
    ref="Fig. 1c",
    figure=figures.trainability,
    headline=True,
    title="Trainability diagram β × α_SA (60 layers): entropy / rank collapse / trainable",
    cost=costs.fig1c,
    outputs=outputs.FIG1C,
    summary=summaries.TrainabilitySummary,
)


# -- Figs. 1d, 1e: cosine over depth, theory vs simulation ---------------------------------------------------


def depth(config: DepthConfig, ctx: RunContext) -> Result:
    """Mean pairwise cosine over layers: random-init networks (dots, mean ± std over inits × sequences) against
    Eq. (19) iterated from the measured layer-0 cosine (asymptotic, and finite-T)."""
    arch = config.arch()
    if config.hf_std is not None:  # an off-the-shelf init: β from its Q/K std (App. B.1)
        arch = arch.replace(beta=beta_from_std(config.hf_std, arch.d, arch.H, arch.t_init, arch.beta_convention))
    pairs = list(config.pairs or itertools.product(config.betas or (arch.beta,), config.alphas))
    bb = torch.tensor([p[0] for p in pairs], dtype=torch.float64)
    aa = torch.tensor([p[1] for p in pairs], dtype=torch.float64)
    tokens, vocab = (None, None)
    if config.inputs == "corpus":
        windows, vocab = corpus.tokens(config, arch.T, ctx)
        pick = torch.randperm(windows.shape[0], generator=ctx.generator("data", "cpu"))[: config.n_seqs]
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


FIG1D = Experiment(
    STUDY, "fig1d", DepthConfig.with_defaults(
    "Fig1dConfig", L=60, H=6, d=720, T=512, hf_std=0.02, alphas=(1.0, 2.0, 4.0), sigma_v2=0.2, sigma_w2=0.2,
    scales={"quick": {"d": 128, "H": 2, "T": 64, "n_inits": 8, "n_seqs": 4}, "paper": {}},
    doc="Fig. 1d: 60 layers, standard HF Q/K init (std 0.02: low β), α_SA ∈ {1, 2, 4}, stories corpus."),
    depth,
    ref="Fig. 1d",
    figure=figures.depth,
    headline=True,
    title="Cosine over depth, theory vs simulation (60 layers, HF init, low β)",
    memory=memory.depth,
    cost=costs.depth,
    outputs=outputs.FIG1D,
    summary=summaries.DepthSummary,
)
FIG1E = Experiment(
    STUDY, "fig1e", DepthConfig.with_defaults(
    "Fig1eConfig", L=12, H=6, d=720, T=512, beta=3.0, alphas=(1.0,),
    scales={"quick": {"d": 128, "H": 2, "T": 64, "n_inits": 4, "n_seqs": 4}, "paper": {}},
    doc="Fig. 1e: 12 layers in the high-variance phase (per-head β = 3), stories corpus."),
    depth,
    ref="Fig. 1e",
    figure=figures.depth,
    title="Cosine over depth, high-β phase (12 layers)",
    memory=memory.depth,
    cost=costs.depth,
    outputs=outputs.FIG1E,
    summary=summaries.DepthSummary,
)
DEPTH = Experiment(
    STUDY, "depth", DepthConfig.with_defaults(
    "DepthSyntheticConfig", L=24, d=128, T=64, inputs="synthetic", rho0=0.05,
    pairs=((0.1, 0.25), (0.1, 0.5), (0.1, 1.0), (0.1, 2.0), (3.0, 1.0)), n_inits=8, n_seqs=4,
    # 8 inits at quick scale: a β = 3 network attends in a frozen random pattern, so its ρ_l varies from one init
    # to the next (std 0.08 at l = 24); with 3 inits the mean wandered 0.06-0.11 from the theory, with 8 it is 0.045
    scales={"quick": {}, "paper": {"L": 60, "d": 256, "T": 128, "n_inits": 10, "n_seqs": 10}},
    doc="Figs. 1d/e on synthetic ρ_0 = 0.05 tokens, (β, α_SA) grid, theory vs simulation over depth."),
    depth,
    ref="Figs. 1d/e, Eq. 19",
    figure=figures.depth,
    title="Cosine over depth on synthetic tokens, (β, α_SA) grid",
    memory=memory.depth,
    cost=costs.depth,
    outputs=outputs.DEPTH,
    summary=summaries.DepthSummary,
)



# -- α_c(L), Sec. 3.3 -------------------------------------------------------------------------------------


def alpha_critical(config: AlphaCConfig, ctx: RunContext) -> Result:
    """α_c(L, ε) by bisection, and random networks at L = sim_L over α_SA: ρ_L measured vs Eq. (19)."""
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


ALPHAC = Experiment(
    STUDY, "alphac", AlphaCConfig, alpha_critical,
    ref="Fig. 1c, Sec. 3.3",
    figure=figures.alpha_critical,
    title="Critical residual strength α_c(L) and the simulated check",
    memory=memory.alphac,
    cost=costs.alphac,
    outputs=outputs.ALPHAC,
    summary=summaries.AlphaCSummary,
)


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
        summary[tanh_key("rho_star", s)] = fp[-1] if fp else 1.0
        summary[tanh_key("slope", s)] = theory.slope_at_one(a)
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
        summary[tanh_key("rho_L_sim", s)] = float(sim["rho"][-1])
        summary[tanh_key("rho_L_theory", s)] = float(th[-1])
        summary[tanh_key("max_dev", s)] = float(np.abs(sim["rho"] - th).max())
        rows += [{"sigma_w2": s, "layer": layer, "rho_sim": r, "rho_std": e, "rho_theory": t}
                 for layer, (r, e, t) in enumerate(zip(sim["rho"], sim["rho_std"], th, strict=True))]
    arrays = {"grid": grid.numpy(), "sigma_w2s": np.asarray(config.sigma_w2s),
              "sim_sigma_w2s": np.asarray(config.sim_sigma_w2s),
              **{f"map_{s:g}": m for s, m in maps.items()}, **{f"theory_{s:g}": v for s, v in iters.items()},
              **{f"sim_{s:g}": done[s]["rho"] for s in config.sim_sigma_w2s},
              **{f"sim_std_{s:g}": done[s]["rho_std"] for s in config.sim_sigma_w2s}}
    return Result(pd.DataFrame(rows), arrays, summary)


FIG5 = Experiment(
    STUDY, "fig5", TanhConfig.with_defaults(
    "Fig5Config", L=200, d=512, T=128, beta=0.1, alpha_sa=1.0, alpha_mlp=1.0, sigma_v2=1.0, sigma_b2=0.0,
    activation="tanh", scales=TanhConfig.scales,
    doc="Fig. 5: tanh MLP, low β, α = 1, σ_v² = 1, σ_b² = 0: block map and 200-layer propagation from ρ_0 = 0.1."),
    tanh_depth,
    ref="Fig. 5",
    figure=figures.tanh_depth,
    title="tanh: a non-trivial fixed point above a critical σ_w²",
    memory=memory.fig5,
    cost=costs.fig5,
    outputs=outputs.FIG5,
    summary=summaries.TanhSummary,
)


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
        summary[no_skip_key("max_dev", b)] = float(np.abs(sim["rho"][:, i] - th["rho"][:, i]).max())
        summary[no_skip_key("max_dev_finite_T", b)] = float(np.abs(sim["rho"][:, i] - thf["rho"][:, i]).max())
        for layer in (1, 2, 5, 10):
            if layer <= arch.L:
                summary[f"rho_{layer}_beta{b:g}"] = float(th["rho"][layer, i])
                rows.append({"beta": b, "layer": layer, "rho_theory": th["rho"][layer, i],
                             "rho_sim": sim["rho"][layer, i]})
    arrays = {"betas": B.numpy(), "rhos": R.numpy(), "one_block": one, "depth": depth, "table_betas": tb,
              **sim.to_arrays("sim_"), **th.to_arrays("theory_"), **thf.to_arrays("finite_")}
    return Result(pd.DataFrame(rows), arrays, summary)


FIGC3 = Experiment(
    STUDY, "figC3", NoSkipConfig.with_defaults(
    "FigC3Config", L=10, sigma_w2=2.0, sigma_v2=1.0, sigma_b2=0.0, scales=NoSkipConfig.scales,
    doc="Fig. C.3: no skip connections, σ_w² = 2, σ_v² = 1, σ_b² = 0, ρ_0 = 0.01."),
    no_skip,
    ref="Fig. C.3 (App. C.3)",
    figure=figures.no_skip,
    title="Propagation without residual connections",
    memory=memory.fig_c3,
    cost=costs.fig_c3,
    outputs=outputs.FIGC3,
    summary=summaries.NoSkipSummary,
)
