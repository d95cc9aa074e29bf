"""Claims of paper 1 on the spectrum of the attention matrix at initialisation (App. C.1, Fig. C.1; the run is
of the attention family, :mod:`attnlab.signal.experiments.attention`): the 1/√T bulk of the standard init and its
absence under the rescaled one."""

from __future__ import annotations

from attnlab.core.claims import claim
from attnlab.signal.experiments.attention import FIGC1

# -- spectrum (App. C.1, Fig. C.1) -------------------------------------------------------------------------------

claim("signal.spectrum_standard_bulk", "App. C.1, Fig. C.1",
      "standard init (score std fixed): the attention bulk has radius O(1/√T), √(e^{σ²}−1)/√T = 0.041 at T = 1024",
      "figC1: mean |λ_2| at T = 1024, σ_s = 1", lambda ctx: ctx.summary(FIGC1).lambda2["standard", 1024],
      (0.03, 0.06), "in")
claim("signal.spectrum_rescaled_no_bulk", "App. C.1, Fig. C.1", "rescaled init (σ_s² = β² log T): no 1/√T bulk",
      "figC1: mean |λ_2| at T = 1024, β = 2", lambda ctx: ctx.summary(FIGC1).lambda2["beta2", 1024], 0.5, "ge")
claim("signal.spectrum_standard_scaling", "App. C.1, Fig. C.1", "standard init: |λ_2| ∝ T^{−1/2}",
      "figC1: slope of log |λ_2| vs log T over T ∈ {64, …, 1024}",
      lambda ctx: ctx.summary(FIGC1).slope["standard"], -0.5, "approx", 0.1)
