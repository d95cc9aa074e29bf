"""Training of paper 4's transformer (App. A): many seeds in one vectorised run, and the measures of its dynamics.

* :mod:`.loop` — Adam on sparse modular addition, S seeds together: ``train``, ``transfer`` and the recorder;
* :mod:`.step` — the hand-written backward pass and the packed Adam step (the numbers of autograd and torch.optim);
* :mod:`.runner` — one epoch's steps, captured as a CUDA graph where supported;
* :mod:`.streams` — each seed's random streams (attnlab's named ones, or pal's) and initialisation;
* :mod:`.units` — resumable training units of a run (checkpointed, resumed mid-training) and their epoch table;
* :mod:`.history` — ``History``: the recorded curves and snapshots of a run, stored and reloaded;
* :mod:`.dynamics` — the measures of training dynamics read from a history: loss drops, t_cluster, t_fit, loss and
  gradient spikes and their co-occurrence (Secs. 4.3-4.4).
"""
