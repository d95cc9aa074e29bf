"""
Clustering heads: the construction and a trained network, measured alike
========================================================================

Paper 4 (Odonnat, Bouaziz, Cabannes): in sparse modular addition a one-layer transformer can solve the task
with a clustering head that maps the informative tokens' multiset to one of C(k+p−1, k) clusters (paper 4,
Sec. 3). The explicit construction has exactly that many clusters; eight seeds trained for 150 epochs are
measured by the same functions (head type, accuracy): at this small size some seeds find the circuit and reach
test accuracy 1, most stay on a plateau. A tiny version of ``clustering.fig1`` and ``clustering.circuits``.
"""

import matplotlib.pyplot as plt

from attnlab.clustering.analysis import heads
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.data import Task
from attnlab.clustering.theory import construction
from attnlab.clustering.train.loop import train

ideal, spec = construction.build_clustering_head(p=2, N=12, k=5, d=2, h=8)
clusters = int(heads.n_clusters(ideal, spec, Task(p=2, N=12, k=5)))
print(f"clusters of the construction: {clusters} (C(k + p - 1, k) = C(6, 5) = 6)")

# %%
# Eight seeds of the paper's model on p = 2, k = 3, trained together (one vectorised computation) for 150 epochs:
hist = train(TrainConfig(k=3, n_seeds=8, epochs=150))
print("head types:", heads.classify_heads(hist.final(), hist.spec, hist.task))

# %%
# Their test accuracy per epoch, one line per seed: learning comes in stages, at a different epoch for each seed.
epochs, acc = hist.epochs, hist.epoch_metrics["test_acc"]
fig, ax = plt.subplots(figsize=(6, 3.5))
ax.plot(epochs, acc)
ax.set(xlabel="epoch", ylabel="test accuracy", title="eight seeds, p = 2, k = 3, N = 12")
plt.show()
