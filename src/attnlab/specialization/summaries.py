"""The typed summaries of paper 0's experiments (:mod:`attnlab.core.summaries`): what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json`` (``Experiment(..., summary=...)``); families
are keyed by the config's values (``EscapeSummary.tau_s["softmax", 1e4]``), groups hold one nested summary per
activation, panel or law (``SimVsTheorySummary.activation["softmax"].max_dm``,
``TrajectorySummary.panel[0].tau_feature[1]``, ``FinalErrorSummary.error["flip"].H["bsoftmax", 4]``). A value is a
number, or None where the run stored NaN ("never happened": an event beyond the horizon).

The arrays the claims read are typed too (:mod:`attnlab.core.arrays`), with their named dimensions: a trajectory is
(time, seed, ...) with the order parameters' index names of the experiments' declared ``index`` (Eqs. (8)-(9))
(``TrajectoryArrays.from_result(run).panel[0].m[-1, 0]``: the heads' overlaps m_hf at the end, Fig. 3).

The declared summaries of :mod:`attnlab.specialization.outputs` stay where they are (that module is part of the
measured code); ``tests/core/test_summaries.py`` checks that each class makes exactly their keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.core.arrays import Arrays, dims, nested
from attnlab.core.summaries import Summary, group, key

STATS = ("median", "min", "max")  # split_time: statistics of τ^s(a) over the inits


def _features(config) -> list[int]:
    """The features f = 1..F of the law (1-based, as the keys write them)."""
    return list(range(1, config.F + 1))


def _panels(config) -> list[int]:
    """The panels of a trajectory figure, by position."""
    return list(range(len(config.panels)))


def _pruned(config) -> list[int]:
    """k = 0..H-1 heads pruned (Fig. 7)."""
    return list(range(config.H))


# -- Figs. 1, 9, 10: SGD against the flow (12) ------------------------------------------------------------------


@dataclass(frozen=True)
class SimVsTheoryFit(Summary):
    """One activation: max over τ and entries of |SGD − theory| (Prop. III.2), τ^s of each, the final losses."""

    max_dm: float
    max_drr: float
    max_db: float
    max_dv: float
    max_dloss: float
    tau_s_sim: float  # first τ with |m_12 − m_22| > 0.2 (None: never)
    tau_s_theory: float
    loss_final_sim: float
    loss_final_theory: float


@dataclass(frozen=True)
class SimVsTheorySummary(Summary):
    """Figs. 1, 9, 10: SGD at finite D against the flow (12), per activation, and the Bayes risk of the law."""

    bayes_risk: float
    activation: dict[str, SimVsTheoryFit] = group("*_{activations}", SimVsTheoryFit)


# -- Figs. 2-4, 12-19: trajectories; Fig. 8: fixed vs resampled MC ----------------------------------------------


@dataclass(frozen=True)
class Panel(Summary):
    """One panel of a trajectory figure, at the end of the flow."""

    loss_final: float
    sign_patterns: float
    head_spread: float
    tau_feature: dict[int, float] = key("tau_feature{feature}", feature=_features)  # τ_f(0.5), f = 1..F


@dataclass(frozen=True)
class TrajectorySummary(Summary):
    """Figs. 2-4, 12-19: each panel's final loss and heads, and when each feature is learnt (Lemma III.1)."""

    panel: dict[int, Panel] = group("*_{panel}", Panel, panel=_panels)


@dataclass(frozen=True)
class McResamplingSummary(Summary):
    """Fig. 8: max over τ of |m^fixed_1f − m^resampled_1f| per feature f = 1..F."""

    max_abs_diff_m1: dict[int, float] = key("max_abs_diff_m1{feature}", feature=_features)


# -- Figs. 5, 6, 7, 11: trained models ----------------------------------------------------------------------------


@dataclass(frozen=True)
class FinalErrors(Summary):
    """E^∞ of one law (Fig. 5): left panel per (activation, H), right per (activation, ν), and the Bayes risk."""

    bayes_H: float = key("bayes_H")
    bayes_nu: dict[float, float] = key("bayes_nu{nus}")
    H: dict[tuple[str, int], float] = key("{activations}_H{Hs}")
    nu: dict[tuple[str, float], float] = key("{activations}_nu{nus}")


@dataclass(frozen=True)
class FinalErrorSpread(Summary):
    """The std of E^∞ over inits of one law (several seeds only)."""

    H: dict[tuple[str, int], float] = key("{activations}_H{Hs}")
    nu: dict[tuple[str, float], float] = key("{activations}_nu{nus}")


@dataclass(frozen=True)
class FinalErrorSummary(Summary):
    """Fig. 5: final errors after training per law (mean over inits), and their spread with several inits."""

    error: dict[str, FinalErrors] = group("E_{laws}_*", FinalErrors)
    std: dict[str, FinalErrorSpread] = group("std_{laws}_*", FinalErrorSpread, when=lambda c: c.seeds > 1)


@dataclass(frozen=True)
class AttentionMapsSummary(Summary):
    """Fig. 6: attention mass on irrelevant tokens and the training loss, per activation."""

    off_target: dict[str, float] = key("off_target_{activations}")
    loss_train: dict[str, float] = key("loss_train_{activations}")


