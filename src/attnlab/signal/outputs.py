"""Declared outputs of the signal experiments (:mod:`attnlab.core.outputs`): the arrays of each (shapes over the
config fields; None: an axis no field fixes), with the tiny overrides under which ``tests/core/test_outputs.py`` runs
it and checks them. The declared summary keys are those of each experiment's typed summary
(:mod:`attnlab.signal.summaries`)."""

from attnlab.core.outputs import declare

MLM = {"steps": 6, "log_every": 3, "batch": 4, "n_eval": 8, "d": 16, "T": 16, "d_ff": 16, "n_train": 64}
# tiny overrides (on the quick scale) of each experiment's fast check
TINY = {
    "fig1c": {"n_beta": 20, "n_alpha": 20, "L": 6, "Ls": [3, 6], "sim_betas": [0.1, 3.0], "sim_alphas": [0.5, 4.0],
            "sim_d": 32, "sim_T": 16, "n_inits": 1, "n_seqs": 1},
    "fig1d": {"L": 6, "d": 32, "T": 16, "n_inits": 2, "n_seqs": 2, "n_stories": 200, "alphas": [1.0, 4.0]},
    "fig1e": {"L": 4, "d": 32, "T": 16, "n_inits": 2, "n_seqs": 2, "n_stories": 200, "finite_T": False},
    "depth": {"L": 4, "d": 32, "T": 16, "finite_T": False},
    "fig3": {"T": 16, "d": 16, "betas": [0.5, 3.0], "rhos": [0.0, 0.25, 0.5], "n_inits": 1, "n_rep": 1},
    "universality": {"combos": [[32, 1, 32], [32, 2, 32]], "betas": [0.5, 1.5, 2.5], "n_inits": 1},
    "alphac": {"Ls": [3, 6], "sim_L": 4, "d": 32, "T": 16, "n_inits": 1, "n_seqs": 1},
    "fig5": {"L": 3, "d": 32, "T": 16, "n_inits": 1, "n_seqs": 1, "sigma_w2s": [16.0], "sim_sigma_w2s": [16.0]},
    "figB1": {"Ts": [64], "rhos": [0.0, 0.5], "n_rows": 8, "n_rep": 2, "mc_T": 32},
    "figC1": {"T_show": 32, "Ts": [16, 32], "n_rep": 1},
    "figC3": {"d": 32, "T": 16, "n_inits": 1, "n_seqs": 1, "betas": [0.5, 3.0], "rhos": [0.0, 0.5]},
    "fig1ab": {"d": 32, "n_stories": 50, "n_tokens": 12},
    "fig4": {**MLM, "betas": [0.5, 5.0]},
    "figC2": {**MLM, "corpus": "stories", "n_stories": 100, "betas": [0.5]},
    "fig1f": {**MLM, "rank_L": 3, "entropy_L": 2},
}

# the per-layer observables of a depth run (ρ^l of paper 1, Eq. (19), the IPR, entropy, …) hold one column per
# configuration (β, α_SA) it propagates: index ``condition`` into the run's ``betas``, ``alphas`` arrays
CONDITIONS = {"*": ("condition",)}

FIG1C = declare(tiny=TINY["fig1c"],
        arrays={
            ("Ls alphas betas sim_alphas sim_betas sim_entropy_1 sim_ipr_1 sim_phase sim_rho_L "
             "sim_theory_phase"): (None,),
            "alpha_c": (None, "len(eps_list)"),
            "entropy_1 phase rho_L": (None, None),
            "eps_list": ("len(eps_list)",),
        })

FIG1D = declare(tiny=TINY["fig1d"], index=CONDITIONS,
        arrays={
            "alphas beta_theory betas finite_time sim_time theory_time": (None,),
            ("finite_entropy finite_ipr finite_q finite_q_attn_out finite_q_mlp_out finite_rho "
             "finite_rho_mid sim_entropy sim_entropy_std sim_ipr sim_ipr_std sim_q "
             "sim_q_attn_out sim_q_attn_out_std sim_q_mlp_out sim_q_mlp_out_std sim_q_std "
             "sim_rho sim_rho_mid sim_rho_mid_std sim_rho_std theory_entropy theory_ipr "
             "theory_q theory_q_attn_out theory_q_mlp_out theory_rho theory_rho_mid"): (None, None),
            "sim_flops": (),
        })

FIG1E = declare(tiny=TINY["fig1e"], index=CONDITIONS,
        arrays={
            "alphas beta_theory betas": (1,),
            ("sim_entropy sim_entropy_std sim_ipr sim_ipr_std sim_q sim_q_attn_out "
             "sim_q_attn_out_std sim_q_mlp_out sim_q_mlp_out_std sim_q_std sim_rho sim_rho_mid "
             "sim_rho_mid_std sim_rho_std theory_entropy theory_ipr theory_q theory_q_attn_out "
             "theory_q_mlp_out theory_rho theory_rho_mid"): (None, 1),
            "sim_flops": (),
            "sim_time theory_time": (None,),
        })

