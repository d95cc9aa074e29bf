"""The finite-width theory's saddle point U* and predictions over widths (Eqs. (9)-(13), (29)-(34), App. E).

U* minimises the action of :mod:`attnlab.paths.theory.action`. It is found by L-BFGS on the Cholesky parameters
(every U^(ℓ) stays positive definite), started at the GP solution U^(ℓ) = σ^{2(L+2−ℓ)} I or warm-started from
a neighbouring width; where the line search stops short of the tolerance (S has run out of digits there) a
few Newton-CG steps finish the solve. ``method="adam"`` is the paper's App. E algorithm (Adam on full
symmetrised matrices, no PD constraint) for fidelity. A solve that does not reach the tolerance, or leaves
the PD cone, raises :class:`SolveError` (or is returned flagged with ``strict=False``) — never silently.
The optimisers live in :mod:`attnlab.paths.theory.optimizers`; given a run's unit (``checkpoint=``), :func:`sweep`
and :func:`predict` save the finished widths and the running solve's optimiser state, and resume inside it.

:func:`predict` is the paired API's theory side: accuracy, ε_g, ⟨f⟩, ⟨δf²⟩ and U at every width, as a
:class:`Trajectory` over N with the names :func:`attnlab.paths.train.gibbs.simulate` uses.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.paths.theory.action import Action, ActionValue, CholeskyParams, SolveError, gp_levels, level_sizes
from attnlab.paths.theory.diagnostics import History, hessian_eigenvalues
from attnlab.paths.theory.kernels import PathKernels, Prediction, Problem
from attnlab.paths.theory.kernels import predict as kernel_predict
from attnlab.paths.theory.optimizers import SolveCheckpoint, adam, lbfgs

__all__ = ["Action", "ActionValue", "CholeskyParams", "SaddlePoint", "SolveCheckpoint", "SolveError", "SweepProgress",
           "gp_levels", "level_sizes", "predict", "predict_gp", "solve", "sweep"]

Tensor = torch.Tensor
F64 = torch.float64
# A float32 solve's tolerance: S is known to ε₃₂|S| only, which fixes its minimiser, and so ∂S/∂U, to about
# √ε₃₂ ≈ 3.5e-4 (half the digits; Gill, Murray & Wright, Practical Optimization, Sec. 8.2); tol = 1e-8 is out of reach.
FLOAT32_TOL = math.sqrt(torch.finfo(torch.float32).eps)


# -- the saddle point ------------------------------------------------------------------------------


@dataclass
class SaddlePoint:
    """U* of one (N, τ) and how it was reached."""

    Us: list[Tensor]
    S: float
    entropy: float
    energy: float
    max_grad: float  # max_ℓ max |∂S/∂U^(ℓ)|
    residuals: list[float]
    converged: bool
    N: float
    tau: float
    alpha: float
    method: str = "lbfgs"
    n_iter: int = 0
    n_eval: int = 0
    seconds: float = 0.0
    message: str = ""
    min_eig: float = field(default=float("nan"))
    history: dict = field(default_factory=dict)  # diagnostics.History.arrays() when recorded

    @property
    def U(self) -> Tensor:
        return self.Us[0]


@contextlib.contextmanager
def pinned_threads(P: int, small: int = 1024) -> Iterator[None]:
    """One intra-op thread while solving a small problem (P ≤ ``small``) on the CPU: on small matrices extra BLAS
    threads only add synchronisation (oversubscribed threads were measured 40× slower)."""
    before = torch.get_num_threads()
    if small >= P and before > 1:
        torch.set_num_threads(1)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def solve(action: Action, init: Sequence[Tensor] | None = None, *, method: str = "lbfgs", tol: float = 1e-8,
          max_iter: int = 20_000, strict: bool = True, lr: float = 0.1, history: int = 0,
          checkpoint: SolveCheckpoint | None = None, schedule: tuple[int, float, float] | None = None) -> SaddlePoint:
    """Minimise S from ``init`` (default: the GP solution) until max|∂S/∂U| ≤ ``tol``.

    ``method``: ``lbfgs`` (Cholesky parameters, scipy L-BFGS, Newton polish) or ``adam`` (App. E: full
    symmetrised matrices, learning rate ``lr``; ``schedule`` = (patience, factor, min_lr) cuts it on plateaus of
    max|∂S/∂U|, :class:`optimizers.Plateau`). ``strict``: raise :class:`SolveError` when not converged.
    ``history`` = k > 0 records the optimiser every k steps (:class:`diagnostics.History`, in ``.history``).
    Small CPU problems run on one thread (:func:`pinned_threads`). ``checkpoint``: the optimiser's saved state
    to resume from and the run's save (:class:`optimizers.SolveCheckpoint`). A float32 action (kernels built
    with ``dtype=torch.float32``) is solved to max(``tol``, :data:`FLOAT32_TOL`).
    """
    if action.dtype != F64:
        tol = max(tol, FLOAT32_TOL)
    with pinned_threads(action.P if action.kern.Xi.device.type == "cpu" else 10**9):
        return _solve(action, init, method=method, tol=tol, max_iter=max_iter, strict=strict, lr=lr,
                      record=History(action, history), ckpt=checkpoint, schedule=schedule)


def _solve(action: Action, init: Sequence[Tensor] | None, *, method: str, tol: float, max_iter: int, strict: bool,
           lr: float, record: History, ckpt: SolveCheckpoint | None,
           schedule: tuple[int, float, float] | None = None) -> SaddlePoint:
    t0 = time.perf_counter()
    dev = action.kern.Xi.device
    Us0 = [u.to(dev, action.dtype) for u in
           (init if init is not None else gp_levels(action.Hs, device=dev, variances=action.variances))]
    record(0, Us0)
    if method not in ("lbfgs", "adam"):
        raise ValueError(f"key 'solver' = {method!r}: allowed: lbfgs, adam")
    if ckpt is not None and ckpt.resume is not None and ckpt.resume.get("method") != method:
        raise ValueError(f"the saved solve used {ckpt.resume.get('method')!r}, this one {method!r}")
    if method == "lbfgs":
        Us, info = lbfgs(action, Us0, tol, max_iter, record, ckpt)
    else:
        Us, info = adam(action, Us0, tol, max_iter, lr, record, ckpt, schedule)
    record(info["iter"], Us, final=True)
    val = action.at(Us)
    max_grad = max(float(g.abs().max()) for g in val.grads)
    min_eig = min(float(torch.linalg.eigvalsh(U).min()) for U in Us)
    sp = SaddlePoint(Us, float(val.S), float(val.entropy), float(val.energy), max_grad,
                     action.residuals(Us, val.grads), max_grad <= tol and min_eig > 0, action.N, action.tau,
                     action.alpha, method, info["iter"], info["eval"], time.perf_counter() - t0, info["message"],
                     min_eig, record.arrays())
    if strict and not sp.converged:
        raise SolveError(f"saddle point not converged at N = {action.N:g}, τ = {action.tau:g} ({method}): "
                         f"max|∂S/∂U| = {max_grad:.2e} > tol {tol:.0e}, min eig U = {min_eig:.2e}; {sp.message}")
    return sp


# -- sweeps and the paired API ---------------------------------------------------------------------------


def layer_widths(N: float, ratios: Sequence[float] | None) -> float | tuple[float, ...]:
    """Per-layer widths N·(r_1, ..., r_L, r_a) of a swept width N, or N itself (equal widths)."""
    return N if ratios is None else tuple(N * r for r in ratios)


def action(problem: Problem, kern: PathKernels, tau: float, N: float,
           ratios: Sequence[float] | None = None) -> Action:
    """The action of ``problem`` at width N (per-layer widths N·``ratios``) with the problem's prior variances."""
    return Action(kern, problem.y, tau, layer_widths(N, ratios), problem.Hs, problem.sigma2, problem.variances)


