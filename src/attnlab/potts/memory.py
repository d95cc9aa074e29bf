"""Peak-memory models of potts' heavy experiments (checked before a run starts: :mod:`attnlab.core.memory`).

At their defaults the models of Fig. 2 (L = C = 20, M = 3000) and the replica theory hold megabytes to a few
hundred; the ridge simulations of the Gaussian model (Fig. 3-left, the finite-L check) grow as n·L·M float64 with
M = αL. Each of them can exceed a machine when its sizes are raised (Fig. 2d: the number of a values × seeds, all
trained at once; the replica theory: the number of λ × quadrature nodes), so the sandbox refuses such a run before
it starts.
"""

from __future__ import annotations

F32, F64 = 4, 8


def ridge_sweep(L: int, n: int, alpha_max: float, problems: bool = True) -> int:
    """Peak bytes of :func:`attnlab.potts.data.gaussian.simulate` over α up to ``alpha_max`` with n realisations.

    At the largest α (M = αL): the draw z, m = R⁻ᵀz, its masked copy and X (n·L·M each), the previous α's X and
    m (held until reassigned, at most 2·n·L·M), and the problems' Ω, P, its Cholesky factor and S (4·n·L²;
    one expanded problem when ``problems`` is False): 8·n·(6·L·M + 4·L²) bytes.
    """
    M = max(1, round(alpha_max * L))
    return F64 * n * (6 * L * M + (4 * L * L if problems else 0))


REDUCE = "lower L, n_real/n_draws or the largest alpha"


def fig3left(config) -> tuple[int, str]:
    return ridge_sweep(config.L, config.n_real, max(config.alphas)), REDUCE


def finite_l(config) -> tuple[int, str]:
    return ridge_sweep(config.L, config.n_draws, max(config.alphas), problems=False), REDUCE


def eq2_forward(models: int, n: int, L: int, C: int) -> int:
    """Peak bytes of one forward pass of Eq. (2) (``model.perturbed_logits``, float32, d = C) for ``models`` stacked
    models on n sequences, then the MLM loss: the scores z, the attention A and its masked copy (3·L² per
    sequence and site), the keys a·E s + P, the values, the two halves of the output and its log-softmax (≤ 4·C):
    4·models·n·L·(3L + 4C)."""
    return F32 * models * n * L * (3 * L + 4 * C)


def fig2d(config) -> tuple[int, str]:
    """Fig. 2d: len(a_values) × seeds models of Eq. (2) trained at once. The largest pass is the loss of every
    model on the whole training (or test) set, before training and at each evaluation; a training step holds about
    three forward passes of one batch for the backward pass."""
    models = len(config.a_values) * config.seeds
    n = max(config.M_train, config.M_test, 3 * min(config.batch, config.M_train))
    return eq2_forward(models, n, config.L, config.C), "fewer a_values or seeds, or lower M_train/M_test"


REPLICA_ARRAYS = 6  # float64 temporaries over (α, λ, node) the saddle point holds at once (measured: about 5)


def replica(config) -> tuple[int, str]:
    """The replica theory (Eqs. (36)-(42)): the saddle point over the α grid × λ × the semicircle's quadrature
    nodes, ``REPLICA_ARRAYS`` float64 arrays of that size at once."""
    grid = 300 + int(1.5 / config.alpha_step) + 1
    return F64 * REPLICA_ARRAYS * grid * len(config.lams) * config.n_nodes, "fewer lams, or lower n_nodes"
