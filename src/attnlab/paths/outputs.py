"""Declared outputs of the paths experiments (:mod:`attnlab.core.outputs`): the summary keys and arrays of each
(shapes over the config fields; None: an axis no field fixes), with the tiny overrides under which
``tests/core/test_outputs.py`` runs it and checks them."""

from attnlab.core.outputs import outputs

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
}

# the order parameter U^{ππ'} of the Markov runs (paper 3, Eqs. 10, 13): one index column per path
PATH_PAIRS = {"U": ("path", "path_prime")}
# The arrays of every Markov run that samples and solves (the sampled and theory sides of one width).
SAMPLED_AND_SOLVED = {
    ("agree_U_corr agree_U_gate_b10 agree_U_gate_b9 agree_U_rel_fro agree_acc_diff "
     "agree_f_rel_err agree_pearson agree_var_ratio sim_accuracy sim_ess sim_gen_error "
     "sim_rhat sim_tau sim_time sim_train_mse theory_S theory_accuracy theory_converged "
     "theory_energy theory_gen_error theory_hessian_min_eig theory_max_grad theory_residual "
     "theory_tau theory_time"): (None,),
    "sim_U theory_U": (None, None, None),
    "sim_f_mean sim_f_var theory_f_mean theory_f_var": (None, "P_test"),
    "theory_hessian_eigs": (None, None),
    "y_test": ("P_test",),
}

outputs("paths.fig2c", tiny=TINY["fig2c"], index=PATH_PAIRS,
        summary=("U_corr_N10 U_gate_b10_N10 U_gate_b9_N10 U_rel_fro_N10 acc_diff_N10 acc_gp "
                 "acc_gp_good_expected acc_gp_good_expected_se acc_gp_path0 acc_gp_path1 acc_gp_path2 "
                 "acc_gp_path3 acc_gp_{gp_layouts} acc_sample_N10 acc_theory_N{widths} all_converged ess_N10 "
                 "f_rel_err_N10 gen_error_gp gen_error_gp_{gp_layouts} gen_error_theory_N{widths} "
                 "hessian_min_eig_N{widths} max_grad max_residual n_paths pearson_N10 rhat_N10 solve_seconds "
                 "solver_iterations var_ratio_N10"),
        arrays=SAMPLED_AND_SOLVED)

outputs("paths.fig2e", tiny=TINY["fig2e"], index=PATH_PAIRS,
        summary=("U_corr_N10 U_gate_b10_N10 U_gate_b9_N10 U_rel_fro_N10 acc_diff_N10 acc_gp "
                 "acc_gp_good_expected acc_gp_good_expected_se acc_gp_path0 acc_gp_path1 acc_gp_{gp_layouts} "
                 "acc_sample_N10 acc_theory_N{widths} all_converged ess_N10 f_rel_err_N10 gen_error_gp "
                 "gen_error_gp_{gp_layouts} gen_error_theory_N{widths} hessian_min_eig_N{widths} max_grad "
                 "max_residual n_paths pearson_N10 rhat_N10 solve_seconds solver_iterations var_ratio_N10"),
        arrays=SAMPLED_AND_SOLVED)

outputs("paths.fig5c", tiny=TINY["fig5c"], index=PATH_PAIRS,
        summary=("acc_gp acc_gp_good_expected acc_gp_good_expected_se acc_gp_path0 acc_gp_path1 "
                 "acc_gp_{gp_layouts} acc_theory_N{widths} all_converged gen_error_gp "
                 "gen_error_gp_{gp_layouts} gen_error_theory_N{widths} hessian_min_eig_N{widths} max_grad "
                 "max_residual n_paths solve_seconds solver_iterations"),
        arrays={
            ("theory_S theory_accuracy theory_converged theory_energy theory_gen_error "
             "theory_hessian_min_eig theory_max_grad theory_residual theory_tau theory_time"): (None,),
            "theory_U": (None, None, None),
            "theory_f_mean theory_f_var": (None, "P_test"),
            "theory_hessian_eigs": (None, None),
            "y_test": ("P_test",),
        })

outputs("paths.generic", tiny=TINY["generic"], index=PATH_PAIRS,
        summary=("U_corr_N10 U_gate_b10_N10 U_gate_b9_N10 U_rel_fro_N10 acc_diff_N10 acc_gp acc_gp_path0 "
                 "acc_gp_path1 acc_gp_path2 acc_gp_path3 acc_gp_path4 acc_gp_path5 acc_gp_path6 acc_gp_path7 "
                 "acc_gp_path8 acc_sample_N10 acc_theory_N10 all_converged ess_N10 f_rel_err_N10 gen_error_gp "
                 "gen_error_theory_N10 hessian_min_eig_N10 max_grad max_residual n_paths pearson_N10 rhat_N10 "
                 "solve_seconds solver_iterations var_ratio_N10"),
        arrays=SAMPLED_AND_SOLVED)

