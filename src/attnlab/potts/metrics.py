"""Gauge-invariant comparisons of learned attention with the true couplings (docs/studies/potts.md note 6).

A factored layer reproduces the Potts conditionals only up to gauges (rows of a softmax sum to 1, so A = κβJ with
V = U/κ and a sink; V up to column shifts), so every metric is scale-free or fits the scale. All functions take
(..., L, L) maps with any leading model axes and return (...,).

    corr_offdiag(A, J)      Pearson correlation of the off-diagonal entries (primary, Fig. 2b)
    recon_error(A, J)       mean_{i≠j} (J_ij - κ* A_ij)² with the best scale κ* (Fig. 2c's "(J - A)²")
    topk_precision(A, J)    fraction of true contacts among the k largest symmetrised entries, k = #contacts
    roc_auc(A, J)           ROC-AUC of the symmetrised entries against the contacts
    value_corr(V, U, freq)  correlation of column-centred V and U on colours seen with frequency >= 0.02
    mean_kl(logp_true, logp_model)   E KL(p_true(.|s_\\i) || p̃(.|s_\\i)) = test loss - optimal loss in expectation
    sweep_shape(df, lam)    Fig. 3-right's rise, fall, peak and separability window from a PL sweep's fits
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

Tensor = torch.Tensor


def _offdiag(X: Tensor) -> Tensor:
    L = X.shape[-1]
    mask = ~torch.eye(L, dtype=torch.bool, device=X.device)
    return X[..., mask]  # (..., L(L-1))


def _upper(X: Tensor) -> Tensor:
    L = X.shape[-1]
    i, j = torch.triu_indices(L, L, 1, device=X.device)
    return X[..., i, j]


def _pearson(x: Tensor, y: Tensor) -> Tensor:
    x = x - x.mean(-1, keepdim=True)
    y = y - y.mean(-1, keepdim=True)
    return (x * y).sum(-1) / (x.norm(dim=-1) * y.norm(dim=-1)).clamp_min(1e-300)


def corr_offdiag(A: Tensor, J: Tensor) -> Tensor:
    """Pearson correlation between {A_ij : i ≠ j} and {J_ij : i ≠ j}."""
    A, J = torch.broadcast_tensors(A, J.to(A))
    return _pearson(_offdiag(A), _offdiag(J))


def recon_error(A: Tensor, J: Tensor, relative: bool = False) -> Tensor:
    """mean_{i≠j} (J_ij - κ* A_ij)², κ* = ⟨J, A⟩/⟨A, A⟩ over i ≠ j; ``relative`` divides by Σ J²/(L(L-1))."""
    a, j = _offdiag(A), _offdiag(J.to(A)).expand_as(_offdiag(A))
    kappa = (a * j).sum(-1, keepdim=True) / (a * a).sum(-1, keepdim=True).clamp_min(1e-300)
    err = ((j - kappa * a) ** 2).mean(-1)
    return err / (j * j).mean(-1).clamp_min(1e-300) if relative else err


def topk_precision(A: Tensor, J: Tensor) -> Tensor:
    """Fraction of true contacts (J_ij ≠ 0, i < j) among the k largest entries of (A + Aᵀ)/2, k = #contacts."""
    s = _upper((A + A.mT) / 2)
    truth = _upper(J.to(A) != 0).expand_as(s)
    k = int(truth[(0,) * (truth.ndim - 1)].sum()) if truth.ndim > 1 else int(truth.sum())
    if k == 0:
        return torch.full(s.shape[:-1], float("nan"), dtype=A.dtype, device=A.device)
    top = s.topk(k, -1).indices
    return truth.gather(-1, top).to(A.dtype).mean(-1)


def roc_auc(A: Tensor, J: Tensor) -> Tensor:
    """Probability that a random contact scores above a random non-contact (ties count ½)."""
    s = _upper((A + A.mT) / 2)
    truth = _upper(J.to(A) != 0)
    pos, neg = s[..., truth], s[..., ~truth]
    if pos.shape[-1] == 0 or neg.shape[-1] == 0:
        return torch.full(s.shape[:-1], float("nan"), dtype=A.dtype, device=A.device)
    d = pos.unsqueeze(-1) - neg.unsqueeze(-2)
    return ((d > 0).to(A.dtype) + 0.5 * (d == 0).to(A.dtype)).mean((-1, -2))


