"""Time-series detectors for the training dynamics (paper 4 Sec. 4.3 two-stage learning, Sec. 4.4 spikes; the
statistics of docs/studies/clustering.md).

Inputs are numpy-like curves with time first and seeds second, as stored in a ``History``: epoch metrics
(E, S), step metrics (T, S); a 1-D curve is one seed and gives a squeezed result. Epoch curves are assumed
to hold one entry per epoch, entry 0 = before training; ``epochs`` maps entries to epoch numbers where a
result is an epoch (default ``arange(E)``). Epochs that never happen are NaN. Pure numpy, no plotting.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def _as2d(a: object) -> tuple[np.ndarray, bool]:
    arr = np.asarray(a, dtype=float)
    return (arr[:, None], True) if arr.ndim == 1 else (arr, False)


def _epochs(epochs: object, n: int) -> np.ndarray:
    return np.arange(n, dtype=float) if epochs is None else np.asarray(epochs, dtype=float)


def _out(v: np.ndarray, one: bool) -> np.ndarray:
    return v[0] if one else v


# ----------------------------------------------------------------------------------------------- two stages
def first_at_least(series: object, threshold: float, epochs: object = None) -> np.ndarray:
    """First epoch with series ≥ threshold, per seed (S,); NaN if never."""
    a, one = _as2d(series)
    ep = _epochs(epochs, len(a))
    hit = a >= threshold
    first = np.where(hit.any(0), ep[hit.argmax(0)], np.nan)
    return _out(first, one)


def t_cluster(cluster_score: object, epochs: object = None, threshold: float = 0.9) -> np.ndarray:
    """First epoch with cluster_score ≥ 0.9 (paper Sec. 4.3; docs checks). (S,)"""
    return first_at_least(cluster_score, threshold, epochs)


def t_fit(test_acc: object, epochs: object = None, threshold: float = 0.9) -> np.ndarray:
    """First epoch with test accuracy ≥ 0.9 (paper Sec. 4.3; docs checks). (S,)"""
    return first_at_least(test_acc, threshold, epochs)


def smooth(series: object, window: int = 5) -> np.ndarray:
    """Centred moving average over ``window`` entries (shrinking at the ends), same shape as the input."""
    a, one = _as2d(series)
    n, half = len(a), window // 2
    c = np.concatenate([np.zeros((1, a.shape[1])), np.cumsum(a, 0)])
    i = np.arange(n)
    lo, hi = np.clip(i - half, 0, n), np.clip(i + window - half, 0, n)
    out = (c[hi] - c[lo]) / (hi - lo)[:, None]
    return out[:, 0] if one else out


def drop_epochs(loss: object, n: int = 2, window: int = 5, epochs: object = None,
                min_separation: float | None = None) -> np.ndarray:
    """The ``n`` epochs where the smoothed (window 5) loss falls fastest (paper Sec. 4.3): local minima of the slope
    (< 0), most negative first, at least ``min_separation`` (default ``window``) epochs apart; returned sorted
    by epoch, NaN-padded. (S, n)"""
    a, one = _as2d(loss)
    ep = _epochs(epochs, len(a))
    sep = window if min_separation is None else min_separation
    out = np.full((a.shape[1], n), np.nan)
    if len(a) < 2:
        return _out(out, one)
    slope = np.gradient(smooth(a, window), ep, axis=0)
    padded = np.vstack([np.full((1, a.shape[1]), np.inf), slope, np.full((1, a.shape[1]), np.inf)])
    tol = 1e-9 * np.nanmax(np.abs(a), 0, initial=0.0)                    # rounding noise of a flat curve
    local = (slope < -tol) & (slope <= padded[:-2]) & (slope <= padded[2:])
    for s in range(a.shape[1]):
        chosen: list[float] = []
        for i in np.flatnonzero(local[:, s])[np.argsort(slope[local[:, s], s], kind="stable")]:
            if len(chosen) < n and all(abs(ep[i] - c) >= sep for c in chosen):
                chosen.append(ep[i])
        out[s, :len(chosen)] = np.sort(chosen)
    return _out(out, one)


def peak_plateau_ratio(grad_total: object, t_cluster: object, t_fit: object, epochs: object = None,
                       min_t_cluster: float = 8) -> np.ndarray:
    """D5 ratio (docs checks): max full-batch grad norm over epochs [t_c − 3, t_f + 3] over its median on
    [max(1, t_c − 25), t_c − 5). NaN where t_c < ``min_t_cluster`` or unknown; t_f NaN or < t_c counts as t_c. (S,)"""
    g, one = _as2d(grad_total)
    ep = _epochs(epochs, len(g))
    tc, tf = np.atleast_1d(np.asarray(t_cluster, float)), np.atleast_1d(np.asarray(t_fit, float))
    tc, tf = np.broadcast_to(tc, g.shape[1]), np.broadcast_to(tf, g.shape[1])
    out = np.full(g.shape[1], np.nan)
    for s in range(g.shape[1]):
        if not tc[s] >= min_t_cluster:
            continue
        hi = max(tc[s], tf[s]) if np.isfinite(tf[s]) else tc[s]
        peak = g[(ep >= tc[s] - 3) & (ep <= hi + 3), s]
        base = g[(ep >= max(1.0, tc[s] - 25)) & (ep < tc[s] - 5), s]
        if peak.size and base.size:
            med = np.median(base)
            out[s] = peak.max() / med if med > 0 else np.inf
    return _out(out, one)


def drop_peak_ratio(grad_total: object, loss: object, t_fit: object, epochs: object = None, skip: float = 5,
                    fall: float = 0.05, back: float = 25) -> np.ndarray:
    """Gradient norm at a loss drop over the plateau before it (paper 4 Sec. 4.3, Fig. 9: "loss drops occur in tandem
    with high gradient norms"), both anchored on the loss itself: the drop starts at t_0, the first epoch ≥
    ``skip`` whose train loss is ``fall`` (5 %) below its value at epoch ``skip`` (after the initialisation
    transient); the ratio is the max full-batch gradient norm over [t_0, t_fit + 3] over its median on
    [max(skip, t_0 − back), t_0 − 2). NaN where the loss never falls, t_0 < skip + 10 (no plateau to compare
    with) or t_fit is NaN. (S,)"""
    g, one = _as2d(grad_total)
    L, _ = _as2d(loss)
    ep = _epochs(epochs, len(g))
    tf = np.broadcast_to(np.atleast_1d(np.asarray(t_fit, float)), g.shape[1])
    out = np.full(g.shape[1], np.nan)
    i0 = int(np.searchsorted(ep, skip))
    for s in range(g.shape[1]):
        below = np.flatnonzero((ep >= skip) & (L[:, s] < (1 - fall) * L[min(i0, len(ep) - 1), s]))
        if not below.size or not np.isfinite(tf[s]) or ep[below[0]] < skip + 10:
            continue
        t0 = ep[below[0]]
        base = g[(ep >= max(skip, t0 - back)) & (ep < t0 - 2), s]
        peak = g[(ep >= t0) & (ep <= max(t0, tf[s]) + 3), s]
        if base.size and peak.size:
            med = np.median(base)
            out[s] = peak.max() / med if med > 0 else np.inf
    return _out(out, one)


# ----------------------------------------------------------------------------------------------- spikes
def loss_spikes(loss: object, window: int = 20, factor: float = 1.5, min_jump: float = 0.05,
                start_frac: float = 0.5) -> np.ndarray:
    """Epoch loss spikes (docs note 17): L(e) > 1.5·min_{[e−20, e)} L and L(e) − min ≥ 0.05, counted only after the
    first epoch with L < 0.5·L(0). Boolean (E, S)."""
    a, one = _as2d(loss)
    E, S = a.shape
    padded = np.vstack([np.full((window, S), np.inf), a])
    trail = sliding_window_view(padded, window, axis=0)[:E].min(-1)        # row e: min of a[e−window : e]
    below = a < start_frac * a[:1]
    first = np.where(below.any(0), below.argmax(0), E)
    after = np.arange(E)[:, None] > first[None, :]
    with np.errstate(invalid="ignore"):
        spikes = after & np.isfinite(trail) & (a > factor * trail) & (a - trail >= min_jump)
    return spikes[:, 0] if one else spikes


def grad_spikes(grad: object, window: int = 50, factor: float = 3.0, min_history: int = 10,
                block: int = 4096) -> np.ndarray:
    """Steps whose total gradient norm exceeds 3× the median of the previous ``window`` steps (docs note 17);
    steps with fewer than ``min_history`` previous steps are never spikes. Boolean (T, S)."""
    a, one = _as2d(grad)
    T = len(a)
    out = np.zeros(a.shape, dtype=bool)
    for t in range(min_history, min(window, T)):
        out[t] = a[t] > factor * np.median(a[:t], 0)
    if window < T:
        view = sliding_window_view(a, window, axis=0)                       # row i: a[i : i+window]
        for i0 in range(0, T - window, block):
            i1 = min(i0 + block, T - window)
            out[i0 + window:i1 + window] = a[i0 + window:i1 + window] > factor * np.median(view[i0:i1], -1)
    return out[:, 0] if one else out


def spike_onsets(spikes: object, min_gap: int = 10) -> list[np.ndarray] | np.ndarray:
    """Spike onsets (docs checks): entries of the boolean spike mask (E, S) that come ≥ ``min_gap`` epochs after
    the previous spike (the first spike is an onset). Per seed an array of entry indices."""
    m = np.asarray(spikes, dtype=bool)
    one = m.ndim == 1
    m = m[:, None] if one else m
    out = []
    for s in range(m.shape[1]):
        idx = np.flatnonzero(m[:, s])
        out.append(idx[np.concatenate([[True], np.diff(idx) >= min_gap])] if idx.size else idx)
    return out[0] if one else out


def onset_grad_ratio(grad_total: object, onsets: list[np.ndarray] | np.ndarray,
                     window: int = 20) -> list[np.ndarray] | np.ndarray:
    """Full-batch grad norm at each onset over its median on the previous ``window`` epochs (docs checks, D7);
    NaN for an onset at entry 0."""
    g, one = _as2d(grad_total)
    per_seed = [onsets] if one else onsets
    out = []
    for s, idx in enumerate(per_seed):
        r = [g[e, s] / np.median(g[max(0, e - window):e, s]) if e > 0 else np.nan for e in np.asarray(idx, int)]
        out.append(np.asarray(r, dtype=float))
    return out[0] if one else out


def cooccurrence_rate(loss_spike_mask: object, grad_spike_mask: object, steps_per_epoch: int,
                      epochs: object = None, steps: object = None, tol: int = 1) -> np.ndarray:
    """Fraction of loss spikes with a grad-norm spike within ±``tol`` epochs (docs note 17); NaN without loss spikes.
    Masks (E, S) and (T, S); ``steps`` are 0-based optimiser-step numbers (default arange(T)), step s running
    during epoch 1 + s // steps_per_epoch (whose loss is logged at epoch number 1 + s // steps_per_epoch). (S,)"""
    lm = np.asarray(loss_spike_mask, dtype=bool)
    gm = np.asarray(grad_spike_mask, dtype=bool)
    one = lm.ndim == 1
    lm, gm = (lm[:, None], gm[:, None]) if one else (lm, gm)
    ep = _epochs(epochs, len(lm))
    st = np.arange(len(gm)) if steps is None else np.asarray(steps, dtype=np.int64)
    step_epoch = 1 + st // steps_per_epoch
    out = np.full(lm.shape[1], np.nan)
    for s in range(lm.shape[1]):
        L, G = ep[lm[:, s]], np.unique(step_epoch[gm[:, s]])
        if L.size:
            out[s] = np.mean(np.abs(L[:, None] - G[None, :]).min(1) <= tol) if G.size else 0.0
    return _out(out, one)


def gradient_error_exponent(runs: list[tuple[object, object]], below: float = 1e-2, min_points: int = 5,
                            min_decades: float = 0.5) -> tuple[float, np.ndarray]:
    """Rate at which the full-batch gradient norm vanishes with the error 𝓔 (paper 4, Prop. 2: ||∇L|| =
    O(B̃·√𝓔), an exponent ≥ 1/2 at bounded weights): the least-squares slope of log ||∇L|| against log 𝓔 over the
    logged epochs with 0 < 𝓔 < ``below``, within each seed (seed means removed, one slope pooled over the seeds of
    every run). A seed counts with ≥ ``min_points`` such epochs spanning ≥ ``min_decades`` of 𝓔. ``runs``: pairs
    (grad (E, S), error (E, S)). Returns (pooled slope, per-seed slopes); NaN and an empty array if no seed counts."""
    xs, ys, per = [], [], []
    for grad, error in runs:
        g, e = _as2d(grad)[0], _as2d(error)[0]
        for s in range(g.shape[1]):
            m = (e[:, s] > 0) & (e[:, s] < below) & (g[:, s] > 0)
            if m.sum() < min_points or np.ptp(np.log10(e[m, s])) < min_decades:
                continue
            x, y = np.log(e[m, s]), np.log(g[m, s])
            xs.append(x - x.mean())
            ys.append(y - y.mean())
            per.append(float((xs[-1] * ys[-1]).sum() / (xs[-1] ** 2).sum()))
    if not per:
        return float("nan"), np.zeros(0)
    x, y = np.concatenate(xs), np.concatenate(ys)
    return float((x * y).sum() / (x * x).sum()), np.array(per)


# ----------------------------------------------------------------------------------------------- statistics
def spearman(a: object, b: object) -> float:
    """Spearman rank correlation (average ranks for ties; pairs with a NaN dropped). NaN if undefined."""
    a = np.asarray(a.detach().cpu() if hasattr(a, "detach") else a, dtype=float).ravel()
    b = np.asarray(b.detach().cpu() if hasattr(b, "detach") else b, dtype=float).ravel()
    ok = ~(np.isnan(a) | np.isnan(b))
    a, b = a[ok], b[ok]
    if a.size < 2:
        return float("nan")

    def rank(v: np.ndarray) -> np.ndarray:
        _, inv, cnt = np.unique(v, return_inverse=True, return_counts=True)
        start = np.cumsum(cnt) - cnt
        return (start + (cnt - 1) / 2)[inv]

    ra, rb = rank(a) - (a.size - 1) / 2, rank(b) - (b.size - 1) / 2
    den = np.sqrt((ra**2).sum() * (rb**2).sum())
    return float((ra * rb).sum() / den) if den > 0 else float("nan")
