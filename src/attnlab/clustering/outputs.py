"""Declared outputs of the clustering experiments (:mod:`attnlab.core.outputs`): the arrays of each (shapes over the
config fields; None: an axis no field fixes), with the tiny overrides under which ``tests/core/test_outputs.py`` runs
it and checks them. The summary keys come from each experiment's typed summary (``summaries/``)."""

from attnlab.core.outputs import Outputs, declare

# what ``circuits.circuit_metrics`` measures of each model (one value per seed)
MODEL_METRICS = ("R_perm R_suffix attn_prefix_mass cluster_purity cluster_score grad_total head_type n_clusters "
                 "pos_collapse_in pos_collapse_out probe_acc seed t_cluster t_fit test_acc train_acc train_loss "
                 "unseen_acc value_collapse_out")


def per_model(*prefixes: str, also: str = "") -> str:
    """The array names ``<prefix>/<metric>`` of every model metric under each prefix, then ``also``."""
    return " ".join([f"{p}/{m}" for p in prefixes for m in MODEL_METRICS.split()] + also.split())

CTRAIN = {"n_train": 128, "n_test": 128, "batch_size": 32, "k": 3}
STRAIN = {"n_train": 64, "n_test": 64, "batch_size": 32}
# tiny overrides (on the quick scale) of each experiment's fast check
TINY = {
    "fig1": {"check_configs": [[3, 8, 3, 4, 16]], "n_sample": 500, "scale_factors": [0.1, 0.2, 1.0]},
    "stationarity": {"epochs": 2, "n_train": 256},
    "circuits": {**CTRAIN, "n_seeds": 3, "epochs": 3},
    "fig5": {**CTRAIN, "n_seeds": 2, "epochs": 2, "n_probe": 6},
    "transfer_circuit": {**CTRAIN, "n_seeds": 2, "epochs": 2, "epochs_new": 2},
    "fig8": {**CTRAIN, "n_seeds": 2, "epochs": 3},
    "train": {**CTRAIN, "n_seeds": 2, "epochs": 3},
    "fig9": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 4, "full_batch_epochs": 6, "full_batch_log_every": 2},
    "fig17": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 2, "dims": [3, 16]},
    "fig10": {"n_r": 12},
    "fig11": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 4},
    "fig12": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 4},
    "fig13": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 4},
    "fig18": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 3, "dims": [3]},
    "remedies": {**CTRAIN, "k": 2, "n_seeds": 2, "epochs": 3, "variants": ["baseline", "norm=smooth"]},
    "fig7": {**STRAIN, "k": 3, "n_seeds": 4, "epochs": 3, "log_every": 1},
    "fig19": {**STRAIN, "ds": [2, 3], "n_seeds": 2, "epochs": 2, "log_every": 1},
    "fig14": {**STRAIN, "d": 2, "ps": [2, 3], "ft_ps": [3], "n_seeds": 3, "epochs": 2, "pretrain_epochs": 3,
            "log_every": 1},
    "fig16": {**STRAIN, "d": 2, "n_seeds": 3, "epochs": 2, "batch_sizes": [16, 32], "hs": [8], "lrs": [1e-2],
            "mlp_lr_factors": [1.0]},
}

FIG1 = declare(tiny=TINY["fig1"],
        arrays={
            "ideal/E ideal/V": (None, None),
            "ideal/P": ("N", None),
            "ideal/U": (None, "h"),
            "ideal/W": ("h", None),
            "ideal/q": (None,),
        })

STATIONARITY = declare(tiny=TINY["stationarity"],
        arrays={
            "run/*": None,  # a History each
        })

CIRCUITS = declare(tiny=TINY["circuits"],
        arrays={
            "run/*": None,  # a History each
            per_model("model"): ("k",),
        })

FIG5 = declare(tiny=TINY["fig5"],
        arrays={
            "run/*": None,  # a History each
            "attn/attn_by_value_end attn/attn_by_value_start attn/attn_corr_matrix": (None, None),
            "attn/attn_corr attn/attn_prefix_mass_end attn/attn_prefix_mass_start test_acc": (None,),
        })

TRANSFER_CIRCUIT = declare(tiny=TINY["transfer_circuit"],
        arrays={
            "finetune/* pretrain/*": None,  # a History each
            "attn/attn_by_value_end attn/attn_by_value_start attn/attn_corr_matrix": (None, None),
            per_model("model_new", "model_pre",
                      also="attn/attn_corr attn/attn_prefix_mass_end attn/attn_prefix_mass_start"): (None,),
            "rep": (),
        })

