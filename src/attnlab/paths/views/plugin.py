"""The paths study in the sandbox (paper 3): the order parameter U of a Bayesian deep multi-head attention network
as its width N grows, theory (lines, saddle point of Eq. (9)) and Gibbs samples (dots) overlaid; and head pruning.

* Markov task (Figs. 2c, 2e, 5c, and the generic task; ``markov``): frames are the widths N.
* One-shot task (Figs. 3b-d, 6; ``oneshot``): frames are the widths N, variants the networks (L, Hs).
* Head pruning (Figs. 3e-f, 7; ``pruning``): frames are the number k of heads pruned in score order.

Series over N have N on a log x axis. Figs. 2d and 5b hold no sweep (one width) and are not opened. Every panel
only slices stored arrays.
"""

from __future__ import annotations

from attnlab.paths.views.markov import open_markov
from attnlab.paths.views.oneshot import open_oneshot
from attnlab.paths.views.pruning import open_pruning
from attnlab.sandbox.plugin import StudyPlugin, register

MARKOV = ("fig2c", "fig2e", "fig5c", "generic")
ONESHOT = ("fig3", "fig6")
PRUNING = ("fig3ef", "fig7")
MARKOV_FORM = ("layout", "sigma_perp", "tau", "P", "widths", "sample_widths", "chains", "burn_in", "samples", "seed")


class PathsPlugin(StudyPlugin):
    study = "paths"
    openers = {**dict.fromkeys(MARKOV, open_markov), **dict.fromkeys(ONESHOT, open_oneshot),
               **dict.fromkeys(PRUNING, open_pruning)}
    forms = {f"paths.{n}": MARKOV_FORM for n in MARKOV}
    when_live = "refuse"  # Gibbs sampling publishes no snapshots


PLUGIN = register(PathsPlugin())
