"""Pseudo-likelihood inference of the inverse Potts problem with factored attention (Eq. (6), Eq. (6)).

    res = fit_lbfgs(samples, data, lam=1e-2)      # samples (S, M, L): S independent fits in one computation
    res.A(), res.V, res.test_loss, res.converged

The MLM loss of factored attention *is* minus the pseudo-likelihood (6) of a generalised Potts model with couplings
A_ij V_αγ, so minimising it full-batch with L-BFGS is the "factored PLM" (the paper's route is the same loss by
mini-batch SGD, ``train.mlm.train_stacked``). The objective uses the closed-form gradient of
``model.factored_loss_grad`` and the batched L-BFGS of ``train/optim.py``; all fits run in float64.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from attnlab.potts.data.sets import PottsData
from attnlab.potts.model import Attn, attention, factored_logits, factored_loss_grad, mlm_loss
from attnlab.potts.train.mlm import init_params, model_generators
from attnlab.potts.train.optim import lbfgs

Tensor = torch.Tensor


@dataclass(frozen=True, eq=False)
class PLFit:
    W: Tensor  # (S, L, L)
    V: Tensor  # (S, C, C)
    test_loss: Tensor  # (S,)
    train_loss: Tensor  # (S,) unregularised MLM loss on each fit's own samples
    grad_norm: Tensor  # (S,) final max |gradient| of the regularised objective
    n_iter: Tensor
    converged: Tensor
    train_acc: Tensor  # (S,) share of training sites whose largest logit is the true colour (1: separated)

    def A(self, attn: Attn = "softmax") -> Tensor:
        return attention(self.W, attn)


def pl_objective(c: Tensor, lam: Tensor | float, reg_form: Literal["sum", "mean"] = "sum", attn: Attn = "softmax",
                 weights: Tensor | None = None) -> Callable[[Tensor], tuple[Tensor, Tensor]]:
    """f(x) for stacked x = (vec W, vec V) (S, L² + C²): mean MLM loss + λ/(2M) ||x||² ('sum', Eq. (7)'s form,
    fading as M grows) or + λ/2 ||x||² ('mean') (Eq. (7)), with its closed-form gradient."""
    S, M, L = c.shape
    lam_t = torch.as_tensor(lam, dtype=torch.float64, device=c.device).expand(S)
    n_eff = weights.sum(-1) if weights is not None else torch.full((S,), float(M), device=c.device)
    scale = lam_t / (2 * n_eff) if reg_form == "sum" else lam_t / 2

    def fun(x: Tensor) -> tuple[Tensor, Tensor]:
        W, V = unpack(x, L)
        loss, gW, gV = factored_loss_grad(c, W, V, weights, attn)
        reg = scale.to(x)
        grad = torch.cat([gW.reshape(S, -1), gV.reshape(S, -1)], -1) + 2 * reg[:, None] * x
        return loss + reg * (x * x).sum(-1), grad

    return fun


def unpack(x: Tensor, L: int) -> tuple[Tensor, Tensor]:
    S, P = x.shape
    C = round(math.sqrt(P - L * L))
    return x[:, : L * L].reshape(S, L, L), x[:, L * L:].reshape(S, C, C)


def fit_lbfgs(
    c: Tensor,
    data: PottsData,
    *,
    lam: float | Tensor = 1e-2,
    reg_form: Literal["sum", "mean"] = "sum",
    attn: Attn = "softmax",
    seeds: Sequence[int] | None = None,
    init_scale: float = 0.1,
    max_iter: int = 2000,
    gtol: float = 1e-6,
    weights: Tensor | None = None,
    init: tuple[Tensor, Tensor] | None = None,
) -> PLFit:
    """Factored PLM: minimise the MLM loss of factored attention on each sample set c[s] (S, M, L) to convergence.

    float64; initial parameters as :func:`init_params` from ``seeds`` (default 0..S-1), or ``init = (W, V)``
    ((S, L, L), (S, C, C)): a warm start, e.g. from the fits on a smaller nested sample set."""
    c = c.to(data.test.device)
    S, _, L = c.shape
    C = data.potts.C
    if init is None:
        seeds = list(range(S)) if seeds is None else list(seeds)
        gens = [model_generators(s, c.device)[0] for s in seeds]
        p0 = init_params("factored", S, L, C, gens, torch.float64, attn, init_scale)
        init = p0["W"], p0["V"]
    elif init[0].shape != (S, L, L) or init[1].shape != (S, C, C):
        raise ValueError(f"init (W, V) has shapes {tuple(init[0].shape)}, {tuple(init[1].shape)}: need "
                         f"({S}, {L}, {L}) and ({S}, {C}, {C}) for {S} fits of L = {L}, C = {C}")
    x0 = torch.cat([init[0].reshape(S, -1), init[1].reshape(S, -1)], -1).to(c.device, torch.float64)
    res = lbfgs(pl_objective(c, lam, reg_form, attn, weights), x0, max_iter=max_iter, gtol=gtol)
    W, V = unpack(res.x, L)
    with torch.no_grad():
        test_loss = mlm_loss(factored_logits(data.test, W, V, attn), data.test)
        logits = factored_logits(c, W, V, attn)
        train_loss = mlm_loss(logits, c, weights)
        train_acc = (logits.argmax(-1) == c).double().mean((-1, -2))
    return PLFit(W, V, test_loss, train_loss, res.grad_norm, res.n_iter, res.converged, train_acc)
