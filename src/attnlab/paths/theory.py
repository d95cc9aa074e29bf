"""The finite-width theory's saddle point U* and predictions over widths (Eqs. 9-13, 29-34, App. E).

U* minimises the action of :mod:`attnlab.paths.action`. It is found by L-BFGS on the Cholesky parameters
(every U^(ℓ) stays positive definite), started at the GP solution U^(ℓ) = σ^{2(L+2−ℓ)} I or warm-started from
a neighbouring width; where the line search stops short of the tolerance (S has run out of digits there) a
few Newton-CG steps finish the solve. ``method="adam"`` is the paper's App. E algorithm (Adam on full
symmetrised matrices, no PD constraint) for fidelity. A solve that does not reach the tolerance, or leaves
the PD cone, raises :class:`SolveError` (or is returned flagged with ``strict=False``) — never silently.

:func:`predict` is the paired API's theory side: accuracy, ε_g, ⟨f⟩, ⟨δf²⟩ and U at every width, as a
:class:`Trajectory` over N with the names :func:`attnlab.paths.train.simulate` uses.
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
from attnlab.paths.action import Action, ActionValue, CholeskyParams, SolveError, gp_levels, level_sizes
from attnlab.paths.diagnostics import History, hessian_eigenvalues
from attnlab.paths.kernels import PathKernels, Prediction, Problem
from attnlab.paths.kernels import predict as kernel_predict

__all__ = ["Action", "ActionValue", "CholeskyParams", "SaddlePoint", "SolveError", "gp_levels", "level_sizes",
           "predict", "predict_gp", "solve", "sweep"]

Tensor = torch.Tensor
F64 = torch.float64


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
          max_iter: int = 20_000, strict: bool = True, lr: float = 0.1, history: int = 0) -> SaddlePoint:
    """Minimise S from ``init`` (default: the GP solution) until max|∂S/∂U| ≤ ``tol``.

    ``method``: ``lbfgs`` (Cholesky parameters, scipy L-BFGS, Newton polish) or ``adam`` (App. E: full
    symmetrised matrices, learning rate ``lr``). ``strict``: raise :class:`SolveError` when not converged.
    ``history`` = k > 0 records the optimiser every k steps (:class:`diagnostics.History`, in ``.history``).
    Small CPU problems run on one thread (:func:`pinned_threads`).
    """
    with pinned_threads(action.P if action.kern.Xi.device.type == "cpu" else 10**9):
        return _solve(action, init, method=method, tol=tol, max_iter=max_iter, strict=strict, lr=lr,
                      record=History(action, history))


def _solve(action: Action, init: Sequence[Tensor] | None, *, method: str, tol: float, max_iter: int, strict: bool,
           lr: float, record: History) -> SaddlePoint:
    t0 = time.perf_counter()
    dev = action.kern.Xi.device
    Us0 = [u.to(dev, F64) for u in init] if init is not None else gp_levels(action.Hs, device=dev,
                                                                              variances=action.variances)
    record(0, Us0)
    if method == "lbfgs":
        Us, info = _lbfgs(action, Us0, tol, max_iter, record)
    elif method == "adam":
        Us, info = _adam(action, Us0, tol, max_iter, lr, record)
    else:
        raise ValueError(f"key 'solver' = {method!r}: allowed: lbfgs, adam")
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


class _Stalled(Exception):
    """L-BFGS's line search spends evaluations without progress near the optimum."""