class SweepProgress:
    """The saddle points a sweep has finished, keyed (τ, N), and the running solve's saved optimiser state, kept
    in a run's unit (``core.units.Unit``: ``resume``, ``save``): ``{"done": {(τ, N): SaddlePoint}, "partial":
    ((τ, N), optimiser state) or None}``. Without a unit nothing is saved."""

    def __init__(self, unit=None) -> None:
        state = unit.resume if unit is not None else None
        self.done: dict = dict(state["done"]) if state else {}
        self.partial = state["partial"] if state else None
        self._save = unit.save if unit is not None else None

    def checkpoint(self, key: tuple[float, float]) -> SolveCheckpoint | None:
        """The solve of ``key``: its saved state (when the run stopped inside it) and its save."""
        if self._save is None:
            return None
        resume = self.partial[1] if self.partial is not None and self.partial[0] == key else None
        return SolveCheckpoint(resume, lambda fn: self._save(lambda: {"done": dict(self.done),
                                                                      "partial": (key, fn())}))

    def finish(self, key: tuple[float, float], sp: SaddlePoint) -> None:
        self.done[key], self.partial = sp, None
        if self._save is not None:
            self._save(lambda: {"done": dict(self.done), "partial": None})


def sweep(problem: Problem, Ns: Sequence[float], tau: float, *, kern: PathKernels | None = None,
          init: Sequence[Tensor] | None = None, ratios: Sequence[float] | None = None,
          checkpoint=None, **solve_kw) -> list[SaddlePoint]:
    """Saddle points for every width in ``Ns`` (returned in that order), solved from the widest to the narrowest,
    each warm-started from the previous one (the widest from ``init`` or the GP solution). ``ratios``: per-layer
    widths N_ℓ = N·r_ℓ (ℓ = 1..L, then the readout's). ``checkpoint``: a run's unit (or a
    :class:`SweepProgress`): finished widths and the running solve are saved, and a resumed sweep goes on inside
    the solve it was in, to the same result."""
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    progress = checkpoint if isinstance(checkpoint, SweepProgress) else SweepProgress(checkpoint)
    order = sorted(range(len(Ns)), key=lambda i: -Ns[i])
    out: dict[int, SaddlePoint] = {}
    prev = list(init) if init is not None else None
    for i in order:
        key = (float(tau), float(Ns[i]))
        sp = progress.done.get(key)
        if sp is None:
            sp = solve(action(problem, kern, tau, Ns[i], ratios), prev, checkpoint=progress.checkpoint(key),
                       **solve_kw)
            progress.finish(key, sp)
        out[i] = sp
        prev = sp.Us
    return [out[i] for i in range(len(Ns))]


