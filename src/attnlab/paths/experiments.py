"""The paths study's experiments, one per paper figure, registered by its two task families.

* :mod:`attnlab.paths.markov.experiments`: the hidden-Markov-chain task (Sec. 4.1, App. G): Figs. 2c-e, 5b-c
  and a generic solver/sampler check on random heads; :mod:`attnlab.paths.markov.sample`: ``paths.sample``, posterior
  samples of a stored run (or more samples for a stored sampling run);
* :mod:`attnlab.paths.oneshot.experiments`: the one-shot image task (Sec. 4.2, App. H): Figs. 3, 6 and 7.
"""

from attnlab.paths.markov import experiments as markov  # noqa: F401  (registers Figs. 2c-e, 5b-c, generic)
from attnlab.paths.markov import sample  # noqa: F401  (registers paths.sample: sampling a stored run)
from attnlab.paths.oneshot import experiments as oneshot  # noqa: F401  (registers Figs. 3, 6, 7)
