"""Measuring trained clustering heads (paper 4 Secs. 3-4): what a trained network has become, read from its
parameters.

* :mod:`.heads` — the head metrics on the probe grid, the head taxonomy, clusters, sparsity (App. A.1) and the Sec.
  4.4 monitors;
* :mod:`.probe` — the probe grid and the chunked forward passes behind every head metric;
* :mod:`.circuits` — per-model measurements for the circuit figures (Figs. 2-6, 8, 15) and the long tables an
  experiment returns.
"""