def predict_gp(problem: Problem, tau: float, kern: PathKernels | None = None) -> Prediction:
    """The GP limit (N → ∞): U = σ^{2(L+1)} I, i.e. K_GP = (σ^{2(L+2)}/n) Σ_π C_ππ."""
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    return kernel_predict(kern, problem.U_gp(), problem.y, tau, problem.Xi_test)


def predict(problem: Problem, Ns: Sequence[float], tau: float | Sequence[float], *,
            kern: PathKernels | None = None, ratios: Sequence[float] | None = None, hessian: bool = False,
            checkpoint=None, **solve_kw) -> Trajectory:
    """The theory's answer at every width N (the paired API's ``theory.predict``).

    Returns a :class:`Trajectory` over ``N`` with ``U`` (n, n), ``accuracy``, ``gen_error``, ``f_mean`` (P*),
    ``f_var`` (P*) — the names :func:`attnlab.paths.train.gibbs.simulate` uses — and the solver's ``S``, ``energy``,
    ``max_grad``, ``residual`` (max over levels), ``tau``. ``tau`` may be one value per width (τ tuned per N).
    ``ratios``: per-layer widths N·r_ℓ; ``hessian``: also ``hessian_eigs`` and ``hessian_min_eig`` at U*
    (:func:`diagnostics.hessian_eigenvalues`); recorded optimiser histories (``history=k``) go to
    ``meta["history"][N]``. ``checkpoint``: a run's unit, as in :func:`sweep`.
    """
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    taus = [float(tau)] * len(Ns) if np.isscalar(tau) else [float(t) for t in tau]
    if len(taus) != len(Ns):
        raise ValueError(f"got {len(taus)} temperatures for {len(Ns)} widths")
    sps: list[SaddlePoint | None] = [None] * len(Ns)
    progress = SweepProgress(checkpoint)
    for t in sorted(set(taus)):
        idx = [i for i in range(len(Ns)) if taus[i] == t]
        for i, sp in zip(idx, sweep(problem, [Ns[i] for i in idx], t, kern=kern, ratios=ratios,
                                     checkpoint=progress, **solve_kw),
                         strict=True):
            sps[i] = sp
    obs: dict[str, list] = {k: [] for k in ("U", "accuracy", "gen_error", "f_mean", "f_var", "S", "energy",
                                            "max_grad", "residual", "tau", "converged")}
    if hessian:
        obs.update(hessian_eigs=[], hessian_min_eig=[])
    for N, sp in zip(Ns, sps, strict=True):
        assert sp is not None
        if hessian:
            eigs = hessian_eigenvalues(action(problem, kern, sp.tau, N, ratios), sp.Us)
            obs["hessian_eigs"].append(eigs)
            obs["hessian_min_eig"].append(float(eigs.min()))
        pr = kernel_predict(kern, sp.U, problem.y, sp.tau, problem.Xi_test)
        obs["U"].append(sp.U.cpu().numpy())
        obs["accuracy"].append(pr.accuracy(problem.y_test))
        obs["gen_error"].append(pr.gen_error(problem.y_test))
        obs["f_mean"].append(pr.mean.cpu().numpy())
        obs["f_var"].append(pr.var.cpu().numpy())
        for k in ("S", "energy", "max_grad", "tau"):
            obs[k].append(getattr(sp, k))
        obs["residual"].append(max(sp.residuals))
        obs["converged"].append(float(sp.converged))
    meta = {"P": problem.P, "n_paths": problem.n, "n_iter": int(sum(sp.n_iter for sp in sps if sp)),
            "seconds": float(sum(sp.seconds for sp in sps if sp)),
            "history": {float(N): sp.history for N, sp in zip(Ns, sps, strict=True) if sp and sp.history}}
    return Trajectory(np.asarray(Ns, dtype=float), {k: np.asarray(v) for k, v in obs.items()}, time_name="N",
                      source="theory", meta=meta)


