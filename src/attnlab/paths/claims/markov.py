"""Claims on the hidden-Markov-chain task (check B1-B11) and the generic solver/sampler check (check C).

The B-checks run on seeds 0-3 ("seed s": training data, test data and random heads from seed s);
seed 0 is the sampled run of Fig. 2c, seeds 1-3 are theory-only runs of the same experiment. Each claim
measures the worst seed against the check's gate (docs/studies/paths.md).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np
import torch
from scipy import stats

from attnlab.core import rng
from attnlab.core.arrays import edit_arrays
from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.core.experiment import Experiment, Result
from attnlab.core.intervals import mean_interval
from attnlab.core.worlds import World
from attnlab.paths import model
from attnlab.paths.claims import edits
from attnlab.paths.data import markov as data
from attnlab.paths.experiments.markov import FIG2C, FIG2D, FIG2E, FIG5C, GENERIC
from attnlab.paths.summaries import Fig2dSummary, MarkovArrays, MarkovSampled, MarkovSummary, typed

Read = Callable[[MarkovSummary], float]  # a number of a Markov run's typed summary


def gp(layout: str) -> Read:
    """The GP accuracy of the reference layout ``layout`` (good, all, good_denoising, good_uniform)."""
    return lambda s: s.acc_gp_layout[layout]


def theory_at(N: float) -> Read:
    """A_theory at width N."""
    return lambda s: s.acc_theory[N]

F64 = torch.float64
SEEDS = (0, 1, 2, 3)  # the Markov checks' seeds: data, test data and random heads from seed s


def fig2c(ctx: ClaimContext, seed: int, **kw) -> Result:
    """Fig. 2c's run for a seed: seed 0 as configured (with sampling), the others (and any variant) theory only."""
    if seed == 0 and not kw:
        return ctx.run(FIG2C)
    return ctx.run(FIG2C, seed=seed, sample_widths=(), **kw)


def markov(result: Result) -> MarkovSummary:
    """The typed summary of a Markov sweep's run."""
    return typed(MarkovSummary, result)


def arrays(result: Result) -> MarkovArrays:
    """The typed arrays of a Markov sweep's run (the test labels, the theory per solved width)."""
    return MarkovArrays.from_result(result)


def run_markov(ctx: ClaimContext, experiment: Experiment) -> MarkovSummary:
    """The typed summary of ``experiment`` (a Markov sweep) run as configured."""
    return markov(ctx.run(experiment))


def worst(ctx: ClaimContext, fn: Callable[[MarkovSummary, MarkovArrays], float], kind: str, **kw) -> float:
    """fn(summary, arrays) over the seeds; the worst for a ≥ gate ("min") or a ≤ gate ("max")."""
    vals = []
    for s in SEEDS:
        r = fig2c(ctx, s, **kw)
        vals.append(fn(markov(r), arrays(r)))
    return min(vals) if kind == "min" else max(vals)


def worst_gap(a: Read, b: Read, kind: str, **kw):
    """The measure ``a(summary) − b(summary)``, worst over the seeds (``kind`` as in :func:`worst`)."""
    return lambda ctx: worst(ctx, lambda s, _: a(s) - b(s), kind, **kw)


def U_at(a: MarkovArrays, N: float) -> np.ndarray:
    """The theory's U*(N) (Eq. (13)) at the solved width nearest N."""
    i = int(np.argmin(np.abs(a.theory_time - N)))
    return a.theory_U[i]


def rho_gd(U: np.ndarray, g: int = 0, d: int = 2) -> float:
    """Correlation U_gd/√(U_gg U_dd) of the good path (1,1) and the denoising path (2,1)."""
    return float(U[g, d] / math.sqrt(U[g, g] * U[d, d]))


# -- B1, B2: data and heads --------------------------------------------------------------------------------


