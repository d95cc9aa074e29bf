"""Theory of paper 0: reduced population loss (10)-(11) by Monte Carlo and its gradient flow (12).

Order parameters (spec §3.1): m = K K*ᵀ (H,F), q = K Kᵀ (H,H), p = K* K*ᵀ (F,F), r with r rᵀ = q - m p⁻¹ mᵀ.
The reduced loss Ẽ_σ(m, r, b, v) = E Σ_ℓ (δ_ℓε - s_ℓ)² with χ = m χ* + r ξ (eq. (11)) is estimated on a
fixed set of Monte Carlo samples (common random numbers, :func:`mc_samples`), with ε = token 0 (token
symmetry). Everything is vectorised over a leading batch axis S of independent (m, r, b, v):
m (S,H,F), r (S,H,H), b (S,H), v (S,).

Finite-D p-correction (§3.4): with P = p^{1/2} the flow is run on m̃ = m P⁻¹ with θ replaced by Pθ; this
only changes the token-0 column of χ*, so a sample set is "prepared" for a batch of P's by
:meth:`MCSamples.prepare` (P = None: p = I).

Main entry points: :func:`reduced_loss` (autodiff reference), :func:`loss_and_grad` (hand-derived
gradient, fast), :func:`integrate_flow` (solvers 'euler' | 'adaptive'), :func:`predict` (-> core
``Trajectory`` with observables m, q, p, rr, b, v, loss, the same names as the SGD simulation).
"""

from __future__ import annotations

import itertools
import math
import time as _time
from dataclasses import dataclass

import torch

from attnlab.core.trajectory import Trajectory
from attnlab.specialization.activations import TRAINABLE, get_activation
from attnlab.specialization.laws import symsqrt

Tensor = torch.Tensor
PARAMS = ("m", "r", "b", "v")


# ----------------------------------------------------------------------------------------------
# θ laws (duck-typed, so that any law of data.py works)


def law_info(law) -> dict:
    """Normalise a θ law of data.py to {'kind': 'discrete', support, probs, F} |
    {'kind': 'gaussian', mean, cov, F} | {'kind': 'sampler', law, F} (float64 CPU tensors)."""
    if getattr(law, "is_discrete", False):
        sup, pr = law.support()
        sup, pr = sup.double().cpu(), pr.double().cpu()
        return {"kind": "discrete", "support": sup, "probs": pr, "F": sup.shape[1]}
    if "gaussian" in type(law).__name__.lower():
        mu = law.mean().double().cpu()
        return {"kind": "gaussian", "mean": mu, "cov": law.cov().double().cpu(), "F": mu.shape[0]}
    return {"kind": "sampler", "law": law, "F": int(law.F)}


def _sign_symmetries(info: dict, F: int) -> list[Tensor]:
    """Diagonal sign flips R (as vectors) that leave the law of θ invariant (spec §3.7)."""
    out = []
    for signs in itertools.product((1.0, -1.0), repeat=F):
        R = torch.tensor(signs, dtype=torch.float64)
        if info["kind"] == "discrete":
            sup, pr = info["support"], info["probs"]
            d = ((sup[:, None, :] * R - sup[None, :, :]).abs().amax(-1) < 1e-9) & (
                (pr[:, None] - pr[None, :]).abs() < 1e-12
            )
            ok = bool(d.any(1).all())
        elif info["kind"] == "gaussian":
            ok = bool(torch.allclose(R * info["mean"], info["mean"]) and torch.allclose(
                R[:, None] * info["cov"] * R[None, :], info["cov"]))
        else:
            ok = bool((R == 1).all())
        if ok:
            out.append(R)
    return out


# ----------------------------------------------------------------------------------------------
# Monte Carlo samples (§3.2, §5.1)


