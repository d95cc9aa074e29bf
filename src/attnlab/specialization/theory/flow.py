"""The gradient flow (12) of paper 0 (Prop. III.2) in the order parameters (m, r, b, v), and its trajectory.

Order parameters (Eqs. (8)-(9)): m = K K*ᵀ (H,F), q = K Kᵀ (H,H), p = K* K*ᵀ (F,F), r with r rᵀ = q − m p⁻¹ mᵀ.
The flow runs on the reduced loss (:mod:`.loss`) over fixed Monte-Carlo samples (:mod:`.samples`, App. B), r
unconstrained. Finite-D p-correction (docs/studies/specialization.md): with P = p^{1/2} the flow is run on
m̃ = m P⁻¹ with θ replaced by Pθ. :func:`integrate_flow` has two solvers ('euler': App. B's algorithm;
'adaptive': Bogacki-Shampine); :func:`predict` returns a core ``Trajectory`` with the observables m, q, p, rr,
b, v, loss, the same names as the SGD simulation.
"""

from __future__ import annotations

import math
import time as _time

import torch

from attnlab.core.rng import generator
from attnlab.core.trajectory import Trajectory
from attnlab.specialization.data.laws import symsqrt
from attnlab.specialization.model.activations import get_activation
from attnlab.specialization.theory.loss import autograd_loss_and_grad, loss_and_grad, masked_grads
from attnlab.specialization.theory.samples import MCSamples, law_info, mc_samples

Tensor = torch.Tensor
PARAMS = ("m", "r", "b", "v")


# ----------------------------------------------------------------------------------------------
# Gradient flow (12), r unconstrained


def theory_init(H: int, F: int, *, n_seeds: int = 1, init_noise_var: float = 1e-4, eta: float = 1.0,
                seed: int = 0, dtype=torch.float64, device="cpu") -> dict:
    """Theory-only init (App. B): m ~ N(0, init_noise_var), r = η I + N(0, init_noise_var), b = 0,
    v = 1; one row per seed (seed, seed+1, ... drawn from one generator)."""
    g = generator(seed)
    sd = math.sqrt(init_noise_var)
    m = sd * torch.randn(n_seeds, H, F, generator=g, dtype=torch.float64)
    r = eta * torch.eye(H, dtype=torch.float64)
    r = r + sd * torch.randn(n_seeds, H, H, generator=g, dtype=torch.float64)
    p = {"m": m, "r": r, "b": m.new_zeros(n_seeds, H), "v": m.new_ones(n_seeds)}
    return {k: x.to(dtype=dtype, device=device) for k, x in p.items()}