def value_corr(V: Tensor, U: Tensor, freq: Tensor | None = None, min_freq: float = 0.02) -> Tensor:
    """Correlation of column-centred V and U (V is fixed only up to V → V + 1bᵀ), on colours with freq >= min_freq."""
    keep = torch.ones(U.shape[-1], dtype=torch.bool, device=V.device) if freq is None else freq.to(V.device) >= min_freq
    Vk = V[..., keep][..., keep, :]
    Uk = U.to(V)[keep][:, keep]
    Vc = Vk - Vk.mean(-2, keepdim=True)
    Uc = (Uk - Uk.mean(-2, keepdim=True)).expand_as(Vc)
    return _pearson(Vc.flatten(-2), Uc.flatten(-2))


def mean_kl(logp_true: Tensor, logp_model: Tensor) -> Tensor:
    """Mean over samples and sites of KL(p_true || p̃) from log-probabilities (..., n, L, C)."""
    return (logp_true.exp() * (logp_true - logp_model)).sum(-1).mean((-1, -2))


# -- the shape of Fig. 3-right from the fits of a PL sweep ------------------------------------------------------------


def pl_key(name: str, lam: float, M: int | None = None) -> str:
    """Summary key of a PL-sweep quantity at λ (and M), written by the sweeps and read by the claims:
    ``pl_key("rise", 1e-4) == "rise_lam0.0001"``, ``pl_key("test", 1e-4, 200) == "test_M200_lam0.0001"``."""
    return f"{name}{'' if M is None else f'_M{M}'}_lam{lam:g}"


def sweep_shape(df: pd.DataFrame, lam: float) -> dict[str, float]:
    """Fig. 3-right's shape at one λ from the fits (rows: M, realisation): the M of the largest mean test loss,
    the rise max_{M <= 20} test - test(M = 1) and the fall test(M = 1) - test(M = 200) of the means with the
    standard errors of the paired per-realisation differences, and the separability window: the largest M up to
    which every fit classifies every one of its training sites correctly (train_acc = 1: the layer separates the
    data) and the smallest M at which none does; ``peak_steps_*`` counts the grid steps from the peak to that
    window (0: inside). A fit with train_acc < 1 at λ → 0 is evidence, not proof, of non-separability (the
    objective is not convex)."""
    test = df.pivot(index="M", columns="realisation", values="test")
    mean, Ms = test.mean(axis=1), list(test.index)
    peak = int(mean.idxmax())
    acc = df.groupby("M")["train_acc"]
    every, none = (acc.min() >= 1.0).to_numpy(), (acc.max() < 1.0).to_numpy()
    lo = (len(Ms) if every.all() else int(every.argmin())) - 1  # index of the last M before a fit fails to separate
    hi = int(none.argmax()) if none.any() else None
    out = {pl_key("argmax_M", lam): float(peak),
           pl_key("separable_M", lam): float(Ms[lo]) if lo >= 0 else float("nan"),
           pl_key("inseparable_M", lam): float(Ms[hi]) if hi is not None else float("nan")}
    k = Ms.index(peak)
    out[pl_key("peak_steps", lam)] = float(max(lo - k, k - hi, 0)) if lo >= 0 and hi is not None else float("nan")

    def sem(d: pd.Series) -> float:
        return float(d.std(ddof=1) / np.sqrt(len(d))) if len(d) > 1 else float("nan")

    if 1 in test.index:
        top = mean[mean.index <= 20].idxmax()
        out[pl_key("rise", lam)] = float(mean[top] - mean[1])
        out[pl_key("rise_sem", lam)] = sem(test.loc[top] - test.loc[1])
        if 200 in test.index:
            out[pl_key("fall", lam)] = float(mean[1] - mean[200])
            out[pl_key("fall_sem", lam)] = sem(test.loc[1] - test.loc[200])
    return out
