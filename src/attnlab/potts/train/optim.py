"""Full-batch L-BFGS over a batch of independent problems, each with its own history and step (Eq. (6)).

    res = lbfgs(fun, x0)           # fun(x (S, P)) -> (f (S,), grad (S, P)); res.x, res.f, res.grad_norm, res.n_iter

Independent fits (realisations, sample sizes, regularisations) of the pseudo-likelihood run as one tensor program:
the two-loop recursion, the Armijo backtracking and the stopping test are all per problem (a problem that has
converged stops moving), so each problem follows the path it would follow alone. Pairs (s, y) with sᵀy <= 0
are stored as zeros, which the recursion ignores.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

Tensor = torch.Tensor


@dataclass(frozen=True, eq=False)
class LbfgsResult:
    x: Tensor  # (S, P)
    f: Tensor  # (S,)
    grad_norm: Tensor  # (S,) max-norm of the final gradient
    n_iter: Tensor  # (S,) iterations until each problem stopped
    converged: Tensor  # (S,) bool: gradient or relative-decrease test met (not the iteration cap)


def lbfgs(
    fun: Callable[[Tensor], tuple[Tensor, Tensor]],
    x0: Tensor,
    *,
    max_iter: int = 2000,
    history: int = 10,
    gtol: float = 1e-7,
    ftol: float = 1e-13,
    c1: float = 1e-4,
    max_backtrack: int = 30,
    callback: Callable[[int, Tensor], None] | None = None,
) -> LbfgsResult:
    """Minimise S independent smooth objectives from x0 (S, P) to ||∇f||_∞ < gtol (or a relative decrease < ftol)."""
    x = x0.detach().clone()
    S, P = x.shape
    f, g = fun(x)
    s_hist = torch.zeros(history, S, P, dtype=x.dtype, device=x.device)
    y_hist = torch.zeros_like(s_hist)
    rho = torch.zeros(history, S, dtype=x.dtype, device=x.device)
    gamma = 1.0 / g.norm(dim=-1).clamp_min(1.0)  # first step: at most unit length
    active = g.abs().amax(-1) >= gtol
    converged = ~active
    n_iter = torch.zeros(S, dtype=torch.long, device=x.device)
    slot = 0
    for it in range(max_iter):
        if not active.any():
            break
        # two-loop recursion, newest pair first
        q = g.clone()
        alphas = []
        for k in range(history):
            j = (slot - 1 - k) % history
            a = rho[j] * (s_hist[j] * q).sum(-1)
            q -= a[:, None] * y_hist[j]
            alphas.append((j, a))
        r = gamma[:, None] * q
        for j, a in reversed(alphas):
            b = rho[j] * (y_hist[j] * r).sum(-1)
            r += (a - b)[:, None] * s_hist[j]
        d = -r
        slope = (g * d).sum(-1)
        bad = slope >= 0  # not a descent direction: fall back to scaled steepest descent
        d = torch.where(bad[:, None], -g * gamma[:, None], d)
        slope = (g * d).sum(-1)
        d = d * active[:, None]
        # per-problem Armijo backtracking from t = 1
        t = torch.ones(S, dtype=x.dtype, device=x.device)
        pending = active.clone()
        x_new, f_new, g_new = x.clone(), f.clone(), g.clone()
        for _ in range(max_backtrack):
            xt = x + t[:, None] * d
            ft, gt = fun(xt)
            ok = pending & torch.isfinite(ft) & (ft <= f + c1 * t * slope)
            x_new[ok], f_new[ok], g_new[ok] = xt[ok], ft[ok], gt[ok]
            pending &= ~ok
            if not pending.any():
                break
            t = torch.where(pending, 0.5 * t, t)
        stalled = pending  # no acceptable step: stop this problem where it is
        moved = active & ~stalled
        s, y = x_new - x, g_new - g
        sy = (s * y).sum(-1)
        keep = moved & (sy > 1e-12 * s.norm(dim=-1) * y.norm(dim=-1))
        s_hist[slot] = s * keep[:, None]
        y_hist[slot] = y * keep[:, None]
        rho[slot] = torch.where(keep, 1.0 / sy.clamp_min(1e-300), torch.zeros_like(sy))
        gamma = torch.where(keep, sy / (y * y).sum(-1).clamp_min(1e-300), gamma)
        slot = (slot + 1) % history
        small_step = (f - f_new).abs() <= ftol * f_new.abs().clamp_min(1.0)
        x, f, g = x_new, f_new, g_new
        n_iter += active.long()
        done = moved & ((g.abs().amax(-1) < gtol) | small_step)
        converged |= done
        active &= ~(done | stalled)
        if callback is not None:
            callback(it, active)
    return LbfgsResult(x, f, g.abs().amax(-1), n_iter, converged)
