"""The paths study in the sandbox (paper 3): the order parameter U of a Bayesian deep multi-head attention network
as its width N grows, theory (lines, saddle point of Eq. 9) and Gibbs samples (dots) overlaid; and head pruning.

* Markov task (Figs. 2c, 2e, 5c, and the generic task; ``markov``): frames are the widths N.
* One-shot task (Figs. 3b-d, 6; ``oneshot``): frames are the widths N, variants the networks (L, Hs).
* Head pruning (Figs. 3e-f, 7; ``pruning``): frames are the number k of heads pruned in score order.

Series over N have N on a log x axis. Figs. 2d and 5b hold no sweep (one width) and are not opened. Every panel
only slices stored arrays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from attnlab.core.config import ConfigError
from attnlab.paths.views.markov import open_markov
from attnlab.paths.views.oneshot import open_oneshot
from attnlab.paths.views.pruning import open_pruning
from attnlab.sandbox.plugin import StudyPlugin, View, register

MARKOV = ("fig2c", "fig2e", "fig5c", "generic")
ONESHOT = ("fig3", "fig6")
PRUNING = ("fig3ef", "fig7")
MARKOV_FORM = ("layout", "sigma_perp", "tau", "P", "widths", "sample_widths", "chains", "burn_in", "samples", "seed")


class PathsPlugin(StudyPlugin):
    study = "paths"
    experiments = tuple(f"paths.{n}" for n in (*MARKOV, *ONESHOT, *PRUNING))
    forms = {f"paths.{n}": MARKOV_FORM for n in MARKOV}

    def open(self, experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
             config: Mapping[str, Any], live: bool) -> View:
        name = experiment.split(".", 1)[1]
        if live:
            raise ConfigError(f"{experiment} runs publish no live snapshots: open the run when it has finished")
        if name in MARKOV:
            return open_markov(experiment, arrays, summary, config)
        if name in ONESHOT:
            return open_oneshot(experiment, arrays, summary, config)
        if name in PRUNING:
            return open_pruning(experiment, arrays, summary, config)
        raise ConfigError(f"the paths plug-in does not open {experiment} runs")


PLUGIN = register(PathsPlugin())
