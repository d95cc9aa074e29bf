"""Figures: a Result (never a rerun) → matplotlib figures."""

from __future__ import annotations

from attnlab.core.experiment import Result
from attnlab.core.plotting import figure


def walk_figure(result: Result, config):
    """The first coordinate of the path against the step."""
    fig, ax = figure()
    ax.plot(result.arrays["path"][:, 0])
    ax.set_xlabel("step")
    return fig
