"""The optimisers of the saddle-point solve (App. E), each resumable from a saved state.

* ``lbfgs``: scipy's L-BFGS-B on the Cholesky parameters θ (:class:`attnlab.paths.theory.action.CholeskyParams`, every
  U^(ℓ) PD), driven step by step (:mod:`attnlab.paths.theory.lbfgsb`) so that its state can be saved after any
  iteration; where the line search runs out of digits in S a few Newton-CG steps finish the solve.
* ``adam``: App. E's algorithm, Adam on the full symmetrised matrices (no PD constraint).

A :class:`SolveCheckpoint` carries the state to resume from (None: fresh) and ``save(state_fn)``, the run's
checkpoint (``core.units.Unit.save``); the optimisers call it after every iteration (the run writes it every
``checkpoint_every`` seconds) with everything the next iteration reads, so a resumed solve ends bit-identical
to an uninterrupted one. The Newton polish is not saved: a run interrupted there repeats it from the last
L-BFGS iterate, with the same result.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from attnlab.paths.theory import lbfgsb
from attnlab.paths.theory.action import Action, CholeskyParams, SolveError
from attnlab.paths.theory.diagnostics import History

Tensor = torch.Tensor


@dataclass(frozen=True)
class SolveCheckpoint:
    """The saved state of one solve to resume from (None: fresh) and the run's ``save(state_fn)``."""

    resume: Any
    save: Callable[[Callable[[], Any]], None]


class _Stalled(Exception):
    """L-BFGS's line search spends evaluations without progress near the optimum."""


class _Objective:
    """S(θ) and dS/dθ for L-BFGS, with the bookkeeping the stopping rules read (all of it checkpointed)."""

    def __init__(self, action: Action, par: CholeskyParams, tol: float, record: History) -> None:
        self.action, self.par, self.tol, self.record = action, par, tol, record
        self.dev = par.device
        self.n_eval = 0
        self.n_it = 0
        self.last: list = [None, float("inf")]  # the last evaluated θ and its max|∂S/∂U|
        self.best: list = [None, float("inf"), 0]  # the θ of the smallest max|∂S/∂U|, it, evaluations this iteration

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        self.n_eval += 1
        As = self.par.unpack(torch.as_tensor(x, dtype=self.action.dtype, device=self.dev))
        try:
            val = self.action(As)
        except FloatingPointError:
            return float("inf"), np.zeros_like(x)
        self.last[:] = [x.copy(), max(float(g.abs().max()) for g in val.grads)]
        if self.last[1] < self.best[1]:
            self.best[:2] = self.last
        self.best[2] += 1
        if self.best[2] > 8 and self.best[1] <= 1e-6:  # the line search has run out of digits in S: Newton finishes
            raise _Stalled
        return float(val.S), self.par.grad(As, val.grads).cpu().numpy()

    def callback(self, xk: np.ndarray) -> None:
        """Stop at the tolerance in U (the line search would otherwise spend dozens of evaluations on the last
        digits of S); record the history."""
        self.n_it += 1
        if self.record.every and self.n_it % self.record.every == 0:
            theta = torch.as_tensor(xk, dtype=self.action.dtype, device=self.dev)
            self.record(self.n_it, [A @ A.T for A in self.par.unpack(theta)])
        self.best[2] = 0
        if self.last[1] <= self.tol and np.array_equal(self.last[0], xk):
            raise StopIteration

    def state_dict(self) -> dict:
        return {"n_eval": self.n_eval, "n_it": self.n_it, "last": copy.deepcopy(self.last),
                "best": copy.deepcopy(self.best), "record": _record_state(self.record)}

    def load_state_dict(self, state: dict) -> None:
        self.n_eval, self.n_it = state["n_eval"], state["n_it"]
        self.last, self.best = copy.deepcopy(state["last"]), copy.deepcopy(state["best"])
        _load_record(self.record, state["record"])


def _record_state(record: History) -> dict:
    return {"rows": copy.deepcopy(record.rows), "Us": copy.deepcopy(record.Us)}


def _load_record(record: History, state: dict) -> None:
    record.rows, record.Us = copy.deepcopy(state["rows"]), copy.deepcopy(state["Us"])


