"""The paper's one-block transformer (paper 4 Sec. 2, App. B.1; paper Sec. 2), as a pure function of stacked parameters.

Parameters live in a dict of tensors with a leading *seed* axis S, so that S independent models train in one
vectorised computation (docs): every operation is batched over S and nothing couples two seeds.

    z_t = Norm(E(x_t) + P(t))                         token embedding on the sphere       (eq. token embedding)
    a   = softmax(z^T q / sqrt(d)),  ξ = V z a        one head, one learned query          (eq. sentence embedding)
    ψ   = ξ + U σ(W Norm(ξ))                          pre-normed GeLU MLP with residual    (eq. sentence transform)
    ζ   = E ψ,  p̂ = softmax(ζ)                        tied unembedding, raw rows of E      (eq. logits)

Shapes: E (S, n_emb, d), P (S, N, d), q (S, d), V (S, d, d), W (S, h, d), U (S, d, h) — W, U, V in torch
``Linear.weight`` layout, which is the paper's layout. No biases in the paper's model (m = d(1+d+2h) for
(q, V, W, U)); the ``pal`` preset of the public code adds MLP biases ``bW`` (S, h), ``bU`` (S, d), a gain-free
RMSNorm with eps added to the root mean square (``rms_eps="outside"``) and a token table of ``n_emb`` ≥ p rows.
``norm="rmsnorm"`` with ``norm_gain`` adds learnable gains ``g_attn``, ``g_mlp`` (S, d). The MLP's σ is any
element-wise activation of ``MLP_ACTIVATIONS`` (GeLU in the paper), its output optionally dropped out in training
(``mlp_dropout``, as the public code does, on U σ(·) before the residual).

``forward`` returns the named activations and calls an optional ``hook(name, tensor)`` right after each one is
computed (the hook protocol of :mod:`attnlab.core.hooks`, as signal's, paths' and potts' models): it may return a
replacement, so analysis code can read or patch them. Hook names are TransformerLens's for this one-layer model
(``HOOK_NAMES``): ``hook_embed`` (e), ``blocks.0.ln1.hook_normalized`` (z), ``blocks.0.attn.hook_attn_scores``,
``blocks.0.attn.hook_pattern`` (a), ``blocks.0.attn.hook_z`` (Σ_t a_t z_t, before V), ``blocks.0.hook_attn_out``
(ξ), ``blocks.0.ln2.hook_normalized`` (ξ̄), ``blocks.0.mlp.hook_pre``, ``blocks.0.mlp.hook_post``,
``blocks.0.hook_mlp_out``, ``blocks.0.hook_resid_post`` (ψ) and ``hook_logits`` (ζ).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import torch
import torch.nn.functional as F

from attnlab.clustering.model.activations import MLP_ACTIVATIONS, activation, canonical  # noqa: F401 (re-exported)
from attnlab.core.config import ConfigError
from attnlab.core.hooks import Hook, call
from attnlab.core.rng import generator, stream_seed

Norm = Literal["sphere", "rmsnorm", "smooth", "smooth_inf"]
Params = dict[str, torch.Tensor]
ACTIVATIONS = ("e", "z", "scores", "attn", "pooled", "xi", "xi_n", "pre", "hidden", "mlp_out", "psi", "logits")
GROUPS = ("E", "P", "q", "V", "W", "U")  # the paper's parameter groups (per-layer gradient norms, Sec. 4.3)
MLP_PARAMS = ("W", "U", "bW", "bU")
PARAM_ORDER = ("E", "P", "q", "V", "W", "U", "bW", "bU", "g_attn", "g_mlp")


@dataclass(frozen=True)
class ModelSpec:
    """Architecture of the one-block transformer. ``h`` defaults to 4d (Sec. 2)."""

    p: int = 2
    N: int = 12
    d: int = 2
    h: int | None = None
    n_emb: int | None = None
    norm: Norm = "sphere"
    norm_eps: float = 1e-5
    norm_gain: bool = False
    mlp_bias: bool = False
    q_init: Literal["normal", "uniform", "zeros"] = "normal"
    rms_eps: Literal["inside", "outside"] = "inside"
    activation: str = "gelu"
    mlp_dropout: float = 0.0
    mlp_init: Literal["independent", "nested"] = "independent"

    def __post_init__(self) -> None:
        object.__setattr__(self, "activation", canonical(self.activation))  # any torch.nn name (activations.py)
        if not 0 <= self.mlp_dropout < 1:
            raise ConfigError(f"key 'mlp_dropout' = {self.mlp_dropout}: must be in [0, 1)")
        if self.d < 1:
            raise ConfigError(f"key 'd' = {self.d}: the embedding dimension must be ≥ 1")
        if self.p < 2:
            raise ConfigError(f"key 'p' = {self.p}: the modulus must be ≥ 2")
        if self.h is None:
            object.__setattr__(self, "h", 4 * self.d)
        if self.h < 1:
            raise ConfigError(f"key 'h' = {self.h}: the MLP width must be ≥ 1")
        if self.n_emb is None:
            object.__setattr__(self, "n_emb", self.p)
        if self.n_emb < self.p:
            raise ConfigError(f"key 'n_emb' = {self.n_emb}: the token table needs at least p = {self.p} rows")

    @property
    def n_params(self) -> int:
        """p·d + N·d + d + d² + 2hd for the paper's model (plus biases / gains of the variants)."""
        d, h = self.d, self.h
        n = self.n_emb * d + self.N * d + d + d * d + 2 * h * d
        return n + (h + d if self.mlp_bias else 0) + (2 * d if self.norm == "rmsnorm" and self.norm_gain else 0)

    def with_vocab(self, p: int) -> ModelSpec:
        """The same architecture on modulus p (transfer, App. A.2)."""
        return replace(self, p=p, n_emb=max(p, self.n_emb if self.n_emb != self.p else p))


