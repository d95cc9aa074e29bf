"""Claims of paper 0 on trained models, read from experiment runs: final errors (Fig. 5), attention maps (Fig. 6),
head pruning (Fig. 7), the heads' cosine similarity (Fig. 11)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.specialization.claims.worlds import RUN_WORLDS
from attnlab.specialization.experiments.trained import FIG5, FIG6, FIG7, FIG11
from attnlab.specialization.summaries import FinalErrors, PruningArrays, PruningSummary

ACTS = ("softmax", "softmax1", "bsoftmax")


def _fig5_ordering(ctx: ClaimContext) -> float:
    """Largest violation of E_Bayes ≤ E_B-softmax < E_softmax-1 ≤ E_softmax + 0.01 at H = 4 (Fig. 5); ≤ 0 holds."""
    s = ctx.summary(FIG5)
    worst = -np.inf
    for law in ("flip", "gaussian_iso"):
        e = s.error[law]
        bay, bs, s1, sm = e.bayes_H, *(e.H[a, 4] for a in ("bsoftmax", "softmax1", "softmax"))
        worst = max(worst, bay - bs - 0.003, bs - s1, s1 - sm - 0.01)
    return float(worst)


def _above_bayes(e: FinalErrors) -> float:
    """fig5, one law: E_B-softmax(H = 4) − E_Bayes."""
    return e.H["bsoftmax", 4] - e.bayes_H


claim(
    id="specialization.final_loss_ordering", ref="Fig. 5, Props. IV.2-IV.3",
    statement="E_Bayes ≤ E_B-softmax < E_softmax-1 ≤ E_softmax after training (H = 4, F = 4, ν = 10)",
    how="fig5: largest violation among the three inequalities (Bayes side with 0.003 MC slack), flip and iso "
        "Gaussian; ≤ 0 means the ordering holds",
    measure=_fig5_ordering, expected=0.0, relation="le", blocks=2,
    falsify=RUN_WORLDS["final_loss_ordering"],
)
claim(
    id="specialization.bsoftmax_reaches_bayes", ref="Fig. 5 left, Prop. IV.2",
    statement="with H ≥ |support| = 4 heads, trained B-softmax reaches the Bayes risk (one-hot F = 4, ν = 10)",
    how="fig5: E_B-softmax(H=4) − E_Bayes for the one-hot law",
    measure=lambda ctx: _above_bayes(ctx.summary(FIG5).error["flip"]),
    expected=0.01, relation="le", blocks=2,
    falsify=RUN_WORLDS["bsoftmax_reaches_bayes"],
)


def _off_target(ctx: ClaimContext) -> float:
    """fig6: min(softmax − softmax-1, softmax-1 − B-softmax) of the attention mass on irrelevant tokens."""
    off = ctx.summary(FIG6).off_target
    soft, one, bs = (off[a] for a in ACTS)
    return min(soft - one, one - bs)


claim(
    id="specialization.attention_off_target_ordering", ref="Fig. 6",
    statement="softmax-1 puts less attention on irrelevant tokens than softmax, and B-softmax less still",
    how="fig6: Σ_{ℓ≠ε} s_ℓ averaged over fresh sequences; smallest of the two gaps (> 0: ordering holds)",
    measure=_off_target, expected=0.0, relation="ge",
    falsify=RUN_WORLDS["attention_off_target_ordering"],
)


def _one_head_per_feature(ctx: ClaimContext) -> float:
    """fig7, one-hot law: the largest loss increase after pruning 4 heads over the activations."""
    s: PruningSummary = ctx.summary(FIG7)
    return max(s.curve["flip", a].cost(4) for a in ACTS)


def welch_lower(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> float:
    """Lower end of the two-sided ``level`` Welch interval of mean(a) − mean(b) (independent samples); −inf with
    fewer than two values on a side."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if min(a.size, b.size) < 2:
        return -np.inf
    va, vb = a.var(ddof=1) / a.size, b.var(ddof=1) / b.size
    se = np.sqrt(va + vb)
    if se == 0:
        return float(a.mean() - b.mean())
    df = (va + vb) ** 2 / (va**2 / (a.size - 1) + vb**2 / (b.size - 1))
    return float(a.mean() - b.mean() - stats.t.ppf(0.5 + level / 2, df) * se)


def _degrade_more(ctx: ClaimContext) -> Measured:
    """fig7: per init, the cost of pruning 6 of 8 heads; for each law and each of softmax-1, B-softmax, the lower end
    of the 95 % Welch interval of its mean cost minus softmax's (the inits of two activations are independent)."""
    curves = PruningArrays.from_result(ctx.run(FIG7)).curves  # (law, activation) → (seed, k heads pruned)
    lows = {}
    for law in ("flip", "gaussian_iso"):
        cost = {act: curves[law, act][:, 6] - curves[law, act][:, 0] for act in ACTS}
        for act in ("softmax1", "bsoftmax"):
            lows[f"{law} {act}"] = (float(cost[act].mean() - cost["softmax"].mean()),
                                    welch_lower(cost[act], cost["softmax"]))
    n = len(curves["flip", "softmax"])
    return Measured(min(lo for _, lo in lows.values()), f"{n} inits per activation; mean gap [95 % lower end]: " +
                    ", ".join(f"{k} {d:.3f} [{lo:.3f}]" for k, (d, lo) in lows.items()))


