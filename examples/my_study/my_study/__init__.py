"""A toy attnlab study, the template of a new one: a seeded random walk x_t in R^dim and its diffusion law.

The rooms every attnlab study has: ``data`` (the random increments), ``model`` (one step), ``train`` (the loop:
checkpoints, progress, live snapshots), ``theory`` (the exact law), ``experiments`` (each experiment declared whole:
its config, its run ``(config, ctx) → Result`` and the ``Experiment`` holding them with its figure, memory and time
models and outputs), ``figures`` (Result → matplotlib), ``memory`` and ``costs`` (the memory and time models the
sandbox, sweeps and ``check --plan`` read), ``claims`` (what the theory predicts, measured on runs), ``views`` (the
sandbox), and ``study`` (the study object listing them, which the ``attnlab.studies`` entry point names).
"""
