"""Paper 1's study, declared in one place: its experiments in three figure families (one attention layer, signal
propagation over depth, MLM training) and the map of real models, the modules of its claims (and of the worlds where
they are false) and its sandbox views."""

from __future__ import annotations

from attnlab.core.study import Study
from attnlab.signal.experiments.attention import FIG3, FIGB1, FIGC1, UNIVERSALITY
from attnlab.signal.experiments.depth import ALPHAC, DEPTH, FIG1C, FIG1D, FIG1E, FIG5, FIGC3
from attnlab.signal.experiments.mapping import MAP_FAMILIES, MAP_FIX_TRAINING
from attnlab.signal.experiments.training import FIG1AB, FIG1F, FIG4, FIGC2

STUDY = Study(
    "signal", "Signal propagation, rank and entropy collapse in deep post-LN transformers at initialisation (paper 1)",
    experiments=(FIG3, UNIVERSALITY, FIGB1, FIGC1, FIG1C, FIG1D, FIG1E, DEPTH, ALPHAC, FIG5, FIGC3, MAP_FAMILIES,
                 MAP_FIX_TRAINING, FIG1AB, FIG4, FIGC2, FIG1F),
    claims=("attnlab.signal.claims.exact", "attnlab.signal.claims.attention", "attnlab.signal.claims.depth",
            "attnlab.signal.claims.spectrum", "attnlab.signal.claims.training", "attnlab.signal.claims.mapping",
            "attnlab.signal.claims.worlds"),
    views="attnlab.signal.views.plugin",
)