def _lbfgs(action: Action, Us0: list[Tensor], tol: float, max_iter: int,
           record: History) -> tuple[list[Tensor], dict]:
    from scipy.optimize import minimize

    par = CholeskyParams(action.sizes, Us0[0].device)
    dev = Us0[0].device
    n_eval = 0
    last: list = [None, float("inf")]  # the last evaluated θ and its max|∂S/∂U|
    best: list = [None, float("inf"), 0]  # the θ of the smallest max|∂S/∂U|, it, evaluations in this iteration

    def fun(x: np.ndarray) -> tuple[float, np.ndarray]:
        nonlocal n_eval
        n_eval += 1
        As = par.unpack(torch.as_tensor(x, dtype=F64, device=dev))
        try:
            val = action(As)
        except FloatingPointError:
            return float("inf"), np.zeros_like(x)
        last[:] = [x.copy(), max(float(g.abs().max()) for g in val.grads)]
        if last[1] < best[1]:
            best[:2] = last
        best[2] += 1
        if best[2] > 8 and best[1] <= 1e-6:  # the line search has run out of digits in S: Newton finishes
            raise _Stalled
        return float(val.S), par.grad(As, val.grads).cpu().numpy()

    x0 = par.pack(Us0).cpu().numpy()
    n_it = 0

    def callback(xk: np.ndarray) -> None:
        """Stop at the tolerance in U (the line search would otherwise spend dozens of evaluations on the last
        digits of S); record the history."""
        nonlocal n_it
        n_it += 1
        if record.every and n_it % record.every == 0:
            record(n_it, [A @ A.T for A in par.unpack(torch.as_tensor(xk, dtype=F64, device=dev))])
        best[2] = 0
        if last[1] <= tol and np.array_equal(last[0], xk):
            raise StopIteration

    try:
        res = minimize(fun, x0, jac=True, method="L-BFGS-B", callback=callback,
                       options={"maxcor": 50, "ftol": 1e-16, "gtol": tol * 1e-2, "maxiter": max_iter,
                                "maxfun": 2 * max_iter})
        x, message, n_iter = res.x, str(res.message), int(res.nit)
    except _Stalled:
        x, message, n_iter = best[0], "L-BFGS line search stalled", n_it
    theta = torch.as_tensor(x, dtype=F64, device=dev)
    As = par.unpack(theta)
    lbfgs_grad = max(float(g.abs().max()) for g in action(As).grads)
    if lbfgs_grad > tol:
        theta, k = _newton_polish(action, par, theta, tol)
        message += f"; L-BFGS reached max|∂S/∂U| = {lbfgs_grad:.1e}, then {k} Newton-CG steps"
        n_iter += k
        As = par.unpack(theta)
    return [A @ A.T for A in As], {"iter": n_iter, "eval": n_eval, "message": message}


def _newton_polish(action: Action, par: CholeskyParams, theta: Tensor, tol: float,
                   steps: int = 20) -> tuple[Tensor, int]:
    """Newton steps in θ from near the optimum, where the line search has run out of precision in S.

    The Newton system is solved by conjugate gradients with Hessian-vector products taken as central
    differences of the analytic gradient; a step is kept if S does not increase beyond round-off and the
    gradient shrinks, else it is halved.
    """

    def grad(t: Tensor) -> tuple[Tensor, float, float]:
        As = par.unpack(t)
        val = action(As)
        return par.grad(As, val.grads), float(val.S), max(float(g.abs().max()) for g in val.grads)

    g, S, gmax = grad(theta)
    for k in range(steps):
        if gmax <= tol:
            return theta, k
        eps = 1e-6 / max(float(theta.abs().max()), 1.0)

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
            if S_new <= S + 1e-12 * max(abs(S), 1.0) and gmax_new < gmax:
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


def _adam(action: Action, Us0: list[Tensor], tol: float, max_iter: int, lr: float,
          record: History) -> tuple[list[Tensor], dict]:
    """App. E: Adam on full matrices, symmetrised on use, no PD constraint (stops if it leaves the cone)."""
    Ms = [u.clone() for u in Us0]
    m1 = [torch.zeros_like(u) for u in Ms]
    m2 = [torch.zeros_like(u) for u in Ms]
    b1, b2, eps = 0.9, 0.999, 1e-8
    for k in range(1, max_iter + 1):
        try:
            val = action.at(Ms)
        except (SolveError, FloatingPointError) as exc:
            return Ms, {"iter": k, "eval": k, "message": f"Adam left the PD cone: {exc}"}
        if max(float(g.abs().max()) for g in val.grads) <= tol:
            return Ms, {"iter": k - 1, "eval": k, "message": "Adam converged"}
        record(k - 1, Ms)
        for i, g in enumerate(val.grads):
            m1[i] = b1 * m1[i] + (1 - b1) * g
            m2[i] = b2 * m2[i] + (1 - b2) * g * g
            step = lr * (m1[i] / (1 - b1**k)) / (torch.sqrt(m2[i] / (1 - b2**k)) + eps)
            Ms[i] = Ms[i] - 0.5 * (step + step.T)
    return Ms, {"iter": max_iter, "eval": max_iter, "message": "Adam reached max_iter"}


