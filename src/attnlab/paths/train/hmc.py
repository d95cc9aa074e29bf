"""Hamiltonian Monte Carlo of the network's posterior (Eqs. (8)/(19)), vectorised over chains.

The posterior the blocked Gibbs sampler (:mod:`attnlab.paths.train.gibbs`) draws from,

    p(Θ | data) ∝ exp(−‖f(X; Θ) − Y‖² / (2τ)) · Π_blocks N(θ_b; 0, σ_b² I),     Θ = (V⁰, {V^ℓ}, a),

with f the network's output through the path features (Eq. (5), :func:`attnlab.paths.model.forward_paths`), per-layer
widths (N_1, ..., N_L, N_a) and per-block prior variances (σ_0², σ_1², ..., σ_L², σ_a²) allowed (the public code's
generalisation; equal widths and one σ² give the paper's Eq. (8)). App. F of the paper samples it by NUTS (numpyro).
Two kernels: ``hmc``, a fixed number of leapfrog steps per transition, and ``nuts``, the No-U-Turn sampler's
adaptive trajectory length (:mod:`attnlab.paths.train.nuts`); for both the step size is tuned per chain during burn-in
by dual averaging (Hoffman & Gelman 2014, Alg. 5; target acceptance 0.8, numpyro's default). The chains move in
whitened coordinates η = θ/σ_b (unit prior); the mass matrix is the identity there (``mass_matrix="identity"``) or,
as numpyro's NUTS, a diagonal one adapted in windows during burn-in (``"diagonal"``, :class:`MassAdaptation`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from attnlab.paths.model import Weights, effective_weights, forward_paths
from attnlab.paths.theory.kernels import PathKernels, Problem
from attnlab.paths.train.gibbs import GibbsSampler
from attnlab.paths.train.nuts import nuts_transition

Tensor = torch.Tensor
F64 = torch.float64
Potential = Callable[[Tensor], Tensor]  # (C, d) → (C,)


class DualAveraging:
    """Per-chain step-size adaptation (Hoffman & Gelman 2014, Alg. 5): drive the acceptance rate to ``target``."""

    def __init__(self, eps0: Tensor, target: float = 0.8, gamma: float = 0.05, t0: float = 10.0,
                 kappa: float = 0.75) -> None:
        self.mu, self.target, self.gamma, self.t0, self.kappa = torch.log(10 * eps0), target, gamma, t0, kappa
        self.t = 0
        self.hbar = torch.zeros_like(eps0)
        self.log_eps, self.log_eps_bar = torch.log(eps0), torch.zeros_like(eps0)

    def update(self, accept: Tensor) -> Tensor:
        """One adaptation step with the chains' acceptance probabilities; returns the next step sizes."""
        self.t += 1
        w = 1.0 / (self.t + self.t0)
        self.hbar = (1 - w) * self.hbar + w * (self.target - accept)
        self.log_eps = self.mu - math.sqrt(self.t) / self.gamma * self.hbar
        k = self.t ** -self.kappa
        self.log_eps_bar = k * self.log_eps + (1 - k) * self.log_eps_bar
        return self.log_eps.exp()

    def final(self) -> Tensor:
        """The step sizes kept after adaptation: exp of the averaged log step size."""
        return self.log_eps_bar.exp()

    def state_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("mu", "t", "hbar", "log_eps", "log_eps_bar")}

    def load_state_dict(self, st: dict) -> None:
        for k, v in st.items():
            setattr(self, k, v)


def value_and_grad(potential: Potential, x: Tensor) -> tuple[Tensor, Tensor]:
    """U(x) (C,) and ∂U/∂x (C, d) by autograd (chains are independent, so the gradient of the sum)."""
    with torch.enable_grad():
        xr = x.detach().requires_grad_(True)
        u = potential(xr)
        (g,) = torch.autograd.grad(u.sum(), xr)
    return u.detach(), g


