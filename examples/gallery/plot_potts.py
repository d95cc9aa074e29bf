"""
Masked language modelling: replica theory of the generalisation error
=====================================================================

Paper 2 (Rende, Gerace, Laio, Goldt): learning the conditional of a Gaussian model of sequences, the
single-layer factored attention reduces to ridge regression, whose generalisation error at sample ratio α the
replica theory predicts (the zero-temperature saddle point, paper 2, Sec. 4 and Fig. 3 left). Ridge fits of
L = 200 sites over 30 realisations against the L → ∞ theory; a tiny version of ``potts.fig3left``.
"""

import matplotlib.pyplot as plt
import numpy as np
import torch

from attnlab.core.trajectory import compare
from attnlab.potts.data import gaussian
from attnlab.potts.theory import replica as theory

alphas = [0.25, 0.5, 1.0, 1.5, 2.5, 4.0]
sim = gaussian.simulate(L=200, nu=3.0, lam=1e-2, alphas=alphas, n_real=30, generator=torch.Generator().manual_seed(0))
th = theory.predict(np.geomspace(0.2, 5, 60), lam=1e-2, nu=3.0, weight="exact")

# %%
# Simulation against the theory at the simulated α:
print(compare(sim, theory.predict(sim.time, lam=1e-2, nu=3.0, weight="exact"), ["eps_g", "eps_train"]))

# %%
# Generalisation and training error against α: ridge fits (dots) and the replica theory (lines).
fig, ax = plt.subplots(figsize=(6, 3.5))
for name in ("eps_g", "eps_train"):
    (line,) = ax.plot(th.time, th[name], label=name)
    ax.plot(sim.time, sim[name], "o", color=line.get_color())
ax.set(xscale="log", xlabel="α = M / L²", ylabel="error", title="ridge, L = 200 (dots) vs replica theory (lines)")
ax.legend()
plt.show()