# -- sweeps and the paired API ---------------------------------------------------------------------------


def layer_widths(N: float, ratios: Sequence[float] | None) -> float | tuple[float, ...]:
    """Per-layer widths N·(r_1, ..., r_L, r_a) of a swept width N, or N itself (equal widths)."""
    return N if ratios is None else tuple(N * r for r in ratios)


def action(problem: Problem, kern: PathKernels, tau: float, N: float,
           ratios: Sequence[float] | None = None) -> Action:
    """The action of ``problem`` at width N (per-layer widths N·``ratios``) with the problem's prior variances."""
    return Action(kern, problem.y, tau, layer_widths(N, ratios), problem.Hs, problem.sigma2, problem.variances)


def sweep(problem: Problem, Ns: Sequence[float], tau: float, *, kern: PathKernels | None = None,
          init: Sequence[Tensor] | None = None, ratios: Sequence[float] | None = None,
          **solve_kw) -> list[SaddlePoint]:
    """Saddle points for every width in ``Ns`` (returned in that order), solved from the widest to the narrowest,
    each warm-started from the previous one (the widest from ``init`` or the GP solution). ``ratios``: per-layer
    widths N_ℓ = N·r_ℓ (ℓ = 1..L, then the readout's)."""
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    order = sorted(range(len(Ns)), key=lambda i: -Ns[i])
    out: dict[int, SaddlePoint] = {}
    prev = list(init) if init is not None else None
    for i in order:
        sp = solve(action(problem, kern, tau, Ns[i], ratios), prev, **solve_kw)
        out[i] = sp
        prev = sp.Us
    return [out[i] for i in range(len(Ns))]


def predict_gp(problem: Problem, tau: float, kern: PathKernels | None = None) -> Prediction:
    """The GP limit (N → ∞): U = σ^{2(L+1)} I, i.e. K_GP = (σ^{2(L+2)}/n) Σ_π C_ππ."""
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    return kernel_predict(kern, problem.U_gp(), problem.y, tau, problem.Xi_test)


def predict(problem: Problem, Ns: Sequence[float], tau: float | Sequence[float], *,
            kern: PathKernels | None = None, ratios: Sequence[float] | None = None, hessian: bool = False,
            **solve_kw) -> Trajectory:
    """The theory's answer at every width N (the paired API's ``theory.predict``).

    Returns a :class:`Trajectory` over ``N`` with ``U`` (n, n), ``accuracy``, ``gen_error``, ``f_mean`` (P*),
    ``f_var`` (P*) — the names :func:`attnlab.paths.train.simulate` uses — and the solver's ``S``, ``energy``,
    ``max_grad``, ``residual`` (max over levels), ``tau``. ``tau`` may be one value per width (τ tuned per N).
    ``ratios``: per-layer widths N·r_ℓ; ``hessian``: also ``hessian_eigs`` and ``hessian_min_eig`` at U*
    (:func:`diagnostics.hessian_eigenvalues`); recorded optimiser histories (``history=k``) go to
    ``meta["history"][N]``.
    """
    kern = kern or PathKernels(problem.Xi, problem.sigma0)
    taus = [float(tau)] * len(Ns) if np.isscalar(tau) else [float(t) for t in tau]
    if len(taus) != len(Ns):
        raise ValueError(f"got {len(taus)} temperatures for {len(Ns)} widths")
    sps: list[SaddlePoint | None] = [None] * len(Ns)
    for t in sorted(set(taus)):
        idx = [i for i in range(len(Ns)) if taus[i] == t]
        for i, sp in zip(idx, sweep(problem, [Ns[i] for i in idx], t, kern=kern, ratios=ratios, **solve_kw),
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
