"""The typed summaries of paper 2's experiments (:mod:`attnlab.core.summaries`): what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json`` (and declares, ``Experiment(...,
summary=...)``); families are keyed by the config's values (``Fig2dSummary.test[a]``, a in ``a_values``), groups
hold one nested summary per model, estimator, λ or teacher weight (``Fig2Summary.models["factored"].gap``,
``PLSummary.lam[1e-4].rise.value``, ``ReplicaSummary.weight["paper"].peak_alpha[3.0, 1e-3]``). A value is a number,
or None where the run stored NaN ("never happened").

The arrays the claims read are typed too (:mod:`attnlab.core.arrays`), with their named dimensions
(``Fig2dArrays.from_result(run).traj_test_loss[-1]``: every model's final test loss, Fig. 2d).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.core.arrays import Arrays, dims, nested
from attnlab.core.summaries import Summary, group, key

WEIGHTS = ("paper", "exact")  # teacher weights of the L → ∞ replica theory


@dataclass(frozen=True)
class MapFit(Summary):
    """Final maps A against J (docs/studies/potts.md note 6), mean over stacked models, and the test loss."""

    test: float
    gap: float  # test - optimal loss
    corr: float
    recon_err: float
    topk: float
    auc: float


@dataclass(frozen=True)
class ModelFit(MapFit):
    """One architecture of Fig. 2a-c."""

    epochs_to_gap: float = key("epochs_to_gap_0.1")  # first epoch with mean gap < 0.1 (None: never)


@dataclass(frozen=True)
class FactoredExtras(Summary):
    """Factored attention only: the sink of isolated sites (Eq. (4)) and the values against U."""

    isolated_sink: float
    value_corr: float


@dataclass(frozen=True)
class DataDiagnostics(Summary):
    """The Gibbs chains of one data split (App. 'Numerical details')."""

    flip_rate: float
    hamming_pooled: float
    hamming_within: float
    rhat_energy: float
    sweeps: float
    tau_int_energy: float


@dataclass(frozen=True)
class Fig2Summary(Summary):
    """Fig. 2a-c: factored attention vs vanilla transformers."""

    optimal_loss: float
    optimum_recon_corr: float
    d_hamming_train: float
    split: dict[str, DataDiagnostics] = group("{split}_*", DataDiagnostics, split=("train", "test"))
    models: dict[str, ModelFit] = group("{models}_*", ModelFit)
    factored: FactoredExtras | None = group("factored_*", FactoredExtras, when=lambda c: "factored" in c.models)


@dataclass(frozen=True)
class Fig2dSummary(Summary):
    """Fig. 2d: the final test loss and corr(A, J) per mixing a of Eq. (2) (mean and std over seeds)."""

    optimal_loss: float
    best_a: float
    spearman_a_test: float
    margin_amax_a0: float
    test: dict[float, float] = key("test_a{a_values}")
    test_std: dict[float, float] = key("test_a{a_values}_std")
    corr: dict[float, float] = key("corr_a{a_values}")


@dataclass(frozen=True)
class Change(Summary):
    """A change of the mean test loss along M, with the SEM of the paired per-realisation differences."""

    value: float = key("")
    sem: float = key("_sem")


@dataclass(frozen=True)
class PLAtLam(Summary):
    """A PL sweep at one λ: the means per M, the shape of Fig. 3-right (``metrics.sweep_shape``), the trend."""

    test: dict[int, float] = key("test_M{Ms}")
    gap: dict[int, float] = key("gap_M{Ms}")
    corr: dict[int, float] = key("corr_M{Ms}")
    argmax_M: float = key("argmax_M")
    separable_M: float = key("separable_M")
    inseparable_M: float = key("inseparable_M")
    peak_steps: float = key("peak_steps")
    min_corr_increase: float = key("min_corr_increase")
    min_gap_decrease: float = key("min_gap_decrease")
    rise: Change | None = group("rise*", Change, when=lambda c: 1 in c.Ms)
    fall: Change | None = group("fall*", Change, when=lambda c: 1 in c.Ms and 200 in c.Ms)


@dataclass(frozen=True)
class PLSummary(Summary):
    """Fig. 3-right and the consistency sweep: L-BFGS fits along M, per λ."""

    L: float
    optimal_loss: float
    converged_fraction: float
    max_grad_norm: float
    max_n_iter: float
    lam: dict[float, PLAtLam] = group("*_lam{lams}", PLAtLam)


@dataclass(frozen=True)
class Estimator(MapFit):
    """One estimator of the equivalence experiment (Adam on the MLM loss, L-BFGS on the PL)."""

    pl_train: float
    value_corr: float


@dataclass(frozen=True)
class EquivalenceSummary(Summary):
    """Eqs. (4)-(6): the exact identities at the true couplings and the two estimators."""

    optimal_loss: float
    pl_true_train: float
    mlm_plus_pl: float
    linear_logits_err: float
    softmax_rep_err: float
    nosink_rep_err: float
    corr_adam_lbfgs: float
    lbfgs_converged: float
    estimator: dict[str, Estimator] = group("{estimator}_*", Estimator, estimator=("adam", "lbfgs"))


@dataclass(frozen=True)
class GibbsSummary(Summary):
    """The sampler: d_H per β (pooled chains, one chain), the tuned β and the paper-faithful chains."""

    beta_tuned: float
    target: float
    d_chain: float
    d_chain_minus_target: float
    d_chains_mean: float
    d_chains_min: float
    d_chains_max: float
    d_chains_within_tol: float
    d_pilot_tuned: float
    pilot_sweeps: float
    chain_sweeps: float
    hot_min_decrease: float
    d_pooled: dict[float, float] = key("d_pooled_beta{betas}")
    d_single: dict[float, float] = key("d_single_beta{betas}")


def _near_quarter(c) -> list[float]:
    """The α of the grid nearest 0.25, where fig3left compares the simulation with ρ + Δ."""
    return [min(c.alphas, key=lambda a: abs(a - 0.25))]


@dataclass(frozen=True)
class Fig3LeftSummary(Summary):
    """Fig. 3-left: simulations against the replica curve, keyed by λ (and teacher weight)."""

    nu: float
    max_rel_dev_far: dict[tuple[float, str], float] = key("max_rel_dev_far_lam{lams}_{weight}", weight=WEIGHTS)
    max_rel_dev_near: dict[tuple[float, str], float] = key("max_rel_dev_near_lam{lams}_{weight}", weight=WEIGHTS)
    theory_argmax_alpha: dict[tuple[float, str], float] = key("theory_argmax_alpha_lam{lams}_{weight}",
                                                              weight=WEIGHTS)
    sim_argmax_alpha: dict[float, float] = key("sim_argmax_alpha_lam{lams}")
    sim_min_excess_over_noise: dict[float, float] = key("sim_min_excess_over_noise_lam{lams}")
    sim_excess_at: dict[tuple[float, float], float] = key("sim_eps_g_minus_rho_delta_at_{at}_lam{lams}",
                                                          at=_near_quarter)  # (α nearest 0.25, λ)


@dataclass(frozen=True)
class FiniteLSummary(Summary):
    """Check 17: one fixed problem against its own finite-L theory."""

    rho: float
    Delta: float
    max_dev_eps_g: float
    max_dev_eps_train: float
    worst_ratio_eps_g: float
    worst_ratio_eps_train: float


@dataclass(frozen=True)
class AtWeight(Summary):
    """The L → ∞ theory with one teacher weight."""

    peak_alpha: dict[tuple[float, float], float] = key("peak_alpha_nu{nus}_lam{lams}")  # (ν, λ)
    rho: dict[float, float] = key("rho_nu{nus}")
    rho_plus_delta: float = key("rho_plus_delta")
    small_alpha: float = key("small_alpha")


@dataclass(frozen=True)
class ReplicaSummary(Summary):
    """The L → ∞ replica theory: limits, the peak over λ and ν, the large-α slope, the solvers."""

    excess_slope_16_64: float
    root_excess_slope_16_64: float
    ols_alpha2: float
    ols_alpha4: float
    solver_max_diff: float
    min_initial_rise: float
    weight: dict[str, AtWeight] = group("*_{weight}", AtWeight, weight=WEIGHTS)


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class Fig2dArrays(Arrays):
    """Fig. 2d's stacked models, one per (a, seed), a-major with the same inits at every a (the mixing a of
    Eq. (2)): each model's a, and its test loss at every epoch (epoch 0: at initialisation)."""

    a: np.ndarray = dims("model")
    traj_test_loss: np.ndarray = dims("epoch", "model")


@dataclass(frozen=True, eq=False)
class FitArrays(Arrays):
    """The pseudo-likelihood fits at one sample size M: one per (λ, realisation)."""

    test: np.ndarray = dims("lam", "realisation")
    train_acc: np.ndarray = dims("lam", "realisation")


@dataclass(frozen=True, eq=False)
class SweepArrays(Arrays):
    """A sweep over sample sizes (Fig. 3-right, the consistency check): the Ms and λs, and every M's fits
    (``SweepArrays.from_result(run).fit[200].test``)."""

    Ms: np.ndarray = dims("M")
    lams: np.ndarray = dims("lam")
    fit: dict[int, FitArrays] = nested("M{Ms}/*", FitArrays)


#: experiment key → the typed arrays classes its runs are read with (``tests/core/test_arrays.py`` checks each)
ARRAYS: dict[str, tuple[type[Arrays], ...]] = {
    "potts.fig2d": (Fig2dArrays,),
    "potts.fig3right": (SweepArrays,),
    "potts.consistency": (SweepArrays,),
}
