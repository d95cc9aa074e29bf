"""A resumable L-BFGS-B: scipy's routine driven step by step, its whole state saved between iterations.

``scipy.optimize.minimize(method="L-BFGS-B")`` keeps the optimiser's memory (the last ``maxcor`` steps and
gradient changes, the line search's state) in work arrays inside one call, so an interrupted saddle-point solve
(App. E; hours at paper scale over many widths) would restart. :class:`LBFGSB` runs the same compiled routine
(``scipy.optimize._lbfgsb.setulb``, scipy ≥ 1.15) with the same loop as scipy's driver — the same evaluations in
the same order, the same stopping rules — and exposes those arrays: :meth:`LBFGSB.state_dict` after any
iteration, :meth:`LBFGSB.load_state_dict` to go on from it, so a resumed solve ends bit-identical to an
uninterrupted one (and to ``minimize``; tests/paths/test_solve_checkpoint.py). Where the routine's interface
differs (scipy < 1.15) :data:`AVAILABLE` is False and callers fall back to ``minimize``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy

try:
    from scipy.optimize import _lbfgsb
except ImportError:  # pragma: no cover - a scipy without the compiled routine
    _lbfgsb = None

_VERSION = tuple(int(p) for p in scipy.__version__.split(".")[:2] if p.isdigit())
AVAILABLE = _lbfgsb is not None and _VERSION >= (1, 15)
_ARRAYS = ("x", "g", "wa", "iwa", "task", "lsave", "isave", "dsave", "ln_task")
FunGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


class LBFGSB:
    """Minimise ``fun(x) -> (f, ∇f)`` from ``x0`` as ``minimize(fun, x0, jac=True, method="L-BFGS-B",
    options={maxcor, ftol, gtol, maxiter, maxfun})`` does (no bounds).

    :meth:`run` calls ``callback(x)`` at every new iteration (a ``StopIteration`` from it stops the run, as in
    scipy) and then ``on_iteration()``, where the state may be saved."""

    def __init__(self, x0: np.ndarray, *, maxcor: int = 10, ftol: float = 2.2204460492503131e-09,
                 gtol: float = 1e-5, maxiter: int = 15000, maxfun: int = 15000, maxls: int = 20) -> None:
        if not AVAILABLE:
            raise RuntimeError(f"the resumable L-BFGS-B needs scipy >= 1.15 (found {scipy.__version__})")
        n = len(x0)
        self.m, self.maxls, self.maxiter, self.maxfun = int(maxcor), int(maxls), int(maxiter), int(maxfun)
        self.factr, self.pgtol = ftol / np.finfo(float).eps, float(gtol)
        self.low, self.up, self.nbd = np.zeros(n), np.zeros(n), np.zeros(n, np.int32)
        self.x = np.array(x0, dtype=np.float64).ravel()
        self.f = 0.0
        self.g = np.zeros(n)
        self.wa = np.zeros(2 * self.m * n + 5 * n + 11 * self.m**2 + 8 * self.m)
        self.iwa = np.zeros(3 * n, np.int32)
        self.task, self.ln_task, self.lsave = np.zeros(2, np.int32), np.zeros(2, np.int32), np.zeros(4, np.int32)
        self.isave, self.dsave = np.zeros(44, np.int32), np.zeros(29)
        self.nit = self.nfev = 0
        self.cache: tuple[np.ndarray, float, np.ndarray] | None = None  # scipy's ScalarFunction memo
        self.started = self.halted = False

    def _fun_and_grad(self, fun: FunGrad, x: np.ndarray) -> tuple[float, np.ndarray]:
        if self.cache is None or not np.array_equal(x, self.cache[0]):
            self.nfev += 1
            f, g = fun(np.copy(x))
            self.cache = (np.copy(x), float(f), np.atleast_1d(np.asarray(g, dtype=np.float64)))
        return self.cache[1], self.cache[2]

    def run(self, fun: FunGrad, callback: Callable[[np.ndarray], None] | None = None,
            on_iteration: Callable[[], None] | None = None) -> tuple[np.ndarray, str]:
        """Iterate to the end; (x, scipy's message)."""
        if not self.started:
            self._fun_and_grad(fun, self.x)  # scipy evaluates at x0 when it sets up the objective
            self.started = True
        while True:
            self.g = self.g.astype(np.float64)
            _lbfgsb.setulb(self.m, self.x, self.low, self.up, self.nbd, self.f, self.g, self.factr, self.pgtol,
                           self.wa, self.iwa, self.task, self.lsave, self.isave, self.dsave, self.maxls,
                           self.ln_task)
            if self.task[0] == 3:
                self.f, self.g = self._fun_and_grad(fun, self.x)
            elif self.task[0] == 1:
                self.nit += 1
                stop = False
                if callback is not None:
                    try:
                        callback(np.copy(self.x))
                    except StopIteration:
                        stop = True
                if stop:
                    self.task[0], self.task[1] = 5, 505
                    self.halted = True
                if self.nit >= self.maxiter:
                    self.task[0], self.task[1] = 5, 504
                elif self.nfev > self.maxfun:
                    self.task[0], self.task[1] = 5, 502
                if on_iteration is not None and self.task[0] == 1:
                    on_iteration()
            else:
                break
        if self.halted:  # minimize's message for a callback that stopped the run
            return self.x, "`callback` raised `StopIteration`."
        from scipy.optimize._lbfgsb_py import status_messages, task_messages

        return self.x, f"{status_messages[self.task[0]]}: {task_messages[self.task[1]]}"

    def state_dict(self) -> dict[str, Any]:
        """Copies of every array and counter the next iteration reads."""
        out: dict[str, Any] = {k: np.copy(getattr(self, k)) for k in _ARRAYS}
        out.update(f=self.f, nit=self.nit, nfev=self.nfev, started=self.started, halted=self.halted,
                   cache=None if self.cache is None else tuple(np.copy(c) if isinstance(c, np.ndarray) else c
                                                               for c in self.cache))
        return out

    def load_state_dict(self, state: dict[str, Any]) -> None:
        for k in _ARRAYS:
            if np.shape(state[k]) != np.shape(getattr(self, k)):
                raise ValueError(f"saved L-BFGS-B state does not fit this problem ({k}: {np.shape(state[k])} vs "
                                 f"{np.shape(getattr(self, k))})")
            setattr(self, k, np.array(state[k], dtype=getattr(self, k).dtype))
        self.f, self.nit, self.nfev, self.started = state["f"], state["nit"], state["nfev"], state["started"]
        self.halted = state["halted"]
        self.cache = None if state["cache"] is None else tuple(np.copy(c) if isinstance(c, np.ndarray) else c
                                                               for c in state["cache"])
