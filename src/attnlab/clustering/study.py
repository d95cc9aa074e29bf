"""Paper 4's study, declared in one place: its experiments (the ideal head and single trainings, Figs. 1-8 and the
visual sandbox's run; loss spikes, Figs. 9-13, 17, 18 and their remedies; sweeps over seeds, sparsity, d and p,
Figs. 7, 14, 16, 19), the modules of its claims and its sandbox views."""

from __future__ import annotations

from attnlab.clustering.experiments.curvature import FIG10
from attnlab.clustering.experiments.ideal_head import FIG1
from attnlab.clustering.experiments.spikes import FIG9, FIG11, FIG12, FIG13, FIG17, FIG18, REMEDIES
from attnlab.clustering.experiments.sweeps import FIG7, FIG14, FIG16, FIG19
from attnlab.clustering.experiments.training import CIRCUITS, FIG5, FIG8, STATIONARITY, TRAIN, TRANSFER_CIRCUIT
from attnlab.core.study import Study

STUDY = Study(
    "clustering", "How transformers learn to cluster: the sparse modular addition task (paper 4)",
    experiments=(FIG1, STATIONARITY, CIRCUITS, FIG5, TRANSFER_CIRCUIT, FIG8, TRAIN, FIG9, FIG17, FIG10, FIG13, FIG18,
                 FIG11, FIG12, REMEDIES, FIG7, FIG19, FIG14, FIG16),
    claims=("attnlab.clustering.claims.training", "attnlab.clustering.claims.spikes",
            "attnlab.clustering.claims.sweeps"),
    views="attnlab.clustering.views.plugin",
)
