"""Claims of paper 2 on Fig. 3-right (check 20 of docs/studies/potts.md): the test loss of factored attention fitted
by L-BFGS along the number of samples M first rises, then falls, and peaks at the linear separability threshold.
The shape is asserted on minima only: a sweep with a fit that did not reach max |∇f| < gtol measures NaN, with the
count in the detail (whether the fits converge is the solver's own stopping criterion, not a claim)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from attnlab.core.claims import ClaimContext, Measured, claim
from attnlab.core.summaries import typed
from attnlab.core.worlds import World
from attnlab.potts import metrics
from attnlab.potts.claims import worlds as w
from attnlab.potts.experiments.fig3right import FIG3RIGHT
from attnlab.potts.metrics import pl_key
from attnlab.potts.summaries import PLSummary, SweepArrays

F3R_LAM = 1e-4  # the paper's "small regularisation", the λ of every scale's grid


F3R = FIG3RIGHT


def _fig3right(ctx: ClaimContext) -> tuple[PLSummary, str, bool]:
    """The fig3right summary (its sweep at λ = F3R_LAM: ``.lam[F3R_LAM]``), a clause on its fits (every λ: how many
    reached max |∇f| < gtol, the worst gradient, the most iterations) and whether all did: the shape claims hold on
    minima only."""
    res = ctx.run(F3R)
    s, c = typed(F3R, res), res.config
    n = len(c.Ms) * len(c.lams) * c.n_real
    how = (f"{c.n_real} realisations, {round(s.converged_fraction * n)}/{n} L-BFGS fits converged (max |∇f| = "
           f"{s.max_grad_norm:.2e}, at most {int(s.max_n_iter)} iterations, warm-started along M)")
    return s, how, s.converged_fraction == 1.0


def _on_minima(value: float, detail: str, converged: bool) -> Measured:
    return Measured(value if converged else math.nan, detail if converged else f"not every fit converged: {detail}")


def _f3r_rise(ctx: ClaimContext) -> Measured:
    top, how, ok = _fig3right(ctx)
    s = top.lam[F3R_LAM]
    rise = s.rise
    assert rise is not None, "fig3right's grid has no M = 1"
    return _on_minima(rise.value, f"mean test loss {s.test[1]:.2f} at M = 1, rising by "
                    f"{rise.value:.2f} ± {rise.sem:.2f} (SEM) to its maximum over M <= 20 ({how})", ok)


def _f3r_fall(ctx: ClaimContext) -> Measured:
    top, how, ok = _fig3right(ctx)
    s = top.lam[F3R_LAM]
    fall = s.fall
    assert fall is not None, "fig3right's grid lacks M = 1 or M = 200"
    return _on_minima(fall.value, f"mean test loss {s.test[200]:.2f} at M = 200, "
                    f"{fall.value:.2f} ± {fall.sem:.2f} (SEM) below M = 1 "
                    f"(optimal loss {top.optimal_loss:.2f}; {how})", ok)


def _f3r_peak(ctx: ClaimContext) -> Measured:
    top, how, ok = _fig3right(ctx)
    s, L = top.lam[F3R_LAM], top.L
    peak, lo, hi = s.argmax_M, s.separable_M, s.inseparable_M
    return _on_minima(s.peak_steps,
                    f"test loss peaks at M = {peak:g} (α = M/L = {peak / L:g}); every fit separates its training "
                    f"sites (train accuracy 1) up to M = {lo:g}, none from M = {hi:g} ({how})", ok)


def _reshaped(change):
    """A result function: every fit's test loss (arrays ``M{M}/test``, (λ, realisation)) replaced by
    ``change(Ms, tests)`` and Fig. 3-right's shape recomputed from the fits."""
    def fn(experiment: str, result):
        a = SweepArrays.from_result(result)
        Ms = [int(M) for M in a.Ms]
        new = change(Ms, np.stack([a.fit[M].test for M in Ms]))
        for k, lam in enumerate(a.lams):
            rows = [{"M": M, "realisation": r, "test": new[i, k, r], "train_acc": a.fit[M].train_acc[k, r]}
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

