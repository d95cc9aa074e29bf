"""Data of paper 0: the spikes k*_f (Eq. (1)), the laws of θ, the sequences of Eq. (2), and the SGD's data stream.

* :mod:`.laws` — the laws P_θ (flipping spike, one-hot, isotropic / non-isotropic Gaussian, generic);
* :mod:`.sequences` — spikes, sequences and :class:`SGDStream` (the SGD's data as a function of (seed, step,
  sequence));
* :mod:`.noise` — the counter-based Gaussian noise that stream draws from.
"""

from attnlab.specialization.data import noise
from attnlab.specialization.data.laws import (
    DiscreteLaw,
    FlipSpike,
    GaussianLaw,
    IsoGaussian,
    NonIsoGaussian,
    OneHotSpike,
    ThetaLaw,
    make_law,
    symsqrt,
)
from attnlab.specialization.data.sequences import (
    SequenceBatch,
    SGDStream,
    iter_sequences,
    plant,
    sample_sequences,
    sample_spikes,
)

__all__ = ["DiscreteLaw", "FlipSpike", "GaussianLaw", "IsoGaussian", "NonIsoGaussian", "OneHotSpike", "SGDStream",
           "SequenceBatch", "ThetaLaw", "iter_sequences", "make_law", "noise", "plant", "sample_sequences",
           "sample_spikes", "symsqrt"]
