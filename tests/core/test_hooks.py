"""The hook protocol of attnlab.core.hooks: a hook sees each named activation and may replace it."""

import torch

from attnlab.core.hooks import call, run_with_cache


def _forward(x, hook=None):
    h = call(hook, "hook_embed", x * 2)
    return call(hook, "blocks.0.hook_resid_post", h + 1)


def test_call_keeps_or_replaces():
    x = torch.arange(3.0)
    assert torch.equal(call(None, "a", x), x)
    assert torch.equal(call(lambda name, t: None, "a", x), x)
    assert torch.equal(_forward(x, lambda name, t: -t if name == "hook_embed" else None), -2 * x + 1)


def test_run_with_cache_collects_detached_and_filters():
    x = torch.arange(3.0, requires_grad=True)
    out, cache = run_with_cache(lambda hook: _forward(x, hook))
    assert torch.equal(out, 2 * x + 1) and out.requires_grad
    assert set(cache) == {"hook_embed", "blocks.0.hook_resid_post"}
    assert not cache["hook_embed"].requires_grad and torch.equal(cache["hook_embed"], 2 * x.detach())
    _, some = run_with_cache(lambda hook: _forward(x, hook), names=("hook_embed",))
    assert set(some) == {"hook_embed"}
