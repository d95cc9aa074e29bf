"""The typed summaries of paper 4's experiments (:mod:`attnlab.core.summaries`): what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json``; the experiments name their class as
``Experiment(..., summary=summaries.Fig1Summary)`` (neither that keyword nor the import is part of the study's code
fingerprint, :mod:`attnlab.core.fingerprint`), and ``outputs.py`` keeps its declared key templates, against
the tests check every class key for key at its tiny size. The sweeps' classes are in
:mod:`attnlab.clustering.sweeps.summaries`. Families are keyed by the config's values
(``Fig1Summary.scaled[0.2].accuracy``, c in ``scale_factors``),
groups hold one nested summary per construction, training unit, bar or variant
(``Fig1Summary.check[Construction(3, 8, 3, 4)].n_clusters``, ``DynamicsSummary.unit[2, "mini"].n_drop_eligible``).
A value is a number, or None where the run stored NaN ("never happened").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attnlab.core.summaries import Summary, group, key

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


# ----------------------------------------------------------------------------------------------- Figs. 9-13, 17, 18


def _sphere(config: Any) -> bool:
    """Whether the runs train the paper's model (sphere normaliser, no MLP biases), where Prop. 4 is checked."""
    return config.norm == "sphere" and not config.mlp_bias


def _dims(config: Any) -> list[int]:
    return list(config.dims) if config.dims is not None else [config.d]


@dataclass(frozen=True)
class Prop4(Summary):
    """Prop. 4 at the snapshots of a unit's drawn seed (Eq. (33); paper's model only)."""

    max_ratio_corrected: float
    paper_violations: float
    n_epochs: float


@dataclass(frozen=True)
class DropUnit(Summary):
    """Two-stage statistics of one training unit of Figs. 9, 17 (Sec. 4.3)."""

    drop1: float
    drop2: float
    drop_ratio_min: float
    max_grad_ce_below: float = key("max_grad_ce_below_1e-3")
    n_ce_below: float = key("n_ce_below_1e-3")
    n_drop_eligible: float = key("n_drop_eligible")
    n_drop_ratio_ge5: float = key("n_drop_ratio_ge5")
    n_eligible: float = key("n_eligible")
    n_fitted: float = key("n_fitted")
    n_ratio_ge5: float = key("n_ratio_ge5")
    n_seeds: float = key("n_seeds")
    ratio_median: float = key("ratio_median")
    shown_seed: float = key("shown_seed")
    t_cluster: float = key("t_cluster")
    t_fit: float = key("t_fit")
    prop4: Prop4 | None = group("prop4_*", Prop4, when=_sphere)


@dataclass(frozen=True)
class DynamicsSummary(Summary):
    """Figs. 9, 17: one mini-batch (and, with ``full_batch``, one full-batch) unit per d, keyed (d, kind)."""

    units: str  # the unit names, comma-separated, in training order
    unit: dict[tuple[int, str], DropUnit] = group(
        "d{dims}_{kind}_*", DropUnit, dims=_dims, kind=lambda c: ("mini", "full") if c.full_batch else ("mini",))


@dataclass(frozen=True)
class SpikeUnit(Summary):
    """Loss-spike onsets of one training unit (Sec. 4.4)."""

    cooccurrence: float
    cooccurrence_chance: float
    frac_ratio_ge2: float
    max_grad_ce_below: float = key("max_grad_ce_below_1e-3")
    n_ce_below: float = key("n_ce_below_1e-3")
    n_onsets: float = key("n_onsets")
    n_ratio_ge2: float = key("n_ratio_ge2")
    n_seeds_spiking: float = key("n_seeds_spiking")
    n_spike_epochs: float = key("n_spike_epochs")
    shown_seed: float = key("shown_seed")


@dataclass(frozen=True)
class SpikesSummary(Summary):
    """Figs. 13, 18: one mini-batch unit per d."""

    units: str
    unit: dict[int, SpikeUnit] = group("d{dims}_*", SpikeUnit, dims=_dims)


@dataclass(frozen=True)
class Snapshot(Summary):
    """One side (before / after) of the dissected spike (Figs. 11, 12)."""

    acc: float
    margin: float
    min_xi_norm: float
    u_abs_cos_mean: float


@dataclass(frozen=True)
class AnatomySummary(Summary):
    """Figs. 11, 12: one spike dissected just before and just after."""

    rule: Any
    seed_shown: float
    epoch_before: float
    epoch_after: float
    loss_before: float
    loss_after: float
    lr_over_min_token_norm: float
    amplification: float
    dmlp_mean: float
    dxi_mean: float
    dxi_rel: float
    before: Snapshot = group("before/*", Snapshot)
    after: Snapshot = group("after/*", Snapshot)
    run: SpikeUnit = group("run_*", SpikeUnit)


@dataclass(frozen=True)
class CurvatureSummary(Summary):
    """Fig. 10: the Jacobians of the normalisers."""

    angle_deg_far: float
    angle_deg_near: float
    eta: float
    max_jac_rmsnorm: float
    max_jac_smooth: float
    max_jac_smooth_inf: float
    max_jac_sphere: float
    max_rel_err_sphere_vs_1_over_r: float


@dataclass(frozen=True)
class VariantRates(Summary):
    """Spike onsets per 1000 epochs of one remedy variant (Sec. 4.4)."""

    n_eligible: float
    n_fitted: float
    rate_eligible_mean: float
    rate_mean: float
    rate_se: float
    test_acc_final_mean: float


@dataclass(frozen=True)
class RemediesSummary(Summary):
    """Sec. 4.4 remedies: one entry per variant."""

    variant: dict[str, VariantRates] = group("{variants}:*", VariantRates)