def init_from_order_params(m0: Tensor, q0: Tensor, p: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Empirical init (App. B): r0 = symsqrt(q0 - m0 p⁻¹ m0ᵀ). Returns (m0, r0), batch shape kept."""
    p = torch.eye(m0.shape[-1], dtype=m0.dtype, device=m0.device) if p is None else p.to(m0)
    return m0, symsqrt(q0 - m0 @ torch.linalg.solve(p, m0.mT))


def _axpy(y, a, k):
    return tuple(yi + a * ki for yi, ki in zip(y, k, strict=True))


def integrate_flow(params: dict, samples, activation: str, taus, *, P: Tensor | None = None,
                   solver: str = "euler", dt: float = 0.02, grad: str | None = None, rtol: float = 1e-3,
                   atol: float = 1e-4, dt_max: float = 10.0, stop_tol: float | None = None,
                   max_steps: int = 10_000_000) -> dict:
    """Integrate dw/dτ = -∇_w Ẽ_σ(w), w = (m, r, b, v) batched (Eq. (12)), recording at times ``taus``.

    ``samples``: an :class:`MCSamples` (fixed, common random numbers) or a callable ``step -> MCSamples``
    (fresh samples each step, Fig. 8; Euler only). ``P``: p^{1/2} for the p-correction (m is then m̃).
    ``solver='euler'``: explicit Euler with step ``dt`` (App. B: δ = 0.02). ``solver='adaptive'``:
    Bogacki–Shampine 3(2) with step control on max |err| / (atol + rtol |w|), initial step ``dt``.
    ``grad``: 'autograd' (paper; default for euler) or 'analytic' (:func:`loss_and_grad`; default adaptive).
    ``stop_tol``: stop once max_S |∇Ẽ|² (= -dẼ/dτ) < stop_tol; later records repeat the final state.
    Returns {'tau', 'm', 'r', 'b', 'v', 'loss' (lists of records), 'n_grad', 'steps', 'wall_s'}.
    """
    if solver not in ("euler", "adaptive"):
        raise ValueError(f"unknown solver {solver!r}; allowed: euler, adaptive")
    grad = grad or ("autograd" if solver == "euler" else "analytic")
    gfun = {"autograd": autograd_loss_and_grad, "analytic": loss_and_grad}[grad]
    fixed = isinstance(samples, MCSamples)
    prep = samples.prepare(P) if fixed else None
    y = tuple(params[k] for k in PARAMS)
    stats = {"n_grad": 0, "steps": 0}

    def f(y, step=0):
        nonlocal prep
        if not fixed:
            prep = samples(step).prepare(P)
        stats["n_grad"] += 1
        loss, g = gfun(*y, prep, activation)
        return loss, tuple(-x for x in masked_grads(g, activation))

    rec = {k: [] for k in (*PARAMS, "loss")}
    taus = sorted(float(t) for t in taus)
    t, h, stopped = 0.0, dt, False
    t0 = _time.perf_counter()
    loss, k1 = f(y)
    for target in taus:
        while t < target - 1e-12 and not stopped and stats["steps"] < max_steps:
            if solver == "euler":
                h = min(dt, target - t)
                y = _axpy(y, h, k1)
                t += h
                stats["steps"] += 1
                loss, k1 = f(y, stats["steps"])
            else:
                h = min(h, target - t, dt_max)
                k2 = f(_axpy(y, h / 2, k1))[1]
                k3 = f(_axpy(y, 3 * h / 4, k2))[1]
                ks = list(zip(y, k1, k2, k3, strict=True))
                ynew = tuple(yi + h * (2 * a / 9 + b / 3 + 4 * c / 9) for yi, a, b, c in ks)
                lnew, k4 = f(ynew)
                err = max(float((h * (-5 * a / 72 + b / 12 + c / 9 - d / 8)).abs().div(atol + rtol * yi.abs())
                                .max()) for (yi, a, b, c), d in zip(ks, k4, strict=True))
                if err <= 1.0:
                    y, loss, k1, t = ynew, lnew, k4, t + h
                    stats["steps"] += 1
                h = h * min(5.0, max(0.2, 0.9 * (err + 1e-16) ** (-1 / 3)))
            g2 = sum(x.pow(2).reshape(len(x), -1).sum(1) for x in k1) if stop_tol is not None else None
            if g2 is not None and float(g2.max()) < stop_tol:
                stopped = True
        for k, x in zip(PARAMS, y, strict=True):
            rec[k].append(x.detach().clone())
        rec["loss"].append(loss.detach().clone())
    wall = _time.perf_counter() - t0
    return {"tau": taus, **rec, **stats, "wall_s": wall, "stopped_at": t if stopped else None}


def predict(activation: str, law, L: int, H: int, taus, *, m0: Tensor | None = None, q0: Tensor | None = None,
            p: Tensor | None = None, n_seeds: int = 1, seed: int = 0, init_noise_var: float = 1e-4,
            eta: float = 1.0, n_mc: int = 100_000, mc_seed: int = 0, symmetrize: bool | None = None,
            antithetic: bool = True, head_cyclic: bool = False, p_correction: bool = True,
            resample: bool = False, solver: str = "euler", dt: float = 0.02, grad: str | None = None,
            rtol: float = 1e-3, atol: float = 1e-4, dt_max: float = 10.0, stop_tol: float | None = None,
            dtype=torch.float64, device="cpu") -> Trajectory:
    """Theory trajectory of the gradient flow (12): a core ``Trajectory`` (time_name='tau', source='theory').

    Init: from the simulation's order parameters if ``m0`` is given (m0 (S,H,F), q0 (S,H,H), p (F,F) or
    (S,F,F); r0 = symsqrt(q0 - m0 p⁻¹ m0ᵀ), b = 0, v = 1), else :func:`theory_init` with ``n_seeds`` seeds.
    ``p_correction`` (finite-D p-correction): run on m̃ = m p^{-1/2} with θ -> p^{1/2}θ and report m = m̃ p^{1/2}.
    ``symmetrize`` (default: True for theory-only runs, False from m0) as in :func:`mc_samples`.
    Observables (S = batch): m (S,H,F), q (S,H,H), p (S,F,F), rr = r rᵀ (S,H,H), b (S,H), v (S,), loss (S,)
    (the MC loss on the training samples). ``meta``: solver statistics and the final raw r (``r_final``).
    """
    get_activation(activation)
    info = law_info(law)
    F = info["F"]
    conv = {"dtype": dtype, "device": device}
    if m0 is not None:
        m0 = torch.as_tensor(m0, **conv)
        m0 = m0[None] if m0.dim() == 2 else m0
        q0 = torch.as_tensor(q0, **conv).reshape(m0.shape[0], H, H)
        m0, r0 = init_from_order_params(m0, q0, None if p is None else torch.as_tensor(p, **conv))
        S = m0.shape[0]
        params = {"m": m0, "r": r0, "b": m0.new_zeros(S, H), "v": m0.new_ones(S)}
    else:
        params = theory_init(H, F, n_seeds=n_seeds, init_noise_var=init_noise_var, eta=eta, seed=seed, **conv)
    S = params["m"].shape[0]
    p_full = torch.eye(F, **conv).expand(S, F, F) if p is None else torch.as_tensor(p, **conv).expand(S, F, F)
    P = symsqrt(p_full) if (p is not None and p_correction) else None
    if P is not None:
        params["m"] = params["m"] @ torch.linalg.inv(P)
    symmetrize = (m0 is None) if symmetrize is None else symmetrize
    kw = {"symmetrize": symmetrize, "antithetic": antithetic, "head_cyclic": head_cyclic, "dtype": dtype,
          "device": device}
    if resample:
        def samples(step):
            return mc_samples(law, L, H, n_mc, seed=mc_seed + 7919 * step, **kw)
    else:
        samples = mc_samples(law, L, H, n_mc, seed=mc_seed, **kw)
    out = integrate_flow(params, samples, activation, taus, P=P, solver=solver, dt=dt, grad=grad, rtol=rtol,
                         atol=atol, dt_max=dt_max, stop_tol=stop_tol)
    mt, r = torch.stack(out["m"]), torch.stack(out["r"])
    m = mt if P is None else mt @ P
    rr = r @ r.mT
    obs = {"m": m, "q": mt @ mt.mT + rr, "p": p_full.expand(len(out["tau"]), S, F, F), "rr": rr,
           "b": torch.stack(out["b"]), "v": torch.stack(out["v"]), "loss": torch.stack(out["loss"])}
    meta = {"activation": activation, "law": getattr(law, "name", str(law)), "L": L, "H": H, "F": F,
            "n_mc": samples.n if not resample else n_mc, "solver": solver, "dt": dt, "n_grad": out["n_grad"],
            "steps": out["steps"], "wall_s": out["wall_s"], "stopped_at": out["stopped_at"],
            "p_correction": P is not None, "r_final": r[-1].cpu().numpy()}
    return Trajectory(torch.as_tensor(out["tau"]), obs, time_name="tau", source="theory", meta=meta)
