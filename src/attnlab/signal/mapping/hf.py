"""HuggingFace interop (extra ``hf``): where does a BERT-style encoder sit at initialisation, and how to move it.

``diagnose(config_or_model)`` maps a ``transformers`` encoder (built locally, e.g. ``BertModel(BertConfig(...))``;
nothing is downloaded) onto the study's :class:`Architecture` — Q/K std → β (App. B.1, both conventions), the
value and output projections folded into σ_v² (Sec. 2, App. B.3), W_1 / W_2 fan-in variances, the activation — and
reports its phase (entropy collapse if β ≥ β_c, else the rank-collapse-prone low-variance phase), α_c for its
depth, and ρ_L at its current residual strength.

``reinit(model, beta, alpha_sa)`` sets W_Q, W_K to the Eq. (11) scale of β (zero biases) and the SA residual
strength to α_SA. HF computes LN(dense(SA) + x); since LN is scale invariant, LN(α x + SA) = LN(x + SA/α), so
α_SA is realised exactly at initialisation by dividing the attention output projection by α (no module is
patched). ``propagate(model, ids)`` measures the per-layer mean cosine of a real HF model.
"""

from __future__ import annotations

from typing import Any

import torch

from attnlab.core.rng import generator
from attnlab.signal import theory
from attnlab.signal.arch import Architecture, beta_from_std, std_from_beta
from attnlab.signal.theory import diagram, rem

_ACTS = {"relu": "relu", "tanh": "tanh", "gelu": "gelu", "gelu_new": "gelu", "gelu_python": "gelu"}


def _require() -> None:
    try:
        import transformers  # noqa: F401
    except ImportError:
        raise ImportError("HuggingFace interop needs transformers: pip install -e '.[hf]'") from None


def _config(obj) -> Any:
    cfg = getattr(obj, "config", obj)
    for key in ("hidden_size", "num_attention_heads", "num_hidden_layers", "intermediate_size"):
        if not hasattr(cfg, key):
            raise ValueError(f"{type(cfg).__name__} has no {key!r}: only BERT-style encoder configs are supported")
    return cfg


def _layers(model) -> list:
    enc = getattr(model, "encoder", None) or getattr(getattr(model, "bert", None), "encoder", None)
    if enc is None or not hasattr(enc, "layer"):
        raise ValueError(f"{type(model).__name__} has no BERT-style encoder.layer list")
    return list(enc.layer)


@torch.no_grad()
def architecture(obj, T: int | None = None, alpha_sa: float | None = None) -> Architecture:
    """The study's :class:`Architecture` equivalent (at initialisation) of an HF config or model.

    From a model the Q/K, value, output and MLP weight stds are measured; from a config they are
    ``initializer_range``. ``T`` is the number of attended keys (default ``max_position_embeddings``)."""
    cfg = _config(obj)
    d, H, L, ff = cfg.hidden_size, cfg.num_attention_heads, cfg.num_hidden_layers, cfg.intermediate_size
    t_init = getattr(cfg, "max_position_embeddings", 512)
    std = {k: cfg.initializer_range for k in ("q", "v", "o", "w1", "w2")}
    bias2 = 0.0
    if hasattr(obj, "config"):
        lay = _layers(obj)
        att = lay[0].attention
        qk = torch.cat([torch.cat([x.attention.self.query.weight.flatten(), x.attention.self.key.weight.flatten()])
                        for x in lay])
        std = {"q": float(qk.std()), "v": float(att.self.value.weight.std()),
               "o": float(att.output.dense.weight.std() * getattr(att.output, "_attnlab_alpha", 1.0)),
               "w1": float(lay[0].intermediate.dense.weight.std()), "w2": float(lay[0].output.dense.weight.std())}
        bias2 = float(torch.cat([lay[0].attention.self.value.bias, lay[0].intermediate.dense.bias]).pow(2).mean())
        alpha_sa = getattr(att.output, "_attnlab_alpha", 1.0) if alpha_sa is None else alpha_sa
    act = _ACTS.get(str(getattr(cfg, "hidden_act", "gelu")))
    if act is None:
        raise ValueError(f"activation {cfg.hidden_act!r} has no kernel here; allowed: {', '.join(_ACTS)}")
    return Architecture(
        d=d, H=H, d_ff=ff, T=T or t_init, T_init=t_init, L=L, beta=beta_from_std(std["q"], d, H, t_init),
        alpha_sa=1.0 if alpha_sa is None else alpha_sa, alpha_mlp=1.0,
        sigma_v2=(std["v"] ** 2 * d) * (std["o"] ** 2 * d), sigma_w2=std["w1"] ** 2 * d,
        sigma_w2_out=std["w2"] ** 2 * ff,
        sigma_b2=bias2, activation=act, norm="layernorm",
    )