def _b1(ctx: ClaimContext) -> float:
    task = data.MarkovTask(sigma_par=1.0, sigma_perp=2.0)
    out = 0.0
    for s in SEEDS:
        d = data.sample(task, 4000, rng.generator(s))
        sw = (d.states[:, 1:] != d.states[:, :-1]).double().mean(1)
        vp, vm = task.state_vectors()
        noise = d.X[:, 1:, : task.N0] - torch.where(d.states[..., None] > 0, vp, vm)
        e = torch.stack([vp, vm]) / vp.norm()
        par = noise @ e.T
        perp = noise - par @ e
        var_par = float(par.var()) / task.sigma_par**2
        var_perp = float(perp.pow(2).sum(-1).mean()) / (task.N0 - 2) / task.sigma_perp**2
        # rate errors in units of the ±0.02 gate, variance errors in units of the ±5% gate
        out = max(out, abs(float(sw[d.y > 0].mean()) - 0.3) / 0.02, abs(float(sw[d.y < 0].mean()) - 0.7) / 0.02,
                  abs(var_par - 1) / 0.05, abs(var_perp - 1) / 0.05)
    return out


claim("paths.markov_data", "Sec. 4.1, App. G.1 (check B1)",
      "switch rates 0.3 / 0.7 per class (± 0.02); noise variance σ∥² in span{v±}, σ⊥² out of it (± 5%)",
      "4000 chains per seed, σ∥=1, σ⊥=2: the largest deviation in units of its gate (pass ≤ 1)", _b1, 1.0, "le",
      falsify=World("chains of class +1 that switch with probability 0.4 instead of 0.3",
                    patch={"attnlab.paths.data.markov:MarkovTask": lambda T: functools.partial(T, p_plus=0.4)}))


def _b2(ctx: ClaimContext) -> float:
    task = data.MarkovTask(sigma_par=0.0, sigma_perp=0.0)
    fr = []
    for s in SEEDS:
        d = data.sample(task, 200, rng.generator(s))
        om = model.attention(d.X, data.good_head(task)[None])[:, 0]
        arg = om.argmax(dim=1)[:, 2:]
        same = d.states[:, 1:] == d.states[:, :-1]
        want = torch.where(same, torch.arange(1, task.T).expand_as(same), torch.zeros_like(same, dtype=torch.long))
        fr.append(float((arg == want).double().mean()))
    return min(fr)


claim("paths.good_head_attention", "App. G.2.1 (check B2)",
      "on noise-free inputs the good head attends to the previous token iff it is in the same state, else the bos",
      "fraction of queries t ≥ 2 whose argmax key is the expected one, worst of seeds 0-3", _b2, 0.9, "ge",
      falsify=World("a 'good' head with zero query-key weights: uniform attention, blind to the states",
                    patch={"attnlab.paths.data.markov:good_head": lambda gh: lambda *a, **k: 0 * gh(*a, **k)}))


# -- B3-B5: GP lines, finite width, U -------------------------------------------------------------------

def _expected_good(ctx: ClaimContext, **kw) -> Measured:
    """The seed furthest outside the B3 band of the good path's expected GP accuracy, every seed in the detail."""
    runs = [markov(fig2c(ctx, s, **kw)) for s in SEEDS]
    expected = [r.good_expected for r in runs]
    if any(e is None for e in expected):
        return Measured(float("nan"), "fig2c has no acc_gp_good_expected: gp_test_sets = 0 or 'good' not a GP line")
    vals = [e.value for e in expected if e is not None]
    v = min(vals) if (0.92 - min(vals)) > (max(vals) - 0.985) else max(vals)
    return Measured(v, "expected accuracy on seeds 0-3: " + ", ".join(
        f"{e.value:.3f} ± {e.se:.3f}" for e in expected if e is not None)
        + "; on the one test set of P* = 1000: " + ", ".join(f"{r.acc_gp_layout['good']:.3f}" for r in runs))


