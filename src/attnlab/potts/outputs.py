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

TRAJ = "corr gap recon_err test_loss train_loss"  # the observables of every training (train.OBSERVABLES)
SIM = "Delta eps_g eps_train m q rho"  # the simulated order parameters of the Gaussian model (fig3left, finite_l)


def sim_names(prefix: str, suffix: str = "") -> str:
    """The array names ``{prefix}sim_{observable}{suffix}`` of every simulated order parameter (``_sem``: its
    standard error over draws; ``_all``: every draw)."""
    return " ".join(f"{prefix}sim_{k}{suffix}" for k in SIM.split())


# vanilla models are evaluated at epoch 0, every eval_every epochs and at the last
VANILLA_T = "1 + vanilla_epochs // eval_every + (vanilla_epochs % eval_every > 0)"


def fig2_summary(c) -> list[str]:
    out = [("d_hamming_train optimal_loss optimum_recon_corr test_flip_rate test_hamming_pooled "
            "test_hamming_within test_rhat_energy test_sweeps test_tau_int_energy train_flip_rate "
            "train_hamming_pooled train_hamming_within train_rhat_energy train_sweeps train_tau_int_energy "
            "{models}_auc {models}_corr {models}_epochs_to_gap_0.1 {models}_gap {models}_recon_err {models}_test "
            "{models}_topk")]
    return out + (["factored_isolated_sink factored_value_corr"] if "factored" in c.models else [])


def fig2_arrays(c) -> dict:
    """The optimum's two-point line (epochs 0 and the last), then each model: S stacked models (factored: one per
    seed; a vanilla transformer: 1) evaluated at T epochs (factored: every epoch)."""
    out: dict = {"J": ("L", "L"), "optimum/time": (2,), " ".join(f"optimum/{k}" for k in TRAJ.split()): (2, 1)}
    for m in c.models:
        S, T = ("seeds", "epochs + 1") if m == "factored" else (1, VANILLA_T)
        out.update({f"{m}/traj_time": (T,), " ".join(f"{m}/traj_{k}" for k in TRAJ.split()): (T, S),
                    f"{m}/map": (S, "L", "L"), f"{m}/maps": (T, S, "L", "L")})
        if m == "factored":
            out.update({"factored/V": ("seeds", "C", "C"), "factored/W": ("seeds", "L", "L")})
        else:  # the map of each layer, the final test loss on the whole test set
            out.update({f"{m}/layer_maps": (int(m[-1]), "L", "L"), f"{m}/final_test": (1,)})
    return out


outputs("potts.fig2", tiny=TINY["fig2"], index={TRAJ: ("replica",)},  # a model of the stack trained at once
        summary=fig2_summary, arrays=fig2_arrays)

outputs("potts.fig2d", tiny=TINY["fig2d"],
        summary=("best_a corr_a{a_values} margin_amax_a0 optimal_loss spearman_a_test test_a{a_values} "
                 "test_a{a_values}_std"),
        arrays={  # one stacked model per (a, seed), a-major; evaluated at every epoch
            "a": ("len(a_values) * seeds",),
            "traj_time": ("epochs + 1",),
            "map": ("len(a_values) * seeds", "L", "L"),
            "traj_corr traj_gap traj_recon_err traj_test_loss traj_train_loss": ("epochs + 1", "len(a_values) * seeds"),
        })

def pl_summary(c) -> list[str]:
    """The PL sweeps' keys (``metrics.pl_key``): per M and λ, per λ, and the rise (the fall) where M = 1 (and 200)
    are on the grid."""
    out = ["L converged_fraction max_grad_norm max_n_iter optimal_loss",
           "corr_M{Ms}_lam{lams} gap_M{Ms}_lam{lams} test_M{Ms}_lam{lams}",
           "argmax_M_lam{lams} separable_M_lam{lams} inseparable_M_lam{lams} peak_steps_lam{lams}",
           "min_corr_increase_lam{lams} min_gap_decrease_lam{lams}"]
    if 1 in c.Ms:
        out.append("rise_lam{lams} rise_sem_lam{lams}")
        if 200 in c.Ms:
            out.append("fall_lam{lams} fall_sem_lam{lams}")
    return out


