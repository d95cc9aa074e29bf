"""Posterior sampling of the network (Eqs. (8)/(19)): an exact blocked Gibbs sampler, vectorised over chains.

Given all other layers the output is linear in each weight block — a, {V^{Lh}}_h, ..., {V^{1h}}_h, V⁰ — and
the prior is Gaussian, so every conditional is an exact Gaussian. A block θ_b with f = Φ_b θ_b is
drawn by the algorithm of Bhattacharya, Chakraborty & Mallick (2016), O(P²d + P³) for d parameters:

    u ~ N(0, σ²I_d), δ ~ N(0, I_P), v = Φu/√τ + δ, solve (σ²ΦΦᵀ/τ + I) w = Y/√τ − v, θ = u + σ²Φᵀw/√τ.

The design matrices come from the forward partial-path representations z^(ℓ) and the backward row vectors
b^(ℓ); for V⁰ the Gram matrix ΦΦᵀ = Σ_ππ' (b_π·b_π') C_ππ' is read off the precomputed path
kernels, so no N·D-wide design matrix is formed. Sweep order a, V^L, ..., V^1, V⁰; chains start from the prior.

From each kept sample the sampler records the test predictions f(x*), the training error and the empirical
order parameter U = N⁻¹ V_eff V_effᵀ = n b^(1) b^(1)ᵀ (Eq. (13)). :func:`simulate` is the paired API's simulation
side: the same observables, with the same names, as :func:`attnlab.paths.theory.saddle.predict`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.paths.model import Weights
from attnlab.paths.theory.kernels import PathKernels, Problem

Tensor = torch.Tensor
F64 = torch.float64


def bcm_sample(Phi: Tensor | None, y: Tensor, tau: float, sigma2: float, generator: torch.Generator, *,
               gram: Tensor | None = None, apply: Callable[[Tensor], Tensor] | None = None,
               apply_t: Callable[[Tensor], Tensor] | None = None, d: int | None = None) -> Tensor:
    """One draw per chain of θ ~ N(m, Σ), Σ⁻¹ = I/σ² + ΦᵀΦ/τ, m = ΣΦᵀy/τ (Bhattacharya et al. 2016).

    ``Phi`` (C, P, d) explicit, or implicit through ``gram`` (C, P, P) = ΦΦᵀ, ``apply`` (θ ↦ Φθ) and
    ``apply_t`` (w ↦ Φᵀw) with parameter dimension ``d``. Returns (C, d).
    """
    dev, s = y.device, math.sqrt(sigma2)
    if Phi is not None:
        C, P, d = Phi.shape
        gram = Phi @ Phi.mT
        apply = lambda th: (Phi @ th[..., None])[..., 0]  # noqa: E731
        apply_t = lambda w: (Phi.mT @ w[..., None])[..., 0]  # noqa: E731
    assert gram is not None and apply is not None and apply_t is not None and d is not None
    C, P = gram.shape[0], gram.shape[1]
    rt = math.sqrt(tau)
    u = s * torch.randn(C, d, generator=generator, device=dev, dtype=F64)
    delta = torch.randn(C, P, generator=generator, device=dev, dtype=F64)
    v = apply(u) / rt + delta
    A = gram * (sigma2 / tau) + torch.eye(P, dtype=F64, device=dev)
    Lc, info = torch.linalg.cholesky_ex(A)
    if int(info.max()) != 0:
        raise FloatingPointError("σ²ΦΦᵀ/τ + I is not positive definite: non-finite weights in the sampler")
    w = torch.cholesky_solve((y / rt - v)[..., None], Lc)[..., 0]
    return u + sigma2 * apply_t(w) / rt


@dataclass
class SampleStats:
    """What a Gibbs run measured at one width: posterior means and the traces behind the diagnostics."""

    f_mean: Tensor  # (P*,) sample mean of f(x*)
    f_var: Tensor  # (P*,) sample variance of f(x*)
    U: Tensor  # (n, n) sampled order parameter
    U_trace: Tensor  # (C, S, n, n) per kept sample
    f_trace: Tensor  # (C, S, k) f at k monitored test points
    mse_trace: Tensor  # (C, S) training mean squared error
    sweeps: int

    def rhat(self) -> float:
        """Largest split-R̂ over the U entries and the monitored f's."""
        return float(np.nanmax(split_rhat(self._monitored())))

    def ess(self) -> float:
        """Smallest bulk effective sample size over the same quantities."""
        return float(np.nanmin(effective_sample_size(self._monitored())))

    def _monitored(self) -> np.ndarray:
        n = self.U_trace.shape[-1]
        iu = np.triu_indices(n)
        U = self.U_trace.cpu().numpy()[:, :, iu[0], iu[1]]
        return np.concatenate([U, self.f_trace.cpu().numpy()], axis=-1)