def lbfgs(action: Action, Us0: list[Tensor], tol: float, max_iter: int, record: History,
          ckpt: SolveCheckpoint | None = None) -> tuple[list[Tensor], dict]:
    """L-BFGS on θ from ``Us0`` (resumed from ``ckpt.resume`` when given), then Newton-CG if it stops short."""
    par = CholeskyParams(action.sizes, Us0[0].device)
    obj = _Objective(action, par, tol, record)
    x0 = par.pack(Us0).cpu().numpy()
    options = {"maxcor": 50, "ftol": 1e-16, "gtol": tol * 1e-2, "maxiter": max_iter, "maxfun": 2 * max_iter}
    try:
        if lbfgsb.AVAILABLE:  # scipy's routine step by step: the same iterates, and a state to save and resume
            opt = lbfgsb.LBFGSB(x0, **options)
            if ckpt is not None and ckpt.resume is not None:
                opt.load_state_dict(ckpt.resume["optimizer"])
                obj.load_state_dict(ckpt.resume["objective"])
            save = None if ckpt is None else (lambda: ckpt.save(lambda: {"method": "lbfgs", "iter": opt.nit,
                                                                         "optimizer": opt.state_dict(),
                                                                         "objective": obj.state_dict()}))
            x, message = opt.run(obj, obj.callback, save)
            n_iter = opt.nit
        else:
            from scipy.optimize import minimize

            res = minimize(obj, x0, jac=True, method="L-BFGS-B", callback=obj.callback, options=options)
            x, message, n_iter = res.x, str(res.message), int(res.nit)
    except _Stalled:
        x, message, n_iter = obj.best[0], "L-BFGS line search stalled", obj.n_it
    theta = torch.as_tensor(x, dtype=action.dtype, device=par.device)
    As = par.unpack(theta)
    lbfgs_grad = max(float(g.abs().max()) for g in action(As).grads)
    if lbfgs_grad > tol:
        theta, k = _newton_polish(action, par, theta, tol)
        message += f"; L-BFGS reached max|∂S/∂U| = {lbfgs_grad:.1e}, then {k} Newton-CG steps"
        n_iter += k
        As = par.unpack(theta)
    return [A @ A.T for A in As], {"iter": n_iter, "eval": obj.n_eval, "message": message}


def _newton_polish(action: Action, par: CholeskyParams, theta: Tensor, tol: float,
                   steps: int = 20) -> tuple[Tensor, int]:
    """Newton steps in θ from near the optimum, where the line search has run out of precision in S.

    The Newton system is solved by conjugate gradients with Hessian-vector products taken as central
    differences of the analytic gradient; a step is kept if S does not increase beyond round-off and the
    gradient shrinks, else it is halved. In float32 the difference step is ε₃₂^{1/3}-sized (5e-3) and "round-off"
    in S is 64 ε₃₂|S|; float64 keeps 1e-6 and 1e-12|S|.
    """
    f64 = theta.dtype == torch.float64
    slack = 1e-12 if f64 else 64 * torch.finfo(theta.dtype).eps

    def grad(t: Tensor) -> tuple[Tensor, float, float]:
        As = par.unpack(t)
        val = action(As)
        return par.grad(As, val.grads), float(val.S), max(float(g.abs().max()) for g in val.grads)

    g, S, gmax = grad(theta)
    for k in range(steps):
        if gmax <= tol:
            return theta, k
        eps = (1e-6 if f64 else 5e-3) / max(float(theta.abs().max()), 1.0)

        def hvp(v: Tensor, at: Tensor = theta, eps: float = eps) -> Tensor:
            h = eps / float(v.norm())
            return (grad(at + h * v)[0] - grad(at - h * v)[0]) / (2 * h)

        step = _cg(hvp, -g, iters=min(len(g), 60), rtol=1e-3)
        for _ in range(8):
            try:
                g_new, S_new, gmax_new = grad(theta + step)
            except FloatingPointError:
                step = step / 2
                continue
            if S_new <= S + slack * max(abs(S), 1.0) and gmax_new < gmax:
                theta, g, S, gmax = theta + step, g_new, S_new, gmax_new
                break
            step = step / 2
        else:
            return theta, k
    return theta, steps


