"""Measuring trained clustering heads (paper 4 Secs. 3-4): what a trained network has become, read from its
parameters.

* :mod:`.heads` — the head metrics on the probe grid, the head taxonomy, clusters, sparsity (App. A.1) and the Sec.
  4.4 monitors;
* :mod:`.probe` — the probe grid and the chunked forward passes behind every head metric.

Training monitors them (:mod:`attnlab.clustering.train.loop`), so nothing here imports training; the per-model
measurements of trained runs for the circuit figures are :mod:`attnlab.clustering.experiments.circuits`.
"""
