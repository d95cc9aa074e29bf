"""The theory of paper 1: self-attention as a Random Energy Model (``rem``: Eqs. (10)-(15), App. B.2-B.7, C.1), the
MLP's mean-field kernels (``kernels``: Eqs. (17)-(18), (B.20)-(B.22)), one transformer block and its iteration over
depth (``propagation``: Eqs. (8), (14), (16), (19), fixed points) and trainability diagrams
(``diagram``: Fig. 1c, α_c(L)).

The block map's names are re-exported, so ``theory.predict(arch, rho0)`` is the theory side of the paired API.
"""

from attnlab.signal.theory import (
    diagram,
    kernels,
    rem,
)
from attnlab.signal.theory.propagation import (
    OBSERVABLES,
    block,
    critical_sigma_w2,
    fixed_points,
    iterate,
    predict,
    slope_at_one,
    theory_beta,
)

__all__ = ["OBSERVABLES", "block", "critical_sigma_w2", "diagram", "fixed_points", "iterate", "kernels", "predict",
           "rem", "slope_at_one", "theory_beta"]
