"""Online mini-batch SGD of the single-location attention, Eqs. (5)-(6).

    res = simulate_sgd(FlipSpike(2, 2), H=2, L=5, D=500, activation="softmax", tau_max=30, seeds=[0, 1])
    res.trajectory["m"]       # (T, S, H, F) at τ = γ t;  also q, p, rr, b, v, loss
    res.K, res.b, res.v, res.K_star

Many seeds train together as one batched tensor program (stacked parameters (S, H, D), ...). The data are a
function of (seed, step, sequence) only (:class:`attnlab.specialization.data.SGDStream`: counter-based noise),
so a seed's result does not depend on the seeds trained beside it, on where a run was resumed, nor on the chunk:
each step's batch of N_b sequences is streamed in chunks of ``chunk`` sequences per seed (as many as the
device's free memory allows: :func:`attnlab.specialization.train.budget.sgd_chunk`) and the gradient accumulated.
Different chunks give the same data bit for bit and the same trajectory up to float round-off (the sums over
the batch are added in another order). The gradient is analytic in the big
contractions (autograd only through the activation on the small (S, n, H, L) scores): it measured as fast
as or faster than full autograd (see ``batch_loss_and_grad(method=...)``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from attnlab.core import rng
from attnlab.core.trajectory import Trajectory
from attnlab.specialization.data import SGDStream, ThetaLaw, noise, philox, sample_spikes
from attnlab.specialization.model import attend, get_activation, init_keys, order_parameters
from attnlab.specialization.train import fused, fused_philox
from attnlab.specialization.train.budget import sgd_chunk
from attnlab.specialization.train.gram import gram_head

Tensor = torch.Tensor
OBSERVABLES = ("m", "q", "p", "rr", "b", "v", "loss")
STREAM = "counter-v1"  # the data stream's version: a state from another stream (or noise method) is refused


def seed_generator(seed: int, stream: int, device: torch.device | str = "cpu") -> torch.Generator:
    """An independent torch.Generator for (seed, stream): stream 0 = spikes and init, 1 = data."""
    word = np.random.SeedSequence([int(seed), int(stream)]).generate_state(1, np.uint64)[0]
    return rng.generator(int(word) & (2**63 - 1), device)


# ---------------------------------------------------------------------------------------------
# loss and gradient of Eq. (6)
# ---------------------------------------------------------------------------------------------
def _chunk_sums(X: Tensor, y: Tensor, K: Tensor, b: Tensor, v: Tensor, activation: str):
    """Sums over the n sequences of a chunk of the per-sequence loss ||y − ŷ||²/D and of its gradients.

    X (S, n, L, D), y (S, n, D), K (S, H, D), b (S, H), v (S,). Returns (loss (S,), gK (S, H, D), gb, gv) with
    gb / gv None for an activation that ignores b / v. Analytic: with e = ŷ − y, ∂/∂s_ℓ = (2/D) eᵀX_ℓ, then
    autograd through σ on the small scores, and ∇_{k_h} = Σ_ℓ (∂/∂χ_hℓ) X_ℓ.
    """
    sigma = get_activation(activation)
    S, n, L, D = X.shape
    Xf = X.reshape(S, n * L, D)
    scores = (Xf @ K.mT).reshape(S, n, L, -1).mT  # (S, n, H, L)
    with torch.enable_grad():
        sc = scores.detach().requires_grad_()
        bb, vv = b.detach().requires_grad_(), v.detach().requires_grad_()
        s = sigma(sc, bb.unsqueeze(-2), vv.unsqueeze(-1)).mean(dim=-2)  # (S, n, L)
        e = (s.detach().unsqueeze(-2) @ X).squeeze(-2) - y  # ŷ − y, (S, n, D)
        g_s = (X @ e.unsqueeze(-1)).squeeze(-1) * (2.0 / D)
        g_sc, gb, gv = torch.autograd.grad(s, (sc, bb, vv), g_s, allow_unused=True)
    gK = g_sc.permute(0, 2, 1, 3).reshape(S, -1, n * L) @ Xf  # (S, H, D)
    return (e * e).sum(dim=(-2, -1)) / D, gK, gb, gv


def _chunk_sums_gram(X: Tensor, eps: Tensor, K: Tensor, b: Tensor, v: Tensor, activation: str):
    """:func:`_chunk_sums` for y = X_ε (the sequences of Eq. (2)), with one pass over X instead of three.

    With a = s − e_ε the error is ŷ − y = Σ_ℓ a_ℓ X_ℓ, so with the Gram matrices G = X Xᵀ (L×L per sequence)
    the loss is aᵀGa/D and ∂/∂s = 2Ga/D; X is read by the scores, by G and by ∇K only. ``eps`` (S, n).
    """
    S, n, L, D = X.shape
    Xf = X.reshape(S, n * L, D)
    scores = (Xf @ K.mT).reshape(S, n, L, -1).mT  # (S, n, H, L)
    loss, g_sc, gb, gv = gram_head(scores, X @ X.mT, eps, b, v, activation, D)
    gK = g_sc.permute(0, 2, 1, 3).reshape(S, -1, n * L) @ Xf  # (S, H, D)
    return loss, gK, gb, gv


def _chunk_sums_autograd(X: Tensor, y: Tensor, K: Tensor, b: Tensor, v: Tensor, activation: str):
    """Same as :func:`_chunk_sums` by plain autograd of Eq. (6) (reference and benchmark)."""
    with torch.enable_grad():
        params = [t.detach().requires_grad_() for t in (K, b, v)]
        out = attend(X, *params, activation)["output"]
        per_seed = ((y - out) ** 2).sum(dim=(-2, -1)) / X.shape[-1]
        grads = torch.autograd.grad(per_seed.sum(), params, allow_unused=True)
    return (per_seed.detach(), *grads)


def batch_loss_and_grad(
    X: Tensor,
    y: Tensor,
    K: Tensor,
    b: Tensor,
    v: Tensor,
    activation: str,
    *,
    chunk: int | None = None,
    method: str = "analytic",
) -> tuple[Tensor, Tensor, Tensor | None, Tensor | None]:
    """Mini-batch loss (6) per seed and its gradients, accumulated over chunks of ``chunk`` sequences.

    X (S, N_b, L, D), y (S, N_b, D), K (S, H, D), b (S, H), v (S,). Returns (loss (S,), ∇K, ∇b, ∇v) with
    ∇b / ∇v None when the activation ignores b / v. ``method``: 'analytic' or 'autograd'.
    """
    fn = {"analytic": _chunk_sums, "autograd": _chunk_sums_autograd}.get(method)
    if fn is None:
        raise ValueError(
            f"batch_loss_and_grad: method={method!r} is not allowed; use 'analytic' or 'autograd'"
        )
    n = X.shape[1]
    chunk = n if chunk is None else chunk
    total = None
    for lo in range(0, n, chunk):
        part = fn(X[:, lo : lo + chunk], y[:, lo : lo + chunk], K, b, v, activation)
        total = (
            part
            if total is None
            else [None if t is None else t + p for t, p in zip(total, part, strict=True)]
        )
    return tuple(None if t is None else t / n for t in total)  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------
# SGD
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SGDResult:
    """Recorded observables and the final stacked tensors (S = number of seeds).

    ``trajectory``: time τ = γt, observables m (T,S,H,F), q (T,S,H,H), p (T,S,F,F), rr = q − m p⁻¹mᵀ
    (T,S,H,H), b (T,S,H), v (T,S), loss (T,S). ``K`` (S,H,D), ``b`` (S,H), ``v`` (S,), ``K_star`` (S,F,D),
    ``K0`` (S,H,D) the initial keys. ``state``: resumable state at the last step (resume with a larger
    ``tau_max`` to extend the run exactly as if uninterrupted).
    """

    trajectory: Trajectory
    K: Tensor
    b: Tensor
    v: Tensor
    K_star: Tensor
    K0: Tensor
    state: dict[str, Tensor]


def record_steps(
    tau_max: float, gamma: float, record_taus=None, record_every: float | None = None
) -> list[int]:
    """Steps t to record at: round(τ/γ) for the given τ's, or every ``record_every`` in τ (+ the last)."""
    T = round(tau_max / gamma)
    if record_taus is not None:
        steps = sorted({round(float(tau) / gamma) for tau in record_taus})
        if steps and (steps[0] < 0 or steps[-1] > T):
            raise ValueError(f"record_taus must lie in [0, tau_max={tau_max}], got {list(record_taus)}")
        return steps
    every = max(1, round((1.0 if record_every is None else record_every) / gamma))
    return sorted({*range(0, T + 1, every), T})