PL_ARRAYS = {  # every M's fits: one per (λ, realisation)
    "Ms": ("len(Ms)",),
    "lams": ("len(lams)",),
    "M{Ms}/V": ("len(lams)", "n_real", "C", "C"),
    "M{Ms}/W": ("len(lams)", "n_real", "L", "L"),
    "M{Ms}/converged M{Ms}/corr M{Ms}/grad_norm M{Ms}/n_iter M{Ms}/test M{Ms}/train M{Ms}/train_acc": (
        "len(lams)", "n_real"),
}
outputs("potts.fig3right", tiny=TINY["fig3right"], summary=pl_summary, arrays=PL_ARRAYS)
outputs("potts.consistency", tiny=TINY["consistency"], summary=pl_summary, arrays=PL_ARRAYS)

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
            "chain/d_chains": ("chain_count",),
            "chain/energies": ("chain_samples",),
            "chain/samples": ("chain_samples", "L"),
            "pooled/energy": ("len(betas)", "n_chains"),
        })

outputs("potts.fig3left", tiny=TINY["fig3left"],
        summary=("nu max_rel_dev_far_lam{lams}_exact max_rel_dev_far_lam{lams}_paper "
                 "max_rel_dev_near_lam{lams}_exact max_rel_dev_near_lam{lams}_paper sim_argmax_alpha_lam{lams} "
                 "sim_eps_g_minus_rho_delta_at_0.5_lam{lams} sim_min_excess_over_noise_lam{lams} "
                 "theory_argmax_alpha_lam{lams}_exact theory_argmax_alpha_lam{lams}_paper"),
        arrays={  # the theory on a dense α grid (a fixed grid joined with a finer one around α = 1)
            ("dense_alpha lam{lams}/theory_exact lam{lams}/theory_exact_train lam{lams}/theory_paper "
             "lam{lams}/theory_paper_train"): (None,),
            f"{sim_names('lam{lams}/')} {sim_names('lam{lams}/', '_sem')} lam{{lams}}/sim_time": ("len(alphas)",),
            sim_names("lam{lams}/", "_all"): ("len(alphas)", "n_real"),
        })

outputs("potts.finite_l", tiny=TINY["finite_l"],
        summary="Delta max_dev_eps_g max_dev_eps_train rho worst_ratio_eps_g worst_ratio_eps_train",
        arrays={
            "dense_alpha finite_eps_g finite_eps_train inf_eps_g": (None,),
            (f"{sim_names('')} {sim_names('', '_sem')} sim_time theory_Delta theory_V theory_eps_g "
             "theory_eps_train theory_m theory_q theory_rho theory_time"): ("len(alphas)",),
            sim_names("", "_all"): ("len(alphas)", "n_draws"),
        })

outputs("potts.replica", tiny=TINY["replica"],
        summary=("excess_slope_16_64 min_initial_rise ols_alpha2 ols_alpha4 peak_alpha_nu{nus}_lam{lams}_exact "
                 "peak_alpha_nu{nus}_lam{lams}_paper rho_nu{nus}_exact rho_nu{nus}_paper rho_plus_delta_exact "
                 "rho_plus_delta_paper root_excess_slope_16_64 small_alpha_exact small_alpha_paper "
                 "solver_max_diff"),
        arrays={
            "alpha": (None,),  # a grid up to alpha_max joined with the fine grid of the peak search
            "big_alpha big_eps_g": (3,),  # α = 16, 32, 64
            "lams": ("len(lams)",),
            "nu{nus}_exact/eps_g nu{nus}_exact/eps_train nu{nus}_paper/eps_g nu{nus}_paper/eps_train": (
                None, "len(lams)"),
            "nus": ("len(nus)",),
            "reference_eps_g": (9, 4),  # the solvers' reference grid: 9 α × 4 λ
        })
