"""The typed summaries of paper 4's experiments (:mod:`attnlab.core.summaries`), one module per figure family.

* :mod:`.training` — the ideal head and single trainings (Figs. 1-6, 8);
* :mod:`.spikes` — training dynamics, loss spikes, the normalisers' curvature and the remedies (Figs. 9-13, 17, 18);
* :mod:`.sweeps` — success against sparsity, transfer and the ablation (Figs. 7, 14, 16, 19).

Each module also names, as typed arrays (:mod:`attnlab.core.arrays`), the arrays the claims read; ``ARRAYS`` maps
each experiment to its classes (``tests/core/test_arrays.py`` checks each against the declared outputs).
"""

from __future__ import annotations

from attnlab.clustering.summaries.spikes import DynamicsArrays, RemediesArrays, SpikesArrays
from attnlab.clustering.summaries.sweeps import SparsityArrays, TransferArrays
from attnlab.clustering.summaries.training import Fig5Arrays, TransferCircuitArrays
from attnlab.core.arrays import Arrays

#: experiment key → the typed arrays classes its runs are read with (``tests/core/test_arrays.py`` checks each)
ARRAYS: dict[str, tuple[type[Arrays], ...]] = {
    "clustering.fig5": (Fig5Arrays,),
    "clustering.transfer_circuit": (TransferCircuitArrays,),
    **{f"clustering.{name}": (DynamicsArrays,) for name in ("fig9", "fig17")},
    **{f"clustering.{name}": (SpikesArrays,) for name in ("fig13", "fig18")},
    "clustering.remedies": (RemediesArrays,),
    **{f"clustering.{name}": (SparsityArrays,) for name in ("fig7", "fig19")},
    "clustering.fig14": (TransferArrays,),
}
