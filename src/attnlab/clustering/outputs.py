"""Declared outputs of the clustering experiments (:mod:`attnlab.core.outputs`): the summary keys and arrays of each
(shapes over the config fields; None: an axis no field fixes), with the tiny overrides under which
``tests/core/test_outputs.py`` runs it and checks them."""

from attnlab.core.outputs import Outputs, declare

# what ``circuits.circuit_metrics`` measures of each model (one value per seed)
MODEL_METRICS = ("R_perm R_suffix attn_prefix_mass cluster_purity cluster_score grad_total head_type n_clusters "
                 "pos_collapse_in pos_collapse_out probe_acc seed t_cluster t_fit test_acc train_acc train_loss "
                 "unseen_acc value_collapse_out")


def per_model(*prefixes: str, also: str = "") -> str:
    """The array names ``<prefix>/<metric>`` of every model metric under each prefix, then ``also``."""
    return " ".join([f"{p}/{m}" for p in prefixes for m in MODEL_METRICS.split()] + also.split())

# what ``spikes`` summarises of each run unit of the loss-drop (Figs. 9, 17) and spike (Figs. 11-13, 18) figures
DROP_KEYS = ("drop1 drop2 drop_ratio_min max_grad_ce_below_1e-3 n_ce_below_1e-3 n_drop_eligible n_drop_ratio_ge5 "
             "n_eligible n_fitted n_ratio_ge5 n_seeds prop4_max_ratio_corrected prop4_n_epochs "
             "prop4_paper_violations ratio_median shown_seed t_cluster t_fit")
SPIKE_KEYS = ("cooccurrence cooccurrence_chance frac_ratio_ge2 max_grad_ce_below_1e-3 n_ce_below_1e-3 n_onsets "
              "n_ratio_ge2 n_seeds_spiking n_spike_epochs shown_seed")


def per_unit(keys: str, *units: str, also: str = "") -> str:
    """The summary keys ``<unit>_<key>`` of every key under each unit, then ``also``."""
    return " ".join([f"{u}_{k}" for u in units for k in keys.split()] + also.split())


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
        summary=("R_perm R_suffix accuracy accuracy_c{scale_factors} accuracy_p3_N8_k3_d4 attn_prefix_mass "
                 "attn_prefix_mass_p3_N8_k3_d4 ce cluster_score grad_U grad_V grad_W grad_norm "
                 "grad_norm_c{scale_factors} grad_norm_p3_N8_k3_d4 grad_q head_type n_clusters "
                 "n_clusters_p3_N8_k3_d4 n_multisets n_multisets_p3_N8_k3_d4"),
        arrays={
            "ideal/E ideal/V": (None, None),
            "ideal/P": ("N", None),
            "ideal/U": (None, "h"),
            "ideal/W": ("h", None),
            "ideal/q": (None,),
        })

STATIONARITY = declare(tiny=TINY["stationarity"],
        summary=("accuracy_end accuracy_min accuracy_start ce_end ce_increase ce_max ce_start "
                 "cluster_score_end grad_total_end grad_total_start"),
        arrays={
            "run/*": None,  # a History each
        })

CIRCUITS = declare(tiny=TINY["circuits"],
        summary=("attn_prefix_mass_solved_mean cluster_score_solved_mean d4_n_cluster_first "
                 "d4_n_clustering_solved n_clusters_solved_mean n_failed n_failed_misclassified n_fuzzy "
                 "n_ideal n_models n_partial n_solved n_value_corrected rep_failed"),
        arrays={
            "run/*": None,  # a History each
            per_model("model"): ("k",),
        })

FIG5 = declare(tiny=TINY["fig5"],
        summary=("attn_by_value0_end attn_by_value1_end attn_corr_mean attn_corr_min "
                 "attn_corr_other_solved_mean attn_corr_solved_mean attn_prefix_mass_end "
                 "attn_prefix_mass_start n_solved"),
        arrays={
            "run/*": None,  # a History each
            "attn/attn_by_value_end attn/attn_by_value_start attn/attn_corr_matrix": (None, None),
            "attn/attn_corr attn/attn_prefix_mass_end attn/attn_prefix_mass_start test_acc": (None,),
        })