def diagnose(obj, T: int | None = None, rho0: float = 0.0, eps: float = 1e-2) -> dict[str, Any]:
    """β (both conventions), phase, α_c(L) and ρ_L of an HF encoder config or model (see module doc)."""
    arch = architecture(obj, T)
    bc = float(rem.beta_c(rho0))
    beta_t = arch.beta_theory
    ac = float(diagram.alpha_c(arch, [arch.L], [eps], rho0=rho0)[0, 0])
    rho_l = float(theory.iterate(rho0, arch)["rho"][-1])
    if beta_t >= bc:
        phase = "entropy collapse"
    elif rho_l >= 1 - eps:
        phase = "rank collapse"
    else:
        phase = "trainable"
    return {"d": arch.d, "H": arch.H, "L": arch.L, "T": arch.T, "qk_std": arch.qk_std,
            "beta": beta_t, "beta_paper": beta_from_std(arch.qk_std, arch.d, arch.H, arch.t_init, "authors_dk"),
            "beta_c": bc, "alpha_sa": arch.alpha_sa, "alpha_c": ac, "rho_L": rho_l, "phase": phase,
            "q_sa_first_layer": float(rem.q_sa(beta_t, rho0)), "architecture": arch}


@torch.no_grad()
def reinit(model, beta: float, alpha_sa: float = 1.0, T: int | None = None, seed: int = 0):
    """Re-initialise W_Q, W_K of every layer for per-head score β (Eq. (11), biases zeroed) and set α_SA (see
    module doc); returns the model. ``T`` is the length the scale is set for (default max positions)."""
    _require()
    if beta <= 0:
        raise ValueError(f"beta = {beta}: must be > 0")
    if alpha_sa <= 0:
        raise ValueError(f"alpha_sa = {alpha_sa}: must be > 0 to be realised by rescaling the SA output")
    cfg = _config(model)
    T = T or getattr(cfg, "max_position_embeddings", 512)
    std = std_from_beta(beta, cfg.hidden_size, cfg.num_attention_heads, T)
    gen = generator(seed)
    for lay in _layers(model):
        for lin in (lay.attention.self.query, lay.attention.self.key):
            lin.weight.copy_(torch.randn(lin.weight.shape, generator=gen) * std)
            if lin.bias is not None:
                lin.bias.zero_()
        out = lay.attention.output
        old = getattr(out, "_attnlab_alpha", 1.0)
        out.dense.weight.mul_(old / alpha_sa)
        out.dense.bias.mul_(old / alpha_sa)
        out._attnlab_alpha = alpha_sa
    return model


@torch.no_grad()
def propagate(model, ids: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine of every hidden state (embedding output, then each layer) of an HF encoder on
    ``ids`` (B, T), averaged over sequences: tensor (L+1,)."""
    _require()
    model.eval()
    out = model(input_ids=ids, output_hidden_states=True)
    hs = out.hidden_states
    res = []
    for h in hs:
        xn = h / h.norm(dim=-1, keepdim=True)
        T = h.shape[1]
        res.append(((xn.sum(1).pow(2).sum(-1) - T) / (T * (T - 1))).mean())
    return torch.stack(res)


def bert(d: int = 128, H: int = 2, L: int = 4, ff: int | None = None, vocab: int = 512, T: int = 128, **kw):
    """A randomly initialised ``BertModel`` built locally (no download), for experiments and tests."""
    _require()
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=vocab, hidden_size=d, num_attention_heads=H, num_hidden_layers=L,
                     intermediate_size=ff or 4 * d, max_position_embeddings=T, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, **kw)
    return BertModel(cfg, add_pooling_layer=False)


__all__ = ["architecture", "bert", "diagnose", "propagate", "reinit"]


def score_std(model, T: int, layer: int = 0, seed: int = 12345) -> float:
    """Std of the per-head scores s = q·k/√d_head of one layer on T random tokens of norm √d (drawn from ``seed``,
    not reinit's, so that x is independent of W_Q): β √(log T) after :func:`reinit` to β (Eq. (11))."""
    cfg = _config(model)
    d, H = cfg.hidden_size, cfg.num_attention_heads
    lay = _layers(model)[layer].attention.self
    x = torch.randn(T, d, generator=generator(seed))
    x = x / x.norm(dim=-1, keepdim=True) * d**0.5
    with torch.no_grad():
        q, k = lay.query(x).reshape(T, H, d // H), lay.key(x).reshape(T, H, d // H)
        return float((torch.einsum("ahd,bhd->hab", q, k) / (d // H) ** 0.5).std())