# ----------------------------------------------------------------------------------------------- normalisers
def normalize(x: torch.Tensor, spec: ModelSpec, gain: torch.Tensor | None = None) -> torch.Tensor:
    """Projection onto the sphere x/||x|| (paper); RMSNorm x/sqrt(mean x² + eps)·g (``rms_eps="inside"``, torch's)
    or x/(sqrt(mean x²) + eps)·g (``"outside"``, the public code's); or the smoothed f(x) = s(||x||)·x/||x|| of
    Sec. 4.4 with s(r) = 3r² − 2r³ (C¹) or the C^∞ bump s = g(r)/(g(r)+g(1−r))."""
    if spec.norm == "rmsnorm":
        ms = x.pow(2).mean(-1, keepdim=True)
        y = x * torch.rsqrt(ms + spec.norm_eps) if spec.rms_eps == "inside" else x / (ms.sqrt() + spec.norm_eps)
        return y if gain is None else y * gain
    r = x.norm(dim=-1, keepdim=True)
    if spec.norm == "sphere":
        return x / r.clamp_min(1e-12)
    return torch.where(r >= 1, x / r.clamp_min(1e-12), x * smooth_scale(r, spec.norm))


def smooth_scale(r: torch.Tensor, kind: str = "smooth") -> torch.Tensor:
    """s(r)/r of the smoothed normaliser (so that f(x) = x·s(r)/r); equals 1/r for r ≥ 1."""
    inside = r < 1
    rc = r.clamp(0.0, 1.0)
    if kind == "smooth":
        s_over_r = 3 * rc - 2 * rc * rc  # s(r)/r with s = 3r² − 2r³
    else:
        g = lambda t: torch.where(t > 0, torch.exp(-1 / t.clamp_min(1e-30)), torch.zeros_like(t))  # noqa: E731
        s_over_r = g(rc) / (g(rc) + g(1 - rc)) / rc.clamp_min(1e-30)
    return torch.where(inside, s_over_r, 1 / r.clamp_min(1e-12))


