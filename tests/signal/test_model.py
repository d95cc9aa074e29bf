"""The encoder: shapes and named activations, Eq. 1 and Eq. 11 at init, masks, slots, config validation."""

import math

import pytest
import torch

from attnlab.core.config import ConfigError, resolve
from attnlab.signal import data
from attnlab.signal.arch import Architecture
from attnlab.signal.configs import ArchConfig
from attnlab.signal.model import Encoder, attention, block, init_block, layer_norm, linear


def test_layer_norms():
    x = torch.randn(3, 5, 16) * 7 + 2
    y = layer_norm(x, "rms")
    assert torch.allclose(y.pow(2).mean(-1), torch.ones(3, 5), atol=1e-5)
    z = layer_norm(x, "layernorm")
    assert torch.allclose(z.mean(-1), torch.zeros(3, 5), atol=1e-5)


def test_linear_is_per_slot():
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(2, 3, 4, 5, generator=g), torch.randn(2, 6, 5, generator=g), torch.randn(2, 6, generator=g)
    y = linear(x, w, b)
    assert torch.allclose(y[1], x[1] @ w[1].T + b[1], atol=1e-5)


def test_score_variance_is_beta2_logT():
    """Eq. 11: Var(s_ab) = β² log T for unit-RMS tokens, whatever d and H (per-head convention)."""
    g = torch.Generator().manual_seed(0)
    for d, H in ((64, 1), (128, 4)):
        arch = Architecture(d=d, H=H, T=32, beta=2.0)
        x = data.prescribed_cosine(0.0, 200, 1, 32, d, g)
        p = init_block(arch, 200, g)
        dk = d // H
        q = linear(x, p["wq"]).reshape(200, 1, 32, H, dk)
        k = linear(x, p["wk"]).reshape(200, 1, 32, H, dk)
        s = torch.einsum("pbahd,pbchd->pbhac", q, k) / math.sqrt(dk)
        assert float(s.var() / (4 * math.log(32))) == pytest.approx(1.0, abs=0.06)


def test_block_hooks_and_residual():
    arch = Architecture(d=32, H=2, T=8, L=1)
    g = torch.Generator().manual_seed(0)
    x = data.prescribed_cosine(0.2, 3, 2, 8, 32, g)
    p = init_block(arch, 3, g)
    seen = {}

    def record(name, t):
        seen[name] = t.shape

    y = block(x, p, arch, alpha_sa=torch.tensor([0.0, 1.0, 2.0]), hook=record)
    assert y.shape == x.shape
    assert seen["blocks.0.attn.hook_pattern"] == (3, 2, 2, 8, 8)
    assert set(seen) == {f"blocks.0.{k}" for k in ("attn.hook_pattern", "hook_attn_out", "hook_resid_mid",
                                                   "hook_mlp_out", "hook_resid_post")}
    # a hook may replace an activation: zeroing the attention output leaves LN(α x) = x for α > 0
    mid = {}

    def knock_out(name, t):
        if name.endswith("attn_out"):
            return torch.zeros_like(t)
        mid[name] = t
        return None

    block(x, p, arch, alpha_sa=1.0, hook=knock_out)
    assert torch.allclose(mid["blocks.0.hook_resid_mid"], x, atol=1e-5)


def test_key_mask_blocks_padding():
    arch = Architecture(d=16, T=6)
    g = torch.Generator().manual_seed(0)
    x = data.prescribed_cosine(0.0, 1, 2, 6, 16, g)
    mask = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])
    rec = {}
    attention(x, init_block(arch, 1, g), 1, mask, hook=lambda n, t: rec.update(A=t))
    assert float(rec["A"][0, 1, 0, :, 4:].abs().max()) == 0.0


def test_encoder_slots_and_cache():
    arch = Architecture(d=32, H=2, T=12, L=2)
    m = Encoder(arch, 40, P=3, gen=torch.Generator().manual_seed(0), alpha_sa=torch.tensor([0.5, 1.0, 2.0]))
    ids = torch.randint(0, 40, (4, 12))
    logits, cache = m.run_with_cache(ids, names=("blocks.1.attn.hook_pattern",))
    assert logits.shape == (3, 4, 12, 40) and list(cache) == ["blocks.1.attn.hook_pattern"]
    pos = torch.tensor([0, 5, 47])
    assert torch.allclose(m(ids, positions=pos), logits.reshape(3, -1, 40)[:, pos], atol=1e-5)


@pytest.mark.parametrize("bad, words", [({"beta": 0}, "beta"), ({"beta": -1.0}, "greater than 0"),
                                        ({"T": 1}, "'T'"), ({"H": 3, "d": 64}, "must divide the width"),
                                        ({"alpha_sa": -0.5}, "alpha_sa"), ({"activation": "sigmoid"}, "'relu'"),
                                        ({"depth": 3}, "unknown key")])
def test_config_errors_are_one_line(bad, words):
    with pytest.raises(ConfigError) as e:
        resolve(ArchConfig, "quick", bad)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_pre_ln_block_keeps_residual_norm_growing():
    arch = Architecture(d=64, T=16, ln_position="pre", alpha_sa=1.0)
    g = torch.Generator().manual_seed(0)
    x = data.prescribed_cosine(0.1, 2, 2, 16, 64, g)
    y = block(x, init_block(arch, 2, g), arch)
    assert float(y.pow(2).mean()) > 1.05
