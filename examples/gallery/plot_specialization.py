"""
Specialization: online SGD against its order-parameter flow
===========================================================

Paper 0 (Sagitova, Duranthon, Zdeborová): two softmax heads learn a flipping spike of two features in the
single-location model. Online SGD at dimension D gives the overlaps ``m`` of each head with each feature; the
theory integrates the gradient flow of the reduced population loss (paper 0, Eqs. (10)-(12)) in the order
parameters, started from the simulation's initial overlaps. Here D = 500 and τ ≤ 30, a tiny version of
``specialization.fig1`` (`attnlab run specialization.fig1` runs the figure).
"""

import matplotlib.pyplot as plt

from attnlab.core.trajectory import compare
from attnlab.specialization import theory, train
from attnlab.specialization.data import make_law

law = make_law("flip", 2, nu1=2.0, nu2=2.0)
sim = train.simulate_sgd(law, H=2, L=5, D=500, activation="softmax", tau_max=30).trajectory
th = theory.predict("softmax", law, 5, 2, sim.time, m0=sim["m"][0], q0=sim["q"][0], p=sim["p"][0, 0],
                    solver="adaptive", n_mc=20_000)

# %%
# The largest gap between simulation and theory, per observable (``m``: overlaps, ``rr``: r rᵀ, the loss):
print(compare(sim, th, ["m", "rr", "loss"]).groupby("observable")["abs_diff"].max())

# %%
# Each head's overlap with each feature: SGD (dots) and the theory (lines).
fig, ax = plt.subplots(figsize=(6, 3.5))
for h in range(2):
    for f in range(2):
        (line,) = ax.plot(th.time, th["m"][:, 0, h, f], label=f"head {h + 1}, feature {f + 1}")
        ax.plot(sim.time, sim["m"][:, 0, h, f], ".", color=line.get_color(), markersize=4)
ax.set(xlabel="τ = γ t", ylabel="overlap m", title="SGD (dots) vs theory (lines), D = 500")
ax.legend(fontsize=8)
plt.show()
