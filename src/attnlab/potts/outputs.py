"""Declared outputs of the potts experiments (:mod:`attnlab.core.outputs`): the summary keys and arrays of each
(shapes over the config fields; None: an axis no field fixes), with the tiny overrides under which
``tests/core/test_outputs.py`` runs it and checks them."""

from attnlab.core.outputs import outputs

DATA = {"L": 6, "C": 8, "n_chains": 10, "burn_in": 30, "thin": 3, "M_train": 100, "M_test": 40}
# tiny overrides (on the quick scale) of each experiment's fast check
TINY = {
    "fig2": {**DATA, "epochs": 3, "vanilla_epochs": 2, "d": 8, "n_eval": 20},
    "fig2d": {**DATA, "a_values": [0.0, 1.0], "seeds": 2, "epochs": 2},
    "fig3right": {**DATA, "Ms": [1, 5, 20], "lams": [1e-2], "n_real": 2, "max_iter": 40},
    "consistency": {**DATA, "Ms": [20, 100], "n_real": 2, "max_iter": 40},
    "equivalence": {**DATA, "epochs": 2, "max_iter": 40},
    "gibbs": {"L": 8, "C": 6, "betas": [0.0, 0.5, 1.0], "n_chains": 4, "pilot_samples": 8, "burn_in": 10, "thin": 2,
            "pilot_thin": 2, "chain_samples": 5, "chain_thin": 3},
    "fig3left": {"L": 30, "alphas": [0.5, 2.0], "n_real": 4, "lams": [1e-2]},
    "finite_l": {"L": 30, "alphas": [0.5, 2.0], "n_draws": 4},
    "replica": {"nus": [3.0], "lams": [1e-2, 1e-1], "alpha_max": 3.0, "n_nodes": 200},
}

outputs("potts.fig2", tiny=TINY["fig2"],
        index={"corr gap recon_err test_loss train_loss": ("replica",)},  # the stack of models trained at once
        summary=("d_hamming_train factored_isolated_sink factored_value_corr optimal_loss optimum_recon_corr "
                 "test_flip_rate test_hamming_pooled test_hamming_within test_rhat_energy test_sweeps "
                 "test_tau_int_energy train_flip_rate train_hamming_pooled train_hamming_within "
                 "train_rhat_energy train_sweeps train_tau_int_energy {models}_auc {models}_corr "
                 "{models}_epochs_to_gap_0.1 {models}_gap {models}_recon_err {models}_test {models}_topk"),
        arrays={
            "J": ("L", "L"),
            "factored/V": (1, None, None),
            "factored/W vanilla1/layer_maps {models}/map": (1, "L", "L"),
            ("optimum/corr optimum/gap optimum/recon_err optimum/test_loss optimum/train_loss "
             "{models}/traj_corr {models}/traj_gap {models}/traj_recon_err {models}/traj_test_loss "
             "{models}/traj_train_loss"): (None, 1),
            "optimum/time {models}/traj_time": (None,),
            "vanilla1/final_test vanilla3/final_test": (1,),
            "vanilla3/layer_maps": (3, "L", "L"),  # its three layers
            "{models}/maps": (None, 1, "L", "L"),
        })

outputs("potts.fig2d", tiny=TINY["fig2d"],
        summary=("best_a corr_a{a_values} margin_amax_a0 optimal_loss spearman_a_test test_a{a_values} "
                 "test_a{a_values}_std"),
        arrays={
            "a traj_time": (None,),
            "map": (None, "L", "L"),
            "traj_corr traj_gap traj_recon_err traj_test_loss traj_train_loss": (None, None),
        })

outputs("potts.fig3right", tiny=TINY["fig3right"],
        summary=("L argmax_M_lam0.01 converged_fraction corr_M{Ms}_lam0.01 gap_M{Ms}_lam0.01 "
                 "inseparable_M_lam0.01 max_grad_norm max_n_iter min_corr_increase_lam0.01 "
                 "min_gap_decrease_lam0.01 optimal_loss peak_steps_lam0.01 rise_lam0.01 rise_sem_lam0.01 "
                 "separable_M_lam0.01 test_M{Ms}_lam0.01"),
        arrays={
            "Ms": ("len(Ms)",),
            "M{Ms}/V": (1, "n_real", "C", "C"),
            "M{Ms}/W": (1, "n_real", "L", "L"),
            ("M{Ms}/converged M{Ms}/corr M{Ms}/grad_norm M{Ms}/n_iter M{Ms}/test M{Ms}/train "
             "M{Ms}/train_acc"): (1, "n_real"),
            "lams": (1,),
        })

outputs("potts.consistency", tiny=TINY["consistency"],
        summary=("L argmax_M_lam0.01 converged_fraction corr_M{Ms}_lam0.01 gap_M{Ms}_lam0.01 "
                 "inseparable_M_lam0.01 max_grad_norm max_n_iter min_corr_increase_lam0.01 "
                 "min_gap_decrease_lam0.01 optimal_loss peak_steps_lam0.01 separable_M_lam0.01 "
                 "test_M{Ms}_lam0.01"),
        arrays={
            "Ms": (None,),
            "M{Ms}/V": (1, None, "C", "C"),
            "M{Ms}/W": (1, None, "L", "L"),
            ("M{Ms}/converged M{Ms}/corr M{Ms}/grad_norm M{Ms}/n_iter M{Ms}/test M{Ms}/train "
             "M{Ms}/train_acc"): (1, None),
            "lams": (1,),
        })

