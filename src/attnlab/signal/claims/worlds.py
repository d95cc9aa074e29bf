"""The world where each asserted claim of paper 1 is false (``falsify``, :mod:`attnlab.core.worlds`): a perturbed
theory (Eqs. (13), (14), (19)), the wrong activation, skips restored, swapped arms (edited on the typed summaries,
:mod:`attnlab.signal.summaries`). Attached to the registered claims by :func:`attach` (the last claims module
:mod:`attnlab.signal.study` names). Each world shrinks its experiment; a patched world has overrides of its own, so
that no other world reuses its runs."""

from __future__ import annotations

import dataclasses
import functools

from attnlab.core.arrays import edit_arrays
from attnlab.core.claims import attach
from attnlab.core.summaries import edit_summary, swap_entries
from attnlab.core.worlds import World
from attnlab.signal.experiments import attention as att
from attnlab.signal.experiments import depth as dep
from attnlab.signal.experiments import training as trn
from attnlab.signal.summaries import Fig3Arrays

S = "signal"
EXACT, DEPTH_CLAIMS = "attnlab.signal.claims.exact", "attnlab.signal.claims.depth"
PREDICT, DIAGRAM_AC = "attnlab.signal.theory:predict", "attnlab.signal.theory.diagram:alpha_c"
QK_STD = "attnlab.signal.experiments.attention:qk_std_from_beta"


def _times(by: float):
    return lambda f: lambda *a, **k: by * f(*a, **k)


def _theory_alpha(by: float):
    """Eq. (19) evaluated at ``by`` × the networks' residual strength α_SA."""
    def wrap(f):
        def predict(arch, rho0, L=None, *, alpha_sa=None, **k):
            if alpha_sa is None:
                return f(arch.replace(alpha_sa=arch.alpha_sa * by), rho0, L, **k)
            return f(arch, rho0, L, alpha_sa=alpha_sa * by, **k)
        return predict
    return wrap


def _theory_beta(by: float):
    """The theory evaluated at ``by`` × the networks' β."""
    return lambda f: lambda arch, rho0, L=None, *, beta=None, **k: f(arch, rho0, L, beta=beta * by, **k)


def _mc_cos(by: float):
    """The finite-T Monte Carlo's output cosine scaled by ``by``."""
    def wrap(f):
        @functools.wraps(f)  # the memory model reads mc_overlaps' defaults through its signature
        def mc(*a, **k):
            out = dict(f(*a, **k))
            out["cos"] = out["cos"] * by
            return out
        return mc
    return wrap


def _swap_no_skip_rho1(beta: float):
    """Fig. C.3's ρ after one block at β = 0.5 exchanged with that at ``beta``."""
    return edit_summary(lambda s: dataclasses.replace(s, rho1_low_beta=s.rho[1, beta],
                                                      rho={**s.rho, (1, beta): s.rho1_low_beta}))


# the simulation below the Monte Carlo by 0.03 at every width
_width_free_gap = edit_arrays(Fig3Arrays, lambda a: dataclasses.replace(a, sim_cos=a.mc_cos - 0.03))


FIG3 = {"T": 64, "d": 256, "n_inits": 2, "n_rep": 2, "betas": (0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0),
        "rhos": (0.0, 0.05, 0.2, 0.25, 0.5)}
B1 = {"Ts": (1024, 4096), "betas": (0.5, 3.0, 5.0), "rhos": (0.0,), "n_rows": 8, "n_rep": 2, "mc_T": 64}
UNIV = {"combos": ((128, 1, 64), (256, 1, 64), (256, 2, 64), (256, 1, 32), (256, 1, 128)), "n_inits": 1,
        "betas": (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5)}
DEPTH = {"L": 12, "d": 64, "T": 32, "n_inits": 2, "n_seqs": 2}
FIG1D = {"L": 20, "d": 64, "H": 2, "T": 32, "n_inits": 2, "n_seqs": 2, "n_stories": 200, "vocab_size": 200}
FIG1C = {"n_beta": 8, "n_alpha": 8, "sim_d": 32, "sim_T": 32, "n_inits": 1, "n_seqs": 1}
ALPHAC = {"d": 32, "T": 32, "n_inits": 1, "n_seqs": 1, "Ls": (6, 24)}
FIG5 = {"L": 30, "d": 64, "T": 16, "n_inits": 1, "n_seqs": 1}
C3 = {"betas": (0.5, 1.5, 3.0, 10.0), "rhos": (0.0, 0.01, 0.5, 0.9), "d": 32, "T": 16, "n_inits": 1, "n_seqs": 1}
C1 = {"Ts": (128, 1024), "betas": (2.0,), "n_rep": 1}
MLM = {"steps": 20, "n_eval": 8, "n_train": 256, "d": 32, "T": 32, "d_ff": 32}