@dataclass
class MCSamples:
    """Fixed MC samples. Token 0 is the relevant one: χ*_{:,0} = A u + θ, A = (I + Cov θ)^{1/2} for
    Gaussian θ (integrated form, θ := E θ) else A = I; tokens ≥ 1: χ*_{:,ℓ} = z_ℓ. Weights w sum to 1."""

    theta: Tensor  # (N, F)
    u: Tensor  # (F, N)        token-0 noise
    z: Tensor  # (F, N, L)     noise; the token-0 slice is unused (u replaces it)
    xi: Tensor  # (H, N, L)
    w: Tensor  # (N,)
    cov: Tensor | None = None  # Cov θ if the Gaussian integrated form is used

    @property
    def n(self) -> int:
        return self.w.shape[0]

    def chi0(self, P: Tensor | None = None) -> Tensor:
        """Token-0 column of χ* for θ -> Pθ: (F,N), or (S,F,N) for batched P (S,F,F)."""
        eye = torch.eye(self.u.shape[0], dtype=self.u.dtype, device=self.u.device)
        P = eye if P is None else P.to(self.u)
        Au = self.u if self.cov is None else symsqrt(eye + P @ self.cov @ P.mT) @ self.u
        return Au + P @ self.theta.T

    def prepare(self, P: Tensor | None = None) -> dict:
        """Tensors used by the loss: Z = [χ*; ξ] (F+H, N, L) with χ*_0 = u, and d = χ*_0 - u (token-0
        correction, (F,N) or (S,F,N)), weights w."""
        Z = torch.cat([self.z, self.xi], 0).clone()
        F = self.z.shape[0]
        Z[:F, :, 0] = self.u
        return {"Z": Z, "d": self.chi0(P) - self.u, "w": self.w, "F": F}


def mc_samples(law, L: int, H: int, n: int, *, seed: int = 0, symmetrize: bool = True,
               antithetic: bool = True, head_cyclic: bool = False, gaussian_integrated: bool = True,
               dtype=torch.float64, device="cpu") -> MCSamples:
    """Draw ~n fixed MC samples of (θ, χ*, ξ) from an explicit ``torch.Generator(seed)`` (CPU, then moved).

    Discrete θ is stratified over its support (weights = probs). ``symmetrize``: add the mirror copies
    (θ, χ*) -> (Rθ, Rχ*) for all sign flips R preserving P_θ; ``antithetic``: add (ξ -> -ξ) (Lemma A.3
    exact); ``head_cyclic``: add all cyclic head shifts of ξ (Lemma A.1 exact). The total is rounded up to
    a multiple of the number of copies. Gaussian θ uses the integrated form χ*_0 ~ N(Eθ, I + Cov θ).
    """
    info = law_info(law)
    g = torch.Generator().manual_seed(seed)
    signs = _sign_symmetries(info, info["F"]) if symmetrize else [None]
    n_copies = len(signs) * (2 if antithetic else 1) * (H if head_cyclic else 1)
    nb = max(1, math.ceil(n / n_copies))
    cov = None
    if info["kind"] == "discrete":
        sup, pr = info["support"], info["probs"]
        per = math.ceil(nb / sup.shape[0])
        theta = sup.repeat_interleave(per, 0)
        w = (pr / per).repeat_interleave(per)
    elif info["kind"] == "gaussian" and gaussian_integrated:
        theta = info["mean"].expand(nb, -1).clone()
        cov, w = info["cov"], torch.full((nb,), 1.0 / nb, dtype=torch.float64)
    else:
        theta = _sample_law(info, nb, g)
        w = torch.full((nb,), 1.0 / nb, dtype=torch.float64)
    nb, F = theta.shape
    u = torch.randn(F, nb, generator=g, dtype=torch.float64)
    z = torch.randn(F, nb, L, generator=g, dtype=torch.float64)
    xi = torch.randn(H, nb, L, generator=g, dtype=torch.float64)
    parts = []
    for R in signs:
        Rv = torch.ones(F, dtype=torch.float64) if R is None else R
        for a in (1.0, -1.0) if antithetic else (1.0,):
            for c in range(H if head_cyclic else 1):
                parts.append((theta * Rv, Rv[:, None] * u, Rv[:, None, None] * z, a * xi.roll(c, 0), w))
    cat = [torch.cat(t, dim=1 if k in (1, 2, 3) else 0) for k, t in enumerate(zip(*parts, strict=True))]
    conv = {"dtype": dtype, "device": device}
    return MCSamples(cat[0].to(**conv), cat[1].to(**conv), cat[2].to(**conv), cat[3].to(**conv),
                     (cat[4] / len(parts)).to(**conv), None if cov is None else cov.to(**conv))