def paired_lower(ctx: ClaimContext, a: Read, b: Read, what: str, **kw) -> Measured:
    """Lower end of the 95 % t-interval (over seeds 0-3, 3 degrees of freedom) of the mean paired difference
    ``a(summary) − b(summary)``: each seed's training set, test set and heads are shared by both arms."""
    d = np.array([(lambda r: a(r) - b(r))(markov(fig2c(ctx, s, **kw))) for s in SEEDS])
    mean, lower, upper = mean_interval(d)
    return Measured(lower, f"{what} on seeds 0-3: " + ", ".join(f"{x:+.3f}" for x in d)
                    + f"; mean {mean:+.4f}, 95 % interval [{lower:+.4f}, {upper:+.4f}]")


Z_CHANCE = float(stats.norm.ppf(1 - 0.025 / 3))  # two-sided 95 % for the three paths together (Bonferroni)


def _other_paths(ctx: ClaimContext, **kw) -> Measured:
    """Each of paths 1-3 alone: its test accuracy pooled over seeds 0-3 (n = 4 P* test sequences), as |A − ½| in
    units of the half-width of a chance-level accuracy's binomial interval, z·½/√n (z for 95 % over 3 paths)."""
    runs = [fig2c(ctx, s, **kw) for s in SEEDS]
    paths = [markov(r).acc_gp_path for r in runs]
    n = sum(len(arrays(r).y_test) for r in runs)
    acc = [sum(p[a] * len(arrays(r).y_test) for p, r in zip(paths, runs, strict=True)) / n for a in (1, 2, 3)]
    half = Z_CHANCE * 0.5 / math.sqrt(n)
    return Measured(max(abs(x - 0.5) for x in acc) / half, "pooled accuracy of paths (1,2), (2,1), (2,2) alone over "
                    f"{n} test sequences: " + ", ".join(f"{x:.3f}" for x in acc) + f"; chance is 0.5 ± {half:.3f}; "
                    "per seed: " + "; ".join(", ".join(f"{p[a]:.3f}" for a in (1, 2, 3)) for p in paths))


def _monotone(s: MarkovSummary, a: MarkovArrays) -> float:
    return float(np.max(np.diff(a.theory_accuracy)))


# -- worlds where the Markov statements are false (tests/core/test_falsifiable.py) --------------------------
# Small runs (four widths, no Hessian, no sampling, 2 extra GP test sets); the worlds that patch the theory get
# their own overrides (gp_test_sets = 1, n_pcs = 29) so that their runs never share the store with unpatched ones.
_SMALL_CFG = {"widths": (10, 50, 1000, 10_000), "hessian": False, "sample_widths": (), "gp_test_sets": 2}
_SMALL = {FIG2C: _SMALL_CFG}
_FROZEN_CFG = {**_SMALL_CFG, "gp_test_sets": 1}


def _no_renormalisation(solve):
    """theory.solve with α = 0: U stays at its GP value at every width (a theory without the kernel
    renormalisation)."""
    def frozen(action, init=None, **kw):
        action.alpha = 0.0
        return solve(action, None, **kw)

    return frozen


_NOISY = World("noisier data (σ⊥ = 5, Fig. 2e's) on which the good path alone is far below 94 %",
               {FIG2C: {**_SMALL_CFG, "sigma_perp": 5.0}})
_FROZEN = World("a theory without the finite-width renormalisation (α = 0 in the action: U stays at its GP value "
                "σ^{2(L+1)} I at every N): nothing is suppressed, correlated or gained at N = 10",
                {FIG2C: _FROZEN_CFG, FIG2E: _FROZEN_CFG, FIG5C: _FROZEN_CFG,
                 FIG2D: {"n_pcs": 29}},
                patch={"attnlab.paths.theory.saddle:solve": _no_renormalisation})


_SAMPLED = {"widths": (10, 50), "sample_widths": (10, 50), "chains": 2, "burn_in": 200, "samples": 100, "thin": 1,
            "P_test": 200, "gp_layouts": (), "gp_test_sets": 0, "hessian": False}