WORLDS: dict[str, World | str] = {
    "closed_forms": World("β_c(ρ) of Eq. 13 off by 5 %: the hand-worked values no longer follow",
                          patch={"attnlab.signal.theory.rem:beta_c": _times(1.05)}),
    "bert_beta_paper": World("β_eff computed without the authors' d_k convention of App. B.1 (the per-head one)",
                             patch={f"{EXACT}:beta_from_std": lambda f: lambda s, d, H, T, *_: f(s, d, H, T)}),
    "bert_beta_per_head": World("per-head β computed in the authors' d_k convention, a factor H too small",
                                patch={f"{EXACT}:beta_from_std": lambda f: lambda s, d, H, T, *_: f(s, d, H, T,
                                                                                                 "authors_dk")}),
    "relu_kernel_quadrature": World("the Gaussian integrator of Eq. 18 5 % off",
                                    patch={"attnlab.signal.theory.kernels:gauss_cross": _times(1.05)}),
    "mlp_kernel_vs_wide_mlp": World("the wide MLP runs the other activation (ReLU ↔ tanh) than its kernel",
                                    patch={f"{EXACT}:mlp": lambda f: lambda x, p, act: f(x, p, {"relu": "tanh"}.get(
                                        act, "relu"))}),
    "score_covariance_eq10": World("W_K = W_Q (tied query and key weights): scores gain a G_ad G_bc term",
                                   patch={f"{EXACT}:_draw_qk": lambda f: lambda *a: (f(*a)[0],) * 2}),
    "score_variance_eq11": World("Q/K weights drawn 1.2× too wide: Var(s) is 2× β² log T",
                                 patch={f"{EXACT}:_draw_qk": lambda f: lambda n, dk, d, std, g: f(n, dk, d, 1.2 * std,
                                                                                                  g)}),
    "q_sa_frozen_phase": World("Eq. 13's q_sa 1.3× too large: the frozen IPR no longer matches",
                               overrides={att.FIGB1: {**B1, "n_rows": 9}},
                               patch={"attnlab.signal.theory.rem:q_sa": _times(1.3)}),
    "q_sa_annealed_vanishes": World("the β = 0.5 and β = 3 rows swapped: the low-β row is the localised one",
                                    overrides={att.FIGB1: B1},
                                    result=swap_entries("ipr", (0.0, 1024, 0.5), (0.0, 1024, 3.0))),
    "entropy_annealed": World("the β = 0.5 and β = 3 rows swapped: the low-β entropy is the frozen one",
                              overrides={att.FIGB1: B1},
                              result=swap_entries("entropy", (0.0, 4096, 0.5), (0.0, 4096, 3.0))),
    "beta_c_independent_of_d_H": World("Q/K std set as if Var(s) grew with d (β_eff ∝ √d): β* moves with d",
                                       overrides={att.UNIVERSALITY: UNIV},
                                       patch={QK_STD: lambda f: lambda b, d, T: f(b * (d / 128) ** 0.5, d, T)}),
    "frozen_phase_independent_of_T": World("score variance growing as √T, not log T: the frozen IPR moves with T",
                                           overrides={att.UNIVERSALITY: {**UNIV, "n_inits": 2}},
                                           patch={QK_STD: lambda f: lambda b, d, T: f(b * (T / 64) ** 0.25, d, T)}),
    "beta_c_rho_scaling": World("the tokens ignore the prescribed input cosine (ρ = 0 always): β* does not move",
                                overrides={att.FIG3: {**FIG3, "n_rep": 3}},
                                patch={"attnlab.signal.data:prescribed_cosine": lambda f: lambda r, *a, **k: f(
                                    r * 0, *a, **k)}),
    "finite_T_shift_below": World("the head runs at 0.7 β: its transition sits above the T → ∞ one",
                                  overrides={att.FIG3: {**FIG3, "n_rep": 4}},
                                  patch={QK_STD: lambda f: lambda b, d, T: f(0.7 * b, d, T)}),
    "finite_T_shift_size": World("the head runs at 1.6 β: its transition sits far below the T → ∞ one",
                                 overrides={att.FIG3: {**FIG3, "n_rep": 5}},
                                 patch={QK_STD: lambda f: lambda b, d, T: f(1.6 * b, d, T)}),
    "sa_layer_vs_finite_T_mc": World("the finite-T Monte Carlo's cosine 15 % low (a wrong theory)",
                                     overrides={att.FIG3: {**FIG3, "n_rep": 6}},
                                     patch={"attnlab.signal.theory.rem:mc_overlaps": _mc_cos(0.85)}),
    "sa_layer_finite_d_gap": World("a gap of 0.03 below the Monte Carlo at every width: not a finite-width effect",
                                   overrides={att.FIG3: {"T": 64, "n_inits": 1, "n_rep": 2}},
                                   result=_width_free_gap),
    "sa_layer_vs_eq14_frozen": World("Eq. 14 15 % low (a wrong theory)", overrides={att.FIG3: {**FIG3, "n_rep": 7}},
                                     patch={"attnlab.signal.theory.rem:sa_cosine": _times(0.85)}),
    "depth_theory_vs_sim": World("Eq. 19 at a quarter of the networks' α_SA", overrides={dep.DEPTH: DEPTH},
                                 patch={PREDICT: _theory_alpha(0.25)}),
    "depth_asymptotic_theory": World("Eq. 19 at a quarter of the networks' α_SA", overrides={dep.DEPTH: DEPTH},
                                     patch={PREDICT: _theory_alpha(0.25)}),
    "depth_theory_vs_sim_medium": World("Eq. 19 at a quarter of the networks' α_SA", overrides={dep.DEPTH: DEPTH},
                                        patch={PREDICT: _theory_alpha(0.25)}),
    "fig1d_theory_vs_sim": World("Eq. 19 at a quarter of the networks' α_SA", overrides={dep.FIG1D: FIG1D},
                                 patch={PREDICT: _theory_alpha(0.25)}),
    "fig1d_asymptotic_theory": World("Eq. 19 at a quarter of the networks' α_SA", overrides={dep.FIG1D: FIG1D},
                                     patch={PREDICT: _theory_alpha(0.25)}),
    "fig1e_theory_vs_sim": World("Eq. 19 at a quarter of the networks' α_SA",
                                 overrides={dep.FIG1E: {**FIG1D, "L": 12}}, patch={PREDICT: _theory_alpha(0.25)}),
    "alpha_c_increases_with_L": World("tanh MLPs above σ_w,c² (Fig. 5): no rank collapse, α_c(L) stops growing",
                                      overrides={dep.FIG1C: {**FIG1C, "activation": "tanh", "sigma_w2": 32.0,
                                                                "sigma_v2": 1.0, "sigma_b2": 0.0, "sim_betas": ()}}),
    "standard_alpha_collapses_at_L60": World("the theory's α_c(L) halved: α_SA = 1 lies above it",
                                             overrides={dep.FIG1C: {**FIG1C, "sim_betas": ()}},
                                             patch={DIAGRAM_AC: _times(0.5)}),
    "trainability_sim_agreement": World("Eq. 19 at a quarter of the networks' α_SA classifies the simulated points",
                                        overrides={dep.FIG1C: {**FIG1C, "n_seqs": 2}},
                                        patch={PREDICT: _theory_alpha(0.25)}),
    "diagram_is_fast": "a wall-time bound of this implementation, not a statement of the paper: only a deliberately "
                       "slowed diagram would break it",
    "alpha_above_critical_propagates": World("the theory's α_c(L) halved: α_SA between the two is misclassified",
                                             overrides={dep.ALPHAC: ALPHAC}, patch={DIAGRAM_AC: _times(0.5)}),
    "alpha_c_sim_vs_theory": World("Eq. 19 at a quarter of the networks' α_SA",
                                   overrides={dep.ALPHAC: {**ALPHAC, "n_seqs": 2}},
                                   patch={PREDICT: _theory_alpha(0.25)}),
    "relu_no_fixed_point": World("the MLPs run tanh instead of ReLU: above σ_w,c² a fixed point ρ* < 1 appears",
                                 patch={f"{DEPTH_CLAIMS}:Architecture": lambda f: lambda **k: f(**k,
                                                                                                activation="tanh")}),
    "tanh_critical_sigma_w2": World("σ_b² = 1 (biases order the tanh MLP): σ_w,c² moves to 28, out of (4, 16)",
                                    overrides={dep.FIG5: {**FIG5, "sigma_b2": 1.0, "sim_sigma_w2s": ()}}),
    "tanh_fixed_point_sim": World("σ_b² = 1 moves σ_w,c² to 28: at σ_w² = 16 the tanh network collapses",
                                  overrides={dep.FIG5: {**FIG5, "L": 100, "sigma_b2": 1.0}}),
    "tanh_small_sigma_collapses": World("σ_v² = 0.2 lowers σ_w,c² to 2.2: at σ_w² = 4 the tanh MLP is chaotic",
                                        overrides={dep.FIG5: {**FIG5, "L": 100, "sigma_v2": 0.2}}),
    "no_skip_low_beta_collapses": World("the β = 0.5 and β = 3 blocks swapped: the low-β block is the frozen one",
                                        overrides={dep.FIGC3: C3},
                                        result=_swap_no_skip_rho1(3.0)),
    "no_skip_theory_vs_sim": World("the theory at twice the networks' β", overrides={dep.FIGC3: C3},
                                   patch={PREDICT: _theory_beta(2.0)}),
    "spectrum_standard_bulk": World("a standard init with score std 2 instead of 1: the bulk is 5× wider",
                                    overrides={att.FIGC1: {**C1, "sigma_std": 2.0}}),
    "spectrum_rescaled_no_bulk": World("the standard and rescaled inits' spectra swapped", overrides={att.FIGC1: C1},
                                       result=swap_entries("lambda2", ("beta2", 1024), ("standard", 1024))),
    "spectrum_standard_scaling": World("the standard and rescaled inits' spectra swapped", overrides={att.FIGC1: C1},
                                       result=swap_entries("slope", "standard", "beta2")),
    "entropy_collapse_blocks_training": World("both models below β_c (β = 0.5, 0.6): no collapsed arm",
                                              overrides={trn.FIG4: {**MLM, "betas": (0.5, 0.6)}}),
    "entropy_collapsed_at_init": World("the high arm at β = 1 < β_c: its attention spreads",
                                       overrides={trn.FIG4: {**MLM, "betas": (0.5, 1.0), "steps": 2}}),
    "entropy_frozen_during_training": World("the high arm at β = 1 < β_c trained at lr 5e-3: its entropy moves",
                                            overrides={trn.FIG4: {**MLM, "betas": (0.5, 1.0), "steps": 100,
                                                                     "lr": 5e-3}}),
    "low_lr_mitigates_entropy_collapse": World("Fig. C.2 trained at Fig. 4's lr 5e-4: no lower learning rate",
                                               overrides={trn.FIG4: MLM, trn.FIGC2: {**MLM, "lr": 5e-4}}),
    "rank_collapse_blocks_training": World("both α_SA above α_c(L): no rank-collapsed arm", overrides={
        trn.FIG1F: {**MLM, "rank_L": 2, "entropy_L": 1, "rank_alphas": (3.0, 3.5), "entropy_betas": (0.6, 0.5)}}),
    "entropy_collapse_blocks_deep_training": World("both β below β_c: no entropy-collapsed arm", overrides={
        trn.FIG1F: {**MLM, "rank_L": 2, "entropy_L": 1, "rank_alphas": (3.0, 3.5), "entropy_betas": (0.6, 0.5)}}),
    "hf_reinit_beta": World("hf.reinit sets 1.2 β: the score std misses β √(log T)",
                            patch={"attnlab.signal.mapping.hf:reinit": lambda f: lambda m, beta, *a, **k: f(
                                m, 1.2 * beta, *a, **k)}),
}


for _name, _world in WORLDS.items():  # each world named beside its claim (ids without the study prefix)
    attach(f"{S}.{_name}", _world)
