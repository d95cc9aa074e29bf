"""The signal study in the sandbox (paper 1): signal propagation through a deep post-LN transformer at
initialisation, scrubbed layer by layer (``depth``), and MLM training from those initialisations, scrubbed
step by step (``mlm``). Runs without a depth or step axis (Figs. 1a/b, 1c, 3, B.1, C.1, universality) are
not opened here.
"""

from __future__ import annotations

from attnlab.sandbox.plugin import StudyPlugin, register
from attnlab.signal.views.depth import open_depth
from attnlab.signal.views.mlm import open_mlm

DEPTH = ("fig1d", "fig1e", "depth", "alphac", "figC3", "fig5")
MLM = ("fig4", "figC2", "fig1f")
_DEPTH_FORM = ("L", "d", "H", "T", "n_inits", "n_seqs", "sigma_v2", "sigma_w2", "activation", "seed")
#: Figs. 4 / C.2 train in about a minute at quick scale and publish every logged step: startable and watched live
_MLM_FORM = ("betas", "alphas", "n_seeds", "steps", "lr", "log_every", "L", "H", "d", "T", "seed")


class SignalPlugin(StudyPlugin):
    study = "signal"
    openers = {**dict.fromkeys(DEPTH, open_depth), **dict.fromkeys(MLM, open_mlm)}
    forms = {"signal.depth": ("pairs", "rho0", *_DEPTH_FORM),
             "signal.fig1d": ("alphas", "hf_std", *_DEPTH_FORM),
             "signal.fig1e": ("beta", "alphas", *_DEPTH_FORM),
             "signal.alphac": ("sim_L", "sim_alphas", "sim_eps", "rho0", "beta", "d", "T", "n_inits", "n_seqs",
                               "seed"),
             "signal.figC3": ("L", "table_betas", "rho0", "sigma_w2", "d", "T", "n_inits", "n_seqs", "seed"),
             "signal.fig5": ("L", "sigma_w2s", "sim_sigma_w2s", "rho0", "d", "T", "n_inits", "n_seqs", "seed"),
             "signal.fig4": _MLM_FORM, "signal.figC2": _MLM_FORM}
    when_live = "note"


PLUGIN = register(SignalPlugin())