class GibbsSampler:
    """C chains of the blocked Gibbs sampler for one (problem, N, τ): one width N, and per-block prior variances
    ``problem.var`` (σ_0² for V⁰, σ_ℓ² for V^ℓ, σ_a² for a; one σ² by default). Per-layer widths: :mod:`.hmc`.

    Resuming: pass ``state=sampler.state_dict()`` together with the generator's saved state; the constructor
    then draws nothing and the run continues the uninterrupted random sequence.
    """

    def __init__(self, problem: Problem, N: int, tau: float, chains: int, generator: torch.Generator,
                 kern: PathKernels | None = None, monitor: int = 8, state: dict | None = None) -> None:
        if N < 1 or chains < 1:
            raise ValueError(f"need N ≥ 1 and chains ≥ 1, got N = {N}, chains = {chains}")
        if tau <= 0:
            raise ValueError(f"key 'tau' = {tau}: sampling needs a temperature > 0")
        self.pb, self.N, self.tau, self.C, self.g = problem, int(N), float(tau), int(chains), generator
        self.kern = kern or PathKernels(problem.Xi, problem.sigma2)
        self.Xi, self.Xt = problem.Xi.to(F64), problem.Xi_test.to(F64)
        self.Xi_flat = self.Xi.reshape(-1, problem.D)
        self.y = problem.y.to(F64)
        self.monitor = torch.linspace(0, self.Xt.shape[0] - 1, min(monitor, self.Xt.shape[0]),
                                      device=self.Xt.device).round().long()
        self.sweeps = 0
        self._reset_stats()
        if state is not None:  # resume: no draw from the generator, whose state the caller restored
            self.load_state_dict(state)
        else:
            self.w = Weights.prior(self.C, self.N, problem.D, problem.Hs, generator, problem.sigma2,
                                   variances=problem.variances)

    def _reset_stats(self) -> None:
        Pt, n = self.Xt.shape[0], self.pb.n
        dev = self.Xi.device
        self.sum_f = torch.zeros(self.C, Pt, dtype=F64, device=dev)
        self.sum_f2 = torch.zeros(self.C, Pt, dtype=F64, device=dev)
        self.U_tr: list[Tensor] = []
        self.f_tr: list[Tensor] = []
        self.mse_tr: list[Tensor] = []
        del n

    # -- the sweep ----------------------------------------------------------------------------------
    def _forward(self) -> list[Tensor]:
        """z^(ℓ) for ℓ = 1..L+1: (C, P, n_ℓ, N) with n_{L+1} = 1."""
        w, N, D, C, P = self.w, self.N, self.pb.D, self.C, self.pb.P
        z = (self.Xi_flat @ w.V0.mT).view(C, P, -1, N) / math.sqrt(D)
        zs = [z]
        for V in w.V:
            H = V.shape[1]
            zh = z.reshape(C, P, H, -1, N).transpose(1, 2).reshape(C, H, -1, N)  # (C, H, P·q, N)
            z = (zh @ V.mT).sum(1).view(C, P, -1, N) / math.sqrt(N * H)
            zs.append(z)
        return zs

    def sweep(self) -> None:
        w, N, C, var, tau, g = self.w, self.N, self.C, self.pb.var, self.tau, self.g
        zs = self._forward()
        # readout a: f = Φ_a a with Φ_a = z^(L+1)/√N
        w.a = bcm_sample(zs[-1][:, :, 0, :] / math.sqrt(N), self.y, tau, var[-1], g)
        b = w.a[:, None, :] / math.sqrt(N)  # b^(L+1): (C, 1, N)
        for ell in range(len(w.V) - 1, -1, -1):
            H = w.V[ell].shape[1]
            Q = _row_basis(b)  # f sees V^ℓ only through Qᵀ V^ℓ: r ≤ n_{ℓ+1} rows instead of N
            bt = b @ Q  # (C, n_{ℓ+1}, r)
            z = zs[ell].reshape(C, -1, b.shape[1], N)  # z^(ℓ) as (C, P·H, n_{ℓ+1}, N)
            Phi = (bt.mT[:, None] @ z).reshape(C, self.pb.P, -1) / math.sqrt(N * H)  # [c, p, (h, k, j)]
            Vr = bcm_sample(Phi, self.y, tau, var[ell + 1], g).reshape(C, H, Q.shape[-1], N)
            w.V[ell] = _complete(Q[:, None], Vr, var[ell + 1], g)
            b = (b[:, None] @ w.V[ell]).reshape(C, -1, N) / math.sqrt(N * H)
        self._sample_V0(b)
        self.b1 = b
        self.sweeps += 1

    def _sample_V0(self, b: Tensor) -> None:
        """V⁰ | rest with Φ[μ,(i,d)] = D^{-1/2} Σ_π b_{π,i} ξ^{πμ}_d, reduced to the row space of b^(1) and with
        its Gram matrix ΦΦᵀ = Σ_ππ' (b_π·b_π') C_ππ' read off the path kernels."""
        D, C, P = self.pb.D, self.C, self.kern.P
        Q = _row_basis(b)
        bt = b @ Q  # (C, n, r)
        r = bt.shape[-1]
        M = bt @ bt.mT  # (C, n, n): b_π · b_π'
        if self.kern.mode == "blocks":
            iu = self.kern.iu
            gram = (M[:, iu[0], iu[1]] @ self.kern.blocks).reshape(C, P, P)
        else:
            B = torch.einsum("cak,pad->cpkd", bt, self.Xi).reshape(C, P, -1)
            gram = B @ B.mT / D

        def apply(th: Tensor) -> Tensor:
            return self._paths_dot(self.Xi_flat, th.reshape(C, r, D), bt)

        def apply_t(wv: Tensor) -> Tensor:
            xw = (wv @ self.Xi.reshape(P, -1)).view(C, -1, D)  # Σ_μ w_μ ξ^{πμ}: (C, n, D)
            return (bt.mT @ xw).reshape(C, -1) / math.sqrt(D)

        Vr = bcm_sample(None, self.y, self.tau, self.pb.var[0], self.g, gram=gram, apply=apply, apply_t=apply_t,
                        d=r * D).reshape(C, r, D)
        self.w.V0 = _complete(Q, Vr, self.pb.var[0], self.g)

    def _paths_dot(self, Xi_flat: Tensor, V0: Tensor, b: Tensor) -> Tensor:
        """Σ_π b_π · V0 ξ^π / √D for every example: Xi_flat (P·n, D), V0 (C, N, D), b (C, n, N) → (C, P)."""
        C, n, N = b.shape
        z = (Xi_flat @ V0.mT).view(C, -1, n, N)
        return (z * b[:, None]).sum((2, 3)) / math.sqrt(self.pb.D)

    def outputs(self, Xi: Tensor) -> Tensor:
        """f (C, P) of the current weights on path features Xi, from b^(1): f = Σ_π b_π·V⁰ξ^π/√D."""
        return self._paths_dot(Xi.reshape(-1, Xi.shape[-1]), self.w.V0, self.b1)

    def record(self) -> None:
        f = self.outputs(self.Xt)
        self.sum_f += f
        self.sum_f2 += f * f
        self.f_tr.append(f[:, self.monitor])
        self.U_tr.append(self.pb.n * self.b1 @ self.b1.mT)
        self.mse_tr.append(((self.outputs(self.Xi) - self.y) ** 2).mean(-1))

    # -- running ----------------------------------------------------------------------------------------
    def run(self, burn_in: int, samples: int, thin: int = 1, progress: Callable[[int], None] | None = None,
            checkpoint: Callable[[], None] | None = None) -> SampleStats:
        """``burn_in`` sweeps, then ``samples`` kept samples per chain, one every ``thin`` sweeps.

        Resumes where a loaded state stopped. ``progress(sweeps_done)`` and ``checkpoint()`` are called after
        every sweep (the caller decides how often to really save).
        """
        if thin < 1 or samples < 1 or burn_in < 0:
            raise ValueError(f"need burn_in ≥ 0, samples ≥ 1, thin ≥ 1; got {burn_in}, {samples}, {thin}")
        total = burn_in + samples * thin
        while self.sweeps < total:
            self.sweep()
            if self.sweeps > burn_in and (self.sweeps - burn_in) % thin == 0:
                self.record()
            if progress is not None:
                progress(self.sweeps)
            if checkpoint is not None:
                checkpoint()
        return self.stats()

    def extend(self, samples: int, thin: int = 1, progress: Callable[[int], None] | None = None,
               checkpoint: Callable[[], None] | None = None) -> SampleStats:
        """Append ``samples`` kept samples per chain to the chains so far (a finished or loaded run), one every
        ``thin`` sweeps: the same draws as a longer :meth:`run` with that ``thin`` from the start."""
        burn_in = self.sweeps - len(self.U_tr) * thin
        if burn_in < 0:
            raise ValueError(f"the chains kept {len(self.U_tr)} samples in {self.sweeps} sweeps: not thin = {thin}")
        return self.run(burn_in, len(self.U_tr) + samples, thin, progress, checkpoint)

    def stats(self) -> SampleStats:
        S = len(self.U_tr)
        if S == 0:
            raise RuntimeError("no samples recorded yet")
        mean_c = self.sum_f / S
        f_mean = mean_c.mean(0)
        f_var = (self.sum_f2 / S).mean(0) - f_mean**2
        U_trace = torch.stack(self.U_tr, 1)
        return SampleStats(f_mean, f_var * S * self.C / max(S * self.C - 1, 1), U_trace.mean((0, 1)), U_trace,
                           torch.stack(self.f_tr, 1), torch.stack(self.mse_tr, 1), self.sweeps)

    def state_dict(self) -> dict:
        w = self.w
        return {"V0": w.V0, "V": list(w.V), "a": w.a, "sweeps": self.sweeps, "b1": getattr(self, "b1", None),
                "sum_f": self.sum_f, "sum_f2": self.sum_f2, "U_tr": self.U_tr, "f_tr": self.f_tr,
                "mse_tr": self.mse_tr}

    def load_state_dict(self, st: dict) -> None:
        self.w = Weights(st["V0"], list(st["V"]), st["a"])
        self.sweeps, self.sum_f, self.sum_f2 = st["sweeps"], st["sum_f"], st["sum_f2"]
        self.U_tr, self.f_tr, self.mse_tr = list(st["U_tr"]), list(st["f_tr"]), list(st["mse_tr"])
        if st["b1"] is not None:
            self.b1 = st["b1"]


