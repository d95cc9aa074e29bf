"""The typed summaries of paper 4's ideal head and single trainings (Figs. 1-6, 8; :mod:`attnlab.core.summaries`):
what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json``; the experiments name their class as
``Experiment(..., summary=summaries.Fig1Summary)`` (neither that keyword nor the import is part of the study's code
fingerprint, :mod:`attnlab.core.fingerprint`); the summary keys declared for each experiment are its class's
(``outputs.py`` declares only the arrays), and the tests check every key at its tiny size. The loss spikes'
classes are in :mod:`.spikes`, the sweeps' in :mod:`.sweeps`. Families are keyed by the config's values
(``Fig1Summary.scaled[0.2].accuracy``, c in ``scale_factors``), groups hold one nested summary per construction,
training unit, bar or variant
(``Fig1Summary.check[Construction(3, 8, 3, 4)].n_clusters``, ``DynamicsSummary.unit[2, "mini"].n_drop_eligible``).
A value is a number, or None where the run stored NaN ("never happened").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.core.arrays import Arrays, dims
from attnlab.core.summaries import Summary, group

# ----------------------------------------------------------------------------------------------- Fig. 1 (Sec. 3.2)


@dataclass(frozen=True)
class Construction:
    """(p, N, k, d) of a further construction of Fig. 1's check (Sec. 3, footnote 1); formats as its key part."""

    p: int
    N: int
    k: int
    d: int

    def __format__(self, spec: str) -> str:
        return f"p{self.p}_N{self.N}_k{self.k}_d{self.d}"


def _constructions(config: Any) -> list[Construction]:
    return [Construction(p, N, k, d) for p, N, k, d, _ in config.check_configs]


@dataclass(frozen=True)
class HeadCheck(Summary):
    """One further construction (p, N, k, d): its ξ clusters and whether it is correct and stationary."""

    n_clusters: float
    n_multisets: float
    accuracy: float
    grad_norm: float
    attn_prefix_mass: float


@dataclass(frozen=True)
class ScaledHead(Summary):
    """The construction at λ = μ = 10c (Prop. 1 caveat)."""

    accuracy: float
    grad_norm: float


@dataclass(frozen=True)
class Fig1Summary(Summary):
    """Fig. 1: the explicit clustering head of Sec. 3.2, its scaled versions and further constructions."""

    R_perm: float
    R_suffix: float
    accuracy: float
    attn_prefix_mass: float
    ce: float
    cluster_score: float
    grad_U: float
    grad_V: float
    grad_W: float
    grad_norm: float
    grad_q: float
    head_type: Any
    n_clusters: float
    n_multisets: float
    scaled: dict[float, ScaledHead] = group("*_c{scale_factors}", ScaledHead)
    check: dict[Construction, HeadCheck] = group("*_{construction}", HeadCheck, construction=_constructions)


# ----------------------------------------------------------------------------------------------- Figs. 2-6, 8


@dataclass(frozen=True)
class StationaritySummary(Summary):
    """Prop. 1 under training: Adam started at the clustering head."""

    accuracy_end: float
    accuracy_min: float
    accuracy_start: float
    ce_end: float
    ce_increase: float
    ce_max: float
    ce_start: float
    cluster_score_end: float
    grad_total_end: float
    grad_total_start: float


@dataclass(frozen=True)
class CircuitsSummary(Summary):
    """Fig. 2 and Sec. 4.2: the head taxonomy over trained models."""

    attn_prefix_mass_solved_mean: float
    cluster_score_solved_mean: float
    d4_n_cluster_first: float
    d4_n_clustering_solved: float
    n_clusters_solved_mean: float
    n_failed: float
    n_failed_misclassified: float
    n_fuzzy: float
    n_ideal: float
    n_models: float
    n_partial: float
    n_solved: float
    n_value_corrected: float
    rep_failed: Any


@dataclass(frozen=True)
class Fig5Summary(Summary):
    """Fig. 5: attention maps at initialisation and at the end."""

    attn_by_value0_end: float
    attn_by_value1_end: float
    attn_corr_mean: float
    attn_corr_min: float
    attn_corr_other_solved_mean: float
    attn_corr_solved_mean: float
    attn_prefix_mass_end: float
    attn_prefix_mass_start: float
    n_solved: float


@dataclass(frozen=True)
class TransferCircuitSummary(Summary):
    """Fig. 6: the p = 2 model finetuned on p = 3."""

    attn_corr_new_mean: float
    attn_prefix_mass_new_end: float
    attn_prefix_mass_new_start: float
    n_ideal_clusters_pre: float
    n_solved_new: float
    n_solved_pre: float
    rep_attn_corr_new: float
    rep_attn_prefix_mass_new_end: float
    rep_attn_prefix_mass_new_start: float
    rep_head_type_new: Any
    rep_head_type_pre: Any
    rep_seed: float
    rep_test_acc_new: float
    rep_test_acc_pre: float
    test_acc_new_max: float
    test_acc_new_mean: float
    test_acc_new_mean_ideal_clusters: float
    test_acc_new_mean_solved_pre: float
    test_acc_pre_mean: float


@dataclass(frozen=True)
class Fig8Summary(Summary):
    """Fig. 8: two-stage learning (ξ clusters, then the accuracy rises)."""

    d4_n_cluster_first: float
    d4_n_clustering_solved: float
    drop1: float
    drop2: float
    n_solved: float
    seed_rule: Any
    seed_shown: float
    snapshot1: float
    snapshot2: float
    snapshot3: float
    snapshot4: float
    t_cluster: float
    t_fit: float
    test_acc: float


@dataclass(frozen=True)
class TrainSummary(Summary):
    """One multi-seed training run of the sandbox."""

    best_test_acc: float
    mean_test_acc: float
    n_failed: float
    n_fuzzy: float
    n_ideal: float
    n_partial: float
    n_solved: float
    n_value_corrected: float


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class Fig5Arrays(Arrays):
    """Fig. 5: per seed, the final accuracy, and the correlation of each final attention map (row) with each seed's
    initial map (column): ``Fig5Arrays.from_result(run).attn_corr_matrix.diagonal()`` is each seed with its own."""

    attn_corr_matrix: np.ndarray = dims("seed", "seed_initial", key="attn/attn_corr_matrix")
    test_acc: np.ndarray = dims("seed")


@dataclass(frozen=True, eq=False)
class TransferCircuitArrays(Arrays):
    """Fig. 6: per seed, the p = 2 model's test accuracy and the attention mass on the informative positions
    (t ≤ k) at the start and at the end of the p = 3 phase."""

    pre_test_acc: np.ndarray = dims("seed", key="model_pre/test_acc")
    prefix_mass_start: np.ndarray = dims("seed", key="attn/attn_prefix_mass_start")
    prefix_mass_end: np.ndarray = dims("seed", key="attn/attn_prefix_mass_end")
