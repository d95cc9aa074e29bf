"""Training and sampling of paper 3's network, and the optimisers of the theory's saddle-point solve.

* :mod:`.gibbs` — the exact blocked Gibbs sampler of the posterior, Eqs. (8)/(19);
* :mod:`.hmc`, :mod:`.nuts` — Hamiltonian Monte Carlo and No-U-Turn transitions of the same posterior (App. F);
* :mod:`.optimizers`, :mod:`.lbfgsb`, :mod:`.diagnostics` — the saddle-point solve's resumable optimisers, its
  starting points, history and Hessian (App. E);
* :mod:`.gd` — gradient-descent training of the one-shot model and head pruning without retraining (App. H.1,
  Sec. 4.2).
"""