outputs("paths.fig2d", tiny=TINY["fig2d"],
        summary="kta_fw kta_gp max_grad top5_overlap_fw top5_overlap_gp top5_ratio",
        arrays={
            "U": (None, None),
            "eig_fw eig_gp overlap_fw overlap_gp": (None,),
        })

outputs("paths.fig5b", tiny=TINY["fig5b"],
        summary=("contrast_fw contrast_gp contrast_path0 contrast_path1 contrast_path2 contrast_path3 "
                 "relative_spread_path0 relative_spread_path1 relative_spread_path2 relative_spread_path3"),
        arrays={
            "C0 C1 C2 C3 K_fw K_gp": ("P", "P"),
            "y_sorted": ("P",),
        })

outputs("paths.fig3", tiny=TINY["fig3"],
        summary=("L2_H4-4/U_corr_N10 L2_H4-4/U_dev_from_gp_N{widths} L2_H4-4/U_gate_b10_N10 "
                 "L2_H4-4/U_gate_b9_N10 L2_H4-4/U_rel_fro_N10 L2_H4-4/U_scale_N{widths} "
                 "L2_H4-4/U_shape_dev_N{widths} L2_H4-4/acc_diff_N10 L2_H4-4/acc_fw_glyphs_blocks_N{widths} "
                 "L2_H4-4/acc_fw_id_N{widths} L2_H4-4/acc_gp_glyphs_blocks L2_H4-4/acc_gp_id "
                 "L2_H4-4/acc_sample_glyphs_blocks_N10 L2_H4-4/acc_sample_id_N10 L2_H4-4/block_ratio_gd "
                 "L2_H4-4/block_ratio_theory L2_H4-4/block_share_chance L2_H4-4/block_share_gd "
                 "L2_H4-4/block_share_theory L2_H4-4/block_top10_theory L2_H4-4/f_rel_err_N10 "
                 "L2_H4-4/fw_minus_gp_id_N10 L2_H4-4/gd_acc_glyphs_blocks L2_H4-4/gd_acc_id "
                 "L2_H4-4/gd_best_val L2_H4-4/pearson_N10 L2_H4-4/rhat_N10 L2_H4-4/sign_agreement_gd "
                 "L2_H4-4/top5_overlap_fw L2_H4-4/top5_overlap_gp L2_H4-4/var_ratio_N10"),
        arrays={
            "L2_H4-4/U_gd": ("N_gd", "N_gd"),
            "L2_H4-4/U_star L2_H4-4/sim_U": (None, "N_gd", "N_gd"),
            ("L2_H4-4/acc_fw_glyphs_blocks L2_H4-4/acc_fw_id L2_H4-4/acc_fw_val "
             "L2_H4-4/acc_gp_grid_glyphs_blocks L2_H4-4/acc_gp_grid_id L2_H4-4/acc_gp_grid_val "
             "L2_H4-4/sim_accuracy L2_H4-4/sim_ess L2_H4-4/sim_gen_error L2_H4-4/sim_rhat "
             "L2_H4-4/sim_tau L2_H4-4/sim_time L2_H4-4/sim_train_mse L2_H4-4/tau_star L2_H4-4/taus "
             "L2_H4-4/widths"): (None,),
            "L2_H4-4/acc_gp_glyphs_blocks L2_H4-4/acc_gp_id L2_H4-4/acc_gp_val L2_H4-4/tau_gp": (),
            ("L2_H4-4/acc_grid_glyphs_blocks L2_H4-4/acc_grid_id L2_H4-4/acc_grid_val "
             "L2_H4-4/f_star L2_H4-4/fvar_star L2_H4-4/gd_val_curve L2_H4-4/sim_f_mean "
             "L2_H4-4/sim_f_var"): (None, None),
            "L2_H4-4/overlap_fw L2_H4-4/overlap_gp": ("P",),
        })

