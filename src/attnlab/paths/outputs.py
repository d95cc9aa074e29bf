"""Declared outputs of the paths experiments (:mod:`attnlab.core.outputs`): the arrays of each (shapes over the config
fields; None: an axis no field fixes; the summary keys are those of its typed summary, :mod:`attnlab.paths.summaries`),
with the tiny overrides under which ``tests/core/test_outputs.py`` runs it and checks them."""

import math

from attnlab.core.outputs import Outputs, declare
from attnlab.paths.keys import net_key, set_key

MARKOV = {"P": 40, "P_test": 100, "widths": (10, 100), "sample_widths": (10,), "chains": 2, "burn_in": 20,
          "samples": 10, "thin": 2}
ONESHOT = {"dataset": "glyphs", "ood": ("glyphs_blocks",), "image_size": 8, "channels": 1, "patch": 4,
           "glyph_classes": 40, "N_gd": 16, "G": 4, "gd_steps": 40, "gd_lr": 3e-3, "eval_every": 10, "P": 30,
           "P_val": 40, "P_test": 40, "widths": (10, 1000), "taus": (0.1, 0.5), "chains": 1, "burn_in": 20,
           "samples": 10, "thin": 1}
VARIANTS = [{"L": 2, "Hs": [2, 2], "G": 4}, {"L": 2, "Hs": [4, 4], "G": 4}]
# tiny overrides (on the quick scale) of each experiment's fast check
TINY = {
    "fig2c": MARKOV,
    "fig2e": MARKOV,
    "fig5c": {"P": 40, "P_test": 50, "widths": (10, 100)},
    "generic": {**MARKOV, "widths": (10,)},
    "fig2d": {"P": 40, "P_test": 50, "widths": (10, 100)},
    "fig5b": {"P": 40, "P_test": 50, "widths": (10, 100)},
    "fig3": ONESHOT,
    "fig6": {**ONESHOT, "variants": VARIANTS, "sample_widths": ()},
    "fig3ef": {k: v for k, v in ONESHOT.items() if k not in ("dataset", "ood")},
    "fig7": {**ONESHOT, "variants": VARIANTS},
    "sample": {"P": 40, "P_test": 50, "sample_widths": (10,), "chains": 2, "burn_in": 20, "samples": 10, "thin": 2},
}

# the order parameter U^{ππ'} of the Markov runs (paper 3, Eqs. (10), (13)): one index column per path
PATH_PAIRS = {"U": ("path", "path_prime")}
AGREEMENT = "U_corr U_gate_b10 U_gate_b9 U_rel_fro acc_diff f_rel_err pearson var_ratio"  # pipeline.agreement
THEORY = "S accuracy converged energy gen_error hessian_min_eig max_grad residual tau time"


LAYOUT_PATHS = {"all": 4, "good": 1, "good_denoising": 2, "good_uniform": 2, "random": 9}  # markov.data.markov_heads


def n_paths(c) -> int:
    """Paths of the configured network: the product of its head counts (the listed ``heads``, else ``layout``)."""
    return math.prod(len(layer) for layer in c.heads) if c.heads is not None else LAYOUT_PATHS[c.layout]


def _solved(c) -> list[float]:
    """The widths the theory is solved at: the config's and the sampled ones."""
    return sorted(set(c.widths) | {float(n) for n in c.sample_widths})


def markov_arrays(c) -> dict:
    """The theory at every solved width (T), the Gibbs samples and their agreement at every sampled one (S)."""
    T, S, n = len(_solved(c)), len(c.sample_widths), n_paths(c)
    out: dict = {"y_test": ("P_test",), "theory_U": (T, n, n), "theory_f_mean theory_f_var": (T, "P_test"),
                 " ".join(set_key("theory", k) for k in THEORY.split() if c.hessian or "hessian" not in k): (T,)}
    if c.hessian:
        out["theory_hessian_eigs"] = (T, None)  # the eigenvalues of the action's Hessian in U
    if c.history_every:
        out["history_N*"] = None
    if S:
        out.update({"sim_U": (S, n, n), "sim_f_mean sim_f_var": (S, "P_test"),
                    "sim_accuracy sim_ess sim_gen_error sim_rhat sim_tau sim_time sim_train_mse": (S,),
                    " ".join(set_key("agree", k) for k in AGREEMENT.split()): (S,)})
    return out


def markov_outputs(name: str) -> Outputs:
    """The outputs of a Markov sweep (``paths.fig2c``, ``fig2e``, ``fig5c``, ``generic``), with its tiny check."""
    return declare(tiny=TINY[name], index=PATH_PAIRS, arrays=markov_arrays)


