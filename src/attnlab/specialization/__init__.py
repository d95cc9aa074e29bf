"""Study ``specialization`` (paper 0): a solvable model of multi-head attention and of how its heads specialise.

Rooms: :mod:`.data` (spikes, laws of θ, sequences), :mod:`.model` (attention and activations), :mod:`.train`
(online SGD), :mod:`.theory` (reduced loss, gradient flow, Bayes, Hessian), :mod:`.configs`, :mod:`.experiments`
(one per figure), :mod:`.figures`, :mod:`.claims`; :mod:`.memory` holds the experiments' memory models.
The study is described in docs/studies/specialization.md.
"""
