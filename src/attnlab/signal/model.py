"""The transformer encoder of the paper (Sec. 2, Fig. 2) with a leading *slot* axis.

Every parameter tensor starts with an axis P of independent networks ("slots": random inits, or configurations
with their own β and α_SA), so a whole ensemble propagates or trains in one batched computation. A block is

    h  = LN(α_SA x + SA(X))          SA(X)_a = concat_h Σ_b A^h_ab (W_V^h x_b + b_V^h),  A = softmax(s)   (2, 3, 5a)
    x' = LN(α_MLP h + MLP(h))         MLP(h) = W_2 φ(W_1 h + b_1) + b_2                                     (4, 5b)

with s^h_ab = (W_Q^h x_a)·(W_K^h x_b)/√d_k, no Q/K biases, no output projection, LN(x) = √d x/‖x‖ (Eq. (1)) or
a centring LayerNorm without affine; the pre-LN variant is x ← α_SA x + SA(LN x); x ← α_MLP x + MLP(LN x).

Named activations (TransformerLens-style, the hook protocol of :mod:`attnlab.core.hooks`): ``hook(name, tensor)``
is called with ``blocks.{l}.attn.hook_pattern`` (P, B, H, T, T), ``blocks.{l}.hook_attn_out``,
``blocks.{l}.hook_resid_mid``, ``blocks.{l}.hook_mlp_out`` and ``blocks.{l}.hook_resid_post`` (P, B, T, d); it may
return a replacement.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from attnlab.core.hooks import Hook, call, run_with_cache
from attnlab.signal.arch import Architecture, phi

BLOCK_KEYS = ("wq", "wk", "wv", "bv", "w1", "b1", "w2", "b2")


def layer_norm(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Eq. (1) (``rms``: √d x/‖x‖) or a centring LayerNorm without affine (``layernorm``, eps 1e-12 as HF)."""
    if kind == "rms":
        return x * math.sqrt(x.shape[-1]) / x.norm(dim=-1, keepdim=True).clamp(min=1e-30)
    return nn.functional.layer_norm(x, x.shape[-1:], eps=1e-12)


def _slot(v, P: int, x: torch.Tensor) -> torch.Tensor:
    """A scalar or a (P,) vector of per-slot values, shaped to broadcast against (P, …) tensors like x."""
    t = torch.as_tensor(v, dtype=x.dtype, device=x.device)
    if t.ndim == 0:
        return t
    return t.reshape(P, *([1] * (x.ndim - 1)))


def init_block(arch: Architecture, P: int, gen: torch.Generator | None = None, device=None,
               qk_std=None, dtype=torch.float32) -> dict[str, torch.Tensor]:
    """Random parameters of one block for P slots (Sec. 2): W_Q, W_K ~ N(0, σ_qk²) with σ_qk from β (Eq. (11)),
    W_V ~ N(0, σ_v²/d), W_1 ~ N(0, σ_w²/d), W_2 ~ N(0, σ_w²/d_ff), biases N(0, σ_b²).

    ``qk_std`` (a scalar or a (P,) tensor) overrides the Q/K std, e.g. one β per slot."""
    d, f = arch.d, arch.ff
    qk = torch.as_tensor(arch.qk_std if qk_std is None else qk_std, dtype=dtype, device=device)
    qk = qk.reshape(-1, 1, 1) if qk.ndim else qk

    def n(*shape, std):
        return torch.randn((P, *shape), generator=gen, device=device, dtype=dtype) * std

    sb = math.sqrt(arch.sigma_b2)
    return {
        "wq": n(d, d, std=1.0) * qk, "wk": n(d, d, std=1.0) * qk,
        "wv": n(d, d, std=math.sqrt(arch.sigma_v2 / d)), "bv": n(d, std=sb),
        "w1": n(f, d, std=math.sqrt(arch.sigma_w2 / d)), "b1": n(f, std=sb),
        "w2": n(d, f, std=math.sqrt(arch.sw2_out / f)), "b2": n(d, std=sb),
    }


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
    """Per-slot x Wᵀ + b: x (P, …, d_in), w (P, d_out, d_in), b (P, d_out) — one bmm, no broadcast copies."""
    P, d_out = w.shape[0], w.shape[1]
    y = torch.bmm(x.reshape(P, -1, x.shape[-1]), w.transpose(1, 2))
    if b is not None:
        y = y + b[:, None]
    return y.reshape(*x.shape[:-1], d_out)


