"""What the Potts-data experiments share: the data set of a run and the final metrics of fitted maps."""

from __future__ import annotations

import torch

from attnlab.core.runs import RunContext
from attnlab.potts import metrics
from attnlab.potts.data.sets import PottsData, potts_dataset


def potts_data(config, ctx: RunContext) -> PottsData:
    """The run's Potts data set (memoised within a process), said in its log."""
    ctx.log(f"sampling / reusing the Potts data set {config.spec()}")
    return potts_dataset(config.spec(), ctx.device)


def final_metrics(prefix: str, A: torch.Tensor, J: torch.Tensor) -> dict[str, float]:
    """Mean over stacked models of the docs/studies/potts.md note 6 metrics of final maps A (S, L, L)."""
    return {f"{prefix}_corr": float(metrics.corr_offdiag(A, J).mean()),
            f"{prefix}_recon_err": float(metrics.recon_error(A, J).mean()),
            f"{prefix}_topk": float(metrics.topk_precision(A, J).mean()),
            f"{prefix}_auc": float(metrics.roc_auc(A, J).mean())}
