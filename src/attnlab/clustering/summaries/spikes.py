"""The typed summaries of paper 4's loss-spike experiments (:mod:`attnlab.core.summaries`; Figs. 9-13, 17, 18 and
the remedies): training dynamics (``DynamicsSummary.unit[2, "mini"].n_drop_eligible``), Prop. 4 at the snapshots
(Eq. (33)), spike rates, the anatomy of one spike, the normalisers' curvature (Fig. 10) and the remedies' rates.
A value is a number, or None where the run stored NaN ("never happened").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from attnlab.core.arrays import Arrays, dims, nested
from attnlab.core.summaries import Summary, group, key

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


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class CurveArrays(Arrays):
    """One training unit's logged full-batch curves (a History's ``epoch/…``): ||∇L||, the error 𝓔 and the train
    loss per logged epoch and seed (Prop. 2)."""

    grad_total: np.ndarray = dims("epoch", "seed", key="epoch/grad_total")
    tv_error: np.ndarray = dims("epoch", "seed", key="epoch/tv_error")
    train_loss: np.ndarray = dims("epoch", "seed", key="epoch/train_loss")

    def curves(self) -> dict[str, np.ndarray]:
        """The curves as the measures take them: name → (E, S) array."""
        return {"grad_total": self.grad_total, "tv_error": self.tv_error, "train_loss": self.train_loss}


@dataclass(frozen=True, eq=False)
class Prop4Arrays(Arrays):
    """Prop. 4 at the snapshots of a unit's drawn seed (Eq. (33)): ||∇L||², 𝓔 and the two bounds."""

    grad_sq: np.ndarray = dims("snapshot")
    tv: np.ndarray = dims("snapshot")
    bound_corrected: np.ndarray = dims("snapshot")
    bound_paper: np.ndarray = dims("snapshot")


@dataclass(frozen=True, eq=False)
class DynamicsUnitArrays(CurveArrays):
    """One unit of Figs. 9, 17: its curves, and Prop. 4 along training where the paper's model is trained."""

    prop4: Prop4Arrays | None = nested("prop4/*", Prop4Arrays, when=_sphere)


def _kinds(config: Any) -> tuple[str, ...]:
    return ("mini", "full") if config.full_batch else ("mini",)


@dataclass(frozen=True, eq=False)
class DynamicsArrays(Arrays):
    """Figs. 9, 17: the units keyed (d, kind) in training order, as ``DynamicsSummary.unit``
    (``DynamicsArrays.from_result(run).unit[2, "mini"].grad_total``)."""

    unit: dict[tuple[int, str], DynamicsUnitArrays] = nested("d{dims}_{kind}/*", DynamicsUnitArrays, dims=_dims,
                                                             kind=_kinds)


@dataclass(frozen=True, eq=False)
class SpikesArrays(Arrays):
    """Figs. 13, 18: one mini-batch unit per d, as ``SpikesSummary.unit``."""

    unit: dict[int, CurveArrays] = nested("d{dims}/*", CurveArrays, dims=_dims)


@dataclass(frozen=True, eq=False)
class VariantArrays(Arrays):
    """One remedy variant: spike onsets per 1000 epochs of each seed, and the logged epochs."""

    rate: np.ndarray = dims("seed")
    epochs: np.ndarray = dims("epoch")


@dataclass(frozen=True, eq=False)
class RemediesArrays(Arrays):
    """Sec. 4.4 remedies: the variants' names and each variant's arrays by position (``variant[1].rate``)."""

    variants: np.ndarray = dims("variant")
    variant: dict[int, VariantArrays] = nested("v{i}/*", VariantArrays, i=lambda c: list(range(len(c.variants))))
