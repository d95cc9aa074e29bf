"""Claims of paper 2 on Fig. 3-right (check 20 of docs/studies/potts.md): the test loss of factored attention fitted
by L-BFGS along the number of samples M first rises, then falls, and peaks at the linear separability threshold.
The shape is asserted on minima only: a sweep with a fit that did not reach max |∇f| < gtol measures NaN, with the
count in the detail (whether the fits converge is the solver's own stopping criterion, not a claim)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.core.worlds import World
from attnlab.potts import metrics
from attnlab.potts import worlds as w
from attnlab.potts.experiments.fig3right import FIG3RIGHT
from attnlab.potts.metrics import pl_key

F3R_LAM = 1e-4  # the paper's "small regularisation", the λ of every scale's grid


F3R = FIG3RIGHT


def _fig3right(ctx: ClaimContext) -> tuple[dict, str, bool]:
    """The fig3right summary, a clause on its fits (every λ: how many reached max |∇f| < gtol, the worst gradient,
    the most iterations) and whether all did: the shape claims hold on minima only."""
    res = ctx.run(F3R)
    s, Ms = res.summary, res.arrays["Ms"]
    n_lam, n_real = res.arrays[f"M{Ms[0]}/test"].shape
    n = len(Ms) * n_lam * n_real
    how = (f"{n_real} realisations, {round(s['converged_fraction'] * n)}/{n} L-BFGS fits converged (max |∇f| = "
           f"{s['max_grad_norm']:.2e}, at most {int(s['max_n_iter'])} iterations, warm-started along M)")
    return s, how, s["converged_fraction"] == 1.0


def _f3r(s: dict, name: str, M: int | None = None) -> float:
    return s[pl_key(name, F3R_LAM, M)]


def _on_minima(value: float, detail: str, converged: bool) -> Measured:
    return Measured(value if converged else math.nan, detail if converged else f"not every fit converged: {detail}")


def _f3r_rise(ctx: ClaimContext) -> Measured:
    s, how, ok = _fig3right(ctx)
    return _on_minima(_f3r(s, "rise"), f"mean test loss {_f3r(s, 'test', 1):.2f} at M = 1, rising by "
                    f"{_f3r(s, 'rise'):.2f} ± {_f3r(s, 'rise_sem'):.2f} (SEM) to its maximum over M <= 20 ({how})", ok)


def _f3r_fall(ctx: ClaimContext) -> Measured:
    s, how, ok = _fig3right(ctx)
    return _on_minima(_f3r(s, "fall"), f"mean test loss {_f3r(s, 'test', 200):.2f} at M = 200, "
                    f"{_f3r(s, 'fall'):.2f} ± {_f3r(s, 'fall_sem'):.2f} (SEM) below M = 1 "
                    f"(optimal loss {s['optimal_loss']:.2f}; {how})", ok)


def _f3r_peak(ctx: ClaimContext) -> Measured:
    s, how, ok = _fig3right(ctx)
    peak, lo, hi = (_f3r(s, k) for k in ("argmax_M", "separable_M", "inseparable_M"))
    return _on_minima(_f3r(s, "peak_steps"),
                    f"test loss peaks at M = {peak:g} (α = M/L = {peak / s['L']:g}); every fit separates its training "
                    f"sites (train accuracy 1) up to M = {lo:g}, none from M = {hi:g} ({how})", ok)


def _reshaped(change):
    """A result function: every fit's test loss (arrays ``M{M}/test``, (λ, realisation)) replaced by
    ``change(Ms, tests)`` and Fig. 3-right's shape recomputed from the fits."""
    def fn(experiment: str, result):
        a, Ms = result.arrays, [int(M) for M in result.arrays["Ms"]]
        new = change(Ms, np.stack([a[f"M{M}/test"] for M in Ms]))
        for k, lam in enumerate(a["lams"]):
            rows = [{"M": M, "realisation": r, "test": new[i, k, r], "train_acc": a[f"M{M}/train_acc"][k, r]}
                    for i, M in enumerate(Ms) for r in range(new.shape[2])]
            result.summary.update(metrics.sweep_shape(pd.DataFrame(rows), float(lam)))
            result.summary.update({pl_key("test", lam, M): float(new[i, k].mean()) for i, M in enumerate(Ms)})
        return result
    return fn


_FLAT = World("a test loss that does not depend on M (every fit's loss replaced by its M = 1 value): no rise, "
              "no fall", overrides={F3R: w.FIG3RIGHT},
              result=_reshaped(lambda Ms, test: np.broadcast_to(test[:1], test.shape)))


claim("potts.fig3right_rise", "Fig. 3-right (check 20)",
      "factored attention on Potts data: the test loss first rises with M (check 20: by > 0.5 over M <= 20)",
      "fig3right, λ = 1e-4, reg 'sum', converged L-BFGS: max over M <= 20 of the mean test loss minus test(M = 1) "
      "(NaN unless every fit reached max |∇f| < 1e-6)", _f3r_rise, 0.5, "ge", falsify=_FLAT)
claim("potts.fig3right_fall", "Fig. 3-right (check 20)",
      "... then falls (check 20: test(M = 200) < test(M = 1) - 1)", "fig3right: test(M = 1) - test(M = 200)",
      _f3r_fall, 1.0, "ge", falsify=_FLAT)
claim("potts.fig3right_peak_M", "Fig. 3-right and the text after it",
      "the peak sits at the linear separability threshold (the largest M whose training set the layer classifies "
      "correctly) rather than at α = 1",
      "fig3right: grid steps from the M of the largest mean test loss to the window between the largest M at which "
      "every fit reaches training accuracy 1 and the smallest M at which none does (0: inside)",
      _f3r_peak, 0.0, "le",
      falsify=World("a test loss that peaks at M = 200 (α = 10, 5 added there), far past the separability window",
                    overrides={F3R: w.FIG3RIGHT},
                    result=_reshaped(lambda Ms, test: test + 5.0 * (np.asarray(Ms) == 200)[:, None, None])))

