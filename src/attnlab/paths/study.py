"""Paper 3's study, declared in one place: its experiments (the hidden-Markov-chain task, Sec. 4.1 and App. G: Figs.
2c-e, 5b-c, a generic check and sampling a stored run; the one-shot image task, Sec. 4.2 and App. H: Figs. 3, 6, 7),
the modules of its claims and its sandbox views."""

from __future__ import annotations

from attnlab.core.study import Study
from attnlab.paths.experiments.markov import FIG2C, FIG2D, FIG2E, FIG5B, FIG5C, GENERIC
from attnlab.paths.experiments.oneshot import FIG3, FIG6
from attnlab.paths.experiments.pruning import FIG3EF, FIG7
from attnlab.paths.experiments.sample import SAMPLE

STUDY = Study(
    "paths", "Attention paths in a Bayesian deep multi-head attention network (paper 3)",
    experiments=(FIG2C, FIG2E, FIG5C, GENERIC, FIG2D, FIG5B, SAMPLE, FIG3, FIG6, FIG3EF, FIG7),
    claims=("attnlab.paths.claims.common", "attnlab.paths.claims.markov", "attnlab.paths.claims.episodes",
            "attnlab.paths.claims.oneshot"),
    views="attnlab.paths.views.plugin",
)
