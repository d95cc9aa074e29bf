"""Peak-memory models of potts' heavy experiments (checked before a run starts: :mod:`attnlab.core.memory`).

The models of Fig. 2 (L = C = 20, M = 3000) and the replica theory hold megabytes; the ridge simulations of the
Gaussian model (Fig. 3-left, the finite-L check) grow as n·L·M float64 with M = αL and are the ones that can
exceed a machine.
"""

from __future__ import annotations

from attnlab.core.experiment import memory_model

F64 = 8


def ridge_sweep(L: int, n: int, alpha_max: float, problems: bool = True) -> int:
    """Peak bytes of :func:`attnlab.potts.replica.data.simulate` over α up to ``alpha_max`` with n realisations.

    At the largest α (M = αL): the draw z, m = R⁻ᵀz, its masked copy and X (n·L·M each), the previous α's X and
    m (held until reassigned, at most 2·n·L·M), and the problems' Ω, P, its Cholesky factor and S (4·n·L²;
    one expanded problem when ``problems`` is False): 8·n·(6·L·M + 4·L²) bytes.
    """
    M = max(1, round(alpha_max * L))
    return F64 * n * (6 * L * M + (4 * L * L if problems else 0))


REDUCE = "lower L, n_real/n_draws or the largest alpha"


@memory_model("potts.fig3left")
def fig3left(config) -> tuple[int, str]:
    return ridge_sweep(config.L, config.n_real, max(config.alphas)), REDUCE


@memory_model("potts.finite_l")
def finite_l(config) -> tuple[int, str]:
    return ridge_sweep(config.L, config.n_draws, max(config.alphas), problems=False), REDUCE
