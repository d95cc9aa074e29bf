"""The exact Potts optimum of MLM training, the "theory" of Fig. 2: what factored attention trained by MLM converges
to (the conditionals (5) in the softmax representation). The replica theory of Fig. 3-left is in
:mod:`attnlab.potts.theory.replica`.

    opt = potts_optimum(data, epochs)          # Trajectory with train.simulate's observables
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.potts import metrics
from attnlab.potts.model import attention, factored_logits, mlm_loss, potts_representation

F64 = torch.float64


def potts_optimum(data, epochs: Sequence[float]) -> Trajectory:
    """What MLM training of factored attention converges to: the exact conditionals (5) in the softmax
    representation W, V = model.potts_representation (A = κβJ plus sink, V = U/κ), as a Trajectory with the
    observables of ``train.simulate`` (test_loss = the optimal loss, gap = 0, corr = 1, recon_err = 0)."""
    W, V = potts_representation(data.potts)
    A = attention(W)
    T = len(epochs)
    vals = {
        "test_loss": float(mlm_loss(factored_logits(data.test, W, V), data.test)),
        "train_loss": float(mlm_loss(factored_logits(data.train, W, V), data.train)),
        "recon_err": float(metrics.recon_error(A, data.potts.J)),
        "corr": float(metrics.corr_offdiag(A, data.potts.J)),
    }
    vals["gap"] = vals["test_loss"] - data.optimal_loss
    obs = {k: torch.full((T, 1), v, dtype=F64) for k, v in vals.items()}
    return Trajectory(np.asarray(epochs, float), obs, time_name="epoch", source="potts_optimum",
                      meta={"optimal_loss": data.optimal_loss})