# the patched sampler's runs get sizes of their own (P_test 150, 60 samples), so that no other world reuses them
_WIDE_SAMPLER = World("a Gibbs sampler that draws the posterior of a network 10 times wider than the theory's N: "
                      "its U stays nearer the GP value while the theory's is renormalised",
                      {FIG2C: {**_SAMPLED, "P_test": 150, "samples": 60},
                       GENERIC: {"burn_in": 200, "samples": 60, "thin": 1}},
                      patch={"attnlab.paths.train.gibbs:GibbsSampler":
                             lambda G: lambda pb, N, *a, **k: G(pb, 10 * N, *a, **k)})
_HOT_SAMPLER = World("a Gibbs sampler at a temperature 10^4 times the theory's: it draws nearly the prior, whose mean "
                     "predictor ignores the training labels",
                     {GENERIC: {"burn_in": 200, "samples": 50, "thin": 1}},
                     patch={"attnlab.paths.train.gibbs:GibbsSampler": lambda G: lambda pb, N, tau, *a, **k: G(
                         pb, N, tau * 1e4, *a, **k)})
_UNMIXED = World("chains stopped after 8 sweeps from their independent prior draws, no warm-up: they have not mixed",
                 {FIG2C: {**_SAMPLED, "burn_in": 0, "samples": 8}})


# the theory's accuracy over widths reversed: a theory whose accuracy grows with N
_increasing = edit_arrays(MarkovArrays, lambda a: replace(a, theory_accuracy=a.theory_accuracy[::-1].copy()))


