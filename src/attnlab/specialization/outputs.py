"""Declared outputs of the specialization experiments (:mod:`attnlab.core.outputs`): the arrays of each (shapes over
the config fields; None: an axis no field fixes; the summary keys are those of its typed summary,
:mod:`attnlab.specialization.summaries`), with the tiny overrides under which ``tests/core/test_outputs.py`` runs it
and checks them."""

from attnlab.core.outputs import declare


def panel(activation: str, H: int) -> list[dict]:
    """One ODE panel of a grid figure."""
    return [{"activation": activation, "H": H}]


SPEC = {"n_mc": 400}
# tiny overrides (on the quick scale) of each experiment's fast check
TINY = {
    "fig1": {**SPEC, "D": 48, "tau_max": 1.0, "record_every": 0.5},
    "fig9": {**SPEC, "D": 48, "tau_max": 0.5, "record_every": 0.5},
    "fig10": {**SPEC, "D": 48, "tau_max": 0.5, "record_every": 0.5, "activations": ["bsoftmax"]},
    "fig2": {**SPEC, "tau_max": 4.0, "record_every": 2.0},
    "fig3": {**SPEC, "tau_max": 4.0, "record_every": 2.0, "panels": panel("softmax", 2)},
    "fig4": {**SPEC, "tau_max": 4.0, "record_every": 2.0},
    "fig19": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("softmax", 2)},
    "fig12": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("softmax", 2)},
    "fig13": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("softmax1", 2)},
    "fig14": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("bsoftmax", 2)},
    "fig16": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("softmax", 2)},
    "fig17": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("softmax1", 2)},
    "fig18": {**SPEC, "tau_max": 2.0, "record_every": 1.0, "panels": panel("bsoftmax", 2)},
    "fig5": {**SPEC, "Hs": [1, 2], "nus": [2.0], "seeds": 1, "tau_max": 3.0, "eval_mc": 2000, "bayes_mc": 4000},
    "fig6": {**SPEC, "tau_max": 3.0, "eval_mc": 2000, "sequences": 2},
    "fig7": {**SPEC, "H": 3, "seeds": 1, "tau_max": 3.0, "eval_mc": 2000, "laws": ["flip"]},
    "fig8": {**SPEC, "tau_max": 0.4},
    "fig11": {**SPEC, "nu1s": [0.5, 4.0], "nu2s": [0.5, 4.0], "tau_max": 3.0},
    "phases": {**SPEC, "tau_max": 1.0, "record_every": 0.5},
    "escape": {**SPEC, "Ds": [1e2, 1e4], "tau_max": 2.0, "record_every": 0.5, "activations": ["bsoftmax"]},
    "split_time": {**SPEC, "D": 200, "seeds": 2, "tau_max": 20.0, "record_every": 1.0},
}

# the order parameters of paper 0 (Eqs. (8)-(9): m, q, p and rr = r rᵀ; with b, v and the loss) of the SGD and ODE
# trajectories, per seed of the batch trained (or integrated) at once
ORDER = {"loss v": ("seed",), "b": ("seed", "head"), "m": ("seed", "head", "feature"),
         "q rr": ("seed", "head", "head_prime"), "p": ("seed", "feature", "feature_prime")}

FIG1 = declare(tiny=TINY["fig1"], index=ORDER,
        arrays={
            "softmax/sim_b softmax/theory_b": (None, 1, None),
            "softmax/sim_loss softmax/sim_v softmax/theory_loss softmax/theory_v": (None, 1),
            ("softmax/sim_m softmax/sim_p softmax/sim_q softmax/sim_rr "
             "softmax/theory_m softmax/theory_p softmax/theory_q softmax/theory_rr"): (None, 1, None, None),
            "softmax/sim_time softmax/theory_time": (None,),
        })

FIG9 = declare(tiny=TINY["fig9"], index=ORDER,
        arrays={
            "{activations}/sim_b {activations}/theory_b": (None, 1, None),
            ("{activations}/sim_loss {activations}/sim_v {activations}/theory_loss "
             "{activations}/theory_v"): (None, 1),
            ("{activations}/sim_m {activations}/sim_p {activations}/sim_q "
             "{activations}/sim_rr {activations}/theory_m {activations}/theory_p "
             "{activations}/theory_q {activations}/theory_rr"): (None, 1, None, None),
            "{activations}/sim_time {activations}/theory_time": (None,),
        })

FIG10 = declare(tiny=TINY["fig10"], index=ORDER,
        arrays={
            "bsoftmax/sim_b bsoftmax/theory_b": ("F", 1, "H"),
            "bsoftmax/sim_loss bsoftmax/sim_v bsoftmax/theory_loss bsoftmax/theory_v": ("F", 1),
            "bsoftmax/sim_m bsoftmax/theory_m": ("F", 1, "H", "F"),
            "bsoftmax/sim_p bsoftmax/theory_p": ("F", 1, "F", "F"),
            "bsoftmax/sim_q bsoftmax/sim_rr bsoftmax/theory_q bsoftmax/theory_rr": ("F", 1, "H", "H"),
            "bsoftmax/sim_time bsoftmax/theory_time": ("F",),
        })

FIG2 = declare(tiny=TINY["fig2"], index=ORDER,
        arrays={
            "panel0/b": (None, 1, "F"),
            "panel0/loss panel0/v panel1/loss panel1/v panel2/loss panel2/v panel3/loss panel3/v": (None, 1),
            "panel0/m panel0/p panel0/q panel0/rr panel1/p panel2/p panel3/p": (None, 1, "F", "F"),
            "panel0/time panel1/time panel2/time panel3/time": (None,),
            "panel1/b panel2/b panel3/b": (None, 1, None),
            "panel1/m panel2/m panel3/m": (None, 1, None, "F"),
            "panel1/q panel1/rr panel2/q panel2/rr panel3/q panel3/rr": (None, 1, None, None),
        })