TRANSFER_CIRCUIT = declare(tiny=TINY["transfer_circuit"],
        summary=("attn_corr_new_mean attn_prefix_mass_new_end attn_prefix_mass_new_start n_ideal_clusters_pre "
                 "n_solved_new n_solved_pre rep_attn_corr_new rep_attn_prefix_mass_new_end "
                 "rep_attn_prefix_mass_new_start rep_head_type_new rep_head_type_pre rep_seed rep_test_acc_new "
                 "rep_test_acc_pre test_acc_new_max test_acc_new_mean test_acc_new_mean_ideal_clusters "
                 "test_acc_new_mean_solved_pre test_acc_pre_mean"),
        arrays={
            "finetune/* pretrain/*": None,  # a History each
            "attn/attn_by_value_end attn/attn_by_value_start attn/attn_corr_matrix": (None, None),
            per_model("model_new", "model_pre",
                      also="attn/attn_corr attn/attn_prefix_mass_end attn/attn_prefix_mass_start"): (None,),
            "rep": (),
        })

FIG8 = declare(tiny=TINY["fig8"],
        summary=("d4_n_cluster_first d4_n_clustering_solved drop1 drop2 n_solved seed_rule seed_shown "
                 "snapshot1 snapshot2 snapshot3 snapshot4 t_cluster t_fit test_acc"),
        arrays={
            "run/*": None,  # a History each
            per_model("model", also="strip_epochs"): (None,),
            "shown": (),
        })

TRAIN = declare(tiny=TINY["train"],
        summary="best_test_acc mean_test_acc n_failed n_fuzzy n_ideal n_partial n_solved n_value_corrected",
        arrays={
            "run/*": None,  # a History each
            per_model("model"): (None,),
        })

FIG9 = declare(tiny=TINY["fig9"],
        summary=per_unit(DROP_KEYS, "d2_full", "d2_mini", also="units"),
        arrays={
            "d2_full/* d2_mini/*": None,  # a History each
        })

FIG17 = declare(tiny=TINY["fig17"],
        summary=per_unit(DROP_KEYS, "d{dims}_mini", also="units"),
        arrays={
            "d16_mini/* d3_mini/*": None,  # a History each
        })

FIG10 = declare(tiny=TINY["fig10"],
        summary=("angle_deg_far angle_deg_near eta max_jac_rmsnorm max_jac_smooth max_jac_smooth_inf "
                 "max_jac_sphere max_rel_err_sphere_vs_1_over_r"),
        arrays={
            ("jac/rmsnorm jac/smooth jac/smooth_inf jac/sphere move_back/rmsnorm move_back/smooth "
             "move_back/smooth_inf move_back/sphere move_side/rmsnorm move_side/smooth "
             "move_side/smooth_inf move_side/sphere r"): ("n_r",),
            "picture/far picture/near": (None, None),
        })