# B3-B5 with the paper's readout (first token) and, as B11, with the public code's (last token)
for _sfx, _kw, _ref in (("", {}, ""), ("_last_token", {"readout": -1}, "; B11: last-token readout")):
    _on = "fig2c" + (" with readout = −1" if _kw else "")
    claim(f"paths.gp_good_path{_sfx}", f"Sec. 4.1.1 (check B3{_ref})",
          "the good path alone reaches A ≈ 94% in the GP limit",
          f"{_on}: GP accuracy of the good-path network (Hs = [1,1]), mean over seeds 0-3 (P* = 1000 each: one "
          "seed's test accuracy has a standard error ≈ 0.008)",
          lambda ctx, kw=_kw: float(np.mean([markov(fig2c(ctx, s, **kw)).acc_gp_layout["good"] for s in SEEDS])),
          (0.92, 0.985), "in", falsify=_NOISY)
    claim(f"paths.gp_good_path_worst_seed{_sfx}", f"Sec. 4.1.1 (check B3{_ref}, per seed)",
          "the good path alone reaches A ≈ 94% on every seed",
          f"{_on}: worst seed's expected GP accuracy of the good path (its training set of P = 100, 20 fresh test "
          "sets of P* = 1000: standard error ≈ 0.002, where one test set's is ≈ 0.008)",
          lambda ctx, kw=_kw: _expected_good(ctx, **kw), (0.92, 0.985), "in",
          falsify=_NOISY)
    claim(f"paths.gp_other_paths_chance{_sfx}", f"Sec. 4.1.1 (check B3b{_ref})",
          "the three other paths alone are at chance level (A ≈ 50 %)",
          f"{_on}: GP accuracy of each single path (1,2), (2,1), (2,2) alone, pooled over seeds 0-3; the largest "
          "|A − 0.5| in units of the binomial 95 % half-width of a chance-level accuracy on those test sequences "
          "(z = 2.39: 95 % for the three paths together); pass ≤ 1",
          lambda ctx, kw=_kw: _other_paths(ctx, **kw), 1.0, "le",
          falsify=World("every other path made as informative as the good one (its accuracy put in their place): "
                        "they are then far from chance", _SMALL, edits.paths_like(0, (1, 2, 3))))
    claim(f"paths.gp_all_below_good{_sfx}", f"Sec. 4.1.1 (check B3c{_ref})",
          "GP with all four paths is worse than the good path alone", f"{_on}: max over seeds of GP(all) − GP(good)",
          worst_gap(gp("all"), gp("good"), "max", **_kw), -0.04, "le",
          falsify=World("GP(all) and GP(good) swapped: all paths then beat the good path alone", _SMALL,
                        edits.swap_gp("all", "good")))
    claim(f"paths.gp_denoising_helps{_sfx}", f"Sec. 4.1.1 (check B3d{_ref})",
          "GP with good + denoising paths is better than good alone",
          f"{_on}: GP(good+denoising) − GP(good) paired per seed (same training and test set); lower end of the "
          "95 % t-interval of its mean over seeds 0-3; pass > 0",
          lambda ctx, kw=_kw: paired_lower(ctx, gp("good_denoising"), gp("good"), "GP(good+den) − GP(good)", **kw),
          0.0, "ge", falsify=World("the two GP lines swapped: good + denoising is then worse than good alone",
                                   _SMALL, edits.swap_gp("good_denoising", "good")))
    claim(f"paths.fw_beats_gp_all{_sfx}", f"Fig. 2c (check B4{_ref})",
          "at N = 10 the finite-width network is far above GP with all paths",
          f"{_on}: min over seeds of A_theory(N=10) − A_GP(all)",
          worst_gap(theory_at(10), gp("all"), "min", **_kw), 0.05, "ge", falsify=_FROZEN)
    claim(f"paths.fw_matches_good_path{_sfx}", f"Fig. 2c (check B4{_ref})",
          "at N = 10 the finite-width network does at least as well as the good path alone",
          f"{_on}: A_theory(N=10) − A_GP(good) paired per seed; non-inferiority with a margin of 0.01: lower end of "
          "the 95 % t-interval of its mean over seeds 0-3 ≥ −0.01",
          lambda ctx, kw=_kw: paired_lower(ctx, theory_at(10), gp("good"), "A_theory(N=10) − A_GP(good)", **kw),
          -0.01, "ge", falsify=_FROZEN)
    claim(f"paths.accuracy_decreases_with_N{_sfx}", f"Fig. 2c (check B4b{_ref})",
          "the gap to GP shrinks monotonically as N grows",
          f"{_on}: largest increase of A_theory between consecutive widths 10 … 10⁴ (slack 0.01), worst seed",
          lambda ctx, kw=_kw: worst(ctx, _monotone, "max", **kw), 0.01, "le",
          falsify=World("the theory's accuracy curve reversed in N: it then grows with the width", _SMALL,
                        _increasing))
    claim(f"paths.fw_converges_to_gp{_sfx}", f"Fig. 2c (check B4b{_ref})",
          "at N = 10⁴ the accuracy is the GP accuracy", f"{_on}: max over seeds of |A_theory(N=10⁴) − A_GP(all)|",
          lambda ctx, kw=_kw: worst(ctx, lambda s, a: abs(s.acc_theory[10000] - s.acc_gp_layout["all"]), "max",
                                    **kw),
          0.01, "le", falsify=World("the theory's accuracy at N = 10⁴ scaled by 1.1: it no longer meets the GP "
                                    "line", _SMALL, edits.scale_theory(10000, by=1.1)))
    claim(f"paths.U_suppresses_adversarial{_sfx}", f"Fig. 2c bottom (check B5{_ref})",
          "at N = 10 the adversarial paths are suppressed",
          f"{_on}: max over seeds of max(U_(1,2)(1,2), U_(2,2)(2,2)) / U_(1,1)(1,1) at N = 10",
          lambda ctx, kw=_kw: worst(ctx, lambda s, a: max(U_at(a, 10)[1, 1], U_at(a, 10)[3, 3]) / U_at(a, 10)[0, 0],
                                    "max", **kw), 0.1, "le", falsify=_FROZEN)
    claim(f"paths.U_anticorrelates_good_denoising{_sfx}", f"Fig. 2c bottom (check B5{_ref})",
          "at N = 10 the good and denoising paths are strongly anti-correlated",
          f"{_on}: max over seeds of ρ = U_(1,1)(2,1)/√(U_gg U_dd)",
          lambda ctx, kw=_kw: worst(ctx, lambda s, a: rho_gd(U_at(a, 10)), "max", **kw), -0.3, "le",
          falsify=_FROZEN)
    claim(f"paths.U_good_grows{_sfx}", f"Fig. 2c bottom (check B5{_ref})",
          "at N = 10 U_good,good grows well above its GP value 1", f"{_on}: min over seeds of U_(1,1)(1,1) at N = 10",
          lambda ctx, kw=_kw: worst(ctx, lambda s, a: U_at(a, 10)[0, 0], "min", **kw), 3.0, "ge",
          falsify=_FROZEN)
    claim(f"paths.U_near_gp_at_1000{_sfx}", f"Fig. 2c bottom (check B5b{_ref})",
          "at N = 1000 U is close to its GP value I", f"{_on}: max over seeds of max|U − I| at N = 1000",
          lambda ctx, kw=_kw: worst(ctx, lambda s, a: float(np.abs(U_at(a, 1000) - np.eye(4)).max()), "max", **kw),
          0.3, "le", falsify=World("the theory's U scaled by 1.5 at every width: at N = 1000 it is far from I",
                                   _SMALL, edit_arrays(MarkovArrays, lambda a: replace(a, theory_U=a.theory_U * 1.5))))


