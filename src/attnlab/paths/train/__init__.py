"""Training and sampling of paper 3's network.

* :mod:`.gibbs` — the exact blocked Gibbs sampler of the posterior, Eqs. (8)/(19);
* :mod:`.hmc`, :mod:`.nuts` — Hamiltonian Monte Carlo and No-U-Turn transitions of the same posterior (App. F);
* :mod:`.gd` — gradient-descent training of the one-shot model and head pruning without retraining (App. H.1,
  Sec. 4.2).
"""
