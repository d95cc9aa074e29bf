"""Peak-memory models of the specialization study's experiments (checked before a run starts: exit 2 if too big).

Formulas in :mod:`attnlab.specialization.train.budget`: the theory holds its fixed Monte-Carlo samples and, per run
in a batch, a few activation/gradient buffers of N_mc·H·L float64; the SGD of Figs. 1, 9, 10 its smallest peak
(it takes a larger chunk when more is free). Evaluations on fresh samples (``eval_mc``) count as theory
batches of the same size. A model returns the largest of its parts.
"""

from __future__ import annotations

from attnlab.specialization.train.budget import bayes_bytes, sgd_bytes, theory_bytes

REDUCE_SGD = "lower D, batch (N_b) or n_mc, or use --device cuda"
REDUCE = "lower n_mc / eval_mc, the heads or the seeds"


def sim_vs_theory(config) -> tuple[int, str]:
    F = config.theta_law().F
    sgd = sgd_bytes(1, config.batch or config.D, config.L, config.D, config.H, F, 4, config.device)
    theory = theory_bytes(config.n_mc, config.L, config.H, F)
    return max(sgd, theory, bayes_bytes(200_000, config.L, F)), REDUCE_SGD


def panels(config) -> tuple[int, str]:
    """Figs. 2-4, 12-19: one flow (12) at a time, at the largest H of the panels."""
    H = max(p.H for p in config.panels)
    return theory_bytes(config.n_mc, config.L, H, config.F), REDUCE


def _trained(config, H: int, F: int) -> tuple[int, str]:
    """Figs. 5, 7: ``seeds`` runs batched through the flow, then evaluated on ``eval_mc`` fresh samples."""
    runs = config.seeds
    flow = theory_bytes(config.n_mc, config.L, H, F, runs)
    return max(flow, theory_bytes(config.eval_mc, config.L, H, F, runs, buffers=3),
               bayes_bytes(getattr(config, "bayes_mc", 0), config.L, F)), REDUCE


def final_error(config) -> tuple[int, str]:
    return _trained(config, max(*config.Hs, config.H_nu), max(config.F_H, config.F_nu))


def pruning(config) -> tuple[int, str]:
    return _trained(config, config.H, config.F)


def attention_maps(config) -> tuple[int, str]:
    flow = theory_bytes(config.n_mc, config.L, config.H, config.F)
    return max(flow, theory_bytes(config.eval_mc, config.L, config.H, config.F, buffers=3)), REDUCE


def one_flow(config) -> tuple[int, str]:
    return theory_bytes(config.n_mc, config.L, config.H, config.F), REDUCE


def split_time(config) -> tuple[int, str]:
    return theory_bytes(config.n_mc, config.L, config.H, config.F, runs=config.seeds), REDUCE


def escape(config) -> tuple[int, str]:
    return theory_bytes(config.n_mc, config.L, config.H, config.F, runs=len(config.Ds)), REDUCE

