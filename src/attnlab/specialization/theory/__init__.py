"""Theory of paper 0: the reduced loss (10)-(11) by Monte Carlo, its gradient flow (12), the Bayes estimator
(Prop. IV.1-IV.2) and the Hessian at the unspecialised saddle (Lemmas III.1, A.5).

* :mod:`.samples` — fixed Monte-Carlo samples of (ε, θ, χ*, ξ) (App. B);
* :mod:`.loss` — Ẽ_σ(m, r, b, v) and its gradient, batched over independent parameter sets;
* :mod:`.flow` — the flow (12) from the paper's or the SGD's init, :func:`predict` → ``Trajectory``;
* :mod:`.bayes` — Bayes posterior (16), risk and the Prop. IV.2 / IV.3 constructions;
* :mod:`.hessian` — the constants c1..c4 of (13) in closed form and by autodiff.

The names of the first three are re-exported here (``theory.predict``, ``theory.reduced_loss``, ...).
"""

from attnlab.specialization.theory.flow import PARAMS, init_from_order_params, integrate_flow, predict, theory_init
from attnlab.specialization.theory.loss import autograd_loss_and_grad, loss_and_grad, reduced_loss, scores
from attnlab.specialization.theory.samples import MCSamples, law_info, mc_samples

__all__ = ["PARAMS", "MCSamples", "autograd_loss_and_grad", "init_from_order_params", "integrate_flow", "law_info",
           "loss_and_grad", "mc_samples", "predict", "reduced_loss", "scores", "theory_init"]
