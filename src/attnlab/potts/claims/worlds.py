"""Small worlds of the potts claims (``falsify=``): the sizes at which a world is measured (a world that changes a
result edits its typed summary: ``attnlab.core.summaries.edit_summary``). A world's runs go to the test's store, so
a world that patches code uses sizes of its own (``tiny(...)`` with a distinct ``train_seed``/``n_nodes``): a
patched run is never reused by another world."""

from __future__ import annotations

from typing import Any

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