outputs("potts.equivalence", tiny=TINY["equivalence"],
        summary=("adam_auc adam_corr adam_gap adam_pl_train adam_recon_err adam_test adam_topk adam_value_corr "
                 "corr_adam_lbfgs lbfgs_auc lbfgs_converged lbfgs_corr lbfgs_gap lbfgs_pl_train "
                 "lbfgs_recon_err lbfgs_test lbfgs_topk lbfgs_value_corr linear_logits_err mlm_plus_pl "
                 "nosink_rep_err optimal_loss pl_true_train softmax_rep_err"),
        arrays={
            "J": ("L", "L"),
            "U": ("C", "C"),
            "adam/A adam/W lbfgs/A lbfgs/W": (1, "L", "L"),
            "adam/V lbfgs/V": (1, "C", "C"),
            "freq": ("C",),
            "lbfgs/converged": (1,),
        })

outputs("potts.gibbs", tiny=TINY["gibbs"],
        summary=("beta_tuned chain_sweeps d_chain d_chain_minus_target d_chains_max d_chains_mean d_chains_min "
                 "d_chains_within_tol d_pilot_tuned d_pooled_beta{betas} d_single_beta{betas} hot_min_decrease "
                 "pilot_sweeps target"),
        arrays={
            "betas pooled/d_pooled pooled/d_within single/d_single": ("len(betas)",),
            "chain/d_chain single/beta_tuned": (1,),
            "chain/d_chains": (None,),
            "chain/energies": ("chain_samples",),
            "chain/samples": ("chain_samples", None),
            "pooled/energy": ("len(betas)", "n_chains"),
        })

outputs("potts.fig3left", tiny=TINY["fig3left"],
        summary=("max_rel_dev_far_lam0.01_exact max_rel_dev_far_lam0.01_paper max_rel_dev_near_lam0.01_exact "
                 "max_rel_dev_near_lam0.01_paper nu sim_argmax_alpha_lam0.01 "
                 "sim_eps_g_minus_rho_delta_at_0.5_lam0.01 sim_min_excess_over_noise_lam0.01 "
                 "theory_argmax_alpha_lam0.01_exact theory_argmax_alpha_lam0.01_paper"),
        arrays={
            ("dense_alpha lam0.01/theory_exact lam0.01/theory_exact_train lam0.01/theory_paper "
             "lam0.01/theory_paper_train"): (None,),
            ("lam0.01/sim_Delta lam0.01/sim_Delta_sem lam0.01/sim_eps_g "
             "lam0.01/sim_eps_g_sem lam0.01/sim_eps_train lam0.01/sim_eps_train_sem "
             "lam0.01/sim_m lam0.01/sim_m_sem lam0.01/sim_q lam0.01/sim_q_sem "
             "lam0.01/sim_rho lam0.01/sim_rho_sem lam0.01/sim_time"): ("len(alphas)",),
            ("lam0.01/sim_Delta_all lam0.01/sim_eps_g_all "
             "lam0.01/sim_eps_train_all lam0.01/sim_m_all lam0.01/sim_q_all "
             "lam0.01/sim_rho_all"): ("len(alphas)", "n_real"),
        })

outputs("potts.finite_l", tiny=TINY["finite_l"],
        summary="Delta max_dev_eps_g max_dev_eps_train rho worst_ratio_eps_g worst_ratio_eps_train",
        arrays={
            "dense_alpha finite_eps_g finite_eps_train inf_eps_g": (None,),
            ("sim_Delta sim_Delta_sem sim_eps_g sim_eps_g_sem sim_eps_train "
             "sim_eps_train_sem sim_m sim_m_sem sim_q sim_q_sem sim_rho sim_rho_sem "
             "sim_time theory_Delta theory_V theory_eps_g theory_eps_train theory_m "
             "theory_q theory_rho theory_time"): ("len(alphas)",),
            ("sim_Delta_all sim_eps_g_all sim_eps_train_all sim_m_all sim_q_all "
             "sim_rho_all"): ("len(alphas)", "n_draws"),
        })

outputs("potts.replica", tiny=TINY["replica"],
        summary=("excess_slope_16_64 min_initial_rise ols_alpha2 ols_alpha4 peak_alpha_nu3_lam{lams}_exact "
                 "peak_alpha_nu3_lam{lams}_paper rho_nu3_exact rho_nu3_paper rho_plus_delta_exact "
                 "rho_plus_delta_paper root_excess_slope_16_64 small_alpha_exact small_alpha_paper "
                 "solver_max_diff"),
        arrays={
            "alpha big_alpha big_eps_g": (None,),
            "lams": ("len(lams)",),
            "nu3_exact/eps_g nu3_exact/eps_train nu3_paper/eps_g nu3_paper/eps_train": (None, "len(lams)"),
            "nus": (1,),
            "reference_eps_g": (None, None),
        })