DEPTH = declare(tiny=TINY["depth"], index=CONDITIONS,
        arrays={
            "alphas beta_theory betas sim_time theory_time": ("len(pairs)",),
            ("sim_entropy sim_entropy_std sim_ipr sim_ipr_std sim_q "
             "sim_q_attn_out sim_q_attn_out_std sim_q_mlp_out sim_q_mlp_out_std "
             "sim_q_std sim_rho sim_rho_mid sim_rho_mid_std sim_rho_std "
             "theory_entropy theory_ipr theory_q theory_q_attn_out "
             "theory_q_mlp_out theory_rho theory_rho_mid"): ("len(pairs)", "len(pairs)"),
            "sim_flops": (),
        })

FIG3 = declare(tiny=TINY["fig3"],
        arrays={
            "betas": ("len(betas)",),
            "eq14 mc_cos mc_ipr sim_cos sim_ipr": ("len(betas)", "len(rhos)"),
            "fine_betas fine_rhos": (None,),
            "heat": (None, None),
            "rhos": ("len(rhos)",),
        })

UNIVERSALITY = declare(tiny=TINY["universality"],
        arrays={
            "betas ipr_32_1_32 ipr_32_2_32": ("len(betas)",),
        })

ALPHAC = declare(tiny=TINY["alphac"],
        arrays={
            "Ls mlp_only": ("len(Ls)",),
            "alpha_c": ("len(Ls)", "len(eps_list)"),
            "alphas_sim sim_time theory_time": ("len(sim_alphas)",),
            "eps_list": ("len(eps_list)",),
            ("sim_entropy sim_entropy_std sim_ipr sim_ipr_std sim_q "
             "sim_q_attn_out sim_q_attn_out_std sim_q_mlp_out "
             "sim_q_mlp_out_std sim_q_std sim_rho sim_rho_mid "
             "sim_rho_mid_std sim_rho_std theory_entropy theory_ipr "
             "theory_q theory_q_attn_out theory_q_mlp_out theory_rho "
             "theory_rho_mid"): ("len(sim_alphas)", "len(sim_alphas)"),
        })

FIG5 = declare(tiny=TINY["fig5"],
        arrays={
            "grid map_16 sigma_w2s sim_16 sim_sigma_w2s sim_std_16 theory_16": (None,),
        })

FIGB1 = declare(tiny=TINY["figB1"],
        arrays={
            ("betas entropy_rho{rhos}_T64 heuristic_rho{rhos}_T64 ipr_rho{rhos}_T64 "
             "mc_pSA_rho{rhos} mc_psa_rho{rhos} mc_qSA_rho{rhos}"): ("len(betas)",),
            "fine_betas theory_entropy_rho{rhos} theory_ipr_rho{rhos}": (None,),
        })

FIGC1 = declare(tiny=TINY["figC1"],
        arrays={
            "Ts lambda2_beta{betas} lambda2_standard radius_beta{betas} radius_standard": (None,),
            "eig_beta{betas} eig_standard": ("T_show",),
        })

FIGC3 = declare(tiny=TINY["figC3"],
        arrays={
            "betas finite_time rhos sim_time theory_time": (None,),
            "depth one_block": (None, None),
            ("finite_entropy finite_ipr finite_q finite_q_attn_out "
             "finite_q_mlp_out finite_rho finite_rho_mid sim_entropy "
             "sim_entropy_std sim_ipr sim_ipr_std sim_q sim_q_attn_out "
             "sim_q_attn_out_std sim_q_mlp_out sim_q_mlp_out_std sim_q_std "
             "sim_rho sim_rho_mid sim_rho_mid_std sim_rho_std theory_entropy "
             "theory_ipr theory_q theory_q_attn_out theory_q_mlp_out theory_rho "
             "theory_rho_mid"): (None, "len(table_betas)"),
            "table_betas": ("len(table_betas)",),
        })

FIG1AB = declare(tiny=TINY["fig1ab"],
        arrays={
            "attention": ("len(betas)", None, None),
            "betas": ("len(betas)",),
            "tokens": (None,),
        })

FIG4 = declare(tiny=TINY["fig4"],
        arrays={
            "entropy ipr": (None, "batch", None),
            "eval_loss loss": (None, "batch"),
            "slot_alphas slot_betas slot_seeds": ("batch",),
            "time": (None,),
        })

FIGC2 = declare(tiny=TINY["figC2"],
        arrays={
            "entropy ipr": (None, None, None),
            "eval_loss loss": (None, None),
            "slot_alphas slot_betas slot_seeds time": (None,),
        })

FIG1F = declare(tiny=TINY["fig1f"],
        arrays={
            "entropy_entropy entropy_ipr": ("rank_L", None, None),
            "entropy_eval_loss entropy_loss rank_eval_loss rank_loss": ("rank_L", None),
            "entropy_time rank_time": ("rank_L",),
            "rank_entropy rank_ipr": ("rank_L", None, "rank_L"),
        })