def _pruning_gaussian(ctx: ClaimContext) -> Measured:
    """The iso-Gaussian pruning cost, how many heads can go at ≤ 0.05, and the bound Fig. 5 puts on it: a pruned
    4-head model is no better than a trained one, so the cost is at least E(H=4) − E(H=8)."""
    s, f5 = ctx.summary(FIG7), ctx.summary(FIG5).error["gaussian_iso"]
    curve = {a: s.curve["gaussian_iso", a] for a in ACTS}
    costs = {a: curve[a].cost(4) for a in ACTS}
    rel = {a: costs[a] / curve[a].pruned[0] for a in ACTS}
    free = {a: max(k for k in curve[a].pruned if curve[a].cost(k) <= 0.05) for a in ACTS}
    gain = {a: f5.H[a, 4] - f5.H[a, 8] for a in ACTS}
    onehot = _one_head_per_feature(ctx)
    return Measured(max(costs.values()), f"{ctx.scale} scale: pruning 4 of 8 heads costs " + ", ".join(
        f"{a} {c:.3f} (+{rel[a]:.0%})" for a, c in costs.items()) + f" (one-hot law: ≤ {onehot:.3f}); at ≤ 0.05 "
        + "/".join(str(free[a]) for a in ACTS) + " heads can go. For a continuous law every head helps (Sec. IV): "
        "a pruned 4-head model is a 4-head model, so its cost should be at least Fig. 5's E(H=4) − E(H=8) = "
        + "/".join(f"{gain[a]:.3f}" for a in ACTS) + " (softmax/-1/B), beyond 0.05 where that gain is")


claim(
    id="specialization.pruning_keeps_one_head_per_feature", ref="Fig. 7, Sec. IV",
    statement="after training H = 8 heads, H − F = 4 can be pruned with little loss increase (one-hot F = 4)",
    how="fig7, one-hot law: largest E(4 pruned) − E(0 pruned) over the three activations",
    measure=_one_head_per_feature, expected=0.05, relation="le",
    falsify=RUN_WORLDS["pruning_keeps_one_head_per_feature"],
)
claim(
    id="specialization.pruning_specialised_heads_degrade_more", ref="Fig. 7, Sec. IV",
    statement="pruning beyond H − F hurts softmax-1 and B-softmax more than softmax (strongly specialised heads)",
    how="fig7, one-hot and isotropic Gaussian laws: per init, E(6 pruned) − E(0); for softmax-1 and B-softmax "
        "against softmax, the lower end of the 95 % Welch interval of the difference of mean costs over inits; the "
        "smallest of the four (> 0: they degrade more)",
    measure=_degrade_more, expected=0.0, relation="ge",
    falsify=RUN_WORLDS["pruning_specialised_heads_degrade_more"],
)
claim(
    id="specialization.pruning_gaussian", ref="Fig. 7, Sec. IV",
    statement="for an isotropic Gaussian in dimension F too, close to H − F = 4 of H = 8 heads can be pruned without "
              "significant loss",
    how="fig7, isotropic Gaussian ν = 10, F = 4: largest E(4 pruned) − E(0 pruned) over the three activations "
        "(0.05 is the one-hot claim's tolerance); reported",
    measure=_pruning_gaussian, expected=0.05, relation="report",
)


def _cosine_monotone(ctx: ClaimContext) -> Measured:
    s = ctx.summary(FIG11)
    up, down = s.monotone_up_in_nu1, s.monotone_down_in_nu2
    return Measured(min(up, down), f"fraction of neighbouring grid pairs with the cosine non-decreasing in ν1: "
                                   f"{up:.2f}, non-increasing in ν2: {down:.2f} (cos from {s.cos_min:.2f} to "
                                   f"{s.cos_max:.2f})")


claim(
    id="specialization.cosine_monotone_nu2", ref="Fig. 11, App. C 2",
    statement="the heads' cosine similarity grows monotonically with ν1 and decreases monotonically with ν2",
    how="fig11: the final cosine q_12/√(q_11 q_22) over the (ν1, ν2) grid; the smaller of the fractions of "
        "neighbouring pairs that are monotone in the stated direction (1 = monotone everywhere)",
    measure=_cosine_monotone, expected=1.0, relation="ge",
    falsify=RUN_WORLDS["cosine_monotone_nu2"],
)