def attention(x: torch.Tensor, p: dict[str, torch.Tensor], H: int, key_mask: torch.Tensor | None = None,
              hook: Hook | None = None, name: str = "") -> torch.Tensor:
    """Multi-head self-attention without output projection (Eqs. (2)-(3)): x (P, B, T, d) → (P, B, T, d)."""
    P, B, T, d = x.shape
    dk = d // H

    def heads(w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:  # → (P, B, H, T, dk)
        return linear(x, w, b).reshape(P, B, T, H, dk).transpose(2, 3)

    q, k, v = heads(p["wq"]), heads(p["wk"]), heads(p["wv"], p["bv"])
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(dk)
    if key_mask is not None:  # (B, T) True for real tokens: padded keys get no attention
        s = s.masked_fill(~key_mask[None, :, None, None, :], float("-inf"))
    A = torch.softmax(s, dim=-1)
    if hook is not None:
        A = call(hook, f"{name}attn.hook_pattern", A)
    return torch.matmul(A, v).transpose(2, 3).reshape(P, B, T, d)


def mlp(x: torch.Tensor, p: dict[str, torch.Tensor], activation: str) -> torch.Tensor:
    """W_2 φ(W_1 x + b_1) + b_2 (Eq. (4)), per slot."""
    return linear(phi(activation, linear(x, p["w1"], p["b1"])), p["w2"], p["b2"])


def block(x: torch.Tensor, p: dict[str, torch.Tensor], arch: Architecture, *, alpha_sa=None, alpha_mlp=None,
          key_mask: torch.Tensor | None = None, hook: Hook | None = None, layer: int = 0) -> torch.Tensor:
    """One transformer block (Eq. (5)) on x (P, B, T, d); ``alpha_sa``/``alpha_mlp`` may be (P,) tensors."""
    P = x.shape[0]
    a_sa = _slot(arch.alpha_sa if alpha_sa is None else alpha_sa, P, x)
    a_mlp = _slot(arch.alpha_mlp if alpha_mlp is None else alpha_mlp, P, x)
    name = f"blocks.{layer}."
    post = arch.ln_position == "post"
    attn = attention(x if post else layer_norm(x, arch.norm), p, arch.H, key_mask, hook, name)
    attn = call(hook, name + "hook_attn_out", attn)
    h = a_sa * x + attn
    h = call(hook, name + "hook_resid_mid", layer_norm(h, arch.norm) if post else h)
    out = mlp(h if post else layer_norm(h, arch.norm), p, arch.activation)
    out = call(hook, name + "hook_mlp_out", out)
    y = a_mlp * h + out
    return call(hook, name + "hook_resid_post", layer_norm(y, arch.norm) if post else y)



class Encoder(nn.Module):
    """A BERT-style MLM encoder for P slots trained together: word + absolute position embeddings → LN → L
    blocks → linear MLM head (the model of Fig. 4, App. A.3). Parameters carry the slot axis; ``alpha_sa`` and the Q/K
    std may differ per slot (one β per slot), everything else follows ``arch``."""

    def __init__(self, arch: Architecture, vocab: int, P: int = 1, *, gen: torch.Generator | None = None,
                 device=None, qk_std=None, alpha_sa=None, emb_std: float = 0.1, head_std: float = 0.02) -> None:
        super().__init__()
        self.arch, self.vocab, self.P = arch, vocab, P
        d = arch.d

        def n(*shape, std):
            return nn.Parameter(torch.randn((P, *shape), generator=gen, device=device) * std)

        self.tok = n(vocab, d, std=emb_std)
        self.pos = n(arch.T, d, std=emb_std)
        self.blocks = nn.ModuleList()
        for _ in range(arch.L):
            m = nn.Module()
            for k, v in init_block(arch, P, gen, device, qk_std).items():
                m.register_parameter(k, nn.Parameter(v))
            self.blocks.append(m)
        self.head = n(vocab, d, std=head_std)
        self.head_b = nn.Parameter(torch.zeros(P, vocab, device=device))
        a = arch.alpha_sa if alpha_sa is None else alpha_sa
        self.register_buffer("alpha_sa", torch.as_tensor(a, dtype=torch.float32, device=device).expand(P).clone())

    def embed(self, ids: torch.Tensor) -> torch.Tensor:
        """ids (B, T) shared by all slots → LN(word + position) (P, B, T, d)."""
        T = ids.shape[1]
        return layer_norm(self.tok[:, ids] + self.pos[:, None, :T], self.arch.norm)

    def forward(self, ids: torch.Tensor, *, key_mask: torch.Tensor | None = None, hook: Hook | None = None,
                positions: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (P, B, T, V), or (P, N, V) at the flat ``positions`` (N,) of the (B·T) tokens only."""
        x = self.embed(ids)
        for layer, m in enumerate(self.blocks):
            p = {k: getattr(m, k) for k in BLOCK_KEYS}
            x = block(x, p, self.arch, alpha_sa=self.alpha_sa, key_mask=key_mask, hook=hook, layer=layer)
        if positions is not None:
            x = x.reshape(self.P, -1, self.arch.d)[:, positions]
        return linear(x, self.head, self.head_b)

    def run_with_cache(self, ids: torch.Tensor, names: tuple[str, ...] | None = None, **kw):
        """(logits, {name: activation}) for the hooks in ``names`` (all if None), detached."""
        return run_with_cache(lambda hook: self.forward(ids, hook=hook, **kw), names)
