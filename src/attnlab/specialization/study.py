"""Paper 0's study, declared in one place: its experiments in four figure families (SGD against the theory, the
heads' trajectories, trained models, the two phases), the modules of its claims and its sandbox views."""

from __future__ import annotations

from attnlab.core.study import Study
from attnlab.specialization.experiments.phases import ESCAPE, PHASES, SPLIT_TIME
from attnlab.specialization.experiments.sim_vs_theory import FIG1, FIG9, FIG10
from attnlab.specialization.experiments.trained import FIG5, FIG6, FIG7, FIG11
from attnlab.specialization.experiments.trajectories import FIG8, TRAJECTORY_FIGURES

STUDY = Study(
    "specialization", "A solvable model of multi-head attention: how its heads specialise (paper 0)",
    experiments=(FIG1, FIG9, FIG10, *TRAJECTORY_FIGURES.values(), FIG8, FIG5, FIG6, FIG7, FIG11, PHASES, ESCAPE,
                 SPLIT_TIME),
    claims=("attnlab.specialization.claims.exact", "attnlab.specialization.claims.dynamics",
            "attnlab.specialization.claims.trained", "attnlab.specialization.claims.identities"),
    views="attnlab.specialization.views.plugin",
)
