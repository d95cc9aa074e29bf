"""
Signal propagation: rank collapse in a deep transformer at initialisation
=========================================================================

Paper 1 (Giorlandino, Goldt): the cosine ρ between two tokens' representations through a post-LN transformer
at initialisation. The theory iterates the block map (paper 1, Eq. (19)) with the Random-Energy-Model attention
(Eqs. (14)-(16)) and its finite-T correction; the simulation draws networks and sequences. With β = 0.1 (rank
collapse phase) the skip strength α decides whether ρ runs to 1. A tiny version of ``signal.fig1d``.
"""

import matplotlib.pyplot as plt

from attnlab.core.trajectory import compare
from attnlab.signal import theory, train
from attnlab.signal.arch import Architecture

alphas = [0.5, 1.0, 2.0]
arch = Architecture(d=128, T=64, L=24, beta=0.1)
sim = train.simulate(arch, n_inits=3, n_seqs=4, rho0=0.05, alphas=alphas)
th = theory.predict(arch, sim["rho"][0], alpha_sa=alphas, finite_T=True)

# %%
# The largest gap over layers between simulation and theory:
print(compare(sim, th, ["rho", "entropy"]).groupby("observable")["abs_diff"].max())

# %%
# The cosine over depth for three skip strengths: simulation (dots, mean over inits and sequences) and theory.
fig, ax = plt.subplots(figsize=(6, 3.5))
for i, a in enumerate(alphas):
    (line,) = ax.plot(th.time, th["rho"][:, i], label=f"α_SA = {a}")
    ax.plot(sim.time, sim["rho"][:, i], ".", color=line.get_color())
ax.set(xlabel="layer", ylabel="cosine ρ", title="simulation (dots) vs theory (lines), d = 128, T = 64")
ax.legend()
plt.show()