def hmc_transition(potential: Potential, x: Tensor, u: Tensor, g: Tensor, eps: Tensor, steps: int,
                   generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One HMC transition per chain: momentum p ~ N(0, I), ``steps`` leapfrog steps of size ``eps`` (C,),
    Metropolis accept/reject. Returns the new (x, U(x), ∂U/∂x) and the acceptance probabilities (C,)."""
    e = eps[:, None]
    p = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
    h0 = u + 0.5 * (p * p).sum(-1)
    xn, gn = x, g
    pn = p - 0.5 * e * g
    for i in range(steps):
        xn = xn + e * pn
        un, gn = value_and_grad(potential, xn)
        if i < steps - 1:
            pn = pn - e * gn
    pn = pn - 0.5 * e * gn
    dh = un + 0.5 * (pn * pn).sum(-1) - h0
    acc = torch.exp(-dh).clamp(max=1.0).nan_to_num(0.0)  # a divergence (non-finite energy) is rejected
    take = torch.rand(acc.shape, generator=generator, dtype=x.dtype, device=x.device) < acc
    t = take[:, None]
    return torch.where(t, xn, x), torch.where(take, un, u), torch.where(t, gn, g), acc


def initial_step_size(potential: Potential, x: Tensor, u: Tensor, g: Tensor, generator: torch.Generator,
                      eps: float = 0.1, tries: int = 30) -> Tensor:
    """Per chain, halve or double ε until one leapfrog step's acceptance crosses 1/2 (Hoffman & Gelman, Alg. 4)."""
    C = x.shape[0]
    e = torch.full((C,), eps, dtype=x.dtype, device=x.device)
    direction = None
    for _ in range(tries):
        p = torch.randn(x.shape, generator=generator, dtype=x.dtype, device=x.device)
        pn = p - 0.5 * e[:, None] * g
        xn = x + e[:, None] * pn
        un, gn = value_and_grad(potential, xn)
        pn = pn - 0.5 * e[:, None] * gn
        logr = (u + 0.5 * (p * p).sum(-1) - un - 0.5 * (pn * pn).sum(-1)).nan_to_num(-math.inf)
        up = logr > math.log(0.5)
        if direction is None:
            direction = up
        moving = up == direction
        if not bool(moving.any()):
            break
        e = torch.where(moving, torch.where(direction, 2 * e, e / 2), e)
    return e


def adaptation_windows(n: int) -> list[tuple[int, int]]:
    """Stan's (and numpyro's) warm-up windows over ``n`` transitions, first and last indices: a fast window (75), slow
    windows from 25 transitions doubling, a terminal fast window (50); 15% / 75% / 10% below 150; one below 20."""
    if n < 20:
        return [(0, n - 1)]
    init, term, base = 75, 50, 25
    if n < init + term + base:
        init, term = int(0.15 * n), int(0.1 * n)
        base = n - init - term
    out, end, size, start = [(0, init - 1)], n - term, base, init
    while start < end:
        cur = size
        if 3 * cur <= end - start:
            size = 2 * cur
        else:
            cur = end - start
        out.append((start, start + cur - 1))
        start += cur
    return [*out, (end, n - 1)]


class MassAdaptation:
    """Windowed diagonal mass-matrix adaptation (Stan; numpyro's ``dense_mass=False``): during the slow windows of
    :func:`adaptation_windows` the per-chain variance of every coordinate is accumulated (Welford); at a window's
    end the inverse mass matrix becomes its regularised estimate n/(n + 5)·var + 10⁻³·5/(n + 5), the step size is
    found again and its dual averaging restarts, and the next window starts afresh."""

    def __init__(self, burn_in: int, x: Tensor) -> None:
        windows = adaptation_windows(burn_in)
        slow = windows[1:-1]
        self.first, self.ends = (slow[0][0], {e for _, e in slow}) if slow else (burn_in, set())
        self.last = slow[-1][1] if slow else -1
        self.reset(x)

    def reset(self, x: Tensor) -> None:
        self.n, self.mean, self.m2 = 0, torch.zeros_like(x), torch.zeros_like(x)

    def update(self, i: int, x: Tensor) -> Tensor | None:
        """Transition ``i`` (from 0) of burn-in ended at ``x`` (C, d); the new inverse mass matrix at a window's end."""
        if not self.first <= i <= self.last:
            return None
        self.n += 1
        delta = x - self.mean
        self.mean = self.mean + delta / self.n
        self.m2 = self.m2 + delta * (x - self.mean)
        if i not in self.ends:
            return None
        n = self.n
        var = self.m2 / max(n - 1, 1)
        self.reset(x)
        return n / (n + 5.0) * var + 1e-3 * 5.0 / (n + 5.0)

    def state_dict(self) -> dict:
        return {"n": self.n, "mean": self.mean, "m2": self.m2}

    def load_state_dict(self, st: dict) -> None:
        self.n, self.mean, self.m2 = st["n"], st["mean"], st["m2"]


def scaled(potential: Potential, inv_mass: Tensor | None) -> tuple[Potential, Tensor]:
    """(Ũ, s): with inverse mass matrix diag(s²), HMC on x is unit-mass HMC on y = x/s with Ũ(y) = U(s·y)."""
    if inv_mass is None:
        return potential, torch.ones(())
    s = inv_mass.sqrt()
    return (lambda y: potential(y * s)), s


def metric_transition(kernel: str, potential: Potential, x: Tensor, u: Tensor, g: Tensor, eps: Tensor, steps: int,
                      max_depth: int, generator: torch.Generator, inv_mass: Tensor | None = None
                      ) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """:func:`transition` with the diagonal inverse mass matrix ``inv_mass`` (C, d) (None: the identity, exactly)."""
    if inv_mass is None:
        return transition(kernel, potential, x, u, g, eps, steps, max_depth, generator)
    pot, s = scaled(potential, inv_mass)
    y, u, gy, acc, n = transition(kernel, pot, x / s, u, g * s, eps, steps, max_depth, generator)
    return y * s, u, gy / s, acc, n


def metric_step_size(potential: Potential, x: Tensor, u: Tensor, g: Tensor, generator: torch.Generator,
                     inv_mass: Tensor | None) -> Tensor:
    """:func:`initial_step_size` under the inverse mass matrix ``inv_mass`` (None: the identity)."""
    pot, s = scaled(potential, inv_mass)
    return initial_step_size(pot, x / s, u, g * s, generator)


def transition(kernel: str, potential: Potential, x: Tensor, u: Tensor, g: Tensor, eps: Tensor, steps: int,
               max_depth: int, generator: torch.Generator) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """One ``kernel`` (hmc: ``steps`` leapfrog steps; nuts: trees of ≤ 2^``max_depth`` − 1) transition per chain:
    new (x, U, ∂U), the acceptance statistic dual averaging drives and the leapfrog steps taken (C,)."""
    if kernel == "nuts":
        return nuts_transition(lambda z: value_and_grad(potential, z), x, u, g, eps, max_depth, generator)
    if kernel != "hmc":
        raise ValueError(f"key 'sampler' = {kernel!r}: allowed: gibbs, hmc, nuts")
    out = hmc_transition(potential, x, u, g, eps, steps, generator)
    return (*out, torch.full_like(u, float(steps)))


def sample_potential(potential: Potential, x0: Tensor, generator: torch.Generator, burn_in: int, samples: int,
                     steps: int = 16, target_accept: float = 0.8, kernel: str = "hmc", max_depth: int = 10,
                     mass_matrix: str = "identity", record: dict | None = None) -> tuple[Tensor, Tensor]:
    """HMC or NUTS draws (C, samples, d) of exp(−U) from starts ``x0`` (C, d): ``burn_in`` adapting transitions,
    then ``samples`` kept ones at the averaged step sizes. Also returns the kept transitions' acceptance (C,).
    ``mass_matrix="diagonal"`` adapts a diagonal mass matrix in burn-in (:class:`MassAdaptation`); ``record``, if
    given, receives the kept transitions' leapfrog steps per chain (``leapfrogs``) and the inverse mass matrix."""
    u, g = value_and_grad(potential, x0)
    eps = initial_step_size(potential, x0, u, g, generator)
    da, x, acc_sum, out, inv, steps_sum = DualAveraging(eps, target_accept), x0, 0.0, [], None, 0.0
    mass = MassAdaptation(burn_in, x0) if _mass(mass_matrix) else None
    for i in range(burn_in + samples):
        x, u, g, acc, n = metric_transition(kernel, potential, x, u, g, eps, steps, max_depth, generator, inv)
        if i < burn_in:
            eps = da.update(acc) if i < burn_in - 1 else da.final()
            new = mass.update(i, x) if mass is not None else None
            if new is not None:
                inv = new
                eps = metric_step_size(potential, x, u, g, generator, inv)
                da = DualAveraging(eps, target_accept)
        else:
            acc_sum = acc_sum + acc
            steps_sum = steps_sum + n
            out.append(x)
    if record is not None:
        record.update(leapfrogs=steps_sum, inv_mass=inv)
    return torch.stack(out, 1), acc_sum / max(samples, 1)


def _mass(name: str) -> bool:
    if name not in ("identity", "diagonal"):
        raise ValueError(f"key 'mass_matrix' = {name!r}: allowed: identity, diagonal")
    return name == "diagonal"


class HMCSampler(GibbsSampler):
    """C chains of HMC or NUTS for one (problem, N, τ), with the Gibbs sampler's records, statistics and resuming.

    ``widths`` (N_1, ..., N_L, N_a) per layer (None: N everywhere); the prior variances are the problem's
    (``problem.var``). One ``sweep`` is one transition (``kernel`` hmc: ``steps`` leapfrog steps; nuts: a tree of
    at most ``max_depth`` doublings); the step sizes adapt during the ``burn_in`` transitions of :meth:`run` and are
    frozen after them, and so does a diagonal mass matrix with ``mass_matrix="diagonal"`` (:class:`MassAdaptation`).
    """

    def __init__(self, problem: Problem, N: int, tau: float, chains: int, generator: torch.Generator,
                 kern: PathKernels | None = None, monitor: int = 8, state: dict | None = None, *,
                 widths: Sequence[int] | None = None, steps: int = 16, target_accept: float = 0.8,
                 kernel: str = "hmc", max_depth: int = 10, mass_matrix: str = "identity") -> None:
        if N < 1 or chains < 1 or steps < 1:
            raise ValueError(f"need N ≥ 1, chains ≥ 1, steps ≥ 1; got N = {N}, chains = {chains}, steps = {steps}")
        if tau <= 0:
            raise ValueError(f"key 'tau' = {tau}: sampling needs a temperature > 0")
        if kernel not in ("hmc", "nuts") or max_depth < 1:
            raise ValueError(f"kernel {kernel!r}, max_depth {max_depth}: allowed kernels hmc, nuts; max_depth ≥ 1")
        L = problem.L
        self.widths = tuple(int(w) for w in widths) if widths is not None else (int(N),) * (L + 1)
        if len(self.widths) != L + 1 or min(self.widths) < 1:
            raise ValueError(f"key 'layer_widths': {L + 1} widths ≥ 1 (N_1, ..., N_L, N_a), got {list(self.widths)}")
        self.pb, self.N, self.tau, self.C, self.g = problem, int(N), float(tau), int(chains), generator
        self.kern = kern
        self.steps, self.target, self.kernel, self.max_depth = int(steps), float(target_accept), kernel, max_depth
        self.diagonal, self.inv_mass, self.mass = _mass(mass_matrix), None, None
        self.leapfrogs = 0.0  # leapfrog steps taken, summed over chains
        self.Xi, self.Xt = problem.Xi.to(F64), problem.Xi_test.to(F64)
        self.Xi_flat = self.Xi.reshape(-1, problem.D)
        self.y = problem.y.to(F64)
        self.monitor = torch.linspace(0, self.Xt.shape[0] - 1, min(monitor, self.Xt.shape[0]),
                                      device=self.Xt.device).round().long()
        self.sweeps, self.adapt_until, self.accept_sum = 0, 0, torch.zeros(self.C, dtype=F64, device=self.Xi.device)
        self._shapes()
        self._reset_stats()
        if state is not None:
            self.load_state_dict(state)
        else:
            w = Weights.prior(self.C, self.N, problem.D, problem.Hs, generator, widths=self.widths,
                              variances=problem.var)
            self.x = self._pack(w)
            self.u, self.grad = value_and_grad(self.potential, self.x)
            self.eps = initial_step_size(self.potential, self.x, self.u, self.grad, generator)
            self.da = DualAveraging(self.eps, self.target)
        self._set_weights()

    # -- parametrisation: whitened blocks η = θ/σ_b packed into one (C, d) vector ------------------------
    def _shapes(self) -> None:
        ns, D, var = self.widths, self.pb.D, self.pb.var
        self.blocks = [((ns[0], D), var[0])] + [((H, ns[i + 1], ns[i]), var[i + 1]) for i, H in enumerate(self.pb.Hs)]
        self.blocks.append(((ns[-1],), var[-1]))
        self.sizes = [math.prod(s) for s, _ in self.blocks]

    def _unpack(self, x: Tensor) -> Weights:
        parts = [p.reshape(x.shape[0], *s) * math.sqrt(v) for p, (s, v) in
                 zip(torch.split(x, self.sizes, dim=-1), self.blocks, strict=True)]
        return Weights(parts[0], parts[1:-1], parts[-1])

    def _pack(self, w: Weights) -> Tensor:
        ts = [w.V0, *w.V, w.a]
        return torch.cat([t.reshape(t.shape[0], -1) / math.sqrt(v) for t, (_, v) in
                          zip(ts, self.blocks, strict=True)], dim=-1)

    def potential(self, x: Tensor) -> Tensor:
        """−log posterior (C,) up to a constant: ‖f − Y‖²/(2τ) + ‖η‖²/2."""
        f = forward_paths(self.Xi, self._unpack(x))
        return ((f - self.y) ** 2).sum(-1) / (2 * self.tau) + 0.5 * (x * x).sum(-1)

    def _set_weights(self) -> None:
        self.w = self._unpack(self.x)
        self.b1 = effective_weights(self.w) / math.sqrt(self.pb.n * self.widths[0])  # f = Σ_π b_π·V⁰ξ^π/√D

    # -- the transition -------------------------------------------------------------------------------------
    def sweep(self) -> None:
        eps = self.eps
        self.x, self.u, self.grad, acc, n = metric_transition(self.kernel, self.potential, self.x, self.u, self.grad,
                                                              eps, self.steps, self.max_depth, self.g, self.inv_mass)
        self.leapfrogs += float(n.sum())
        self.sweeps += 1
        if self.sweeps <= self.adapt_until:
            self.eps = self.da.update(acc) if self.sweeps < self.adapt_until else self.da.final()
            new = self.mass.update(self.sweeps - 1, self.x) if self.mass is not None else None
            if new is not None:  # a slow window ended: the new metric, its step size, a fresh dual averaging
                self.inv_mass = new
                self.eps = metric_step_size(self.potential, self.x, self.u, self.grad, self.g, new)
                self.da = DualAveraging(self.eps, self.target)
        else:
            self.accept_sum += acc
        self._set_weights()

    def run(self, burn_in: int, samples: int, thin: int = 1, progress: Callable[[int], None] | None = None,
            checkpoint: Callable[[], None] | None = None):
        """As :meth:`GibbsSampler.run`; the ``burn_in`` transitions also adapt the step sizes."""
        self.adapt_until = burn_in  # burn_in = 0: the initial heuristic step sizes throughout
        if self.diagonal and self.mass is None:
            self.mass = MassAdaptation(burn_in, self.x)
        return super().run(burn_in, samples, thin, progress, checkpoint)

    def acceptance(self) -> Tensor:
        """Mean acceptance probability per chain over the transitions after burn-in."""
        return self.accept_sum / max(self.sweeps - self.adapt_until, 1)

    def state_dict(self) -> dict:
        mass = {"inv_mass": self.inv_mass, "mass": self.mass.state_dict()} if self.mass is not None else {}
        return {**super().state_dict(), "x": self.x, "u": self.u, "grad": self.grad, "eps": self.eps,
                "da": self.da.state_dict(), "accept_sum": self.accept_sum, "adapt_until": self.adapt_until,
                "leapfrogs": self.leapfrogs, **mass}

    def load_state_dict(self, st: dict) -> None:
        super().load_state_dict(st)
        self.x, self.u, self.grad, self.eps = st["x"], st["u"], st["grad"], st["eps"]
        self.accept_sum, self.adapt_until, self.leapfrogs = st["accept_sum"], st["adapt_until"], st["leapfrogs"]
        self.da = DualAveraging(self.eps, self.target)
        self.da.load_state_dict(st["da"])
        if self.diagonal and "mass" in st:
            self.inv_mass = st.get("inv_mass")
            self.mass = MassAdaptation(self.adapt_until, self.x)
            self.mass.load_state_dict(st["mass"])
