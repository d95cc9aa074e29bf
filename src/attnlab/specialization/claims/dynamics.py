"""Claims of paper 0 on the dynamics, read from experiment runs: SGD vs theory (Figs. 1, 9), the two phases
(Props. III.3, III.4), sequential and hierarchical learning (Figs. 3, 4), fixed MC samples (Fig. 8).

An event a claim times (a split, a feature learnt) that never happens within the run's horizon is
``Measured(nan, why)``: a failed verdict that says so, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.core.summaries import typed
from attnlab.specialization.claims.worlds import RUN_WORLDS
from attnlab.specialization.experiments.phases import ESCAPE, PHASES, SPLIT_TIME
from attnlab.specialization.experiments.sim_vs_theory import FIG9
from attnlab.specialization.experiments.trajectories import FIG8, TRAJECTORY_FIGURES
from attnlab.specialization.summaries import (
    EscapeArrays,
    EscapeSummary,
    PhasesSummary,
    SimVsTheoryArrays,
    SimVsTheoryFit,
    TrajectoryArrays,
)

ACTS = ("softmax", "softmax1", "bsoftmax")


def happened(value) -> bool:
    """Whether a stored event time exists (a run stores NaN, or null in JSON, for an event that never happened)."""
    return value is not None and math.isfinite(float(value))


def event(value, why: str) -> float | Measured:
    """``value`` as a float, or ``Measured(nan, why)`` when the event it times never happened."""
    return float(value) if happened(value) else Measured(math.nan, why)


def _fig9_max(deviation: Callable[[SimVsTheoryFit], float]) -> Callable[[ClaimContext], float]:
    """fig9: the measure of the largest ``deviation`` (max over τ and entries of |SGD − theory|) over the three
    activations."""
    def measure(ctx: ClaimContext) -> float:
        fits = ctx.summary(FIG9).activation
        return max(deviation(fits[a]) for a in ACTS)

    return measure


_DEVIATIONS: tuple[tuple[str, str, float, Callable[[SimVsTheoryFit], float]], ...] = (
    ("m", "m", 0.07, lambda f: f.max_dm), ("rr", "q − m p⁻¹ mᵀ vs r rᵀ", 0.05, lambda f: f.max_drr),
    ("b", "b", 0.02, lambda f: f.max_db), ("v", "v", 0.01, lambda f: f.max_dv),
    ("loss", "batch loss vs Ẽ", 0.06, lambda f: f.max_dloss))
for _obs, _what, _tol, _dev in _DEVIATIONS:
    claim(
        id=f"specialization.sgd_matches_theory_{_obs}", ref="Prop. III.2, Figs. 1, 9",
        statement=f"SGD with τ = γt follows the gradient flow (12): {_what}",
        how=f"fig9 (3 activations): max over τ and entries of |SGD − p-corrected theory| for {_what}",
        measure=_fig9_max(_dev), expected=_tol, relation="le", blocks=2,
        falsify=RUN_WORLDS[f"sgd_matches_theory_{_obs}"],
    )


def _bsoftmax_bias_sum(ctx: ClaimContext) -> float:
    a = SimVsTheoryArrays.from_result(ctx.run(FIG9)).activation["bsoftmax"]
    return max(float(np.abs(b.sum(-1)).max()) for b in (a.sim_b, a.theory_b))


claim(
    id="specialization.bsoftmax_bias_invariance", ref="Eq. (4)",
    statement="B-softmax is invariant to b → b + c1, so Σ_h b_h stays 0 along SGD and theory",
    how="fig9: max_τ |Σ_h b_h| for B-softmax, SGD (float32) and theory", measure=_bsoftmax_bias_sum,
    expected=1e-5, relation="le",
    falsify=RUN_WORLDS["bsoftmax_bias_invariance"],
)


def _mc_fixed(ctx: ClaimContext) -> float:
    return max(ctx.summary(FIG8).max_abs_diff_m1.values())


claim(
    id="specialization.fixed_mc_samples", ref="Fig. 8, App. B",
    statement="keeping the Monte-Carlo samples fixed along the flow changes the trajectory negligibly",
    how="fig8: max_τ |m^fixed_1f − m^resampled_1f|", measure=_mc_fixed, expected=0.03, relation="le",
    falsify=RUN_WORLDS["fixed_mc_samples"],
)


def _tau_s_fig1(ctx: ClaimContext) -> Measured:
    """split_time: the median τ^s(0.2) over random inits at D = 10^4, with why it differs from ≈ 10."""
    s = ctx.summary(SPLIT_TIME)
    D, n, horizon = int(s.D), int(s.seeds), float(s.tau_max)
    med, frac = s.tau_s[0.2, "median"], float(s.split_fraction[0.2])
    if not happened(med) or frac < 0.5:
        return Measured(math.nan, f"the heads of fewer than half of {n} inits at D = {D} split (|m_12 − m_22| > "
                                  f"0.2) by τ = {horizon:g} ({frac:.0%}): the horizon is too short")
    gap0, rate = float(s.gap0_median), s.rate_median
    need = math.log(0.2 / gap0)
    why = (f"; |m_12 − m_22| starts at {gap0:.3f} (~D^-1/2) and grows as e^(λτ) with λ ≈ {rate:.3f}, so it takes "
           f"ln(0.2/{gap0:.3f})/λ ≈ {need / rate:.0f} to reach 0.2 (≈ 10 would need λ ≈ {need / 10:.2f})"
           ) if happened(rate) and rate > 0 else ""
    if happened(s.saddle_rate) and happened(s.plateau_rate):
        why += (f". The Hessian of (10) sets λ: {s.plateau_rate:.3f} on the plateau (τ = {s.plateau_tau:g}), "
                f"{s.saddle_rate:.3f} at most (m = r = 0, Lemma III.1), which still needs τ ≈ "
                f"{need / s.saddle_rate:.0f}; τ^u ≈ 1 matches (unspecialised claims), so the units agree")
    early = float(s.tau_s.get((0.05, "median")) or math.nan)
    return Measured(float(med), f"flow (12) from {n} random inits at D = {D} (Fig. 1 setting, which the SGD "
                                f"follows): τ^s(0.2) median {med:.1f} (range {s.tau_s[0.2, 'min']:.1f}–"
                                f"{s.tau_s[0.2, 'max']:.1f}), τ^s(0.05) median {early:.1f}" + why)


claim(
    id="specialization.tau_s_fig1", ref="Fig. 1 text, Prop. III.4",
    statement="τ^s ≈ 10 is needed at D = 10^4 before the heads split",
    how="split_time: first τ with |m_12 − m_22| > 0.2 along the flow from the empirical order parameters of "
        "random inits at D = 10^4 (L = 10, H = 2, flip (2,2), softmax); median over inits",
    measure=_tau_s_fig1, expected=10.0, relation="report",
)


def _phase(read: Callable[[PhasesSummary], float]):
    """The measure reading one value of the phases summary."""
    return lambda ctx: read(ctx.summary(PHASES))


for _key, _read, _statement, _expected, _rel in (
    ("dm1_at_tau1", lambda s: s.dm1_at_tau1,
     "by τ = 1 the heads have started to learn the constant direction (mean m_h1 grows by 0.08-0.20)",
     (0.08, 0.20), "in"),
    ("m1_at_tau5", lambda s: s.m1_at_tau5,
     "by τ = 5 the mean alignment with the constant direction exceeds 0.5", 0.5, "ge"),
    ("split_change", lambda s: s.split_change,
     "during the unspecialised phase the heads do not split: |m_12 − m_22| moves by < 0.05", 0.05, "le"),
    ("gaussian_norm_ratio", lambda s: s.gaussian_norm_ratio,
     "with E θ = 0 (isotropic Gaussian) m does not move: ||m(5)|| < 5 ||m(0)||", 5.0, "le"),
):
    claim(
        id=f"specialization.unspecialised_{_key}", ref="Prop. III.3, Fig. 1", statement=_statement,
        how="phases: theory, flip ν=(2,2), softmax, L=10, H=2, m(0) ~ N(0,1e-4), r(0) = I",
        measure=_phase(_read), expected=_expected, relation=_rel, falsify=RUN_WORLDS[f"unspecialised_{_key}"],
    )


def _escape(read: Callable[[EscapeSummary], dict[str, float]], reduce):
    """The measure reducing a per-activation value of the escape summary (``read``) over softmax and B-softmax, or
    why it cannot (a τ_s beyond the horizon)."""
    def measure(ctx: ClaimContext) -> float | Measured:
        res = ctx.run(ESCAPE)
        s = typed(ESCAPE, res)
        late = [(act, D) for (act, D), v in s.tau_s.items() if not happened(v)]
        if late:
            horizon = float(EscapeArrays.from_result(res).time[late[0][0]][-1])
            return Measured(math.nan, f"the heads did not split (|m_12 − m_22| ≤ threshold) within τ = {horizon:g} "
                                      f"for {', '.join(f'{act}_D{D:g}' for act, D in late)}: the horizon is too "
                                      "short for these D")
        per_activation = read(s)
        return reduce([per_activation[a] for a in ("softmax", "bsoftmax")])

    return measure


claim(
    id="specialization.escape_time_increases_with_D", ref="Prop. III.4",
    statement="the specialisation time τ_s = Θ(log D) grows with D",
    how="escape: τ_s (|m_12 − m_22| > 0.2) strictly increasing over D ∈ {1e2..1e5}, softmax and B-softmax "
        "(1 = both)", measure=_escape(lambda s: s.increasing, min), expected=1.0, relation="ge", blocks=2,
    falsify=RUN_WORLDS["escape_time_increases_with_D"],
)
claim(
    id="specialization.escape_time_log_D", ref="Prop. III.4",
    statement="τ_s ≈ a + c log D: equal increments per decade of D",
    how="escape: (max − min)/mean of the increments of τ_s per decade, worst of softmax and B-softmax",
    measure=_escape(lambda s: s.slope_spread, max), expected=0.30, relation="le", blocks=2,
    falsify=RUN_WORLDS["escape_time_log_D"],
)


def _feature_time(res, f: int, panel: int) -> float | Measured:
    """fig4: τ_f(0.5) of a panel, or why it is missing (feature f not learnt by the horizon)."""
    tau = typed(TRAJECTORY_FIGURES["fig4"], res).panel[panel].tau_feature[f]
    horizon = float(TrajectoryArrays.from_result(res).panel[panel].time[-1])
    return event(tau, f"panel {panel}: feature {f} not learnt (||m_:{f}||/√H ≤ 0.5) by τ = {horizon:g}")


def _sequential(ctx: ClaimContext) -> float | Measured:
    """fig4: τ_2(0.5) − τ_1(0.5) for softmax and B-softmax (F = 3, ν̃ = (20, 10.5, 1)); the smaller one."""
    res = ctx.run(TRAJECTORY_FIGURES["fig4"])
    times = [[_feature_time(res, f, i) for f in (1, 2)] for i in (0, 1)]
    missing = [t for pair in times for t in pair if isinstance(t, Measured)]
    if missing:
        return Measured(math.nan, "; ".join(t.detail for t in missing))
    return min(t2 - t1 for t1, t2 in times)


def _faster(ctx: ClaimContext) -> float | Measured:
    res = ctx.run(TRAJECTORY_FIGURES["fig4"])
    t_soft, t_b = _feature_time(res, 1, 0), _feature_time(res, 1, 1)
    if isinstance(t_b, Measured):
        return t_b
    return Measured(math.inf, t_soft.detail) if isinstance(t_soft, Measured) else t_soft - t_b


claim(
    id="specialization.sequential_learning", ref="Lemma III.1, Fig. 4",
    statement="features are learnt in order of decreasing variance: f = 1 before f = 2",
    how="fig4: τ_f = first τ with ||m_{:,f}||/√H > 0.5; smallest τ_2 − τ_1 over softmax and B-softmax",
    measure=_sequential, expected=0.0, relation="ge",
    falsify=RUN_WORLDS["sequential_learning"],
)
claim(
    id="specialization.bsoftmax_learns_faster", ref="Fig. 4",
    statement="B-softmax learns the first feature faster than softmax",
    how="fig4: τ_1(softmax) − τ_1(B-softmax)",
    measure=_faster, expected=0.0, relation="ge",
    falsify=RUN_WORLDS["bsoftmax_learns_faster"],
)


def _quadrants(ctx: ClaimContext) -> float:
    """fig3 panel 0 (softmax, H = 4, ν = (8, 2)): quadrants (sign m_h1, sign m_h2) covered by heads with
    |m_h1| > 1 and |m_h2| > 0.05 at the end (Fig. 3)."""
    m = TrajectoryArrays.from_result(ctx.run(TRAJECTORY_FIGURES["fig3"])).panel[0].m[-1, 0]  # (head, feature)
    ok = (np.abs(m[:, 0]) > 1) & (np.abs(m[:, 1]) > 0.05)
    return float(len({(np.sign(a), np.sign(b)) for a, b in m[ok, :2]}))


claim(
    id="specialization.hierarchical_quadrants", ref="Fig. 3",
    statement="softmax heads split evenly into all sign combinations: H = 4 ⇒ one head per quadrant ±s1 ± s2",
    how="fig3 panel 0: number of quadrants holding a head with |m_h1| > 1 and |m_h2| > 0.05",
    measure=_quadrants, expected=4.0, relation="ge", blocks=2,
    falsify=RUN_WORLDS["hierarchical_quadrants"],
)


