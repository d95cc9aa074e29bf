"""
Attention paths: the saddle point against posterior samples
===========================================================

Paper 3 (Tiberi, Mignacco, Irie, Sompolinsky): a deep multi-head attention network in the Bayesian
finite-width limit. The theory minimises the action over the order parameters U (one entry per pair of
attention paths; paper 3, Eqs. (7)-(9)); the simulation samples the posterior of the network's value weights
with a Gibbs sampler. On the hidden-Markov-chain task with Fig. 2b's four paths, the predicted test accuracy
against width N; the Gaussian-process limit (N → ∞) is the dashed line. A tiny version of ``paths.fig2c``.
"""

import matplotlib.pyplot as plt
import torch

from attnlab.core.trajectory import compare
from attnlab.paths.data import markov as data
from attnlab.paths.theory import problems
from attnlab.paths.theory import saddle as theory
from attnlab.paths.train import gibbs as train

G = torch.Generator
pb = problems.markov_problem(data.MarkovTask(), "all", P=100, P_test=500, data=G().manual_seed(0),
                             test=G().manual_seed(1000), heads=G().manual_seed(1))
widths = [5, 10, 20, 50, 100]
th = theory.predict(pb, [*widths, 10_000], tau=0.01)
sim = train.simulate(pb, [10, 50], 0.01, chains=2, burn_in=300, samples=200, thin=2, generator=G().manual_seed(2))

# %%
# Sampled posterior against the saddle point at the sampled widths (accuracy, and every entry of U):
print(compare(sim, th, ["accuracy", "U"]).groupby("observable")["abs_diff"].max())

# %%
# Test accuracy against width: theory (line), posterior samples (dots), the GP limit (dashed).
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(th.time[:-1], th["accuracy"][:-1], label="theory (saddle point)")
ax.plot(sim.time, sim["accuracy"], "o", label="Gibbs samples")
ax.axhline(th["accuracy"][-1], ls="--", color="gray", label="GP limit")
ax.set(xscale="log", xlabel="width N", ylabel="test accuracy", title="Markov task, 4 paths, P = 100")
ax.legend()
plt.show()
