"""The test suite's study ``knobs``: a seeded random walk x_t in R^dim, as the template ``examples/my_study`` has
it, plus the handles the tests turn on a run (``sleep`` to be killed mid-way, ``fail_at`` to fail, ``need_gib`` to be
refused for memory, ``gpu`` to be placed on a GPU worker) and a sandbox view that is a gallery of what a panel can draw
(and ``boom``, a panel that always fails). Self-contained, so the template can change freely; not a study to copy.

``experiments`` (the walk, its config, loop, memory and time models), ``claims`` (its diffusion law),
``views`` (the sandbox plug-in) and ``study`` (the object the ``attnlab.studies`` entry point names).
"""