def spike_run_outputs(name: str) -> Outputs:
    """The outputs of one spike run (``clustering.fig11``, ``fig12``: one experiment function, several figures)."""
    return declare(tiny=TINY[name],
            summary=per_unit(SPIKE_KEYS, "run", also="after/acc after/margin after/min_xi_norm after/u_abs_cos_mean "
                             "amplification before/acc before/margin before/min_xi_norm before/u_abs_cos_mean "
                             "dmlp_mean dxi_mean dxi_rel epoch_after epoch_before loss_after loss_before "
                             "lr_over_min_token_norm rule seed_shown"),
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
FIG13 = declare(tiny=TINY["fig13"], summary=per_unit(SPIKE_KEYS, "d2", also="units"), arrays={"d2/*": None})
FIG18 = declare(tiny=TINY["fig18"], summary=per_unit(SPIKE_KEYS, "d3", also="units"), arrays={"d3/*": None})

REMEDIES = declare(tiny=TINY["remedies"],
        summary=("{variants}:n_eligible {variants}:n_fitted {variants}:rate_eligible_mean {variants}:rate_mean "
                 "{variants}:rate_se {variants}:test_acc_final_mean"),
        arrays={
            ("v0/eligible v0/epochs v0/fitted v0/rate v0/rate_eligible v0/test_acc_final v1/eligible "
             "v1/epochs v1/fitted v1/rate v1/rate_eligible v1/test_acc_final variants"): (None,),
            "v0/train_loss v1/train_loss": (None, None),
        })

FIG7 = declare(tiny=TINY["fig7"],
        summary=("max_final_train_loss_d2 max_grad_ce_below_1e-3_d2 mean_test_acc_d2 n_ce_below_1e-3_d2 "
                 "n_models_d2 n_reach90_d2 n_reach99_d2 n_stuck100_d2 n_success_d2 sparsity_failed_d2 "
                 "sparsity_success_d2 spearman_d2 success_rate_d2"),
        arrays={
            "d2/epochs d2/sparsity_summary eps": (None,),
            "d2/final/E d2/final/U d2/final/V d2/final/W": (None, None, None),
            "d2/final/P": (None, "N", None),
            "d2/final/q d2/grad_total d2/sparsity d2/test_acc d2/train_loss d2/tv_error": (None, None),
            "ds": (1,),
        })

FIG19 = declare(tiny=TINY["fig19"],
        summary=("max_final_train_loss_d{ds} max_grad_ce_below_1e-3_d{ds} mean_test_acc_d{ds} "
                 "n_ce_below_1e-3_d{ds} n_models_d{ds} n_reach90_d{ds} n_reach99_d{ds} n_stuck100_d{ds} "
                 "n_success_d{ds} sparsity_failed_d{ds} sparsity_success_d{ds} spearman_d{ds} "
                 "success_rate_d{ds}"),
        arrays={
            "ds d{ds}/sparsity_summary eps": (None,),
            "d{ds}/epochs": ("k",),
            "d{ds}/final/E d{ds}/final/U d{ds}/final/V d{ds}/final/W": (None, None, None),
            "d{ds}/final/P": (None, "N", None),
            "d{ds}/final/q d{ds}/sparsity": (None, None),
            "d{ds}/grad_total d{ds}/test_acc d{ds}/train_loss d{ds}/tv_error": ("k", None),
        })

FIG14 = declare(tiny=TINY["fig14"],
        summary=("ideal_clusters max_acc_finetune_p3 max_acc_scratch_p{ps} mean_acc_finetune_p3 "
                 "mean_acc_finetune_p3_ideal mean_acc_finetune_p3_other mean_acc_scratch_p{ps} "
                 "min_gain_finetune n_ideal_clusters_pre n_perfect_finetune_p3 n_perfect_not_ideal_finetune_p3 "
                 "n_success_finetune_p3 n_success_scratch_p{ps} pre_success_rate"),
        arrays={
            "finetune_p3/epochs n_clusters_pre scratch_p{ps}/epochs": ("k",),
            "finetune_p3/test_acc scratch_p{ps}/test_acc": ("k", "k"),
            "pre/epochs": (None,),
            "pre/test_acc": (None, "k"),
        })

FIG16 = declare(tiny=TINY["fig16"],
        summary=("mean_acc_batch_size={batch_sizes} mean_acc_h=8 mean_acc_lr=0.01 mean_acc_mlp_lr_factor=1 "
                 "roughness_mean roughness_seed0 se_acc_batch_size={batch_sizes} se_acc_h=8 se_acc_lr=0.01 "
                 "se_acc_mlp_lr_factor=1 seed0_acc_batch_size={batch_sizes} seed0_acc_h=8 seed0_acc_lr=0.01 "
                 "seed0_acc_mlp_lr_factor=1"),
        arrays={
            ("batch_size={batch_sizes}/test_acc h=8/test_acc lr=0.01/test_acc "
             "mlp_lr_factor=1/test_acc"): ("k",),
        })