outputs("paths.fig6", tiny=TINY["fig6"],
        summary=("L2_H2-2/U_dev_from_gp_N{widths} L2_H2-2/U_scale_N{widths} L2_H2-2/U_shape_dev_N{widths} "
                 "L2_H2-2/acc_fw_glyphs_blocks_N{widths} L2_H2-2/acc_fw_id_N{widths} "
                 "L2_H2-2/acc_gp_glyphs_blocks L2_H2-2/acc_gp_id L2_H2-2/block_ratio_gd "
                 "L2_H2-2/block_ratio_theory L2_H2-2/block_share_chance L2_H2-2/block_share_gd "
                 "L2_H2-2/block_share_theory L2_H2-2/block_top10_theory L2_H2-2/fw_minus_gp_id_N10 "
                 "L2_H2-2/gd_acc_glyphs_blocks L2_H2-2/gd_acc_id L2_H2-2/gd_best_val L2_H2-2/sign_agreement_gd "
                 "L2_H2-2/top5_overlap_fw L2_H2-2/top5_overlap_gp L2_H4-4/U_dev_from_gp_N{widths} "
                 "L2_H4-4/U_scale_N{widths} L2_H4-4/U_shape_dev_N{widths} "
                 "L2_H4-4/acc_fw_glyphs_blocks_N{widths} L2_H4-4/acc_fw_id_N{widths} "
                 "L2_H4-4/acc_gp_glyphs_blocks L2_H4-4/acc_gp_id L2_H4-4/block_ratio_gd "
                 "L2_H4-4/block_ratio_theory L2_H4-4/block_share_chance L2_H4-4/block_share_gd "
                 "L2_H4-4/block_share_theory L2_H4-4/block_top10_theory L2_H4-4/fw_minus_gp_id_N10 "
                 "L2_H4-4/gd_acc_glyphs_blocks L2_H4-4/gd_acc_id L2_H4-4/gd_best_val L2_H4-4/sign_agreement_gd"),
        arrays={
            ("L2_H2-2/U_gd L2_H2-2/acc_grid_glyphs_blocks L2_H2-2/acc_grid_id "
             "L2_H2-2/acc_grid_val L2_H2-2/f_star L2_H2-2/fvar_star L2_H2-2/gd_val_curve "
             "L2_H4-4/acc_grid_glyphs_blocks L2_H4-4/acc_grid_id L2_H4-4/acc_grid_val "
             "L2_H4-4/f_star L2_H4-4/fvar_star L2_H4-4/gd_val_curve"): (None, None),
            "L2_H2-2/U_star": (None, None, None),
            ("L2_H2-2/acc_fw_glyphs_blocks L2_H2-2/acc_fw_id L2_H2-2/acc_fw_val "
             "L2_H2-2/acc_gp_grid_glyphs_blocks L2_H2-2/acc_gp_grid_id L2_H2-2/acc_gp_grid_val "
             "L2_H2-2/tau_star L2_H2-2/taus L2_H2-2/widths L2_H4-4/acc_fw_glyphs_blocks "
             "L2_H4-4/acc_fw_id L2_H4-4/acc_fw_val L2_H4-4/acc_gp_grid_glyphs_blocks "
             "L2_H4-4/acc_gp_grid_id L2_H4-4/acc_gp_grid_val L2_H4-4/tau_star L2_H4-4/taus "
             "L2_H4-4/widths"): (None,),
            ("L2_H2-2/acc_gp_glyphs_blocks L2_H2-2/acc_gp_id L2_H2-2/acc_gp_val L2_H2-2/tau_gp "
             "L2_H4-4/acc_gp_glyphs_blocks L2_H4-4/acc_gp_id L2_H4-4/acc_gp_val L2_H4-4/tau_gp"): (),
            "L2_H2-2/overlap_fw L2_H2-2/overlap_gp": ("P",),
            "L2_H4-4/U_gd": ("N_gd", "N_gd"),
            "L2_H4-4/U_star": (None, "N_gd", "N_gd"),
        })