def _row_basis(b: Tensor) -> Tensor:
    """Orthonormal basis Q (C, N, r), r = min(m, N), of a space containing the rows of b (C, m, N)."""
    return torch.linalg.qr(b.mT)[0]


def _complete(Q: Tensor, Wr: Tensor, sigma2: float, generator: torch.Generator) -> Tensor:
    """W with Qᵀ W = Wr and the rest of W drawn from its (isotropic) prior: W = W' + Q (Wr − Qᵀ W').

    Exact because the likelihood depends on W only through Qᵀ W and the prior N(0, σ²) factorises over any
    orthonormal split of the rows.
    """
    shape = (*Wr.shape[:-2], Q.shape[-2], Wr.shape[-1])
    Wp = math.sqrt(sigma2) * torch.randn(shape, generator=generator, device=Wr.device, dtype=F64)
    return Wp + Q @ (Wr - Q.mT @ Wp)


# -- diagnostics ------------------------------------------------------------------------------------


def split_rhat(x: np.ndarray) -> np.ndarray:
    """Split-R̂ (Gelman et al.) of traces x (C, S, k): each chain cut in two halves; one value per quantity."""
    S = x.shape[1]
    h = S // 2
    if h < 2:
        return np.full(x.shape[2:], np.nan)
    y = np.concatenate([x[:, :h], x[:, S - h:]], axis=0)  # (2C, h, k)
    W = y.var(axis=1, ddof=1).mean(0)
    B = h * y.mean(1).var(axis=0, ddof=1)
    var = (h - 1) / h * W + B / h
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt(var / W)


