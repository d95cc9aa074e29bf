"""Claims of the multi-seed experiments of paper 4 (Figs. 7, 14, 16, 19; check D2, D3, D6).

Each claim reads a stored run of ``sweeps`` (``ctx.run``) through a measuring function of its typed summary (and of
its arrays: a ``Result``; tested at tiny size in ``tests/clustering/test_sweeps.py``). The learnability checks D2/D3
pin their configs explicitly. What is only stated for the paper's sizes (20/20 from d = 8, Fig. 14's bars) is
asserted at paper scale. At quick
scale Fig. 14's transfer gain is asserted on 128 runs a bar through the 95 % interval of the paired gain, and the
"only runs with the ideal clusters reach 100 %" twin ``<id>_quick`` is reported with the paper's number as
``expected``. Each asserted claim names a world where it is false (``falsify``) or says why none is built; claims
whose margin is within the seed-to-seed spread are measured on two seed blocks (``blocks=2``).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from attnlab.clustering.claims.spikes import gradient_exponent, gradient_floor
from attnlab.clustering.experiments.sweeps import FIG7, FIG14, FIG16, FIG19
from attnlab.clustering.summaries.sweeps import (
    AblationSummary,
    SparsityArrays,
    SparsitySummary,
    TransferArrays,
    TransferSummary,
)
from attnlab.core.arrays import edit_arrays
from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.core.experiment import Result
from attnlab.core.intervals import mean_interval
from attnlab.core.summaries import edit_summary, typed
from attnlab.core.worlds import World

D3 = {"d": 2, "k": 3, "lr": 3e-3, "n_seeds": 16, "epochs": 300, "log_every": 5}          # check D3
D2 = {"ds": (8,), "k": 5, "lr": 3e-3, "n_seeds": 16, "epochs": 300, "log_every": 5}       # check D2
MIN_GROUP = 3  # D6 needs ≥ 3 solved and ≥ 3 failed models


# ----------------------------------------------------------------------------------------------- measures
def sparsity_gap(s: SparsitySummary, d: int) -> float:
    """Mean sparsity summary of successful minus failed models (< 0: successes denser); NaN if either group has
    fewer than 3 models (D6)."""
    u = s.d[d]
    if min(u.n_success, u.n_models - u.n_success) < MIN_GROUP:
        return float("nan")
    return u.sparsity_success - u.sparsity_failed


def sparsity_spearman(s: SparsitySummary, d: int) -> float:
    """Spearman(sparsity summary, final test accuracy) at d; NaN under the D6 group-size condition."""
    return s.d[d].spearman if np.isfinite(sparsity_gap(s, d)) else float("nan")


def success_rate_slope(s: SparsitySummary) -> float:
    """Success rate at the largest d minus that at the smallest d."""
    return s.d[max(s.d)].success_rate - s.d[min(s.d)].success_rate


def min_success_from(s: SparsitySummary, d0: int = 8) -> float:
    """Fewest successful models over the d ≥ d0 units (paper: 20/20 from d = 8)."""
    ds = [d for d in s.d if d >= d0]
    return float(min(s.d[d].n_success for d in ds)) if ds else float("nan")


def scratch_successes_above(s: TransferSummary, p0: int = 4) -> float:
    """Total successful from-scratch runs over p > p0 (paper: none for p > 4 within 1000 epochs)."""
    return float(sum(bar.n_success for q, bar in sorted(s.scratch.items()) if q > p0))


def perfect_without_ideal(s: TransferSummary) -> float:
    """Finetuned runs with 100 % test accuracy whose p-phase ξ did not form the ideal C(k+p−1, k) clusters."""
    return float(sum(bar.n_perfect_not_ideal for _, bar in sorted(s.finetune.items())))


def _gains(result: Result, s: TransferSummary) -> tuple[list[float], str]:
    """The lower ends of the 95 % t-intervals of the seed-paired gain finetuned − scratch (finetuned and scratch
    runs of a seed share their p' data and batch order), one per p' trained both ways, and a detail sentence."""
    a = TransferArrays.from_result(result)
    lows, parts = [], []
    for q in sorted(set(s.finetune) & set(s.scratch)):
        ft, sc = a.finetune[q].test_acc[-1], a.scratch[q].test_acc[-1]
        mean, lo, hi = mean_interval(ft - sc)
        lows.append(lo)
        parts.append(f"p' = {q}: {ft.mean():.2f} vs {sc.mean():.2f} ({mean:+.2f} ± {hi - mean:.2f})")
    ft = a.finetune[min(s.finetune)].epochs
    return lows, (f"{len(a.n_clusters_pre)} runs a bar, k = {s.ideal_clusters - 1}, {a.pre_epochs[-1]:.0f} + "
                  f"{ft[-1]:.0f} epochs: mean test accuracy finetuned vs from scratch (gain ± 95 %) "
                  + "; ".join(parts) + ".")


def transfer_gain(result: Result, s: TransferSummary) -> Measured:
    """``min_gain_finetune`` (the smallest gain of the mean accuracy over the p'), with the per-p' intervals."""
    return Measured(float("nan") if s.gain is None else s.gain.min_gain_finetune, _gains(result, s)[1])


def transfer_gain_lower(result: Result, s: TransferSummary) -> Measured:
    """The smallest lower end, over the p', of the 95 % interval of the paired gain (> 0: resolved at every p')."""
    lows, detail = _gains(result, s)
    return Measured(min(lows, default=float("nan")), detail)


def perfect_clusters(result: Result, s: TransferSummary) -> Measured:
    """``perfect_without_ideal`` with the number of perfect finetuned runs, the p-phase cluster counts of those
    runs and of all."""
    a = TransferArrays.from_result(result)
    n_cl = np.asarray(a.n_clusters_pre)
    qs = sorted(s.finetune)
    perfect = sum(s.finetune[q].n_perfect for q in qs)
    hit = np.zeros(len(n_cl), bool)
    for q in qs:
        hit |= a.finetune[q].test_acc[-1] >= 1.0
    bad = perfect_without_ideal(s)
    return Measured(bad,
                    f"{perfect} finetuned run(s) reach 100 % test accuracy, {bad:.0f} of them "
                    f"without the {s.ideal_clusters} ideal clusters (their p = 2 cluster counts: "
                    f"{', '.join(str(int(c)) for c in n_cl[hit]) or 'none'}); the p = 2 phase formed them in "
                    f"{s.n_ideal_clusters_pre} of {len(n_cl)} runs (cluster counts {n_cl.min()} to {n_cl.max()}, "
                    f"median {np.median(n_cl):.0f}).")


def roughness_ratio(s: AblationSummary) -> float:
    """Mean |Δ acc| between neighbouring settings, seed 0 over the seed mean (Fig. 16a vs 16b)."""
    return s.roughness_seed0 / s.roughness_mean if s.roughness_mean else float("nan")


def sweep_curves(results: list[Result]) -> list[dict[str, np.ndarray]]:
    """Each d unit's logged curves (grad_total, tv_error, train_loss: (E, S)), over the units of ``results`` (in
    the order of each run's ``ds``)."""
    return [a.d[int(d)].curves() for a in map(SparsityArrays.from_result, results) for d in a.ds]


# ----------------------------------------------------------------------------------------------- claims
def _fig7(ctx: ClaimContext) -> Result:
    return ctx.run(FIG7, **(D3 if ctx.scale == "quick" else {}))


def _d2(ctx: ClaimContext) -> Result:
    return ctx.run(FIG19, **D2)


def _fig14(ctx: ClaimContext) -> tuple[Result, TransferSummary]:
    result = ctx.run(FIG14)
    return result, typed(FIG14, result)


def _s7(ctx: ClaimContext) -> SparsitySummary:
    return typed(FIG7, _fig7(ctx))


def _s2(ctx: ClaimContext) -> SparsitySummary:
    return typed(FIG19, _d2(ctx))


def _unit(s: SparsitySummary, d: int, **changes: float | None) -> SparsitySummary:
    """``s`` with the unit at d changed (a world's edit; ``s`` itself where it has no unit at d)."""
    return replace(s, d={**s.d, d: replace(s.d[d], **changes)}) if d in s.d else s


def _neg(v: float | None) -> float | None:
    return None if v is None else -v


def _both(quick_why: str | None, **kw) -> None:
    """Register a claim asserted at paper scale and, given ``quick_why`` (why quick scale cannot show it), its
    reported twin ``<id>_quick`` whose detail ends with that sentence."""
    claim(**kw, scales=("paper",))
    if quick_why:
        def measure(ctx: ClaimContext, inner=kw["measure"]) -> Measured:
            out = inner(ctx)
            return Measured(out.value, f"{out.detail} {quick_why}".strip())

        claim(**{**kw, "id": kw["id"] + "_quick", "relation": "report", "measure": measure}, scales=("quick",))


_FIG14_QUICK = ("Quick scale trains k = 3 for 200 + 200 epochs on 128 runs, where solved p = 2 models with other "
                "cluster counts finetune as well; the paper's bars are k = 5, 1000 + 1000 epochs and 250 runs (paper "
                "scale, about 4.3 CPU hours).")


# Checks D3 (fig7 at d = 2, k = 3) and D2 (fig19 at d = 8, k = 5): (id, check, run, its config, the value read of
# its unit at d, d, expected, relation, statement, how); each reads one summary value of its run.
_LEARNABILITY = (
    ("d2_k3", "D3", "fig7", D3, lambda u: u.n_reach99, 2, 4, "ge",
     "d = 2, k = 3, lr 3e-3, 300 epochs: ≥ 4 of 16 seeds reach test accuracy ≥ 0.99",
     "fig7 at d=2, k=3, 16 seeds, 300 epochs: seeds whose logged test accuracy reaches 0.99 at some epoch"),
    ("d2_k3_stuck", "D3", "fig7", D3, lambda u: u.n_stuck100, 2, 1, "ge",
     "unsolved D3 seeds include some stuck at chance (test acc < 0.6) for ≥ 100 epochs",
     "fig7 D3 run: unsolved seeds whose test accuracy stays < 0.6 over ≥ 100 consecutive logged epochs"),
    ("d8_k5", "D2", "fig19", D2, lambda u: u.n_reach90, 8, 5, "ge",
     "d = 8, k = 5, lr 3e-3, 300 epochs: ≥ 5 of 16 seeds reach test accuracy ≥ 0.9",
     "fig19 at d=8 only, k=5, 16 seeds, 300 epochs: seeds whose logged test accuracy reaches 0.9"),
    ("d8_k5_loss", "D2", "fig19", D2, lambda u: u.max_final_train_loss, 8, 0.70, "le",
     "d = 8, k = 5, 300 epochs: every seed's final train loss ≤ 0.70",
     "fig19 D2 run: max over the 16 seeds of the final full-batch train loss"),
)
_SLOW = "Adam at lr 1e-5 (not 3e-3) for 50 epochs: no seed leaves the plateau"
_WORLDS = {
    "d2_k3": World(_SLOW, overrides={FIG7: {"lr": 1e-5, "epochs": 50}}),
    "d2_k3_stuck": World("a 1-sparse task (k = 1) that every seed solves within a few epochs: no seed stays at "
                         "chance", overrides={FIG7: {"k": 1, "epochs": 120}}),
    "d8_k5": World(_SLOW, overrides={FIG19: {"lr": 1e-5, "epochs": 50}}),
    "d8_k5_loss": World("Adam at lr 1.0 for 30 epochs: training diverges and the loss ends above chance",
                        overrides={FIG19: {"lr": 1.0, "epochs": 30}}),
}
# seed counts out of 16 (binomial spread ≈ 2) within 2 of their gate are measured on two seed blocks
_BLOCKS = {"d2_k3": 2, "d8_k5": 2}
for _id, _check, _exp, _cfg, _name, _d, _expected, _rel, _statement, _how in _LEARNABILITY:
    claim(id=f"clustering.learnability_{_id}", ref=f"Fig. 19, App. A.4 (check {_check})", statement=_statement,
          how=_how, expected=_expected, relation=_rel, scales=("quick",), falsify=_WORLDS[_id],
          blocks=_BLOCKS.get(_id, 1),
          measure=lambda ctx, e={"fig7": FIG7, "fig19": FIG19}[_exp], cfg=_cfg, value=_name, d=_d:
          value(ctx.summary(e, **cfg).d[d]))
claim(
    id="clustering.solved_small_gradient", ref="Prop. 2, Prop. 4",
    statement="solved ⇒ small gradient: the full-batch gradient norm vanishes with the error, ||∇L|| = O(B̃·√𝓔)",
    how="the D2 (d=8, k=5) and D3 (d=2, k=3) runs, 300 epochs, logged every 5: slope of log ||∇L|| against "
        "log 𝓔 over the epochs with 𝓔 < 1e-2, within each seed that gets there (≥ 5 epochs over ≥ half a decade), "
        "pooled; ≥ 0.5 is Prop. 2's rate at bounded weights",
    measure=lambda ctx: gradient_exponent(sweep_curves([_fig7(ctx), _d2(ctx)])), expected=0.5, relation="ge",
    scales=("quick",),
    falsify=World("a gradient floor: 1 added to every logged ||∇L|| (as a term that does not vanish with the error "
                  "would), so ||∇L|| no longer falls with 𝓔", result=gradient_floor(1.0)),
)
# D6 (Fig. 7): at quick scale on the checks D3 (d = 2, k = 3) and D2 (d = 8, k = 5) runs separately, at paper scale
# on fig7 (d = 2, k = 5, 20 models, 1000 epochs).
for _tag, _run, _d, _scales in (("", _s7, 2, ("quick", "paper")), ("_d8_k5", _s2, 8, ("quick",))):
    claim(
        id=f"clustering.sparsity_denser_success{_tag}", ref="Fig. 7, App. A.1",
        statement="successful models have denser activations: mean sparsity over ε ∈ [1e-3, 10] below failed ones'",
        how=f"mean sparsity summary of successful (test acc > 0.9) minus failed models at d = {_d} (NaN if < 3 in a "
            "group); quick: the D3 (d=2, k=3) and D2 (d=8, k=5) runs; paper: fig7 (d=2, k=5)",
        measure=lambda ctx, run=_run, d=_d: sparsity_gap(run(ctx), d), expected=0.0, relation="le", scales=_scales,
        falsify=World("the sparsity summaries of successful and failed models swapped: the failed ones are denser",
                      result=edit_summary(lambda s, d=_d: _unit(s, d, sparsity_success=s.d[d].sparsity_failed,
                                                                sparsity_failed=s.d[d].sparsity_success))),
    )
    claim(
        id=f"clustering.sparsity_spearman{_tag}", ref="Fig. 7, App. A.1",
        statement="sparsity decreases as accuracy increases: Spearman(sparsity, test accuracy) < −0.3",
        how=f"Spearman correlation over the models of the D6 run at d = {_d} (NaN if < 3 solved or < 3 failed)",
        measure=lambda ctx, run=_run, d=_d: sparsity_spearman(run(ctx), d), expected=-0.3, relation="le",
        scales=_scales, blocks=2 if _d == 2 else 1,  # −0.44 at quick on 16 models: within a Spearman's spread
        falsify=World("the correlation's sign flipped: sparsity rises with accuracy",
                      result=edit_summary(lambda s, d=_d: _unit(s, d, spearman=_neg(s.d[d].spearman)))),
    )
claim(
    id="clustering.success_rises_with_d", ref="Fig. 19, App. A.4",
    statement="larger embeddings succeed more often (quick: d = 8 vs d = 2 at k = 3, 200 epochs)",
    how="fig19: success rate (final test acc > 0.9) at the largest d minus at the smallest d",
    measure=lambda ctx: success_rate_slope(ctx.summary(FIG19)), expected=0.1, relation="ge",
    falsify=World("the success rates of the smallest and the largest d swapped: smaller embeddings succeed more",
                  overrides={FIG19: {"ds": (2, 8), "n_seeds": 8, "epochs": 100}},
                  result=edit_summary(lambda s: _unit(_unit(s, 2, success_rate=s.d[8].success_rate), 8,
                                                      success_rate=s.d[2].success_rate) if {2, 8} <= set(s.d) else s)),
)
claim(
    id="clustering.all_succeed_from_d8", ref="Fig. 19, App. A.4",
    statement="from d = 8 on, all 20 models succeed (test acc > 0.9)",
    how="fig19 paper scale: fewest successful models over d ∈ {8, 16, 32}",
    measure=lambda ctx: min_success_from(ctx.summary(FIG19)), expected=20, relation="ge", scales=("paper",),
    falsify=World("Adam at lr 1e-5 for 30 epochs, 20 models at d = 8: no model leaves the plateau",
                  overrides={FIG19: {"ds": (8,), "n_seeds": 20, "lr": 1e-5, "epochs": 30}}),
)
_FIG14_SMALL = {FIG14: {"n_seeds": 16, "pretrain_epochs": 100, "epochs": 100}}
_SWAPPED = ("the finetuned and from-scratch arms swapped (runs paired by seed): training from scratch beats "
            "finetuning")


def _swap_bars(a: TransferArrays) -> TransferArrays:
    """Each p' trained both ways: the finetuned bar's accuracies read as the scratch bar's, and back."""
    both = [q for q in a.finetune if q in a.scratch]
    return replace(a, finetune={**a.finetune, **{q: replace(a.finetune[q], test_acc=a.scratch[q].test_acc)
                                                 for q in both}},
                   scratch={**a.scratch, **{q: replace(a.scratch[q], test_acc=a.finetune[q].test_acc) for q in both}})


def _swap_arms(experiment: str, result: Result) -> Result:
    """fig14 with the finetuned and scratch final accuracies (and the smallest mean gain's sign) swapped."""
    return edit_summary(_negate_gain)(experiment, edit_arrays(TransferArrays, _swap_bars)(experiment, result))


def _negate_gain(s: TransferSummary) -> TransferSummary:
    return s if s.gain is None else replace(s, gain=replace(s.gain, min_gain_finetune=_neg(s.gain.min_gain_finetune)))


@edit_summary
def _smooth_seed0(s: AblationSummary) -> AblationSummary:
    """fig16 with seed 0 as smooth as the seed mean."""
    return replace(s, roughness_seed0=s.roughness_mean)


_TRANSFER = dict(ref="Fig. 14, App. A.2",
                 statement="finetuned from p = 2 beats training from scratch for every p ≥ 3 (mean test accuracy)")
_both(None, id="clustering.transfer_beats_scratch", **_TRANSFER,
      how="fig14: min over p ∈ ft_ps ∩ ps of mean acc(finetuned) − mean acc(scratch)",
      measure=lambda ctx: transfer_gain(*_fig14(ctx)), expected=0.0, relation="ge",
      falsify=World(_SWAPPED, overrides=_FIG14_SMALL, result=_swap_arms))
claim(id="clustering.transfer_beats_scratch_quick", **_TRANSFER,
      how="fig14 quick (d = 2, k = 3, p' ∈ {3, 4}, 128 runs a bar, 200 + 200 epochs): the smallest lower end over p' "
          "of the 95 % t-interval of the seed-paired gain acc(finetuned) − acc(scratch); the paper's bars are k = 5, "
          "1000 + 1000 epochs, p' ≤ 10, 250 runs",
      measure=lambda ctx: transfer_gain_lower(*_fig14(ctx)), expected=0.0, relation="ge",
      scales=("quick",), blocks=2,  # lower end +0.017 against a spread of about its size
      falsify=World(_SWAPPED, overrides=_FIG14_SMALL, result=_swap_arms))
_both(None, id="clustering.no_scratch_learning_p_gt_4", ref="App. A.2",
      statement="with N = 12 and 2048 points, 1000 epochs from scratch learn nothing for p > 4",
      how="fig14 paper scale: successful (test acc > 0.9) from-scratch runs summed over p ∈ [5, 10]",
      measure=lambda ctx: scratch_successes_above(ctx.summary(FIG14)), expected=0, relation="le",
      falsify=World("a 1-sparse task (k = 1), which training from scratch learns at p = 5 within 60 epochs",
                    overrides={FIG14: {"k": 1, "ps": (2, 5), "ft_ps": (5,), "n_seeds": 8,
                                                    "pretrain_epochs": 20, "epochs": 60}}))
_both(_FIG14_QUICK, id="clustering.transfer_perfect_needs_clusters", ref="App. A.2",
      statement="only finetuned runs whose p = 2 phase formed the C(k+1, k) clusters (6 at k = 5) reach 100 % "
                "test accuracy",
      how="fig14: finetuned runs at 100 % test accuracy whose p = 2 ξ had n_clusters ≠ C(k+1, k)",
      measure=lambda ctx: perfect_clusters(*_fig14(ctx)), expected=0, relation="le",
      falsify="its world is the quick run itself (k = 3, 128 runs, 200 + 200 epochs: 4 perfect finetuned runs "
              "without the ideal clusters, the reported _quick twin), about 5 min, too slow for a test")
claim(
    id="clustering.ablation_single_seed_rougher", ref="Fig. 16, App. A.3",
    statement="one seed varies much more across neighbouring hyper-parameter settings than the seed mean",
    how="fig16: mean |Δ test acc| between neighbouring settings, seed 0 over the seed mean (ratio ≥ 1.5)",
    measure=lambda ctx: roughness_ratio(ctx.summary(FIG16)), expected=1.5, relation="ge",
    blocks=2,  # 1.68 at quick: one seed's roughness varies by more than the margin
    falsify=World("seed 0 as smooth as the seed mean: one seed varies no more than the average",
                  overrides={FIG16: {"n_seeds": 8, "epochs": 20}}, result=_smooth_seed0),
)