def _sample_law(info: dict, n: int, g: torch.Generator) -> Tensor:
    if info["kind"] == "gaussian":
        z = torch.randn(n, info["F"], generator=g, dtype=torch.float64)
        return info["mean"] + z @ symsqrt(info["cov"])
    return info["law"].sample(n, generator=g, dtype=torch.float64).cpu()


# ----------------------------------------------------------------------------------------------
# Reduced loss (10)-(11): autodiff reference and hand-derived gradient


def _batch(m, r, b, v):
    """Add the leading batch axis S; b = 0, v = 1 by default."""
    S, H = m.shape[0], m.shape[1]
    b = m.new_zeros(S, H) if b is None else torch.as_tensor(b, dtype=m.dtype, device=m.device).expand(S, H)
    v = m.new_ones(S) if v is None else torch.as_tensor(v, dtype=m.dtype, device=m.device).expand(S)
    return m, r, b, v


def scores(m: Tensor, r: Tensor, prep: dict) -> Tensor:
    """χ = m χ* + r ξ (eq. (11)) for a batch: (S, H, N, L)."""
    Z = prep["Z"]
    S, H = m.shape[:2]
    N, L = Z.shape[1], Z.shape[2]
    W = torch.cat([m, r], -1)  # (S, H, F+H')
    chi = (W @ Z.reshape(Z.shape[0], N * L)).reshape(S, H, N, L)
    chi0 = chi[..., 0] + m @ prep["d"]
    return torch.cat([chi0[..., None], chi[..., 1:]], -1)


def reduced_loss(m: Tensor, r: Tensor, b, v, prep: dict, activation: str, per_sample: bool = False) -> Tensor:
    """Ẽ_σ(m, r, b, v), eq. (10), MC estimate on ``prep`` (from :meth:`MCSamples.prepare`); autodiff-able.

    Batched inputs m (S,H,F), r (S,H,H), b (S,H), v (S,) -> (S,); unbatched m (H,F) -> scalar.
    ``per_sample``: return the (S, N) per-sample losses Σ_ℓ (δ_ℓ0 - s_ℓ)² instead (unweighted).
    """
    single = m.dim() == 2
    if single:
        m, r = m[None], r[None]
        b = None if b is None else torch.as_tensor(b, dtype=m.dtype)[None]
        v = None if v is None else torch.as_tensor(v, dtype=m.dtype).reshape(1)
    m, r, b, v = _batch(m, r, b, v)
    chi = scores(m, r, prep).transpose(1, 2)  # (S, N, H, L)
    s = get_activation(activation)(chi, b[:, None, :], v[:, None]).mean(-2)  # (S, N, L)
    per = (s * s).sum(-1) - 2 * s[..., 0] + 1
    if per_sample:
        return per[0] if single else per
    out = per @ prep["w"]
    return out[0] if single else out