def effective_sample_size(x: np.ndarray) -> np.ndarray:
    """Bulk ESS of traces x (C, S, k) from the chain-combined autocorrelation, Geyer's initial monotone sequence."""
    C, S = x.shape[:2]
    xc = x - x.mean(1, keepdims=True)
    nfft = 1 << (2 * S - 1).bit_length()
    f = np.fft.rfft(xc, n=nfft, axis=1)
    acov = np.fft.irfft(f * np.conj(f), n=nfft, axis=1)[:, :S] / S  # (C, S, k)
    W = x.var(axis=1, ddof=1).mean(0)
    B_over_S = x.mean(1).var(axis=0, ddof=1) if C > 1 else np.zeros_like(W)
    var = (S - 1) / S * W + B_over_S
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1 - (W - acov.mean(0)) / var  # (S, k)
    rho[0] = 1.0
    m = (S - 1) // 2
    pairs = rho[0:2 * m:2] + rho[1:2 * m:2]  # Γ_t, t = 0..m-1
    out = np.empty(x.shape[2:])
    for j in np.ndindex(*x.shape[2:]):
        g = pairs[(slice(None), *j)]
        neg = np.nonzero(g <= 0)[0]
        g = g[: neg[0]] if len(neg) else g
        g = np.minimum.accumulate(g) if len(g) else g
        tau_int = -1 + 2 * g.sum() if len(g) else 1.0
        out[j] = C * S / max(tau_int, 1.0 / np.log10(max(C * S, 10)))
    return out