outputs("paths.fig3ef", tiny=TINY["fig3ef"],
        summary=("L2_H4-4/acc_full_digits L2_H4-4/acc_full_id L2_H4-4/acc_pruned1_digits "
                 "L2_H4-4/acc_pruned1_id L2_H4-4/acc_pruned2_digits L2_H4-4/acc_pruned2_id "
                 "L2_H4-4/acc_pruned3_digits L2_H4-4/acc_pruned3_id L2_H4-4/acc_pruned4_digits "
                 "L2_H4-4/acc_pruned4_id L2_H4-4/acc_pruned5_digits L2_H4-4/acc_pruned5_id "
                 "L2_H4-4/acc_pruned6_digits L2_H4-4/acc_pruned6_id L2_H4-4/drop_highest_score_digits "
                 "L2_H4-4/drop_highest_score_id L2_H4-4/drop_lowest_score_digits L2_H4-4/drop_lowest_score_id "
                 "L2_H4-4/drop_max_digits L2_H4-4/drop_max_id L2_H4-4/drop_min_digits L2_H4-4/drop_min_id "
                 "L2_H4-4/gd_best_val L2_H4-4/param_fraction_per_head L2_H4-4/rankings_agree "
                 "L2_H4-4/scores_max L2_H4-4/scores_min L2_H4-4/spearman_score_drop_digits "
                 "L2_H4-4/spearman_score_drop_id L2_H4-4/tau_star"),
        arrays={
            "L2_H4-4/U": ("N_gd", "N_gd"),
            "L2_H4-4/curve_digits L2_H4-4/curve_id": (None,),
            "L2_H4-4/drop_digits L2_H4-4/drop_id L2_H4-4/scores_both L2_H4-4/scores_either": ("image_size",),
            "L2_H4-4/order": (None, None),
        })

outputs("paths.fig7", tiny=TINY["fig7"],
        summary=("L2_H2-2/acc_full_glyphs_blocks L2_H2-2/acc_full_id L2_H2-2/acc_pruned1_glyphs_blocks "
                 "L2_H2-2/acc_pruned1_id L2_H2-2/acc_pruned2_glyphs_blocks L2_H2-2/acc_pruned2_id "
                 "L2_H2-2/drop_highest_score_glyphs_blocks L2_H2-2/drop_highest_score_id "
                 "L2_H2-2/drop_lowest_score_glyphs_blocks L2_H2-2/drop_lowest_score_id "
                 "L2_H2-2/drop_max_glyphs_blocks L2_H2-2/drop_max_id L2_H2-2/drop_min_glyphs_blocks "
                 "L2_H2-2/drop_min_id L2_H2-2/gd_best_val L2_H2-2/param_fraction_per_head "
                 "L2_H2-2/rankings_agree L2_H2-2/scores_max L2_H2-2/scores_min "
                 "L2_H2-2/spearman_score_drop_glyphs_blocks L2_H2-2/spearman_score_drop_id L2_H2-2/tau_star "
                 "L2_H4-4/acc_full_glyphs_blocks L2_H4-4/acc_full_id L2_H4-4/acc_pruned1_glyphs_blocks "
                 "L2_H4-4/acc_pruned1_id L2_H4-4/acc_pruned2_glyphs_blocks L2_H4-4/acc_pruned2_id "
                 "L2_H4-4/acc_pruned3_glyphs_blocks L2_H4-4/acc_pruned3_id L2_H4-4/acc_pruned4_glyphs_blocks "
                 "L2_H4-4/acc_pruned4_id L2_H4-4/acc_pruned5_glyphs_blocks L2_H4-4/acc_pruned5_id "
                 "L2_H4-4/acc_pruned6_glyphs_blocks L2_H4-4/acc_pruned6_id "
                 "L2_H4-4/drop_highest_score_glyphs_blocks L2_H4-4/drop_highest_score_id "
                 "L2_H4-4/drop_lowest_score_glyphs_blocks L2_H4-4/drop_lowest_score_id "
                 "L2_H4-4/drop_max_glyphs_blocks L2_H4-4/drop_max_id L2_H4-4/drop_min_glyphs_blocks "
                 "L2_H4-4/drop_min_id L2_H4-4/gd_best_val L2_H4-4/param_fraction_per_head "
                 "L2_H4-4/rankings_agree L2_H4-4/scores_max L2_H4-4/scores_min "
                 "L2_H4-4/spearman_score_drop_glyphs_blocks L2_H4-4/spearman_score_drop_id L2_H4-4/tau_star"),
        arrays={
            "L2_H2-2/U L2_H2-2/order L2_H4-4/order": (None, None),
            ("L2_H2-2/curve_glyphs_blocks L2_H2-2/curve_id L2_H2-2/drop_glyphs_blocks "
             "L2_H2-2/drop_id L2_H2-2/scores_both L2_H2-2/scores_either L2_H4-4/curve_glyphs_blocks "
             "L2_H4-4/curve_id"): (None,),
            "L2_H4-4/U": ("N_gd", "N_gd"),
            ("L2_H4-4/drop_glyphs_blocks L2_H4-4/drop_id L2_H4-4/scores_both "
             "L2_H4-4/scores_either"): ("image_size",),
        })