def _b6(ctx: ClaimContext) -> float:
    return min(typed(Fig2dSummary, ctx.run(FIG2D, seed=s)).top5_ratio for s in SEEDS)


claim("paths.alignment_improves", "Fig. 2d (check B6)", "at N = 10 the kernel's top PCs overlap the labels much more "
      "than in the GP limit", "fig2d: top-5 squared PC overlap with Y, FW(N=10) / GP; worst seed", _b6, 2.0, "ge",
      falsify=_FROZEN)

# -- B7, B8: σ⊥ = 5, good + denoising ---------------------------------------------------------------------

claim("paths.denoising_gp_gain", "Fig. 2e (check B7)", "at σ⊥ = 5 the denoising path helps already in the GP limit",
      "fig2e: GP(good + denoising) − GP(good)",
      lambda ctx: (lambda s: s.acc_gp_layout["good_denoising"] - s.acc_gp_layout["good"])(run_markov(ctx, FIG2E)),
      0.08, "ge", falsify=World("the two GP lines swapped: good + denoising is then below good alone",
                                {FIG2E: _SMALL_CFG}, edits.swap_gp("good_denoising", "good")))
claim("paths.denoising_fw_gain", "Fig. 2e (check B7)", "the cross-path kernel gives a larger finite-width gain",
      "fig2e: A_theory(N=10) − GP(good + denoising)",
      lambda ctx: (lambda s: s.acc_theory[10] - s.acc_gp_layout["good_denoising"])(run_markov(ctx, FIG2E)),
      0.10, "ge", falsify=_FROZEN)
claim("paths.denoising_anticorrelation", "Fig. 2e (check B7)", "U anti-correlates the good and denoising paths",
      "fig2e: ρ = U_(1,1)(2,1)/√(U_gg U_dd) at N = 10 (paths ordered good, denoising)",
      lambda ctx: rho_gd(U_at(arrays(ctx.run(FIG2E)), 10), 0, 1), -0.5, "le", falsify=_FROZEN)
claim("paths.denoising_monotone", "Fig. 2e (check B7b)", "over N the good + denoising accuracy decreases to GP",
      "fig2e: largest increase between consecutive widths, plus |A(10⁴) − GP| (slack 0.01)",
      lambda ctx: (lambda r: max(float(np.max(np.diff(arrays(r).theory_accuracy))),
                                 abs(markov(r).acc_theory[10000] - markov(r).acc_gp_layout["good_denoising"])))(
          ctx.run(FIG2E)), 0.01, "le",
      falsify=World("the theory's accuracy curve reversed in N: it then grows with the width",
                    {FIG2E: _SMALL_CFG}, _increasing))
claim("paths.uniform_denoising_head", "Fig. 5c (check B8)",
      "with the random denoising head made uniform the finite-width gain is the same",
      "fig5c: A_theory(N=10) − GP(good + uniform)",
      lambda ctx: (lambda s: s.acc_theory[10] - s.acc_gp_layout["good_uniform"])(run_markov(ctx, FIG5C)),
      0.05, "ge", falsify=_FROZEN)

