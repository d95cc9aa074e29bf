"""The typed summaries of paper 4's sweeps (:mod:`attnlab.core.summaries`; the other experiments' are in
:mod:`.training` and :mod:`.spikes`): success against sparsity (Figs. 7, 17-19: ``SparsitySummary.d[8].n_success``),
transfer against training from scratch (Fig. 14: ``TransferSummary.scratch[q]``, ``.finetune[q]``, ``.gain``) and
the learning-rate and seed ablation (Fig. 16: ``AblationSummary.lr[0.01]``). A value is a number, or None where the
run stored NaN ("never happened").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlab.clustering.summaries.spikes import CurveArrays
from attnlab.core.arrays import Arrays, dims, nested
from attnlab.core.summaries import Summary, group, key

# ----------------------------------------------------------------------------------------------- Figs. 7, 14, 16, 19


@dataclass(frozen=True)
class SparsityUnit(Summary):
    """The models of one d (App. A.1, A.4)."""

    max_final_train_loss: float
    max_grad_ce_below: float = key("max_grad_ce_below_1e-3")
    n_ce_below: float = key("n_ce_below_1e-3")
    mean_test_acc: float = key("mean_test_acc")
    n_models: float = key("n_models")
    n_reach90: float = key("n_reach90")
    n_reach99: float = key("n_reach99")
    n_stuck100: float = key("n_stuck100")
    n_success: float = key("n_success")
    sparsity_failed: float = key("sparsity_failed")
    sparsity_success: float = key("sparsity_success")
    spearman: float = key("spearman")
    success_rate: float = key("success_rate")


@dataclass(frozen=True)
class SparsitySummary(Summary):
    """Figs. 7, 19: one unit per embedding dimension d."""

    d: dict[int, SparsityUnit] = group("*_d{dims}", SparsityUnit, dims=lambda c: list(c.dims()))


@dataclass(frozen=True)
class Bar(Summary):
    """One bar of Fig. 14: the runs trained on p' (from scratch or finetuned)."""

    mean_acc: float
    max_acc: float
    n_success: float


@dataclass(frozen=True)
class FinetuneBar(Bar):
    """A finetuned bar: also its perfect runs, with and without the ideal p-phase clusters."""

    n_perfect: float
    n_perfect_not_ideal: float


@dataclass(frozen=True)
class Gain(Summary):
    """Only where some p' is trained both ways: the smallest gain of the mean accuracy, finetuned − scratch."""

    min_gain_finetune: float


@dataclass(frozen=True)
class TransferSummary(Summary):
    """Fig. 14: bars from scratch (p' in ``ps``) and finetuned from p (p' in ``ft_ps``)."""

    ideal_clusters: float
    n_ideal_clusters_pre: float
    pre_success_rate: float
    scratch: dict[int, Bar] = group("*_scratch_p{ps}", Bar)
    finetune: dict[int, FinetuneBar] = group("*_finetune_p{ft_ps}", FinetuneBar)
    finetune_mean_ideal: dict[int, float] = key("mean_acc_finetune_p{ft_ps}_ideal")
    finetune_mean_other: dict[int, float] = key("mean_acc_finetune_p{ft_ps}_other")
    gain: Gain | None = group("*", Gain, when=lambda c: any(q in c.ps for q in c.ft_ps))


@dataclass(frozen=True)
class Setting(Summary):
    """Final test accuracy at one hyper-parameter setting of Fig. 16."""

    seed0_acc: float
    mean_acc: float
    se_acc: float


@dataclass(frozen=True)
class AblationSummary(Summary):
    """Fig. 16: one setting per value of each axis, and the roughness of seed 0 and of the seed mean."""

    roughness_mean: float
    roughness_seed0: float
    batch_size: dict[int, Setting] = group("*_batch_size={batch_sizes}", Setting)
    h: dict[int, Setting] = group("*_h={hs}", Setting)
    lr: dict[float, Setting] = group("*_lr={lrs}", Setting)
    mlp_lr_factor: dict[float, Setting] = group("*_mlp_lr_factor={mlp_lr_factors}", Setting)


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class SweepUnitArrays(CurveArrays):
    """One d unit of Figs. 7, 19: its logged full-batch curves (stored as ``d<d>/grad_total``, not under
    ``epoch/``)."""

    grad_total: np.ndarray = dims("epoch", "seed")
    tv_error: np.ndarray = dims("epoch", "seed")
    train_loss: np.ndarray = dims("epoch", "seed")


@dataclass(frozen=True, eq=False)
class SparsityArrays(Arrays):
    """Figs. 7, 19: the embedding dimensions d of the units, in run order, and each unit's curves keyed by d."""

    ds: np.ndarray = dims("unit")
    d: dict[int, SweepUnitArrays] = nested("d{dims}/*", SweepUnitArrays, dims=lambda c: list(c.dims()))


@dataclass(frozen=True, eq=False)
class BarArrays(Arrays):
    """One Fig. 14 bar: the test accuracy per logged epoch and seed, and the logged epochs."""

    test_acc: np.ndarray = dims("epoch", "seed")
    epochs: np.ndarray = dims("epoch")


@dataclass(frozen=True, eq=False)
class TransferArrays(Arrays):
    """Fig. 14: each seed's p-phase cluster count, the p phase's epochs, and the bars from scratch (p' in ``ps``)
    and finetuned (p' in ``ft_ps``), keyed by p' as ``TransferSummary``'s."""

    n_clusters_pre: np.ndarray = dims("seed")
    pre_epochs: np.ndarray = dims("epoch", key="pre/epochs")
    scratch: dict[int, BarArrays] = nested("scratch_p{ps}/*", BarArrays)
    finetune: dict[int, BarArrays] = nested("finetune_p{ft_ps}/*", BarArrays)