# -- the paired API ------------------------------------------------------------------------------------


def simulate(problem: Problem, Ns: Sequence[int], tau: float | Sequence[float], *, chains: int = 2,
             burn_in: int = 1000, samples: int = 500, thin: int = 4, generator: torch.Generator,
             kern: PathKernels | None = None, progress: Callable[[int, int], None] | None = None) -> Trajectory:
    """Gibbs-sample the posterior at every width in ``Ns`` (the paired API's simulation side).

    Returns a :class:`Trajectory` over ``N`` with ``U``, ``accuracy``, ``gen_error``, ``f_mean``, ``f_var`` —
    the names of :func:`attnlab.paths.theory.saddle.predict` — plus ``rhat``, ``ess``, ``train_mse`` and ``tau``.
    """
    kern = kern or PathKernels(problem.Xi, problem.sigma2)
    taus = [float(tau)] * len(Ns) if np.isscalar(tau) else [float(t) for t in tau]
    obs: dict[str, list] = {k: [] for k in ("U", "accuracy", "gen_error", "f_mean", "f_var", "rhat", "ess",
                                            "train_mse", "tau")}
    for i, (N, t) in enumerate(zip(Ns, taus, strict=True)):
        sampler = GibbsSampler(problem, int(N), t, chains, generator, kern)
        cb = (lambda k, i=i: progress(i, k)) if progress else None
        st = sampler.run(burn_in, samples, thin, progress=cb)
        add_stats(obs, st, problem.y_test, t)
    return Trajectory(np.asarray(Ns, dtype=float), {k: np.asarray(v) for k, v in obs.items()}, time_name="N",
                      source="simulation", meta={"chains": chains, "burn_in": burn_in, "samples": samples,
                                                 "thin": thin})


def add_stats(obs: dict[str, list], st: SampleStats, y_test: Tensor, tau: float) -> None:
    """Append one width's observables (the vocabulary of ``theory.predict``) to ``obs``."""
    y = y_test.to(st.f_mean)
    obs["U"].append(st.U.cpu().numpy())
    obs["accuracy"].append(float((torch.sign(st.f_mean) == y).to(F64).mean()))
    obs["gen_error"].append(float(((st.f_mean - y) ** 2 + st.f_var).mean()))
    obs["f_mean"].append(st.f_mean.cpu().numpy())
    obs["f_var"].append(st.f_var.cpu().numpy())
    obs["rhat"].append(st.rhat())
    obs["ess"].append(st.ess())
    obs["train_mse"].append(float(st.mse_trace.mean()))
    obs["tau"].append(tau)
