"""One No-U-Turn transition per chain, vectorised over chains (the sampler of the paper's App. F, numpyro's NUTS).

Multinomial NUTS with the generalised U-turn criterion (Hoffman & Gelman 2014; Betancourt 2017, App. A): the
trajectory doubles, each time in a random direction, until its ends turn back (ρ·p⁻ ≤ 0 or ρ·p⁺ ≤ 0, ρ the sum of
the trajectory's momenta; unit mass matrix), a new subtree turns or diverges, or ``max_depth`` doublings were done.
Inside a subtree the state is drawn multinomially (progressive sampling), between subtrees by biased progressive
sampling. The U-turn checks of every sub-subtree of a new subtree are done iteratively from momentum checkpoints
(Phan et al. 2019, as in numpyro's iterative NUTS): after leaf n of the subtree, for the sub-subtrees ending there.
All chains take their leapfrog steps in lockstep; a chain whose tree has stopped is masked, so a transition costs
the deepest chain's tree.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

Tensor = torch.Tensor
Potential = Callable[[Tensor], Tensor]
DIVERGENCE = 1000.0  # an energy error above this ends the tree (Stan's and numpyro's threshold)


def _ckpt_idxs(n: int) -> tuple[int, int]:
    """Checkpoints to test after leaf n of a subtree: [idx_min, idx_max] (numpyro's _leaf_idx_to_ckpt_idxs)."""
    idx_max = bin(n >> 1).count("1")
    num_subtrees = bin(n & ~(n + 1)).count("1")  # trailing ones of n
    return idx_max - num_subtrees + 1, idx_max


def _turning(p_minus: Tensor, p_plus: Tensor, rho: Tensor) -> Tensor:
    """Generalised U-turn criterion for the segment with end momenta p∓ and momentum sum ρ (C,)."""
    return ((p_minus * rho).sum(-1) <= 0) | ((p_plus * rho).sum(-1) <= 0)


def nuts_transition(value_and_grad: Callable[[Tensor], tuple[Tensor, Tensor]], x: Tensor, u: Tensor, g: Tensor,
                    eps: Tensor, max_depth: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor,
                                                                                        Tensor]:
    """One NUTS transition per chain from (x, U(x), ∂U/∂x) with step sizes ``eps`` (C,).

    Returns the new (x, U, ∂U), the mean Metropolis acceptance over the trajectory's leaves (the statistic dual
    averaging drives, C) and the leapfrog steps each chain took (C)."""
    C, dt, dev = x.shape[0], x.dtype, x.device
    e = eps[:, None]
    p0 = torch.randn(x.shape, generator=generator, dtype=dt, device=dev)
    h0 = u + 0.5 * (p0 * p0).sum(-1)
    left = [x, p0, g]  # (x, p, ∂U) at the trajectory's ends
    right = [x, p0, g]
    prop = [x, u, g]
    logw = -h0
    rho = p0.clone()
    active = torch.ones(C, dtype=torch.bool, device=dev)
    acc_sum = torch.zeros(C, dtype=dt, device=dev)
    steps = torch.zeros(C, dtype=dt, device=dev)
    for depth in range(max_depth):
        fwd = torch.rand(C, generator=generator, device=dev) < 0.5
        f1 = fwd[:, None]
        xs, ps, gs = (torch.where(f1, r, lf) for r, lf in zip(right, left, strict=True))
        step = torch.where(f1, e, -e)
        sub_prop = [xs, u, gs]
        sub_logw = torch.full((C,), -math.inf, dtype=dt, device=dev)
        sub_rho = torch.zeros_like(x)
        sub_stop = ~active  # turned or diverged inside the new subtree (or the tree already stopped)
        p_ck = torch.zeros(depth + 1, *x.shape, dtype=dt, device=dev)
        r_ck = torch.zeros_like(p_ck)
        for n in range(2**depth):
            m = ~sub_stop
            pn = ps - 0.5 * step * gs
            xn = xs + step * pn
            un, gn = value_and_grad(xn)
            pn = pn - 0.5 * step * gn
            hn = un + 0.5 * (pn * pn).sum(-1)
            dh = (hn - h0).nan_to_num(math.inf)
            div = dh > DIVERGENCE
            m1 = m[:, None]
            xs, ps, gs = torch.where(m1, xn, xs), torch.where(m1, pn, ps), torch.where(m1, gn, gs)
            steps += m.to(dt)
            acc_sum += torch.where(m, torch.exp(-dh).clamp(max=1.0), torch.zeros_like(dh))
            w = torch.where(m & ~div, -hn.nan_to_num(math.inf), torch.full_like(hn, -math.inf))
            new_logw = torch.logaddexp(sub_logw, w)
            take = torch.rand(C, generator=generator, device=dev).to(dt) < torch.exp(w - new_logw).nan_to_num(0.0)
            t1 = take[:, None]
            sub_prop = [torch.where(t1, xn, sub_prop[0]), torch.where(take, un, sub_prop[1]),
                        torch.where(t1, gn, sub_prop[2])]
            sub_logw = torch.where(m, new_logw, sub_logw)
            sub_rho = torch.where(m1, sub_rho + pn, sub_rho)
            turn = torch.zeros(C, dtype=torch.bool, device=dev)
            lo, hi = _ckpt_idxs(n)
            if n % 2 == 0:
                p_ck[hi], r_ck[hi] = torch.where(m1, pn, p_ck[hi]), torch.where(m1, sub_rho, r_ck[hi])
            else:
                for i in range(lo, hi + 1):
                    turn |= _turning(p_ck[i], pn, sub_rho - r_ck[i] + p_ck[i])
            sub_stop = sub_stop | (m & (div | turn))
        ok = active & ~sub_stop
        o1 = ok[:, None]
        merge = ok & (torch.rand(C, generator=generator, device=dev).to(dt) < torch.exp(sub_logw - logw))
        g1 = merge[:, None]
        prop = [torch.where(g1, sub_prop[0], prop[0]), torch.where(merge, sub_prop[1], prop[1]),
                torch.where(g1, sub_prop[2], prop[2])]
        logw = torch.where(ok, torch.logaddexp(logw, sub_logw), logw)
        rho = torch.where(o1, rho + sub_rho, rho)
        right = [torch.where(o1 & f1, s, r) for s, r in zip((xs, ps, gs), right, strict=True)]
        left = [torch.where(o1 & ~f1, s, lf) for s, lf in zip((xs, ps, gs), left, strict=True)]
        active = ok & ~_turning(left[1], right[1], rho)
        if not bool(active.any()):
            break
    return prop[0], prop[1], prop[2], acc_sum / steps.clamp(min=1), steps
