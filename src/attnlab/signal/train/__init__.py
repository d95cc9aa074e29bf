"""The two simulations of paper 1: random networks at initialisation propagated layer by layer (``simulation``:
the paired API's simulation side, Figs. 1c-e, 3, 5, C.3) and masked-language-model training (``mlm``: Figs. 1f, 4,
C.2).

``train.simulate(arch, ...)`` is re-exported.
"""

from attnlab.signal.train import mlm
from attnlab.signal.train.simulation import OBSERVABLES, block_flops, simulate

__all__ = ["OBSERVABLES", "block_flops", "mlm", "simulate"]
