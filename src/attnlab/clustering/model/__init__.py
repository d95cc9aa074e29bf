"""The model of paper 4 (Sec. 2, App. B.1): a one-block transformer as a pure function of stacked parameters.

* :mod:`.transformer` — the forward pass (eqs. token embedding, sentence embedding, sentence transform, logits),
  ``ModelSpec``, the parameters' initialisation and stacking over seeds, the hook names;
* :mod:`.activations` — the MLP's non-linearity σ by name (GeLU in the paper).
"""

from attnlab.clustering.model.activations import ALIASES, MLP_ACTIVATIONS, REFUSED, activation, canonical
from attnlab.clustering.model.transformer import (
    ACTIVATIONS,
    GROUPS,
    HOOK_NAMES,
    MLP_PARAMS,
    PARAM_ORDER,
    ModelSpec,
    Norm,
    Params,
    draw,
    embed,
    forward,
    grow_vocab,
    init_params,
    logits,
    loss_per_seed,
    n_seeds,
    nested_mlp,
    normalize,
    select,
    smooth_scale,
    softmax_last,
    stack,
    to,
    token_table,
)

__all__ = ["ACTIVATIONS", "ALIASES", "GROUPS", "HOOK_NAMES", "MLP_ACTIVATIONS", "MLP_PARAMS", "PARAM_ORDER", "REFUSED",
           "ModelSpec", "Norm", "Params", "activation", "canonical", "draw", "embed", "forward", "grow_vocab",
           "init_params", "logits", "loss_per_seed", "n_seeds", "nested_mlp", "normalize", "select", "smooth_scale",
           "softmax_last", "stack", "to", "token_table"]
