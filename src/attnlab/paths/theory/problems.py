"""The problems the theory solves (Sec. 4.1, App. G): a data set seen through a network's fixed heads, as the path
features and labels of :class:`~attnlab.paths.theory.kernels.Problem` (Eqs. (9)-(10)).

:func:`markov_problem` draws the hidden-Markov-chain task's train and test sets and its heads
(:mod:`attnlab.paths.data.markov`) and applies the heads (:func:`attnlab.paths.model.path_features`); the one-shot
image task builds its problem in :mod:`attnlab.paths.experiments.images`.
"""

from __future__ import annotations

import torch

from attnlab.paths.data.markov import MarkovData, MarkovTask, build_heads, markov_heads, sample
from attnlab.paths.model import path_features
from attnlab.paths.theory.kernels import Problem

Tensor = torch.Tensor
F64 = torch.float64


def markov_problem(task: MarkovTask, layout, P: int, P_test: int, *, data: torch.Generator,
                   test: torch.Generator, heads: torch.Generator, readout: str | int = 1, beta: float = 10.0,
                   random_strength: float = 1.0, attention: str = "softmax", dtype=F64,
                   train_set: MarkovData | None = None, test_set: MarkovData | None = None,
                   head_stacks: list[Tensor] | None = None):
    """The Markov task seen through a network's fixed heads: a :class:`kernels.Problem` (path features, labels).

    ``layout``: a name of :func:`markov_heads` or a list of head specs per layer (:func:`build_heads`; both in
    :mod:`attnlab.paths.data.markov`).
    ``readout`` is the token t* (1: the first token after the bos, the paper's choice; −1: the last, the public
    code's) or ``"mean"``. Train, test and head randomness come from three separate generators. ``dtype``: the
    precision of the attention and path features (float32 halves their cost; the theory is float64 after).
    ``train_set``, ``test_set``, ``head_stacks`` (e.g. the public code's own tokens and heads, read from files):
    used as given instead of drawn.
    """
    tr = train_set if train_set is not None else sample(task, P, data)
    te = test_set if test_set is not None else sample(task, P_test, test)
    if head_stacks is not None:
        hs = head_stacks
    elif isinstance(layout, str):
        hs = markov_heads(task, layout, heads, beta, random_strength)
    else:
        hs = build_heads(task, layout, heads, beta, random_strength)

    def feats(X: Tensor) -> Tensor:
        return path_features(X.to(dtype), [h.to(dtype) for h in hs], readout, nonlinearity=attention).to(F64)

    return Problem(feats(tr.X), tr.y, feats(te.X), te.y, tuple(h.shape[0] for h in hs))
