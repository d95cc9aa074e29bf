"""Paper 2's study, declared in one place: its experiments, the modules of its claims, its sandbox views."""

from __future__ import annotations

from attnlab.core.study import Study
from attnlab.potts.experiments.checks import EQUIVALENCE, GIBBS
from attnlab.potts.experiments.fig2 import FIG2, FIG2D
from attnlab.potts.experiments.fig3left import FIG3LEFT, FINITE_L, REPLICA
from attnlab.potts.experiments.fig3right import CONSISTENCY, FIG3RIGHT

STUDY = Study(
    "potts", "What self-attention learns from masked language modelling on generalised Potts sequences (paper 2)",
    experiments=(FIG3LEFT, FINITE_L, REPLICA, FIG2, FIG2D, FIG3RIGHT, CONSISTENCY, EQUIVALENCE, GIBBS),
    claims=("attnlab.potts.claims.gaussian", "attnlab.potts.claims.training", "attnlab.potts.claims.fig3right"),
    views="attnlab.potts.views.plugin",
)
