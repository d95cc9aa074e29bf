"""What the paths study's figures share (the Markov figures in :mod:`attnlab.paths.figures.markov`, the one-shot
ones in :mod:`attnlab.paths.figures.oneshot`): colours, GP line styles, path names, the U entries drawn.

Colours follow the paper: theory blue (crosses joined by a line), samples black dots, GP limits red
(solid: all paths, dashed: good path, dotted: good + denoising), finite width vs GP in blue vs orange.
"""

from __future__ import annotations

import numpy as np

from attnlab.core.plotting import COLORS

BLUE, ORANGE, RED = COLORS[0], COLORS[1], COLORS[3]
GP_STYLE = {"all": "-", "good": "--", "good_denoising": ":", "good_uniform": ":"}
GP_NAME = {"all": "GP, all paths", "good": "GP, good path", "good_denoising": "GP, good + denoising",
           "good_uniform": "GP, good + uniform", "random": "GP"}
MARKOV_PATHS = {"all": ["good", "adv (1,2)", "denoising", "adv (2,2)"], "good": ["good"],
                "good_denoising": ["good", "denoising"], "good_uniform": ["good", "uniform"]}


def path_labels(Hs, layout: str | None = None) -> list[str]:
    """Names of the paths (h_1 most significant): the Markov names of Fig. 2b, else (h_1, ..., h_L), 1-based."""
    if layout in MARKOV_PATHS:
        return MARKOV_PATHS[layout]
    idx = np.stack(np.unravel_index(np.arange(int(np.prod(Hs))), tuple(Hs)), axis=1) + 1
    return ["(" + ",".join(map(str, row)) + ")" for row in idx]


def _U_entries(U: np.ndarray, max_lines: int = 10) -> list[tuple[int, int]]:
    n = U.shape[-1]
    pairs = [(i, j) for i in range(n) for j in range(i, n)]
    if len(pairs) <= max_lines:
        return pairs
    diag = [(i, i) for i in range(n)][:max_lines // 2]
    off = sorted([(i, j) for i, j in pairs if i != j], key=lambda p: -abs(U[0][p]))
    return diag + off[: max_lines - len(diag)]


def _labels(n: int, config) -> list[str]:
    """Path names: the Markov names of a named layout, else (h_1, ..., h_L) of the listed heads."""
    heads = getattr(config, "heads", None)
    if heads:
        return path_labels(tuple(len(layer) for layer in heads))
    return path_labels(_hs(n, config), config.layout)


def _hs(n: int, config) -> tuple[int, ...]:
    if getattr(config, "Hs", None):
        return tuple(config.Hs)
    return {4: (2, 2), 2: (2, 1), 1: (1, 1), 9: (3, 3)}.get(n, (n,))
