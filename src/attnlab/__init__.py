"""attnlab: a laboratory of solvable models of attention.

Five studies, one per paper, each pairing a simulation with its exact theory:
``specialization`` (paper 0), ``signal`` (1), ``potts`` (2), ``paths`` (3), ``clustering`` (4).
"""

__version__ = "0.1.0"

#: The built-in studies in the order they landed: the one list of them. ``attnlab list``, ``reproduce`` and ``bench``
#: walk it; the registry (:func:`attnlab.core.registry.study_modules`) and the sandbox
#: (:func:`attnlab.sandbox.plugin.view_modules`) put these first, before plug-in studies, and fall back on
#: ``attnlab.<study>`` where an entry point is missing. The entry points in ``pyproject.toml`` and each study's
#: ``STUDY`` constants repeat the names only because packaging and decorators need them: tests/plugins/
#: test_study_names.py fails if either differs from this tuple.
STUDIES: tuple[str, ...] = ("specialization", "clustering", "signal", "paths", "potts")