# ----------------------------------------------------------------------------------------------- init
def init_params(spec: ModelSpec, seeds: list[int] | tuple[int, ...], *, dtype: torch.dtype = torch.float32,
                device: torch.device | str = "cpu") -> Params:
    """PyTorch-default initialisation (App. A), one independent generator per (seed, parameter) so that
    changing h leaves E, P, q, V bitwise identical (paper App. A): E, P ~ N(0,1) (nn.Embedding); V, W ~
    U(±1/sqrt(d)), U ~ U(±1/sqrt(h)) (nn.Linear); q ~ N(0,1) | U(±1/sqrt(d)) | 0; biases as nn.Linear.
    ``mlp_init="nested"`` draws the MLP as :func:`nested_mlp` from one stream per seed instead."""
    d, h = spec.d, spec.h
    shapes: dict[str, tuple[tuple[int, ...], str, float]] = {
        "E": ((spec.n_emb, d), "normal", 1.0), "P": ((spec.N, d), "normal", 1.0),
        "q": ((d,), {"normal": "normal", "uniform": "uniform", "zeros": "zeros"}[spec.q_init],
              1.0 if spec.q_init == "normal" else 1 / math.sqrt(d)),
        "V": ((d, d), "uniform", 1 / math.sqrt(d)), "W": ((h, d), "uniform", 1 / math.sqrt(d)),
        "U": ((d, h), "uniform", 1 / math.sqrt(h)),
    }
    if spec.mlp_bias:
        shapes["bW"] = ((h,), "uniform", 1 / math.sqrt(d))
        shapes["bU"] = ((d,), "uniform", 1 / math.sqrt(h))
    if spec.mlp_init == "nested":
        shapes = {k: v for k, v in shapes.items() if k not in MLP_PARAMS}
    if spec.norm == "rmsnorm" and spec.norm_gain:
        shapes["g_attn"] = ((d,), "ones", 1.0)
        shapes["g_mlp"] = ((d,), "ones", 1.0)
    out: Params = {}
    for name, (shape, law, scale) in shapes.items():
        out[name] = torch.stack([draw(shape, law, scale, stream_seed(s, "init:" + name)) for s in seeds])
    if spec.mlp_init == "nested":
        tables = [draw((max(h, d), 2 * d + 2), "uniform", 1.0, stream_seed(s, "init:mlp")) for s in seeds]
        mlps = [nested_mlp(t, spec) for t in tables]
        out.update({k: torch.stack([m[k] for m in mlps]) for k in mlps[0]})
    return {k: out[k].to(device=device, dtype=dtype) for k in PARAM_ORDER if k in out}


def nested_mlp(table: torch.Tensor, spec: ModelSpec) -> Params:
    """The MLP from a table of U(−1, 1) draws, one row of 2d + 2 numbers per neuron (the public code's scheme):
    neuron i's receptor w_i = row[:d]/sqrt(d), assembler u_i = row[d:2d]/sqrt(h), bias bW_i = row[2d]/sqrt(d);
    bU = the first d entries of the last column /sqrt(h). The same laws as nn.Linear's defaults, but neuron i's
    draws do not depend on the width h, so widening the MLP keeps the first neurons (Fig. 16's width sweep)."""
    d, h = spec.d, spec.h
    t = table[:h] if table.shape[0] >= h else None
    if t is None:
        raise ConfigError(f"key 'h' = {h}: the MLP table has only {table.shape[0]} rows")
    out = {"W": t[:, :d] * (1 / math.sqrt(d)), "U": t[:, d:2 * d].T * (1 / math.sqrt(h))}
    if spec.mlp_bias:
        out["bW"] = t[:, 2 * d] * (1 / math.sqrt(d))
        out["bU"] = table[:d, 2 * d + 1] * (1 / math.sqrt(h))
    return out


def draw(shape: tuple[int, ...], law: str, scale: float, seed: int) -> torch.Tensor:
    """One parameter tensor from its own CPU generator (float64 draws, cast later: identical across dtypes)."""
    g = generator(seed)
    if law == "normal":
        return torch.randn(shape, generator=g, dtype=torch.float64) * scale
    if law == "uniform":
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * scale
    if law == "ones":
        return torch.ones(shape, dtype=torch.float64)
    return torch.zeros(shape, dtype=torch.float64)