def _cg(hvp, b: Tensor, iters: int, rtol: float) -> Tensor:
    """Conjugate gradients for H x = b (H positive definite near a minimum)."""
    x = torch.zeros_like(b)
    r = b.clone()
    p = r.clone()
    rr = float(r @ r)
    stop = rtol**2 * rr
    for _ in range(iters):
        Hp = hvp(p)
        pHp = float(p @ Hp)
        if pHp <= 0:
            break
        a = rr / pHp
        x = x + a * p
        r = r - a * Hp
        rr_new = float(r @ r)
        if rr_new <= stop:
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


class Plateau:
    """The learning-rate schedule of the public code's Adam: torch's ``ReduceLROnPlateau`` (mode min, relative
    threshold 1e-4, no cooldown) fed max|∂S/∂U| after every step; after more than ``patience`` steps without a
    value below best·(1 − 1e-4) the rate becomes max(rate·``factor``, ``min_lr``) (a change of at most 1e-8 is
    skipped, as torch's ``eps``)."""

    def __init__(self, lr: float, patience: int, factor: float, min_lr: float) -> None:
        self.lr, self.patience, self.factor, self.min_lr = float(lr), int(patience), float(factor), float(min_lr)
        self.best, self.bad = math.inf, 0

    def step(self, metric: float) -> float:
        if metric < self.best * (1 - 1e-4):
            self.best, self.bad = metric, 0
        else:
            self.bad += 1
        if self.bad > self.patience:
            new = max(self.lr * self.factor, self.min_lr)
            if self.lr - new > 1e-8:
                self.lr = new
            self.bad = 0
        return self.lr

    def state_dict(self) -> dict:
        return {"lr": self.lr, "best": self.best, "bad": self.bad}

    def load_state_dict(self, st: dict) -> None:
        self.lr, self.best, self.bad = st["lr"], st["best"], st["bad"]


def adam(action: Action, Us0: list[Tensor], tol: float, max_iter: int, lr: float, record: History,
         ckpt: SolveCheckpoint | None = None,
         schedule: tuple[int, float, float] | None = None) -> tuple[list[Tensor], dict]:
    """App. E: Adam on full matrices, symmetrised on use, no PD constraint (stops if it leaves the cone).
    ``schedule`` = (patience, factor, min_lr): the rate follows :class:`Plateau` (the public code's scheduler)."""
    plateau = Plateau(lr, *schedule) if schedule is not None else None
    Ms = [u.clone() for u in Us0]
    m1 = [torch.zeros_like(u) for u in Ms]
    m2 = [torch.zeros_like(u) for u in Ms]
    b1, b2, eps = 0.9, 0.999, 1e-8
    k0 = 1
    if ckpt is not None and ckpt.resume is not None:
        st = ckpt.resume
        Ms, m1, m2 = ([t.clone().to(Us0[0].device) for t in st[k]] for k in ("Ms", "m1", "m2"))
        k0 = st["iter"] + 1
        _load_record(record, st["record"])
        if plateau is not None:
            plateau.load_state_dict(st["plateau"])
            lr = plateau.lr
    for k in range(k0, max_iter + 1):
        try:
            val = action.at(Ms)
        except (SolveError, FloatingPointError) as exc:
            return Ms, {"iter": k, "eval": k, "message": f"Adam left the PD cone: {exc}"}
        max_grad = max(float(g.abs().max()) for g in val.grads)
        if max_grad <= tol:
            return Ms, {"iter": k - 1, "eval": k, "message": "Adam converged"}
        record(k - 1, Ms)
        for i, g in enumerate(val.grads):
            m1[i] = b1 * m1[i] + (1 - b1) * g
            m2[i] = b2 * m2[i] + (1 - b2) * g * g
            step = lr * (m1[i] / (1 - b1**k)) / (torch.sqrt(m2[i] / (1 - b2**k)) + eps)
            Ms[i] = Ms[i] - 0.5 * (step + step.T)
        if plateau is not None:  # the public code steps its scheduler after the optimiser, on this step's gradient
            lr = plateau.step(max_grad)
        if ckpt is not None:
            ckpt.save(lambda k=k: {"method": "adam", "iter": k, "Ms": [t.clone() for t in Ms],
                                   "m1": [t.clone() for t in m1], "m2": [t.clone() for t in m2],
                                   "record": _record_state(record),
                                   **({"plateau": plateau.state_dict()} if plateau is not None else {})})
    return Ms, {"iter": max_iter, "eval": max_iter, "message": "Adam reached max_iter"}