# one experiment function, several figures: each figure's declaration by name
ONE_PANEL = {name: declare(tiny=TINY[name], index=ORDER,
                           arrays={
                               "panel0/b": (None, 1, "F"),
                               "panel0/loss panel0/v": (None, 1),
                               "panel0/m panel0/p panel0/q panel0/rr": (None, 1, "F", "F"),
                               "panel0/time": (None,),
                           })
             for name in ("fig3", "fig12", "fig13", "fig14", "fig16", "fig17", "fig18")}

FIG4 = declare(tiny=TINY["fig4"], index=ORDER,
        arrays={
            "panel0/b panel1/b": ("F", 1, None),
            "panel0/loss panel0/v panel1/loss panel1/v": ("F", 1),
            "panel0/m panel1/m": ("F", 1, None, "F"),
            "panel0/p panel1/p": ("F", 1, "F", "F"),
            "panel0/q panel0/rr panel1/q panel1/rr": ("F", 1, None, None),
            "panel0/time panel1/time": ("F",),
        })

FIG19 = declare(tiny=TINY["fig19"], index=ORDER,
        arrays={
            "panel0/b": ("F", 1, None),
            "panel0/loss panel0/v": ("F", 1),
            "panel0/m": ("F", 1, None, "F"),
            "panel0/p": ("F", 1, "F", "F"),
            "panel0/q panel0/rr": ("F", 1, None, None),
            "panel0/time": ("F",),
        })

#: the trajectory figures' declarations by name (Figs. 2-4, 19 and the one-panel grids)
TRAJECTORY = {"fig2": FIG2, "fig4": FIG4, "fig19": FIG19, **ONE_PANEL}

FIG5 = declare(tiny=TINY["fig5"],
        arrays={
            ("H/{laws}/bayes/0/loss_eval H/{laws}/bayes/0/stderr H/{laws}/{activations}/{Hs}/loss "
             "H/{laws}/{activations}/{Hs}/loss_eval H/{laws}/{activations}/{Hs}/loss_train "
             "H/{laws}/{activations}/{Hs}/v nu/{laws}/bayes/2.0/loss_eval nu/{laws}/bayes/2.0/stderr "
             "nu/{laws}/{activations}/2.0/loss nu/{laws}/{activations}/2.0/loss_eval "
             "nu/{laws}/{activations}/2.0/loss_train nu/{laws}/{activations}/2.0/v"): (1,),
            "H/{laws}/{activations}/{Hs}/b nu/{laws}/{activations}/2.0/b": (1, None),
            ("H/{laws}/{activations}/{Hs}/m H/{laws}/{activations}/{Hs}/r "
             "nu/{laws}/{activations}/2.0/m nu/{laws}/{activations}/2.0/r"): (1, None, None),
        })

FIG6 = declare(tiny=TINY["fig6"],
        arrays={
            "{activations}/b": (1, "H"),
            "{activations}/eps": ("sequences",),
            "{activations}/loss {activations}/off_target {activations}/v": (1,),
            "{activations}/m": (1, "H", None),
            "{activations}/maps": ("sequences", "H", "L"),
            "{activations}/r": (1, "H", "H"),
        })

FIG7 = declare(tiny=TINY["fig7"],
        arrays={
            "flip/{activations}/b flip/{activations}/curves": (1, None),
            ("flip/{activations}/loss flip/{activations}/loss_eval flip/{activations}/loss_train "
             "flip/{activations}/v"): (1,),
            "flip/{activations}/m": (1, None, "F"),
            "flip/{activations}/r": (1, None, None),
        })

FIG8 = declare(tiny=TINY["fig8"], index=ORDER,
        arrays={
            "diff_m1": (None, None),
            "fixed/b resampled/b": (None, 1, None),
            "fixed/loss fixed/v resampled/loss resampled/v": (None, 1),
            ("fixed/m fixed/p fixed/q fixed/rr resampled/m resampled/p resampled/q "
             "resampled/rr"): (None, 1, None, None),
            "fixed/time resampled/time": (None,),
        })

FIG11 = declare(tiny=TINY["fig11"],
        arrays={
            "cos_m cos_q": (None, None),
            "nu1s nu2s": (None,),
        })

PHASES = declare(tiny=TINY["phases"], index=ORDER,
        arrays={
            "flip/b gaussian_iso/b": (None, 1, None),
            "flip/loss flip/v gaussian_iso/loss gaussian_iso/v": (None, 1),
            ("flip/m flip/p flip/q flip/rr gaussian_iso/m gaussian_iso/p "
             "gaussian_iso/q gaussian_iso/rr"): (None, 1, None, None),
            "flip/time gaussian_iso/time": (None,),
        })

ESCAPE = declare(tiny=TINY["escape"],
        arrays={
            "bsoftmax/b": (None, None, None),
            "bsoftmax/loss bsoftmax/v": (None, None),
            "bsoftmax/m bsoftmax/p bsoftmax/q bsoftmax/rr": (None, None, None, None),
            "bsoftmax/time": (None,),
        })

SPLIT_TIME = declare(tiny=TINY["split_time"],
        arrays={
            "b": (None, None, None),
            "gap loss v": (None, None),
            "m p q rr": (None, None, None, None),
            "time": (None,),
        })

