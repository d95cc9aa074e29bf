"""Training of paper 2's networks on Potts data.

* :mod:`.mlm` — mini-batch MLM training (Eq. (3)) of many factored or perturbed layers as one tensor program, and of
  the vanilla transformer;
* :mod:`.pseudolikelihood` — full-batch pseudo-likelihood inference of the inverse Potts problem (Eq. (6));
* :mod:`.optim` — the batched L-BFGS it runs.
"""