# -- B9, B10: theory vs sampling ----------------------------------------------------------------------------


def _s(N: int, read: Callable[[MarkovSampled], float], name: str):
    """``read`` of fig2c's samples at width N, or NaN with the reason when the run did not sample that width
    (``name``: what ``read`` reads, for the reason)."""
    def measure(ctx: ClaimContext) -> float | Measured:
        sampled = run_markov(ctx, FIG2C).sampled
        if N not in sampled:
            return Measured(float("nan"), f"fig2c has no {name}_N{N}: that width was not sampled at this scale")
        return read(sampled[N])

    return measure


for _name, _read, _what, _exp, _rel in (
        ("acc_diff", lambda a: a.acc_diff, "|A_samples − A_theory|", 0.02, "le"),
        ("pearson", lambda a: a.pearson, "Pearson(f̄_samples, ⟨f⟩_theory) over test points", 0.99, "ge"),
        ("f_rel_err", lambda a: a.f_rel_err, "‖f̄_samples − ⟨f⟩_theory‖/‖⟨f⟩_theory‖", 0.10, "le"),
        ("U_gate_b9", lambda a: a.U_gate_b9, "max_ππ' |U_s − U_th| / (0.15|U_th| + 0.15) (pass ≤ 1)", 1.0, "le"),
        ("rhat", lambda a: a.rhat, "largest split-R̂ over U entries and monitored f's", 1.1, "le")):
    claim(f"paths.sampling_matches_theory_{_name}", "Fig. 2c, Sec. 4.1.1 (check B9)",
          "at N = 10 the Gibbs-sampled posterior agrees with the theory", f"fig2c, N = 10: {_what}",
          _s(10, _read, _name), _exp, _rel, falsify=_UNMIXED if _name == "rhat" else _WIDE_SAMPLER)
claim("paths.sampling_matches_theory_variance", "Eq. (30) (check B9)",
      "the sampled predictive variance matches Eq. 30", "fig2c, N = 10: |mean sampled var / mean theory var − 1|",
      lambda ctx: abs(run_markov(ctx, FIG2C).sampled[10].var_ratio - 1), 0.15, "le",
      falsify=_WIDE_SAMPLER)
claim("paths.sampling_matches_theory_U_N50", "Fig. 2c (check B10)", "at N = 50 the sampled U agrees more tightly",
      "fig2c, N = 50: max_ππ' |U_s − U_th| / (0.07|U_th| + 0.05) (pass ≤ 1)",
      _s(50, lambda a: a.U_gate_b10, "U_gate_b10"), 1.0, "le", falsify=_WIDE_SAMPLER)
claim("paths.sampling_U_correlation_N50", "Fig. 2c (check B10)", "at N = 50 sampled and theory U are collinear",
      "fig2c, N = 50: Pearson correlation of the U entries", _s(50, lambda a: a.U_corr, "U_corr"), 0.995, "ge",
      falsify=_WIDE_SAMPLER)

# -- C: generic solver/sampler check -----------------------------------------------------------------------

claim("paths.generic_sampler_U", "check C (Eqs. (8), (9) on random heads)",
      "on random heads (Hs = [3,3], mean readout) sampled U matches the theory",
      "generic: relative Frobenius error ‖U_s − U_th‖/‖U_th‖ at N = 10",
      lambda ctx: run_markov(ctx, GENERIC).sampled[10].U_rel_fro, 0.15, "le",
      falsify=_WIDE_SAMPLER)
claim("paths.generic_sampler_predictor", "check C (Eq. (29) on random heads)",
      "on random heads the sampled mean predictor matches the theory",
      "generic: Pearson(f̄_samples, ⟨f⟩_theory) at N = 10",
      lambda ctx: run_markov(ctx, GENERIC).sampled[10].pearson, 0.95, "ge",
      falsify=_HOT_SAMPLER)
