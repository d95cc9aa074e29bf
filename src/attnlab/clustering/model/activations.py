"""The MLP's non-linearity σ by name (paper Sec. 2: GeLU; the public code takes any ``torch.nn.functional`` name).

Every element-wise activation of ``torch.nn`` is accepted, by its functional name (``rrelu``, ``hardshrink``),
by its module name in any case (``RReLU``, ``LeakyReLU``: spelled without the underscore) or by the names
attnlab had before (``gelu_tanh``, ``identity``); each is applied with torch's default arguments, as the public
code's ``getattr(F, name)`` applies it. ``rrelu`` outside training is deterministic: the leaky slope
(1/8 + 1/3)/2, which is what the public code computes. Refused, with the reason: modules that are not
element-wise (softmax, softmin, log_softmax, softmax2d, glu, multiheadattention) and those that need arguments
or parameters of their own (threshold, prelu). An unknown name is a one-line error naming the close matches.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

import torch
import torch.nn.functional as F

from attnlab.core.config import ConfigError

# attnlab's names before any torch.nn name was accepted (the order ``allowed`` lists), then the rest of torch.nn's
# element-wise activations (torch.nn.modules.activation.__all__), by their functional names
MLP_ACTIVATIONS = ("gelu", "gelu_tanh", "relu", "leaky_relu", "relu6", "elu", "selu", "celu", "silu", "mish",
                   "softplus", "tanh", "sigmoid", "hardtanh", "hardswish", "hardsigmoid", "softsign", "tanhshrink",
                   "logsigmoid", "identity", "rrelu", "hardshrink", "softshrink")
ALIASES = {"leakyrelu": "leaky_relu", "logsoftmax": "log_softmax"}  # torch.nn module names lowered → functional
REFUSED = {"softmax": "not element-wise (it mixes the MLP's units)", "softmin": "not element-wise",
           "log_softmax": "not element-wise", "softmax2d": "not element-wise", "glu": "not element-wise (halves h)",
           "multiheadattention": "not an activation", "threshold": "needs its threshold and value",
           "prelu": "has a learned slope of its own"}


def canonical(name: str) -> str:
    """The activation's attnlab name for any accepted spelling (``GELU`` → ``gelu``, ``LeakyReLU`` →
    ``leaky_relu``); raises a one-line ``ConfigError`` naming close matches for an unknown or refused name."""
    low = name.lower() if isinstance(name, str) else str(name)
    low = ALIASES.get(low, low)
    if low in MLP_ACTIVATIONS:
        return low
    if low in REFUSED:
        raise ConfigError(f"key 'activation' = {name!r}: {REFUSED[low]}; element-wise activations only")
    near = difflib.get_close_matches(low, [*MLP_ACTIVATIONS, *ALIASES], n=4, cutoff=0.5)
    hint = f"did you mean {', '.join(near)}? " if near else ""
    raise ConfigError(f"key 'activation' = {name!r}: unknown; {hint}(any element-wise torch.nn activation: "
                      f"{', '.join(MLP_ACTIVATIONS)})")


def activation(name: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """σ by name: torch.nn.functional's function of that name with its default arguments (the public code looks
    it up the same way), ``gelu`` the exact erf form (the paper's), ``gelu_tanh`` its tanh approximation,
    ``identity`` none."""
    name = canonical(name)
    if name == "gelu_tanh":
        return lambda x: F.gelu(x, approximate="tanh")
    if name == "identity":
        return lambda x: x
    return getattr(F, name)