# paths.sample: the chains' statistics per width (S widths, n paths and P* test points of the sampled problem, the
# source's when a run is named) and each width's chain state (``state_N<N>/…``, markov.sample.pack)
SAMPLE = declare(tiny=TINY["sample"], index=PATH_PAIRS,
                 arrays={"sim_U": (None, None, None), "sim_f_mean sim_f_var": (None, None), "y_test": (None,),
                "sim_accuracy sim_ess sim_gen_error sim_rhat sim_tau sim_time sim_train_mse": (None,),
                "state_N*": None})

FIG2D = declare(tiny=TINY["fig2d"],
        arrays={
            "U": (None, None),
            "eig_fw eig_gp overlap_fw overlap_gp": (None,),
        })

FIG5B = declare(tiny=TINY["fig5b"],
        arrays={
            "C0 C1 C2 C3 K_fw K_gp": ("P", "P"),
            "y_sorted": ("P",),
        })

# -- the one-shot task (Figs. 3, 6, 7): per variant (``L2_H4-4``: L layers of Hs heads), every test set (id and
# each OOD set; the theory also scores the validation set), widths N and temperatures τ of the config ---------------


def _net(var) -> tuple[str, int, int]:
    """A variant's name, its number of paths (∏ Hs) and of heads (Σ Hs)."""
    return var.name, math.prod(var.Hs), sum(var.Hs)


def _each(v: str, names: str, which: str | None = None, N: float | str | None = None) -> str:
    """The keys ``net_key(v, name, which, N)`` of the space-separated ``names``, space-separated."""
    return " ".join(net_key(v, name, which, N) for name in names.split())


def oneshot_arrays(c) -> dict:
    """Per variant: the theory over (τ, N) with τ*(N) (``pipeline.theory_grid``), GD's U and validation curve;
    the first variant's samples and PC overlaps. Test points: validation, id and each OOD set, stacked."""
    W, T, S = len(c.widths), len(c.taus), len(c.sample_widths)
    points = "P_val + P_test * (1 + len(ood))"
    out: dict = {}
    for k, var in enumerate(c.variants):
        v, n, _ = _net(var)
        sets = ("val", "id", *c.ood)
        out.update({net_key(v, "gd_val_curve"): (2, None),  # (step, validation accuracy) at every evaluation
                    net_key(v, "U_gd"): (n, n), net_key(v, "U_star"): (W, n, n),
                    _each(v, "f_star fvar_star"): (W, points),
                    net_key(v, "taus"): (T,), _each(v, "widths tau_star"): (W,), net_key(v, "tau_gp"): (),
                    " ".join(net_key(v, "acc_grid", s) for s in sets): (T, W),
                    " ".join(net_key(v, "acc_fw", s) for s in sets): (W,),
                    " ".join(net_key(v, "acc_gp_grid", s) for s in sets): (T,),
                    " ".join(net_key(v, "acc_gp", s) for s in sets): (),
                    " ".join(net_key(v, "correct_fw", s) for s in sets): (W, None),  # per test episode: 1 correct
                    " ".join(net_key(v, "correct_gp", s) for s in sets): (None,)})
        if k == 0:
            out[_each(v, "overlap_fw overlap_gp")] = ("min(n_pcs, P)",)
            if S:
                out.update({net_key(v, "sim_U"): (S, n, n), _each(v, "sim_f_mean sim_f_var"): (S, points),
                            " ".join(net_key(v, "sim", key) for key in ("accuracy", "ess", "gen_error", "rhat", "tau",
                                                                  "time", "train_mse")): (S,)})
    return out


def pruning_arrays(c) -> dict:
    """Per variant: U at N = score_width, the head scores and single-head drops (Σ Hs heads), the pruning order
    (layer, head) and the accuracy curve after pruning 0 … Σ(H_ℓ − 1) heads, per test set."""
    out: dict = {}
    for var in c.variants:
        v, n, heads = _net(var)
        sets = ("id", *c.ood)
        out.update({net_key(v, "U"): (n, n), _each(v, "scores", "both") + " " + _each(v, "scores", "either"): (heads,),
                    net_key(v, "order"): (heads - var.L, 2), " ".join(net_key(v, "drop", s) for s in sets): (heads,),
                    " ".join(net_key(v, "curve", s) for s in sets): (heads - var.L + 1,)})
    return out


def oneshot_outputs(name: str) -> Outputs:
    """The outputs of a one-shot theory run (``paths.fig3``, ``fig6``), with its tiny check."""
    return declare(tiny=TINY[name], arrays=oneshot_arrays)


def pruning_outputs(name: str) -> Outputs:
    """The outputs of a head-pruning run (``paths.fig3ef``, ``fig7``), with its tiny check."""
    return declare(tiny=TINY[name], arrays=pruning_arrays)
