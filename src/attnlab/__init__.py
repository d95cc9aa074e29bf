"""attnlab: a laboratory of solvable models of attention.

Five studies, one per paper, each pairing a simulation with its exact theory:
``specialization`` (paper 0), ``signal`` (1), ``potts`` (2), ``paths`` (3), ``clustering`` (4).
"""

__version__ = "0.1.0"

#: Studies in the order they landed; ``attnlab list`` and ``reproduce`` walk this tuple.
STUDIES: tuple[str, ...] = ("specialization", "clustering", "signal", "paths", "potts")
