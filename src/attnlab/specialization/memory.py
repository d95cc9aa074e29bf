"""Peak-memory models of the specialization study's heavy experiments (checked before a run starts).

Formulas in :mod:`attnlab.specialization.budget`: the SGD's smallest peak (it takes a larger chunk when more is
free) and the theory's Monte-Carlo samples; a model returns the larger.
"""

from __future__ import annotations

from attnlab.core.experiment import memory_model
from attnlab.specialization import experiments  # noqa: F401  (registers the experiments the models attach to)
from attnlab.specialization.budget import sgd_bytes, theory_bytes

REDUCE = "lower D, batch (N_b) or n_mc, or use --device cuda"


def _sim_vs_theory(config) -> tuple[int, str]:
    batch = config.batch or config.D
    law = config.theta_law()
    sgd = sgd_bytes(1, batch, config.L, config.D, config.H, law.F, 4, config.device)
    return max(sgd, theory_bytes(config.n_mc, config.L, config.H, law.F)), REDUCE


memory_model("specialization.fig1", "specialization.fig9", "specialization.fig10")(_sim_vs_theory)
