"""The model of paper 0: multi-head single-location attention, Eq. (3), with the activations σ of Eqs. (3)-(4)
and (17) (softmax, softmax-1, Bayes-softmax), and its order parameters, Eqs. (8)-(9).

* :mod:`.activations` — σ(χ, b, v; h) and ``TRAINABLE``;
* :mod:`.attention` — the functional core :func:`attend`, the ``nn.Module``, head pruning, the keys' init and
  :func:`order_parameters`.
"""

from attnlab.specialization.model.activations import (
    ACTIVATIONS,
    TRAINABLE,
    bsoftmax,
    get_activation,
    head_average,
    softmax,
    softmax1,
    softmax1_fixed,
)
from attnlab.specialization.model.attention import (
    OrderParameters,
    SingleLocationAttention,
    attend,
    init_keys,
    order_parameters,
    prune_heads,
)

__all__ = ["ACTIVATIONS", "TRAINABLE", "OrderParameters", "SingleLocationAttention", "attend", "bsoftmax",
           "get_activation", "head_average", "init_keys", "order_parameters", "prune_heads", "softmax", "softmax1",
           "softmax1_fixed"]
