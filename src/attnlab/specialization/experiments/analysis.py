"""Measurements on trajectories and trained parameters: deviations, phase times, pruning, attention maps.

Trained parameters are dicts of numpy arrays with a leading seed axis S: m (S,H,F), r (S,H,H) (the raw,
unconstrained r of the flow), b (S,H), v (S,).
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core.rng import generator
from attnlab.core.trajectory import Trajectory, max_deviation
from attnlab.specialization import theory
from attnlab.specialization.model.activations import get_activation


def sim_theory_deviation(sim: Trajectory, th: Trajectory) -> dict[str, float]:
    """Largest |simulation − theory| over the common time grid (Prop. III.2): m, rr, b, v and the loss."""
    dev = max_deviation(sim, th, ["m", "rr", "b", "v", "loss"])
    return {f"max_d{k}": v for k, v in dev.items()}


def first_time(values: np.ndarray, times: np.ndarray, threshold: float) -> float:
    """First time at which ``values`` (T,) crosses ``threshold`` (linear interpolation between the two
    recorded points around the crossing); NaN if never."""
    values = np.asarray(values, dtype=float)
    hit = np.nonzero(values > threshold)[0]
    if not hit.size:
        return float("nan")
    i = hit[0]
    if i == 0:
        return float(times[0])
    frac = (threshold - values[i - 1]) / (values[i] - values[i - 1])
    return float(times[i - 1] + frac * (times[i] - times[i - 1]))


def specialization_time(m: np.ndarray, times: np.ndarray, threshold: float = 0.2, feature: int = 1) -> float:
    """τ^s: first time two heads differ by more than ``threshold`` along ``feature`` (Prop. III.4). m (T,H,F)."""
    col = m[..., feature]
    spread = col.max(-1) - col.min(-1)
    return first_time(spread, times, threshold)


def sign_patterns(m: np.ndarray, min_norm: float = 0.05) -> int:
    """Number of distinct sign patterns (sign m_h1, sign m_h2, ...) among heads with ||m_h|| > min_norm."""
    active = m[np.linalg.norm(m, axis=-1) > min_norm]
    return len({tuple(np.sign(row).astype(int)) for row in active})


def head_spread(m: np.ndarray) -> float:
    """max_{h,h'} ||m_h − m_h'|| (0 when all heads are identical)."""
    return float(np.linalg.norm(m[:, None] - m[None], axis=-1).max())


def monotone_fraction(grid: np.ndarray, axis: int, increasing: bool) -> float:
    """Fraction of neighbouring pairs along ``axis`` that move in the stated direction."""
    d = np.diff(grid, axis=axis)
    if d.size == 0:
        return float("nan")
    return float(np.mean(d >= 0 if increasing else d <= 0))


def final_params(tr: Trajectory) -> dict[str, np.ndarray]:
    """Final (m, r, b, v, loss) of a theory trajectory, seed axis first; r is the flow's raw r."""
    return {"m": tr["m"][-1], "r": np.asarray(tr.meta["r_final"]), "b": tr["b"][-1], "v": tr["v"][-1],
            "loss": tr["loss"][-1]}


def _t(x, device="cpu") -> torch.Tensor:
    return torch.as_tensor(np.asarray(x), dtype=torch.float64, device=device)


def eval_loss(params: dict, activation: str, law, L: int, n: int, seed: int, *, keep=None, device="cpu") -> np.ndarray:
    """Reduced loss (10) of trained parameters on fresh MC samples (App. B), per seed.

    ``keep`` (list of head indices) evaluates the pruned model: rows of m, r, b restricted to the kept heads
    (all columns of r, ξ is shared), i.e. head averages over kept heads only (Fig. 7; docs/studies/specialization.md).
    """
    m, r, b, v = (_t(params[k], device) for k in ("m", "r", "b", "v"))
    H = m.shape[1]
    samples = theory.mc_samples(law, L, H, n, seed=seed, symmetrize=True, device=device)
    prep = samples.prepare()
    if keep is not None:
        idx = torch.as_tensor(keep, device=device)
        m, r, b = m[:, idx], r[:, idx], b[:, idx]
    with torch.no_grad():
        return theory.reduced_loss(m, r, b, v, prep, activation).cpu().numpy()


def greedy_pruning(params: dict, activation: str, law, L: int, n: int, seed: int, device="cpu") -> np.ndarray:
    """Fig. 7: remove, one at a time, the head whose removal gives the lowest loss. Returns (S, H):
    the loss after pruning 0, 1, ..., H−1 heads, for each seed."""
    S, H = params["m"].shape[:2]
    curves = np.zeros((S, H))
    for s in range(S):
        one = {k: np.asarray(params[k])[s : s + 1] for k in ("m", "r", "b", "v")}
        kept = list(range(H))
        curves[s, 0] = eval_loss(one, activation, law, L, n, seed, keep=kept, device=device)[0]
        for k in range(1, H):
            trials = {h: eval_loss(one, activation, law, L, n, seed, keep=[x for x in kept if x != h],
                                   device=device)[0] for h in kept}
            best = min(trials, key=trials.get)
            kept.remove(best)
            curves[s, k] = trials[best]
    return curves


def _attention(params: dict, activation: str, chi: torch.Tensor) -> torch.Tensor:
    """σ(χ, b, v) for scores χ (S, N, H, L) with the trained b, v."""
    b, v = _t(params["b"]), _t(params["v"])
    return get_activation(activation)(chi, b[:, None, :], v[:, None])


def attention_maps(params: dict, activation: str, law, L: int, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """σ(χ, b, v; h)_ℓ for ``n`` fresh sequences in reduced space (χ = m χ* + r ξ, relevant token ε uniform).

    Returns maps (n, H, L) of the first seed and ε (n,)."""
    g = generator(seed)
    m, r = _t(params["m"])[:1], _t(params["r"])[:1]
    H, F = m.shape[1:]
    eps = torch.randint(L, (n,), generator=g)
    theta = law.sample(n, generator=g, dtype=torch.float64)
    chi_star = torch.randn(n, F, L, generator=g, dtype=torch.float64)
    chi_star[torch.arange(n), :, eps] += theta
    xi = torch.randn(n, H, L, generator=g, dtype=torch.float64)
    chi = torch.einsum("hf,nfl->nhl", m[0], chi_star) + torch.einsum("hk,nkl->nhl", r[0], xi)
    maps = _attention({k: np.asarray(params[k])[:1] for k in ("b", "v")}, activation, chi[None])[0]
    return maps.numpy(), eps.numpy()


def off_target_mass(params: dict, activation: str, law, L: int, n: int, seed: int) -> np.ndarray:
    """Average head-averaged attention on the irrelevant tokens, Σ_{ℓ≠ε} s_ℓ (Fig. 6, made a number), per seed."""
    m, r = _t(params["m"]), _t(params["r"])
    samples = theory.mc_samples(law, L, m.shape[1], n, seed=seed, symmetrize=True)
    prep = samples.prepare()
    with torch.no_grad():
        chi = theory.scores(m, r, prep).transpose(1, 2)  # (S, N, H, L), token 0 relevant
        s = _attention(params, activation, chi).mean(-2)  # (S, N, L)
        return (s[..., 1:].sum(-1) @ prep["w"]).numpy()
