"""The potts study in the sandbox (paper 2): MLM training on Potts data against the exact conditionals, and the
replica theory of the Gaussian model against ridge simulations; theory (lines) and simulation (dots) overlaid.

The views: ``training`` (fig2), ``mixing`` (fig2d), ``samples`` (fig3right, consistency),
``replica`` (fig3left, finite_l, replica), ``chain`` (gibbs).
Nothing is recomputed: frames slice the stored arrays. Series x axes are log where the paper's are (M in Fig.
3-right), with the raw values as x.
"""

from __future__ import annotations

from collections.abc import Callable

from attnlab.potts.views.chain import open_gibbs
from attnlab.potts.views.mixing import open_fig2d
from attnlab.potts.views.replica import open_fig3left, open_finite_l, open_replica
from attnlab.potts.views.samples import open_sweep
from attnlab.potts.views.training import open_fig2
from attnlab.sandbox.plugin import StudyPlugin, View, register

OPENERS: dict[str, Callable[..., View]] = {
    "fig2": open_fig2, "fig2d": open_fig2d, "fig3right": open_sweep, "consistency": open_sweep,
    "fig3left": open_fig3left, "finite_l": open_finite_l, "replica": open_replica, "gibbs": open_gibbs,
}


class PottsPlugin(StudyPlugin):
    study = "potts"
    openers = OPENERS
    #: the experiments that finish within about a minute at quick scale (fig2, fig3right, gibbs take longer)
    forms = {"potts.fig3left": ("L", "nu", "lams", "alphas", "n_real", "seed"),
             "potts.finite_l": ("L", "nu", "lam", "alphas", "n_draws", "seed"),
             "potts.replica": ("lams", "nus", "alpha_max", "n_nodes"),
             "potts.fig2d": ("a_values", "seeds", "epochs", "lr", "beta", "seed")}


PLUGIN = register(PottsPlugin())