@dataclass(frozen=True)
class PruningCurve(Summary):
    """The loss after greedily pruning k = 0..H-1 heads (mean over inits) of one law and activation."""

    pruned: dict[int, float] = key("pruned{k}", k=_pruned)

    def cost(self, k: int) -> float:
        """The loss increase after pruning ``k`` heads."""
        return self.pruned[k] - self.pruned[0]


@dataclass(frozen=True)
class PruningSummary(Summary):
    """Fig. 7: pruning curves per (law, activation)."""

    curve: dict[tuple[str, str], PruningCurve] = group("E_{laws}_{activations}_*", PruningCurve)


@dataclass(frozen=True)
class CosineGridSummary(Summary):
    """Fig. 11: the final cosine q_12/√(q_11 q_22) over the (ν1, ν2) grid and how monotone it is."""

    cos_min: float
    cos_max: float
    monotone_up_in_nu1: float
    monotone_down_in_nu2: float


# -- Props. III.3, III.4: the two phases, the escape time, τ^s of Fig. 1 -------------------------------------------


@dataclass(frozen=True)
class PhasesSummary(Summary):
    """Prop. III.3: the unspecialised phase (flip spike) and the isotropic Gaussian (E θ = 0)."""

    dm1_at_tau1: float
    m1_at_tau5: float
    split_change: float
    gaussian_norm_ratio: float


@dataclass(frozen=True)
class EscapeSummary(Summary):
    """Prop. III.4: τ_s per (activation, D) (None: no split by the horizon), whether it increases, how evenly."""

    tau_s: dict[tuple[str, float], float] = key("tau_s_{activations}_D{Ds}")
    increasing: dict[str, float] = key("increasing_{activations}")
    slope_spread: dict[str, float] = key("slope_spread_{activations}")


@dataclass(frozen=True)
class SplitTimeSummary(Summary):
    """τ^s of Fig. 1 over random inits at D: per threshold a the fraction that split and τ^s(a)'s statistics
    (``tau_s[0.2, "median"]``), the growth rates of |m_12 − m_22| and the Hessian's (Lemma III.1)."""

    D: float
    seeds: float
    tau_max: float
    gap0_median: float
    rate_median: float
    saddle_rate: float
    plateau_tau: float
    plateau_rate: float
    split_fraction: dict[float, float] = key("split_fraction_{thresholds}")
    tau_s: dict[tuple[float, str], float] = key("tau_s_{thresholds}_{stat}", stat=STATS)


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class ActivationArrays(Arrays):
    """One activation of Figs. 1, 9, 10: the biases b_h of SGD and of the flow (12), at their recorded times."""

    sim_time: np.ndarray = dims("time")
    theory_time: np.ndarray = dims("time")
    sim_b: np.ndarray = dims("time", "seed", "head", observable="b")
    theory_b: np.ndarray = dims("time", "seed", "head", observable="b")


@dataclass(frozen=True, eq=False)
class SimVsTheoryArrays(Arrays):
    """Figs. 1, 9, 10 per activation: ``SimVsTheoryArrays.from_result(run).activation["bsoftmax"].sim_b``."""

    activation: dict[str, ActivationArrays] = nested("{activations}/*", ActivationArrays)


@dataclass(frozen=True, eq=False)
class PanelArrays(Arrays):
    """One panel of a trajectory figure: the flow's times and the overlaps m_hf (Eq. (8))."""

    time: np.ndarray = dims("time")
    m: np.ndarray = dims("time", "seed", "head", "feature", observable="m")


@dataclass(frozen=True, eq=False)
class TrajectoryArrays(Arrays):
    """Figs. 2-4, 12-19 per panel (by position): ``TrajectoryArrays.from_result(run).panel[0].time[-1]``."""

    panel: dict[int, PanelArrays] = nested("panel{panel}/*", PanelArrays, panel=_panels)


@dataclass(frozen=True, eq=False)
class EscapeArrays(Arrays):
    """The escape runs (Prop. III.4): each activation's recorded times."""

    time: dict[str, np.ndarray] = dims("time", key="{activations}/time")


@dataclass(frozen=True, eq=False)
class PruningArrays(Arrays):
    """Fig. 7: per law and activation, each init's loss after pruning k = 0..H-1 heads (``curves["flip",
    "softmax"][:, k]``)."""

    curves: dict[tuple[str, str], np.ndarray] = dims("seed", "pruned", key="{laws}/{activations}/curves")


@dataclass(frozen=True, eq=False)
class CosineGridArrays(Arrays):
    """Fig. 11: the trained heads' cosines over the grid of the two features' strengths (ν1 rows, ν2 columns)."""

    nu1s: np.ndarray = dims("nu1")
    nu2s: np.ndarray = dims("nu2")
    cos_q: np.ndarray = dims("nu1", "nu2")
    cos_m: np.ndarray = dims("nu1", "nu2")


#: experiment key → the typed arrays classes its runs are read with (``tests/core/test_arrays.py`` checks each)
ARRAYS: dict[str, tuple[type[Arrays], ...]] = {
    **{f"specialization.{name}": (SimVsTheoryArrays,) for name in ("fig1", "fig9", "fig10")},
    **{f"specialization.{name}": (TrajectoryArrays,) for name in (
        "fig2", "fig3", "fig4", "fig19", "fig12", "fig13", "fig14", "fig16", "fig17", "fig18")},
    "specialization.escape": (EscapeArrays,),
    "specialization.fig7": (PruningArrays,),
    "specialization.fig11": (CosineGridArrays,),
}