def scalar_entropy_solution(problem: Problem, N: float, tau: float, kern: PathKernels | None = None) -> tuple[float,
                                                                                                          float]:
    """H = 1 reference (check A5): minimise (L+1)σ⁻²U^{1/(L+1)} − ln U + αℰ(U) over the scalar U; (U*, S*).

    With one head per layer the entropy telescopes to Σ_ℓ u_ℓ/(σ²u_{ℓ+1}) − ln u_1, whose minimum over the
    inner levels at fixed u_1 = U is the main text's (L+1)σ⁻²U^{1/(L+1)} − ln U, so S* compares exactly."""
    from scipy.optimize import minimize_scalar

    if problem.n != 1:
        raise ValueError("the scalar reduction holds for one head per layer (n = 1)")
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    act = Action(kern, problem.y, tau, N, problem.Hs, problem.sigma2)
    L, s2 = problem.L, problem.sigma2

    def S(logU: float) -> float:
        U = math.exp(logU)
        E, _ = act.energy(torch.tensor([[U]], dtype=F64, device=kern.Xi.device), grad=False)
        return (L + 1) / s2 * U ** (1 / (L + 1)) - logU + act.alpha * float(E)

    res = minimize_scalar(S, bounds=(-30, 30), method="bounded", options={"xatol": 1e-13})
    return math.exp(res.x), float(res.fun)