def loss_and_grad(m: Tensor, r: Tensor, b: Tensor, v: Tensor, prep: dict, activation: str):
    """Batched Ẽ and its hand-derived gradient (no autograd): returns loss (S,), (gm, gr, gb, gv).

    Back-propagation through σ in closed form (cf. (A4), (A8)); gradients of frozen parameters are 0.
    """
    S, H = m.shape[:2]
    w = prep["w"]
    chi = scores(m, r, prep)  # (S, H, N, L)
    gb = torch.zeros_like(b)
    gv = torch.zeros_like(v)
    if activation == "softmax":
        a = torch.softmax(chi, -1)
        s = a.mean(1)
    elif activation == "softmax1":
        bb = b[:, :, None, None]
        big = torch.maximum(chi.amax(-1, keepdim=True), bb)
        e = torch.exp(chi - big)
        den = torch.exp(bb - big) + e.sum(-1, keepdim=True)
        u = e / den
        a = v[:, None, None, None] * u
        s = a.mean(1)
    elif activation == "bsoftmax":
        zz = chi + b[:, :, None, None]
        lse = torch.logsumexp(zz.transpose(1, 2).reshape(S, -1, H * chi.shape[-1]), -1)  # (S, N)
        a = torch.exp(zz - lse[:, None, :, None])  # = σ / H
        s = a.sum(1)
    else:
        get_activation(activation)  # raises ValueError naming the allowed ones
    per = (s * s).sum(-1) - 2 * s[..., 0] + 1
    loss = per @ w
    gs = 2 * w[:, None] * s
    gs[..., 0] -= 2 * w
    gs = gs[:, None]  # (S, 1, N, L): dẼ/ds_ℓ
    if activation == "softmax":
        gchi = a * (gs - (a * gs).sum(-1, keepdim=True)) / H
    elif activation == "softmax1":
        t = (u * gs).sum(-1, keepdim=True) / H  # (S,H,N,1)
        gchi = a * (gs / H - t)
        gb = -(v[:, None] * ((1 - u.sum(-1, keepdim=True)) * t).sum((2, 3)))
        gv = t.sum((1, 2, 3))
    else:
        gchi = a * (gs - (a * gs).sum((1, 3), keepdim=True))
        gb = gchi.sum((2, 3))
    Z = prep["Z"]
    N, L = Z.shape[1], Z.shape[2]
    gW = gchi.reshape(S, H, N * L) @ Z.reshape(Z.shape[0], N * L).T
    F = prep["F"]
    gm = gW[..., :F] + gchi[..., 0] @ prep["d"].mT
    return loss, (gm, gW[..., F:], gb, gv)


def autograd_loss_and_grad(m, r, b, v, prep, activation):
    """Reference: Ẽ and ∇Ẽ by torch.autograd of :func:`reduced_loss` (the paper's algorithm)."""
    with torch.enable_grad():
        ps = [x.detach().requires_grad_(True) for x in (m, r, b, v)]
        loss = reduced_loss(*ps, prep, activation)
        grads = torch.autograd.grad(loss.sum(), ps, allow_unused=True)
    grads = tuple(torch.zeros_like(p) if g is None else g for p, g in zip(ps, grads, strict=True))
    return loss.detach(), grads


def _masked(grads, activation):
    keep = TRAINABLE[activation]
    gm, gr, gb, gv = grads
    return gm, gr, gb if "b" in keep else torch.zeros_like(gb), gv if "v" in keep else torch.zeros_like(gv)




# ----------------------------------------------------------------------------------------------
# Gradient flow (12), r unconstrained (spec §3.3)


def theory_init(H: int, F: int, *, n_seeds: int = 1, init_noise_var: float = 1e-4, eta: float = 1.0,
                seed: int = 0, dtype=torch.float64, device="cpu") -> dict:
    """Theory-only init (App. B, spec §3.3): m ~ N(0, init_noise_var), r = η I + N(0, init_noise_var), b = 0,
    v = 1; one row per seed (seed, seed+1, ... drawn from one generator)."""
    g = torch.Generator().manual_seed(seed)
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
    """Integrate dw/dτ = -∇_w Ẽ_σ(w), w = (m, r, b, v) batched (eq. (12)), recording at times ``taus``.

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
        return loss, tuple(-x for x in _masked(g, activation))

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
    ``p_correction`` (§3.4): run on m̃ = m p^{-1/2} with θ -> p^{1/2}θ and report m = m̃ p^{1/2}.
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
