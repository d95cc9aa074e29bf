"""The finite-width theory of paper 3 (Eqs. (9)-(13), (29)-(34)).

* :mod:`.kernels` — path-path kernels, the renormalised kernel K(U) and the predictor statistics (Eqs. (9)-(10),
  (29)-(31));
* :mod:`.action` — the action S({U^(ℓ)}) and its analytic gradient (Eqs. (11)-(12), (32)-(34));
* :mod:`.saddle` — its saddle point U* and the predictions over widths (Eqs. (9)-(13), (29)-(34), App. E);
* :mod:`.optimizers`, :mod:`.lbfgsb`, :mod:`.diagnostics` — the saddle-point solve's resumable optimisers, its
  starting points, history and Hessian (App. E);
* :mod:`.predictive` — draws of the predictor from a stored U, no solve (Eqs. (29)-(31));
* :mod:`.scores` — head scores from the order parameter and the pruning order (Sec. 4.2, App. H.2.3).
"""
