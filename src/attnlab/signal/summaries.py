"""The typed summaries of paper 1's experiments (:mod:`attnlab.core.summaries`): what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json``; families are keyed by the config's values
(``Fig3Summary.beta_star_sim[ρ]``, ``REMSummary.ipr[ρ, T, β]``, ``TanhSummary.rho_L_sim[σ_w²]``), groups hold one
nested summary per configuration, trained model or seed (``DepthSummary.condition[i].max_dev``,
``MLMSummary.slot[β, α_SA, seed].loss_final``). A value is a number, or None where the run stored NaN. The study's
declared summary templates (:mod:`attnlab.signal.outputs`, measured code) stay as they are; ``tests/core/
test_summaries.py`` checks each class against them at the experiment's tiny size.

The arrays the claims read are typed too (:mod:`attnlab.core.arrays`), with their named dimensions
(``MLMArrays.from_result(run).eval_loss[-1, i]``: the i-th trained model's final held-out loss, Fig. 4).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from attnlab.core.arrays import Arrays, dims
from attnlab.core.summaries import Summary, group, key

REM_BETAS = (0.5, 1.0, 2.0, 3.0, 5.0)  # the β of figB1's grid whose row statistics the summary keeps
NO_SKIP_LAYERS = (1, 2, 5, 10)  # the layers of figC3's table (those within the network's L)


@dataclass(frozen=True)
class Number(Summary):
    """One number that only some configs make (its key is the group's)."""

    value: float = key("")


# -- depth: Figs. 1c-e, 5, C.3, Sec. 3.3 -------------------------------------------------------------------------


@dataclass(frozen=True)
class SimulatedDiagram(Summary):
    """Fig. 1c's simulated diagram: agreement with the theory's phases, and its cost."""

    agreement: float
    seconds: float
    gflop_per_s: float


@dataclass(frozen=True)
class TrainabilitySummary(Summary):
    """Fig. 1c: the theory's diagram (Eq. (19) over β × α_SA), α_c(L) and the simulated points."""

    alpha_c: float  # α_c at the config's L and ε
    alpha_c_min_step: float  # smallest increment of α_c(L) between consecutive depths
    beta_c: float
    diagram_seconds: float
    frac_entropy_collapse: float
    frac_rank_collapse: float
    frac_trainable: float
    sim: SimulatedDiagram | None = group("sim_*", SimulatedDiagram,
                                         when=lambda c: bool(c.sim_betas and c.sim_alphas))


def _conditions(c) -> list[int]:
    """The index of each configuration (β, α_SA) a depth run propagates."""
    return list(range(len(c.pairs or list(itertools.product(c.betas or (c.beta,), c.alphas)))))


@dataclass(frozen=True)
class Condition(Summary):
    """One configuration (β, α_SA) of a depth run: simulation against the T → ∞ theory (Eq. (19) with Eq. (13))."""

    max_dev: float
    rho_L_sim: float
    rho_L_theory: float
    entropy_1_sim: float


@dataclass(frozen=True)
class DepthSummary(Summary):
    """Figs. 1d, 1e and the depth experiment: ρ_ℓ of random networks against Eq. (19) iterated."""

    beta: float
    beta_theory: float
    rho0: float
    max_dev: float  # over layers and configurations, the T → ∞ theory
    condition: dict[int, Condition] = group("*_{i}", Condition, i=_conditions)
    max_dev_finite_T: Number | None = group("max_dev_finite_T*", Number, when=lambda c: c.finite_T)


@dataclass(frozen=True)
class AlphaCSummary(Summary):
    """Sec. 3.3: α_c(L, ε) by bisection, and random networks at sim_L over α_SA."""

    alpha_c_sim_L: float
    alpha_c_min_step: float
    classification_agreement: float
    max_dev: float
    max_dev_all_layers: float
    alpha_c: dict[tuple[int, float], float] = key("alpha_c_L{Ls}_eps{eps_list}")  # (L, ε)
    rho_L_mlp_only: dict[int, float] = key("rho_L_mlp_only_L{Ls}")


@dataclass(frozen=True)
class TanhSummary(Summary):
    """Fig. 5: the tanh block map's fixed point ρ* and F'(1) per σ_w², and the simulated ρ_L (Sec. 3.4)."""

    relu_fixed_points: float
    sigma_w2_c: float
    rho_star: dict[float, float] = key("rho_star_{sigma_w2s}")
    slope: dict[float, float] = key("slope_{sigma_w2s}")
    rho_L_sim: dict[float, float] = key("rho_L_sim_{sim_sigma_w2s}")
    rho_L_theory: dict[float, float] = key("rho_L_theory_{sim_sigma_w2s}")
    max_dev: dict[float, float] = key("max_dev_{sim_sigma_w2s}")


def _table_layers(c) -> list[int]:
    return [layer for layer in NO_SKIP_LAYERS if layer <= c.L]


@dataclass(frozen=True)
class NoSkipSummary(Summary):
    """Fig. C.3 (App. C.3): no skip connections; the theory's ρ_ℓ and its deviation from simulation per β."""

    T: float
    d: float
    rho1_low_beta: float = key("rho1_beta0.5")  # ρ after one block from ρ_0 at β = 0.5
    max_dev: float = key("max_dev")
    max_dev_finite_T: float = key("max_dev_finite_T")
    max_dev_at: dict[float, float] = key("max_dev_beta{table_betas}")
    max_dev_finite_T_at: dict[float, float] = key("max_dev_finite_T_beta{table_betas}")
    rho: dict[tuple[int, float], float] = key("rho_{layer}_beta{table_betas}", layer=_table_layers)  # (ℓ, β)


# -- attention: Figs. 3, B.1, C.1, Sec. 3.1 ----------------------------------------------------------------------


@dataclass(frozen=True)
class Fig3Summary(Summary):
    """Fig. 3: one SA head's output cosine against the finite-T Monte Carlo and Eq. (14); β* per input cosine."""

    max_dev_mc: float
    max_dev_eq14_beta3: float
    input_cos_error: float
    beta_star_scaled_spread: float
    shift_ratio_min: float
    shift_ratio_max: float
    beta_star_sim: dict[float, float] = key("beta_star_sim_rho{rhos}")
    beta_star_mc: dict[float, float] = key("beta_star_mc_rho{rhos}")
    beta_star_theory: dict[float, float] = key("beta_star_theory_rho{rhos}")


def _combos(c) -> list[str]:
    """Each (d, H, T) of a universality run, spelt ``d_H_T`` as its keys are."""
    return [f"{d}_{H}_{T}" for d, H, T in c.combos]


@dataclass(frozen=True)
class UniversalitySummary(Summary):
    """Eqs. (11), (13): β* and the frozen-phase IPR per (d, H, T) (keyed ``"d_H_T"``), and their spreads."""

    beta_star_spread_dH: float
    ipr_beta3_spread_T: float
    beta_star: dict[str, float] = key("beta_star_{combo}", combo=_combos)
    ipr_beta3: dict[str, float] = key("ipr_beta3_{combo}", combo=_combos)


def _rem_betas(c) -> list[float]:
    return [b for b in REM_BETAS if any(abs(float(x) - b) < 1e-9 for x in c.betas)]


@dataclass(frozen=True)
class REMSummary(Summary):
    """Fig. B.1: the IPR and S/log T of score-field rows, keyed (ρ, T, β) for β in :data:`REM_BETAS`."""

    frozen_entropy_beta3: float
    ipr: dict[tuple[float, int, float], float] = key("ipr_rho{rhos}_T{Ts}_beta{b}", b=_rem_betas)
    entropy: dict[tuple[float, int, float], float] = key("entropy_rho{rhos}_T{Ts}_beta{b}", b=_rem_betas)


def _inits(c) -> list[str]:
    """The initialisations of Fig. C.1: standard, and the rescaled one at each β (``beta2``)."""
    return ["standard", *(f"beta{b:g}" for b in c.betas)]


def _t_show(c) -> list[int]:
    return [c.T_show]


@dataclass(frozen=True)
class SpectrumSummary(Summary):
    """Fig. C.1 (App. C.1): |λ_2|, the bulk radius and the slope of log |λ_2| in log T, per initialisation."""

    slope: dict[str, float] = key("slope_{init}", init=_inits)
    lambda2: dict[tuple[str, int], float] = key("lambda2_{init}_T{T}", init=_inits, T=_t_show)  # (init, T_show)
    bulk_radius: dict[tuple[str, int], float] = key("bulk_radius_{init}_T{T}", init=_inits, T=_t_show)


# -- training: Figs. 1a/b, 4, C.2, 1f ------------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionMapsSummary(Summary):
    """Fig. 1a/b: a single head's row entropy and IPR per β at initialisation."""

    entropy: dict[float, float] = key("entropy_beta{betas}")
    ipr: dict[float, float] = key("ipr_beta{betas}")


@dataclass(frozen=True)
class Slot(Summary):
    """One trained model: final held-out loss and first-layer S/log T at init and at the end."""

    loss_final: float
    entropy_init: float
    entropy_final: float


def _seeds(c) -> list[int]:
    return list(range(c.n_seeds))


@dataclass(frozen=True)
class MLMSummary(Summary):
    """Figs. 4, C.2: MLM from β on both sides of β_c; each model keyed (β, α_SA, seed)."""

    beta_low: float
    beta_high: float
    steps: float
    loss_gap_min: float
    entropy_init_high_beta_max: float
    entropy_change_high_beta_max: float
    slot: dict[tuple[float, float, int], Slot] = group("*_beta{betas}_alpha{alphas}_seed{seed}", Slot, seed=_seeds)
    uniform_loss: Number | None = group("uniform_loss*", Number, when=lambda c: c.corpus == "repeat")


@dataclass(frozen=True)
class DeepMLMSummary(Summary):
    """Fig. 1f: the rank-collapse arm (α_SA below / above α_c(L)) and the entropy-collapse arm (β about β_c)."""

    rank_gap_min: float
    entropy_gap_min: float
    rank: dict[tuple[float, float, int], Slot] = group("*_rank_beta{beta}_alpha{rank_alphas}_seed{seed}", Slot,
                                                       beta=lambda c: [c.rank_beta], seed=_seeds)
    entropy: dict[tuple[float, float, int], Slot] = group("*_entropy_beta{entropy_betas}_alpha{alpha}_seed{seed}",
                                                          Slot, alpha=lambda c: [c.entropy_alpha], seed=_seeds)


# -- attnlab map: Eq. (19) on real architectures, Sec. 3.3 ---------------------------------------------------------


@dataclass(frozen=True)
class FamilyDepth(Summary):
    """One family at one depth: the largest |ρ_ℓ predicted − measured|, where, and ρ_L both ways."""

    max_dev: float
    worst_layer: float
    rho_L_predicted: float
    rho_L_measured: float


@dataclass(frozen=True)
class MapFamiliesSummary(Summary):
    """map_families: Eq. (19) with each layer's own parameters against real post-LN encoders, keyed (family, L)."""

    max_dev: float
    at: dict[tuple[str, int], FamilyDepth] = group("*_{families}_L{depths}", FamilyDepth)


@dataclass(frozen=True)
class FixSeed(Summary):
    """One seed of map_fix_training: held-out loss drops and final losses of both arms, and the original's phase."""

    drop_original: float
    drop_fixed: float
    phase: float
    loss_original: float
    loss_fixed: float


@dataclass(frozen=True)
class MapFixSummary(Summary):
    """map_fix_training: a collapsing model and its fix (``attnlab map --apply``), trained and paired by seed."""

    drop_gain_mean: float
    drop_gain_sd: float
    uniform_loss: float
    loss_start: float
    beta: float
    beta_c: float
    alpha_c: float
    beta_fix: float
    alpha_fix: float
    seed: dict[int, FixSeed] = group("*_seed{seed}", FixSeed, seed=_seeds)


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class Fig3Arrays(Arrays):
    """One random SA layer (Fig. 3, Sec. 3.2.2): the output cosine simulated and by the finite-T Monte Carlo of the
    score field (the d → ∞ limit, Eq. (14)), over the grid of β and input cosine ρ."""

    betas: np.ndarray = dims("beta")
    rhos: np.ndarray = dims("rho")
    sim_cos: np.ndarray = dims("beta", "rho")
    mc_cos: np.ndarray = dims("beta", "rho")


@dataclass(frozen=True, eq=False)
class NoSkipArrays(Arrays):
    """Networks without skip connections (App. C.3): the mean IPR of each layer (ℓ = 0: the input) at every β of the
    table, simulated and by the T → ∞ theory (Eq. (13))."""

    table_betas: np.ndarray = dims("beta")
    sim_ipr: np.ndarray = dims("layer", "beta")
    theory_ipr: np.ndarray = dims("layer", "beta")


@dataclass(frozen=True, eq=False)
class MLMArrays(Arrays):
    """MLM training (Figs. 4, C.2): the trained models (slots, seed-major over (β, α_SA)), each one's β, α_SA and
    seed, and the held-out loss of each at every logged step."""

    slot_betas: np.ndarray = dims("slot")
    slot_alphas: np.ndarray = dims("slot")
    slot_seeds: np.ndarray = dims("slot")
    eval_loss: np.ndarray = dims("time", "slot")


#: experiment key → the typed arrays classes its runs are read with (``tests/core/test_arrays.py`` checks each)
ARRAYS: dict[str, tuple[type[Arrays], ...]] = {
    "signal.fig3": (Fig3Arrays,),
    "signal.figC3": (NoSkipArrays,),
    "signal.fig4": (MLMArrays,),
    "signal.figC2": (MLMArrays,),
}
