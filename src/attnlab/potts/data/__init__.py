"""Data of paper 2: the generalised Potts model and the sequences the experiments learn from.

* :mod:`.potts` — the Potts model of Eq. (1), its conditionals Eq. (5), exact enumeration, Hamming statistics, the
  optimal MLM loss and the seeded spec of a data set;
* :mod:`.sampler` — heat-bath (Gibbs) sampling of the model, vectorised over chains (App. 'Numerical details');
* :mod:`.sets` — a spec's train and test sequences, sampled, memoised and placed on a device;
* :mod:`.gaussian` — data model II, the Gaussian relaxation of the replica analysis, and its ridge learner (Eq. (7)).
"""
