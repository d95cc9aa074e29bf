"""One protocol for reading (and replacing) a network's named activations, TransformerLens's names.

A model's forward takes an optional ``hook``: a callable ``hook(name, tensor)`` that is called with every named
activation (``hook_embed``, ``blocks.{l}.attn.hook_pattern``, ``blocks.{l}.hook_resid_post``, …, each study's model
docstring lists its own) and may return a replacement tensor (None keeps the activation). The forward passes each
activation through :func:`call`; :func:`run_with_cache` runs one forward pass and collects the activations::

    x = call(hook, "hook_embed", embed(ids))                     # inside a forward
    logits, cache = run_with_cache(lambda hook: model(x, hook=hook))
    cache["blocks.0.attn.hook_pattern"]                          # detached
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from torch import Tensor

#: ``hook(name, tensor)``: sees a named activation; a returned tensor replaces it
Hook = Callable[[str, Tensor], Tensor | None]


def call(hook: Hook | None, name: str, t: Tensor) -> Tensor:
    """The activation ``t`` named ``name`` after ``hook`` saw it: ``t``, or what the hook returned."""
    if hook is None:
        return t
    out = hook(name, t)
    return t if out is None else out


def run_with_cache(fn: Callable[[Hook], Tensor], names: Iterable[str] | None = None
                   ) -> tuple[Tensor, dict[str, Tensor]]:
    """(``fn(hook)``, {name: activation}): the named activations of one forward pass (those in ``names``, all if
    None), detached."""
    wanted = None if names is None else set(names)
    cache: dict[str, Tensor] = {}

    def hook(name: str, t: Tensor) -> None:
        if wanted is None or name in wanted:
            cache[name] = t.detach()

    return fn(hook), cache
