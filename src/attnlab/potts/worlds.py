"""Small worlds of the potts claims (``falsify=``): the sizes at which a world is measured, and the result
functions the claims share. A world's runs go to the test's store, so a world that patches code uses sizes of its
own (``tiny(...)`` with a distinct ``train_seed``/``n_nodes``): a patched run is never reused by another world."""

from __future__ import annotations

from typing import Any

from attnlab.core.experiment import Result
from attnlab.core.worlds import ResultFn

# Potts data sets of a few seconds: 400 training and 200 test sequences from 30 short chains
DATA: dict[str, Any] = {"M_train": 400, "M_test": 200, "burn_in": 200, "thin": 20}
FIG2: dict[str, Any] = {**DATA, "epochs": 3, "vanilla_epochs": 2, "eval_every": 1, "n_eval": 100}
EQUIV: dict[str, Any] = {**DATA, "epochs": 3, "max_iter": 50}
FIG2D: dict[str, Any] = {**DATA, "epochs": 30, "seeds": 2}  # the a effect shows from ~25 epochs at M = 400
CONSISTENCY: dict[str, Any] = {**DATA, "Ms": (40, 120, 400), "max_iter": 200, "n_real": 2}
FIG3RIGHT: dict[str, Any] = {**DATA, "Ms": (1, 3, 10, 20, 200), "n_real": 2, "gtol": 1e-3, "max_iter": 3000}
REPLICA: dict[str, Any] = {"n_nodes": 100, "alpha_step": 0.02}
FIG3LEFT: dict[str, Any] = {"L": 40, "n_real": 10}
FINITE_L: dict[str, Any] = {"L": 40, "n_draws": 10}


def tiny(base: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {**base, **extra}


def set_summary(key: str, value: Any) -> ResultFn:
    """Summary value ``key`` replaced: by another key's value (a str) or by a number."""

    def fn(experiment: str, result: Result) -> Result:
        if key in result.summary:
            result.summary[key] = result.summary[value] if isinstance(value, str) else value
        return result

    return fn


def shift_summary(key: str, other: str, by: float) -> ResultFn:
    """Summary value ``key`` := value of ``other`` + ``by`` (an arm moved next to, or past, another)."""

    def fn(experiment: str, result: Result) -> Result:
        if key in result.summary and other in result.summary:
            result.summary[key] = result.summary[other] + by
        return result

    return fn