def grow_vocab(params: Params, spec: ModelSpec, p_new: int,
               seeds: list[int] | tuple[int, ...]) -> tuple[Params, ModelSpec]:
    """Transfer p → p' ≥ p (App. A.2): append p'−n_emb fresh N(0,1) token rows from each seed's init stream (none
    if the table has p' rows already); all other tensors are carried over unchanged (same storage values)."""
    if p_new < spec.p:
        raise ConfigError(f"key 'p_new' = {p_new}: transfer needs p' ≥ p = {spec.p}")
    new_spec = spec.with_vocab(p_new)
    extra = new_spec.n_emb - spec.n_emb
    out = dict(params)
    if extra > 0:
        E = params["E"]
        stream = f"init:E:{spec.n_emb}->{new_spec.n_emb}"
        rows = torch.stack([draw((extra, spec.d), "normal", 1.0, stream_seed(s, stream)) for s in seeds]).to(E)
        out["E"] = torch.cat([E, rows], dim=1)
    return out, new_spec


# ----------------------------------------------------------------------------------------------- forward
#: name of each activation ``forward`` returns → the name its hook is called with (TransformerLens's)
HOOK_NAMES = {"e": "hook_embed", "z": "blocks.0.ln1.hook_normalized", "scores": "blocks.0.attn.hook_attn_scores",
              "attn": "blocks.0.attn.hook_pattern", "pooled": "blocks.0.attn.hook_z", "xi": "blocks.0.hook_attn_out",
              "xi_n": "blocks.0.ln2.hook_normalized", "pre": "blocks.0.mlp.hook_pre",
              "hidden": "blocks.0.mlp.hook_post", "mlp_out": "blocks.0.hook_mlp_out", "psi": "blocks.0.hook_resid_post",
              "logits": "hook_logits"}


def embed(params: Params, x: torch.Tensor) -> torch.Tensor:
    """E(x_t) + P(t) for x of shape (B, N) (shared by all seeds) or (S, B, N): returns (S, B, N, d)."""
    E, P = params["E"], params["P"]
    if x.dim() == 2:
        return E[:, x] + P[:, None]
    seeds = torch.arange(E.shape[0], device=E.device)[:, None, None]
    return E[seeds, x] + P[:, None]


def token_table(params: Params, spec: ModelSpec) -> torch.Tensor:
    """Z(v, t) = Norm(E(v) + P(t)) for every token value v < n_emb and position t: (S, n_emb, N, d). Only
    n_emb·N distinct token embeddings exist, so the training path normalises this table once per step."""
    return normalize(params["E"][:, :, None] + params["P"][:, None], spec, _gain(params, "g_attn"))


