"""Reading a model for ``attnlab map``: any encoder → one weight dict per layer and the family facts the theory needs.

A :class:`Spec` holds the sizes, the activation, the LayerNorm placement, the residual strengths and, per layer, the
actual weight tensors ``wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2, b2`` (``wo = None``: no output projection) and the
LayerNorm gains ``g1, g2``. Sources: a ``transformers`` model (BERT layout — BERT, RoBERTa, ELECTRA, CamemBERT,
XLM-R… — and DistilBERT), a ``transformers`` config without weights (its family's initialisation, drawn layer by
layer: :func:`family_layers`), a family with sizes (``--arch bert --layers 48 …``), ``torch.nn.TransformerEncoder``
and the study's own :class:`~attnlab.signal.model.Encoder`. Architectures outside the theory of paper 1 (pre-LN:
GPT-2, Llama, ViT, …) give a Spec with ``covered = False`` and the reason; they are measured, not predicted.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from attnlab.core.config import ConfigError
from attnlab.core.rng import generator

# post-LN encoders whose attention block is Eqs. (2)-(5) with an output projection (σ_v² folds W_V and W_O, Sec. 2)
POST_LN = {"bert": "bert", "roberta": "bert", "electra": "bert", "camembert": "bert", "xlm-roberta": "bert",
           "ernie": "bert", "distilbert": "distilbert"}
# outside the theory (paper 1 treats post-LN encoders): pre-LN decoders and encoders
OUTSIDE = {"gpt2": "a pre-LN decoder (LN before attention and MLP, causal mask)",
           "llama": "a pre-RMSNorm decoder with rotary positions, SwiGLU MLP and a causal mask",
           "mistral": "a pre-RMSNorm decoder with rotary positions, SwiGLU MLP and a causal mask",
           "qwen2": "a pre-RMSNorm decoder with rotary positions, SwiGLU MLP and a causal mask",
           "gpt_neox": "a pre-LN decoder with parallel attention and MLP",
           "vit": "a pre-LN vision encoder (patch embeddings, LN before attention and MLP)"}
FAMILIES = (*POST_LN, *OUTSIDE)
ACTIVATIONS = {"relu": "relu", "tanh": "tanh", "gelu": "gelu", "gelu_new": "gelu", "gelu_python": "gelu",
               "gelu_pytorch_tanh": "gelu"}
KEYS = ("wq", "bq", "wk", "bk", "wv", "bv", "wo", "bo", "w1", "b1", "w2", "b2", "g1", "g2")


@dataclass
class Spec:
    """What the map reads from a model (see module doc). ``layers`` is a list of weight dicts, or a callable
    drawing them one at a time (a family's initialisation: no 48-layer model is held in memory)."""

    family: str
    source: str
    covered: bool
    d: int = 0
    H: int = 1
    L: int = 0
    ff: int = 0
    T_init: int = 512
    vocab: int = 0
    activation: str = "gelu"
    ln: str = "post"
    alpha_sa: float = 1.0
    alpha_mlp: float = 1.0
    alpha_in_wo: bool = True  # α_SA realised as W_O/α (HF, ``reinit``): the forward's residual is 1
    norm: str = "layernorm"
    init_std: float | None = None
    reason: str = ""
    layers: list[dict[str, Any]] | Callable[[int], Iterator[dict[str, Any]]] = field(default_factory=list)
    model: Any = None  # the HF model, when one was loaded (measured through its own forward)
    config: Any = None

    def iter_layers(self, seed: int = 0) -> Iterator[dict[str, Any]]:
        return iter(self.layers) if isinstance(self.layers, list) else self.layers(seed)


def _act(name: Any) -> str:
    act = ACTIVATIONS.get(str(name))
    if act is None:
        raise ConfigError(f"activation {name!r} has no kernel in the theory; allowed: {', '.join(ACTIVATIONS)}")
    return act


def _w(lin) -> tuple[torch.Tensor, torch.Tensor | None]:
    return lin.weight.detach(), None if lin.bias is None else lin.bias.detach()


# -- families with sizes -------------------------------------------------------------------------------------------


def family_layers(d: int, ff: int, std: float) -> Callable[[int], Iterator[dict[str, Any]]]:
    """The HF initialisation of a post-LN encoder (``_init_weights``: every Linear N(0, std²), biases 0, LN γ = 1),
    drawn layer by layer from ``seed``."""

    def draw(seed: int) -> Iterator[dict[str, Any]]:
        gen = generator(seed)
        zero_d, zero_f, one = torch.zeros(d), torch.zeros(ff), torch.ones(d)
        while True:
            n = lambda *s: torch.randn(s, generator=gen).mul_(std)  # noqa: E731
            with one_thread():  # the same draws at any thread count
                w = {"wq": n(d, d), "bq": zero_d, "wk": n(d, d), "bk": zero_d, "wv": n(d, d), "bv": zero_d,
                     "wo": n(d, d), "bo": zero_d, "w1": n(ff, d), "b1": zero_f, "w2": n(d, ff), "b2": zero_d,
                     "g1": one, "g2": one}
            yield w

    return draw


def from_family(arch: str, layers: int, hidden: int, heads: int, ff: int | None = None, T_init: int = 512,
                init_std: float = 0.02, activation: str = "gelu", vocab: int = 30522) -> Spec:
    """A family at given sizes with its standard initialisation (std 0.02, GELU, 512 positions by default)."""
    arch = arch.lower()
    if arch not in FAMILIES:
        raise ConfigError(f"--arch {arch!r} is not known; allowed: {', '.join(FAMILIES)}")
    if layers < 1 or hidden < 2 or heads < 1 or hidden % heads:
        raise ConfigError(f"sizes: --layers {layers} ≥ 1, --hidden {hidden} divisible by --heads {heads}")
    ff = ff or 4 * hidden
    if arch in OUTSIDE:
        return Spec(arch, f"--arch {arch}", False, hidden, heads, layers, ff, T_init, vocab, _act(activation),
                    "pre", init_std=init_std, reason=f"{arch} is {OUTSIDE[arch]}; paper 1's theory is for post-LN "
                    "encoders, so its curves are measured, not predicted")
    return Spec(arch, f"--arch {arch}", True, hidden, heads, layers, ff, T_init, vocab, _act(activation), "post",
                init_std=init_std, layers=family_layers(hidden, ff, init_std))


# -- transformers ---------------------------------------------------------------------------------------------------


def _bert_layer(lay) -> dict[str, Any]:
    s, o = lay.attention.self, lay.attention.output
    out = {}
    for k, lin in (("q", s.query), ("k", s.key), ("v", s.value), ("o", o.dense), ("1", lay.intermediate.dense),
                   ("2", lay.output.dense)):
        out["w" + k], out["b" + k] = _w(lin)
    out["g1"], out["g2"] = o.LayerNorm.weight.detach(), lay.output.LayerNorm.weight.detach()
    return out


def _distil_layer(lay) -> dict[str, Any]:
    a = lay.attention
    out = {}
    for k, lin in (("q", a.q_lin), ("k", a.k_lin), ("v", a.v_lin), ("o", a.out_lin), ("1", lay.ffn.lin1),
                   ("2", lay.ffn.lin2)):
        out["w" + k], out["b" + k] = _w(lin)
    out["g1"], out["g2"] = lay.sa_layer_norm.weight.detach(), lay.output_layer_norm.weight.detach()
    return out


def hf_sizes(cfg) -> dict[str, Any]:
    """Sizes of an HF config under either naming (BERT's hidden_size…, DistilBERT's dim…, GPT-2's n_embd…)."""
    g = lambda *names, default=None: next((getattr(cfg, n) for n in names if getattr(cfg, n, None) is not None),  # noqa: E731
                                          default)
    d = g("hidden_size", "dim", "n_embd")
    if d is None:
        raise ConfigError(f"{type(cfg).__name__} has no width (hidden_size, dim or n_embd): not a transformer config")
    return {"d": int(d), "H": int(g("num_attention_heads", "n_heads", "n_head", default=1)),
            "L": int(g("num_hidden_layers", "n_layers", "n_layer", default=1)),
            "ff": int(g("intermediate_size", "hidden_dim", "n_inner", default=4 * d)),
            "T_init": int(g("max_position_embeddings", "n_positions", default=512)),
            "vocab": int(g("vocab_size", default=0)),
            "act": g("hidden_act", "activation", "activation_function", default="gelu"),
            "std": float(g("initializer_range", default=0.02))}


def from_hf(obj) -> Spec:
    """A ``transformers`` model (weights read) or config (the family's initialisation drawn from its sizes)."""
    model = obj if hasattr(obj, "config") and isinstance(obj, nn.Module) else None
    cfg = obj.config if model is not None else obj
    family = str(getattr(cfg, "model_type", type(cfg).__name__))
    z = hf_sizes(cfg)
    src = f"{type(model).__name__} (weights read)" if model is not None else f"{type(cfg).__name__} (initialisation " \
        f"drawn from its sizes, std {z['std']:g})"
    if family not in POST_LN:
        why = OUTSIDE.get(family, "not a post-LN encoder with the BERT or DistilBERT layout")
        return Spec(family, src, False, z["d"], z["H"], z["L"], z["ff"], z["T_init"], z["vocab"], "gelu", "pre",
                    init_std=z["std"], model=model, config=cfg,
                    reason=f"{family} is {why}; paper 1's theory is for post-LN encoders, so its curves are measured, "
                    "not predicted")
    spec = Spec(family, src, True, z["d"], z["H"], z["L"], z["ff"], z["T_init"], z["vocab"], _act(z["act"]), "post",
                alpha_sa=float(getattr(cfg, "attnlab_alpha_sa", 1.0)), init_std=z["std"], model=model, config=cfg)
    if model is None:
        spec.layers = family_layers(z["d"], z["ff"], z["std"])
        return spec
    layers = _hf_layers(model, family)
    spec.layers = [(_distil_layer if POST_LN[family] == "distilbert" else _bert_layer)(lay) for lay in layers]
    return spec


def _hf_layers(model, family: str) -> list:
    for path in (("encoder",), ("transformer",), (family.replace("-", "_"), "encoder"), ("bert", "encoder"),
                 ("roberta", "encoder"), ("electra", "encoder"), ("distilbert", "transformer"),
                 ("base_model", "encoder"), ("base_model", "transformer")):
        m = model
        for p in path:
            m = getattr(m, p, None)
        if m is not None and hasattr(m, "layer"):
            return list(m.layer)
    raise ConfigError(f"{type(model).__name__}: no encoder.layer list found (a {family} with an unknown layout)")


# -- torch.nn and the study's Encoder --------------------------------------------------------------------------------


def from_torch(enc: nn.Module, T_init: int = 512) -> Spec:
    """``nn.TransformerEncoder`` (or one ``nn.TransformerEncoderLayer``): post-LN if ``norm_first=False``."""
    lays = list(enc.layers) if isinstance(enc, nn.TransformerEncoder) else [enc]
    first = lays[0]
    d, H = first.self_attn.embed_dim, first.self_attn.num_heads
    act = first.activation if isinstance(first.activation, str) else getattr(first.activation, "__name__",
                                                                             type(first.activation).__name__)
    act = _act(str(act).lower().replace("gelu()", "gelu").replace("relu()", "relu"))
    out = []
    for lay in lays:
        wq, wk, wv = lay.self_attn.in_proj_weight.detach().chunk(3)
        bq, bk, bv = lay.self_attn.in_proj_bias.detach().chunk(3) if lay.self_attn.in_proj_bias is not None \
            else (None, None, None)
        w = {"wq": wq, "bq": bq, "wk": wk, "bk": bk, "wv": wv, "bv": bv}
        w["wo"], w["bo"] = _w(lay.self_attn.out_proj)
        w["w1"], w["b1"] = _w(lay.linear1)
        w["w2"], w["b2"] = _w(lay.linear2)
        w["g1"], w["g2"] = lay.norm1.weight.detach(), lay.norm2.weight.detach()
        out.append(w)
    if first.norm_first:
        return Spec("torch.nn.TransformerEncoder", type(enc).__name__, False, d, H, len(lays),
                    first.linear1.out_features, T_init, 0, act, "pre", reason="norm_first=True is a pre-LN encoder; "
                    "paper 1's theory is for post-LN encoders, so its curves are measured, not predicted", layers=out)
    return Spec("torch.nn.TransformerEncoder", type(enc).__name__, True, d, H, len(lays), first.linear1.out_features,
                T_init, 0, act, "post", layers=out)


def from_attnlab(enc) -> Spec:
    """The study's :class:`~attnlab.signal.model.Encoder` (slot 0): no output projection, its own α_SA, α_MLP."""
    a = enc.arch
    if a.ln_position != "post":
        raise ConfigError("the study's pre-LN encoder is an extension, not mapped")
    lays = [{**{k: getattr(m, k).detach()[0] for k in ("wq", "wk", "wv", "bv", "w1", "b1", "w2", "b2")},
             "bq": None, "bk": None, "wo": None, "bo": None, "g1": None, "g2": None} for m in enc.blocks]
    return Spec("attnlab.signal.Encoder", "Encoder (slot 0)", True, a.d, a.H, a.L, a.ff, a.t_init, enc.vocab,
                a.activation, "post", alpha_sa=float(enc.alpha_sa[0]), alpha_mlp=a.alpha_mlp, alpha_in_wo=False,
                norm=a.norm, layers=lays)


def read(obj, T_init: int = 512) -> Spec:
    """Any supported model object → :class:`Spec` (a ConfigError for anything else)."""
    from attnlab.signal.model import Encoder

    if isinstance(obj, Spec):
        return obj
    if isinstance(obj, Encoder):
        return from_attnlab(obj)
    if isinstance(obj, nn.TransformerEncoder | nn.TransformerEncoderLayer):
        return from_torch(obj, T_init)
    if hasattr(obj, "model_type") or (isinstance(obj, nn.Module) and hasattr(obj, "config")):
        return from_hf(obj)
    raise ConfigError(f"cannot map a {type(obj).__name__}: give a transformers model or config, an "
                      "nn.TransformerEncoder, or the study's Encoder")


def load(path: str) -> Spec:
    """A config or checkpoint on disk (``config.json`` or a ``save_pretrained`` folder; nothing is downloaded)."""
    import os
    from pathlib import Path

    p = Path(path)
    folder = p.parent if p.is_file() else p
    if not (folder / "config.json").is_file() or (p.is_file() and p.name != "config.json"):
        raise ConfigError(f"{path}: no config.json there (give a save_pretrained folder or its config.json)")
    try:
        import transformers
    except ImportError:
        raise ConfigError("reading a checkpoint needs transformers: pip install -e '.[hf]' (or use --arch with "
                          "sizes)") from None
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    weights = any((folder / n).exists() for n in ("model.safetensors", "pytorch_model.bin",
                                                  "model.safetensors.index.json", "pytorch_model.bin.index.json"))
    try:
        cfg = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True)
        if not weights:
            return _no_weights(cfg, folder)
        model = transformers.AutoModel.from_pretrained(str(folder), local_files_only=True,
                                                       attn_implementation="eager")
    except ConfigError:
        raise
    except Exception as exc:
        raise ConfigError(f"{path}: cannot be read by transformers ({type(exc).__name__}: "
                          f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    spec = from_hf(model)
    spec.source = f"{folder} ({type(model).__name__}, weights read)"
    return spec


def _no_weights(cfg, folder) -> Spec:
    spec = from_hf(cfg)
    spec.source = f"{folder}/config.json (no weights: {spec.source.split('(', 1)[1]}"
    if not spec.covered:  # measured only: build the model from its config (its own initialisation)
        import transformers

        spec.model = transformers.AutoModel.from_config(cfg, attn_implementation="eager")
    return spec


@contextlib.contextmanager
def one_thread():
    """Run the theory and the reading of the weights on one torch thread. Their work is element-wise float64
    arithmetic on ~1e4-1e7 values, a few ms an operation: a second thread gains little, and where the cores are shared
    each parallel operation waits for the descheduled thread (measured on 2 busy cores: the theory of a 48-layer map
    took 74 s at 2 threads, 4.5 s at one). One thread also makes those float64 sums independent of the thread count
    (the measurement's float32 products keep every thread)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)


def rms(t: torch.Tensor | None) -> float:
    return 0.0 if t is None else float(t.to(torch.float64, copy=True).pow_(2).mean().sqrt())


def layer_params(w: dict[str, Any], d: int, T_init: int, H: int) -> dict[str, float]:
    """One layer's theory parameters from its weights (Sec. 2, App. B.1): β_score = σ_q σ_k d/√(log T_init) (the
    per-head score β of Eq. (11); App. B.1's β = β_score/H), σ_v² = (σ_V² d)(σ_O² d) (no W_O: σ_V² d), σ_w² = σ_1² d,
    σ_w2_out = σ_2² d_ff, σ_b² = the mean square of the value and MLP biases, and the LN gains."""
    with one_thread():
        return _layer_params(w, d, T_init, H)


def _layer_params(w: dict[str, Any], d: int, T_init: int, H: int) -> dict[str, float]:
    ff = w["w1"].shape[0]
    sq, sk = rms(w["wq"]), rms(w["wk"])
    bq = sq * sk * d / math.sqrt(math.log(T_init))
    sv2 = rms(w["wv"]) ** 2 * d * (1.0 if w["wo"] is None else rms(w["wo"]) ** 2 * d)
    biases = [b.double().flatten() for b in (w["bv"], w["b1"]) if b is not None]
    sb2 = float(torch.cat(biases).pow(2).mean()) if biases else 0.0
    return {"beta": bq, "beta_paper": bq / H, "sigma_v2": sv2, "sigma_w2": rms(w["w1"]) ** 2 * d,
            "sigma_w2_out": rms(w["w2"]) ** 2 * ff, "sigma_b2": sb2, "qk_std": math.sqrt(sq * sk),
            "qk_bias_rms": max(rms(w["bq"]), rms(w["bk"])), "ln_gain_rms": rms(w["g1"]) if w["g1"] is not None else 1.0}