def _fingerprint(*items) -> Tensor:
    digest = hashlib.sha256(repr(items).encode()).digest()
    return torch.tensor(int.from_bytes(digest[:8], "little", signed=True))


def simulate_sgd(
    law: ThetaLaw,
    *,
    H: int,
    L: int,
    D: int,
    activation: str = "softmax",
    tau_max: float,
    gamma: float = 0.02,
    eta: float = 1.0,
    batch: int | None = None,
    seeds: Sequence[int] = (0,),
    device: torch.device | str = "cpu",
    dtype: torch.dtype = torch.float32,
    record_taus: Sequence[float] | None = None,
    record_every: float | None = None,
    chunk: int | None = None,
    orthonormal_spikes: bool = False,
    noise_method: str | None = None,
    fused_step: bool | None = None,
    state: dict[str, Tensor] | None = None,
    on_step: Callable[[int, Callable[[], dict[str, Tensor]]], None] | None = None,
    checkpoint_every: int = 100,
    progress: Callable[[int, int], None] | None = None,
) -> SGDResult:
    """Online SGD (5) on the mini-batch loss (6), N_b = ``batch`` (default D) fresh sequences per step.

    Runs t = 0..T-1 updates, T = round(tau_max/γ), for all ``seeds`` at once. Per seed: K* and K(0) (Sec. II,
    scale ``eta``) from ``seed_generator(seed, 0)``, data from :class:`SGDStream` (stream 1); b = 0, v = 1.
    Records at the steps of :func:`record_steps` (default every Δτ = 1) the order parameters and ``loss`` =
    the loss (6) of the mini-batch drawn at that step, with the parameters before its update: an unbiased
    estimate of the population loss (7) (at t = T one more batch is drawn for it).
    ``chunk``: sequences per seed per chunk (default :func:`attnlab.specialization.train.budget.sgd_chunk`: what fits);
    the data do not depend on it. ``noise_method``: the noise's generator (:mod:`~attnlab.specialization.data.noise`;
    default: mt19937 groups on the CPU, splitmix64 words on a GPU; ``"philox"``: Triton's ``tl.randn4x`` at each
    token's counter, :mod:`~attnlab.specialization.data.philox`). ``fused_step``: make the tokens inside the step's
    Triton kernels (:mod:`~attnlab.specialization.train.fused` for splitmix64,
    :mod:`~attnlab.specialization.train.fused_philox` for philox; default: where Triton and CUDA are, in float32),
    else chunks of ``chunk`` sequences in torch (the fallback without Triton).
    ``state``: resume from a state given by ``on_step`` or ``SGDResult.state`` (bit-identical results).
    ``on_step(step, state_fn)`` is called after every ``checkpoint_every``-th update; ``progress(done, T)``
    after every update.
    """
    get_activation(activation)
    if not seeds or gamma <= 0 or tau_max < 0 or min(H, L, D) < 1:
        raise ValueError(
            f"simulate_sgd: need seeds, gamma > 0, tau_max >= 0, H, L, D >= 1; got "
            f"seeds={list(seeds)}, gamma={gamma}, tau_max={tau_max}, H={H}, L={L}, D={D}"
        )
    F, S, N_b = law.F, len(seeds), D if batch is None else int(batch)
    T = round(tau_max / gamma)
    device = torch.device(device)
    stream = philox.PhiloxStream if noise_method == "philox" else SGDStream
    data = stream(law, seeds, N_b, L, D, device, dtype, noise_method)
    chunk = (sgd_chunk(S, N_b, L, D, H, F, dtype, device, method=data.method) if chunk is None
             else max(1, min(int(chunk), N_b)))
    rec = record_steps(tau_max, gamma, record_taus, record_every)
    fp = _fingerprint(STREAM, data.method, law, H, L, D, activation, gamma, eta, N_b, list(seeds), str(dtype),
                      orthonormal_spikes)
    if data.method == "philox":
        philox.check_counters(T + 1, N_b, L, D)
    elif (T + 1) * N_b * data.W >= 2**63:
        raise ValueError(f"simulate_sgd: (T+1)·N_b·⌈L·D/2⌉ = {(T + 1) * N_b * data.W:.3g} exceeds the 2^63 counters")

    if state is None:
        init = [seed_generator(s, 0, device) for s in seeds]
        K_star = torch.stack(
            [sample_spikes(F, D, generator=g, dtype=dtype, orthonormal=orthonormal_spikes) for g in init]
        )
        K = torch.stack([init_keys(H, D, generator=g, eta=eta, dtype=dtype) for g in init])
        K0 = K.clone()
        b, v = torch.zeros(S, H, device=device, dtype=dtype), torch.ones(S, device=device, dtype=dtype)
        start, records = 0, {name: [] for name in ("step", *OBSERVABLES)}
    else:
        if int(state["fingerprint"]) != int(fp):
            raise ValueError(
                "simulate_sgd: state comes from a run with other settings (law, H, L, D, activation, "
                "gamma, eta, batch, seeds, dtype, orthonormal_spikes or the data stream's version differ)"
            )
        K_star, K0, K, b, v = (state[k].to(device).clone() for k in ("K_star", "K0", "K", "b", "v"))
        start = int(state["step"])
        keep = state["rec_step"] < start
        records = {name: list(state[f"rec_{name}"][keep].unbind(0)) for name in ("step", *OBSERVABLES)}

    def state_fn() -> dict[str, Tensor]:
        out = {"step": torch.tensor(t), "fingerprint": fp, "K_star": K_star, "K0": K0, "K": K, "b": b, "v": v}
        out = {k: x.detach().clone() for k, x in out.items()}
        for name, rows in records.items():
            out[f"rec_{name}"] = torch.stack(rows) if rows else torch.empty(0)
        return out

    fusable = {"splitmix64": fused.available(device, D), "philox": fused_philox.available(device)}
    if fused_step is None:
        fused_step = fusable.get(data.method, False) and dtype == torch.float32
    if fused_step and not fusable.get(data.method, False):
        raise ValueError("simulate_sgd: fused_step needs Triton (CUDA) and noise_method='philox', or D even and "
                         "noise_method='splitmix64'")
    chunk = N_b if fused_step else chunk  # the fused kernels hold no tokens: one chunk per step
    X_buf = None if fused_step else torch.empty(S, chunk, L, D, device=device, dtype=dtype)
    t, final_state = start, (state if state is not None and start > T else None)
    while t <= T:
        if t == T:
            final_state = state_fn()
            if t not in rec:
                break
        # one step: the batch of every seed in chunks (the data depend on (seed, t, sequence) only), sums
        eps, theta = data.labels(t)
        sums = None
        for lo in range(0, N_b, chunk):
            if fused_step and data.method == "philox":
                part = fused_philox.step_sums(data.philox_keys, t, N_b, eps, theta, K_star, K, b, v, activation, L)
            elif fused_step:
                part = fused.chunk_sums(noise.step_keys(data.keys, t, N_b, data.W), lo, N_b, eps[:, lo : lo + chunk],
                                        theta[:, lo : lo + chunk], K_star, K, b, v, activation, L)
            else:
                X = data.tokens(X_buf[:, : min(chunk, N_b - lo)], t, lo, eps, theta, K_star)
                part = _chunk_sums_gram(X, eps[:, lo : lo + chunk], K, b, v, activation)
            sums = (
                part
                if sums is None
                else [None if a is None else a + c for a, c in zip(sums, part, strict=True)]
            )
        loss, gK, gb, gv = (None if a is None else a / N_b for a in sums)
        if t in rec:
            op = order_parameters(K, K_star)
            row = {
                "step": torch.tensor(t),
                "m": op.m,
                "q": op.q,
                "p": op.p,
                "rr": op.rr,
                "b": b.double(),
                "v": v.double(),
                "loss": loss.double(),
            }
            for name, value in row.items():
                records[name].append(value.detach().cpu().clone())
        if t == T:
            break
        K = K - gamma * gK  # Eq. (5); b (v) stay frozen for activations that ignore them
        b = b if gb is None else b - gamma * gb
        v = v if gv is None else v - gamma * gv
        t += 1
        if progress is not None:
            progress(t, T)
        if on_step is not None and t % checkpoint_every == 0:
            on_step(t, state_fn)

    steps = torch.stack(records["step"]).double() if records["step"] else torch.empty(0)
    obs = {name: torch.stack(records[name]) for name in OBSERVABLES if records[name]}
    meta = {
        "D": D,
        "H": H,
        "L": L,
        "F": F,
        "activation": activation,
        "law": law.name,
        "batch": N_b,
        "gamma": gamma,
        "eta": eta,
        "n_seeds": S,
        "seeds": tuple(int(s) for s in seeds),
        "chunk": chunk,
        "noise": data.method,
        "fused_step": bool(fused_step),
    }
    traj = Trajectory(steps * gamma, obs, time_name="tau", source="simulation", meta=meta)
    return SGDResult(traj, K.detach(), b.detach(), v.detach(), K_star, K0, final_state)
