"""Peak-memory models of paths' Markov-task experiments (checked before a run starts: :mod:`attnlab.core.memory`).

The theory works on n×n order parameters and P×P kernels (P = 100: megabytes); what grows is the test set: its
inputs X (P*, T+1, D) with D = N0 + T + 1 (the state features and a one-hot position) and, while they are
sampled, the Gaussian noise, its in-plane part and their scaled copies; the path features' x_s A_h (one such
array per first-layer head, at most three) come after and fit in the same room. The one-shot experiments (Figs.
3, 6, 7) have no model yet. ``paths.sample`` is modelled at its own keys (a named source run's sizes are not
read before the run).
"""

from __future__ import annotations

F64 = 8
TEST_ARRAYS = 7  # features, noise, in-plane noise, their difference and scaled copies, the assembled inputs


def markov(config) -> tuple[int, str]:
    """8·TEST_ARRAYS·P*·(T+1)·(N0+T+1) bytes for the larger of the training and test sets."""
    P = max(config.P, config.P_test)
    return F64 * TEST_ARRAYS * P * (config.T + 1) * (config.N0 + config.T + 1), "lower P_test, T or N0"