def forward(params: Params, x: torch.Tensor, spec: ModelSpec, hook: Hook | None = None,
            tokens: bool = True, mlp_keep: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """All named activations for inputs x (B, N) or (S, B, N): e, z (S,B,N,d); scores, attn (S,B,N);
    pooled = Σ_t a_t z_t and ξ = V·pooled (S,B,d); xi_n = Norm(ξ); pre = Wξ̄ (+bW), hidden = σ(pre) (S,B,h);
    mlp_out = U·hidden (+bU), ψ = ξ + mlp_out (S,B,d); logits ζ = E ψ (S,B,n_emb).

    ``tokens=False`` (the training path) skips the per-token e and z: scores are read from the normalised
    (v, t) table and ξ pools table rows, the same numbers with far fewer small kernels. A ``hook`` (module
    docstring) forces the per-token path. ``mlp_keep`` (S, B, d), the dropout mask already divided by the keep
    probability, multiplies the MLP's output (training with ``mlp_dropout``; evaluation passes none).
    """
    acts: dict[str, torch.Tensor] = {}

    def put(name: str, value: torch.Tensor) -> torch.Tensor:
        acts[name] = value = call(hook, HOOK_NAMES[name], value)
        return value

    q = params["q"]
    if x.dim() == 2:
        x = x.expand(q.shape[0], *x.shape)
    if tokens or hook is not None:
        e = put("e", embed(params, x))
        z = put("z", normalize(e, spec, _gain(params, "g_attn")))
        scores = put("scores", (z * q[:, None, None, :]).sum(-1) / math.sqrt(spec.d))
        a = put("attn", softmax_last(scores))
        pooled = put("pooled", (a.unsqueeze(-1) * z).sum(-2))                  # Σ_t a_t z_t
    else:
        S, B, N = x.shape
        table = token_table(params, spec).flatten(1, 2)                       # (S, n_emb·N, d)
        cell = (x * N + torch.arange(N, device=x.device)).view(S, B * N)      # index of (x_t, t)
        table_scores = (table * q[:, None, :]).sum(-1) / math.sqrt(spec.d)     # (S, n_emb·N)
        scores = put("scores", table_scores.gather(1, cell).view(S, B, N))
        a = put("attn", softmax_last(scores))
        weights = a.new_zeros(S, B, table.shape[1]).scatter_(2, cell.view(S, B, N), a)
        pooled = put("pooled", weights @ table)
    xi = put("xi", pooled @ params["V"].transpose(-1, -2))                     # ξ = V z a
    xi_n = put("xi_n", normalize(xi, spec, _gain(params, "g_mlp", squeeze=True)))
    pre = xi_n @ params["W"].transpose(-1, -2)
    if "bW" in params:
        pre = pre + params["bW"][:, None]
    pre = put("pre", pre)
    hidden = put("hidden", activation(spec.activation)(pre))
    mlp_out = hidden @ params["U"].transpose(-1, -2)
    if "bU" in params:
        mlp_out = mlp_out + params["bU"][:, None]
    if mlp_keep is not None:
        mlp_out = mlp_out * mlp_keep
    mlp_out = put("mlp_out", mlp_out)
    psi = put("psi", xi + mlp_out)
    put("logits", psi @ params["E"].transpose(-1, -2))
    return acts


def softmax_last(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis, computed on the transposed view: torch 2.13's CPU softmax over a short last
    axis (N = 12) runs 4-8× slower than over a strided one, and this is the hottest kernel of a training step."""
    return torch.softmax(x.transpose(-1, -2), dim=-2).transpose(-1, -2)


def _gain(params: Params, name: str, squeeze: bool = False) -> torch.Tensor | None:
    g = params.get(name)
    if g is None:
        return None
    return g[:, None] if squeeze else g[:, None, None]


def logits(params: Params, x: torch.Tensor, spec: ModelSpec) -> torch.Tensor:
    return forward(params, x, spec, tokens=False)["logits"]


def loss_per_seed(params: Params, x: torch.Tensor, y: torch.Tensor, spec: ModelSpec) -> torch.Tensor:
    """Mean cross-entropy of each seed (S,) on its batch (eq. loss); y of shape (B,) or (S, B)."""
    z = logits(params, x, spec)
    S, B, C = z.shape
    y = y.expand(S, B) if y.dim() == 1 else y
    return F.cross_entropy(z.reshape(S * B, C), y.reshape(S * B), reduction="none").view(S, B).mean(1)


# ----------------------------------------------------------------------------------------------- utilities
def select(params: Params, seeds: int | list[int] | slice) -> Params:
    """The sub-ensemble of the given seed indices (an int keeps the axis: S = 1)."""
    idx = [seeds] if isinstance(seeds, int) else seeds
    return {k: v[idx] for k, v in params.items()}


def stack(models: list[Params]) -> Params:
    """Concatenate ensembles along the seed axis."""
    return {k: torch.cat([m[k] for m in models]) for k in models[0]}


def to(params: Params, dtype: torch.dtype | None = None, device: torch.device | str | None = None) -> Params:
    return {k: v.to(device=device, dtype=dtype) for k, v in params.items()}


def n_seeds(params: Params) -> int:
    return params["E"].shape[0]