FIG8 = declare(tiny=TINY["fig8"],
        arrays={
            "run/*": None,  # a History each
            per_model("model", also="strip_epochs"): (None,),
            "shown": (),
        })

TRAIN = declare(tiny=TINY["train"],
        arrays={
            "run/*": None,  # a History each
            per_model("model"): (None,),
        })

FIG9 = declare(tiny=TINY["fig9"],
        arrays={
            "d2_full/* d2_mini/*": None,  # a History each
        })

FIG17 = declare(tiny=TINY["fig17"],
        arrays={
            "d16_mini/* d3_mini/*": None,  # a History each
        })

FIG10 = declare(tiny=TINY["fig10"],
        arrays={
            ("jac/rmsnorm jac/smooth jac/smooth_inf jac/sphere move_back/rmsnorm move_back/smooth "
             "move_back/smooth_inf move_back/sphere move_side/rmsnorm move_side/smooth "
             "move_side/smooth_inf move_side/sphere r"): ("n_r",),
            "picture/far picture/near": (None, None),
        })

def spike_run_outputs(name: str) -> Outputs:
    """The outputs of one spike run (``clustering.fig11``, ``fig12``: one experiment function, several figures)."""
    return declare(tiny=TINY[name],
            arrays={
                "run/*": None,  # a History each
                ("anatomy/after/acc anatomy/after/margin anatomy/after/min_xi_norm "
                 "anatomy/after/u_abs_cos_mean anatomy/amplification anatomy/before/acc anatomy/before/margin "
                 "anatomy/before/min_xi_norm anatomy/before/u_abs_cos_mean anatomy/dmlp_mean anatomy/dxi_mean "
                 "anatomy/dxi_rel"): (),
                "anatomy/after/u anatomy/after/u_cos anatomy/before/u anatomy/before/u_cos": (None, None),
                ("anatomy/after/u_norm anatomy/after/w_norm anatomy/before/u_norm anatomy/before/w_norm "
                 "spike"): (None,),
            })


FIG11, FIG12 = spike_run_outputs("fig11"), spike_run_outputs("fig12")

# one spike unit each at its tiny size; its History
FIG13 = declare(tiny=TINY["fig13"], arrays={"d2/*": None})
FIG18 = declare(tiny=TINY["fig18"], arrays={"d3/*": None})

REMEDIES = declare(tiny=TINY["remedies"],
        arrays={
            ("v0/eligible v0/epochs v0/fitted v0/rate v0/rate_eligible v0/test_acc_final v1/eligible "
             "v1/epochs v1/fitted v1/rate v1/rate_eligible v1/test_acc_final variants"): (None,),
            "v0/train_loss v1/train_loss": (None, None),
        })

FIG7 = declare(tiny=TINY["fig7"],
        arrays={
            "d2/epochs d2/sparsity_summary eps": (None,),
            "d2/final/E d2/final/U d2/final/V d2/final/W": (None, None, None),
            "d2/final/P": (None, "N", None),
            "d2/final/q d2/grad_total d2/sparsity d2/test_acc d2/train_loss d2/tv_error": (None, None),
            "ds": (1,),
        })

FIG19 = declare(tiny=TINY["fig19"],
        arrays={
            "ds d{ds}/sparsity_summary eps": (None,),
            "d{ds}/epochs": ("k",),
            "d{ds}/final/E d{ds}/final/U d{ds}/final/V d{ds}/final/W": (None, None, None),
            "d{ds}/final/P": (None, "N", None),
            "d{ds}/final/q d{ds}/sparsity": (None, None),
            "d{ds}/grad_total d{ds}/test_acc d{ds}/train_loss d{ds}/tv_error": ("k", None),
        })

FIG14 = declare(tiny=TINY["fig14"],
        arrays={
            "finetune_p3/epochs n_clusters_pre scratch_p{ps}/epochs": ("k",),
            "finetune_p3/test_acc scratch_p{ps}/test_acc": ("k", "k"),
            "pre/epochs": (None,),
            "pre/test_acc": (None, "k"),
        })

FIG16 = declare(tiny=TINY["fig16"],
        arrays={
            ("batch_size={batch_sizes}/test_acc h=8/test_acc lr=0.01/test_acc "
             "mlp_lr_factor=1/test_acc"): ("k",),
        })

