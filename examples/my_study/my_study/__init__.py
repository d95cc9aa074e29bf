"""A toy attnlab study, the template of a new one: a seeded random walk x_t in R^dim and its diffusion law.

The rooms every attnlab study has: ``configs`` (validated parameters and their scales), ``data`` (the random
increments), ``model`` (one step), ``train`` (the loop: checkpoints, progress, live snapshots), ``theory`` (the exact
law), ``experiments`` (config, context → Result), ``figures`` (Result → matplotlib), ``claims`` (what the theory
predicts, measured on runs), ``memory`` and ``costs`` (the memory and time models the sandbox, sweeps and ``check
--plan`` read), and ``views`` (the sandbox).
``attnlab`` imports ``experiments``, ``claims`` and ``memory`` through the ``attnlab.studies`` entry point.
"""
