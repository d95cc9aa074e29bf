"""The measured side of ``attnlab map``: per-layer token cosine ρ_ℓ and attention entropy S_ℓ/log T on inputs.

Inputs are ``B`` sequences of ``T`` tokens: uniform random token ids, a user's text file or the bundled stories
(``signal.data.corpus``), through the checkpoint's tokenizer if the folder has one, else words hashed into the
vocabulary. ρ_ℓ is the mean pairwise cosine of the
tokens of a sequence (as ``hf.propagate``), averaged over sequences, with its standard error; S_ℓ is the mean row
entropy of the attention matrices of layer ℓ (all heads) divided by log T (B.18).

Three ways to run the model: a loaded ``transformers`` model through its own forward (``output_hidden_states``,
``output_attentions`` with eager attention); otherwise the post-LN block of Eq. (5) with an output projection, on the
weights the map read (:func:`post_ln_block`, identical to HF's BERT layer and to ``nn.TransformerEncoderLayer``, see
tests), layer by layer — a family at 48 × 1024 is never held in memory at once.

The projections of that block go through oneDNN where torch has it (:func:`linear`): on CPUs where torch's default
BLAS (MKL) takes a narrower vector path (AMD EPYC here) it is twice as fast, and it is the same product up to the
rounding order of float32 sums (≈ 1e-6 relative).
"""

from __future__ import annotations

import functools
import hashlib
import math
from pathlib import Path
from typing import Any

import torch
from torch.nn import functional as F

from attnlab.core.config import ConfigError
from attnlab.core.rng import generator
from attnlab.signal.arch import phi
from attnlab.signal.mapping.read import Spec
from attnlab.signal.model import layer_norm

STORIES = "stories"  # ``--text stories``: the bundled stories instead of a file


def is_stories(text) -> bool:
    """``--text stories`` asks for the bundled stories (unless a file of that name exists)."""
    return text is not None and str(text) == STORIES and not Path(text).is_file()


def token_ids(spec: Spec, B: int, T: int, text: str | Path | None = None, seed: int = 0) -> torch.Tensor:
    """(B, T) token ids: random (ids ≥ 5, clear of the special tokens), from a text file, or from the bundled
    stories (``text = "stories"``)."""
    vocab = max(spec.vocab, 8)
    if text is None:
        return torch.randint(min(5, vocab - 1), vocab, (B, T), generator=generator(seed))
    if is_stories(text):  # the signal study's bundled story generator (offline, deterministic, ~60 words each)
        from attnlab.signal.data.corpus import generate_stories

        words = " ".join(generate_stories(B * T // 30 + 10, seed))
    else:
        path = Path(text)
        if not path.is_file():
            raise ConfigError(f"--text {text}: no such file (or '{STORIES}': the bundled stories)")
        words = path.read_text(errors="replace")
    ids = _tokenize(spec, words)
    if len(ids) < T:
        raise ConfigError(f"--text {text}: {len(ids)} tokens, fewer than one sequence of T = {T}")
    n = min(B, len(ids) // T)
    return torch.tensor(ids[: n * T]).reshape(n, T)


def _tokenize(spec: Spec, text: str) -> list[int]:
    folder = getattr(spec.config, "_name_or_path", "") if spec.config is not None else ""
    if folder and Path(folder).is_dir():
        try:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(folder, local_files_only=True)(text)["input_ids"]
        except Exception:
            pass
    vocab = max(spec.vocab, 8)
    return [5 + int(hashlib.md5(w.encode()).hexdigest()[:8], 16) % (vocab - 5) for w in text.split()]


def cosine(h: torch.Tensor) -> tuple[float, float]:
    """Mean pairwise cosine of the T tokens of each sequence of h (B, T, d): (mean, standard error over B)."""
    xn = h.double() / h.double().norm(dim=-1, keepdim=True).clamp(min=1e-30)
    T = h.shape[1]
    per = (xn.sum(1).pow(2).sum(-1) - T) / (T * (T - 1))
    return float(per.mean()), float(per.std() / math.sqrt(len(per))) if len(per) > 1 else 0.0


def entropy(A: torch.Tensor) -> float:
    """Mean row entropy of attention A (…, T, T) over log T."""
    T = A.shape[-1]
    return float(-(A.double() * A.double().clamp(min=1e-300).log()).sum(-1).mean() / math.log(T))


def _pointwise(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    return torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")  # oneDNN on dense tensors (inductor's op)


def _converted(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    y = torch._C._nn.mkldnn_linear(x.reshape(-1, x.shape[-1]).contiguous().to_mkldnn(), w.contiguous().to_mkldnn(),
                                   None if b is None else b.contiguous().to_mkldnn())  # as torch.utils.mkldnn
    return y.to_dense().reshape(*x.shape[:-1], w.shape[0])


@functools.cache
def onednn():
    """The oneDNN linear this torch has, checked once against ``F.linear`` on a small product (None: none works)."""
    if not torch.backends.mkldnn.is_available():
        return None
    gen = generator(0)
    x, w, b = torch.randn(2, 8, 16, generator=gen), torch.randn(4, 16, generator=gen), torch.randn(4, generator=gen)
    for f in (_pointwise, _converted):
        try:
            with torch.no_grad():
                if all(torch.allclose(f(x, w, c), F.linear(x, w, c), rtol=1e-5, atol=1e-5) for c in (b, None)):
                    return f
        except Exception:
            continue
    return None


def linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None = None, threads: int | None = None
           ) -> torch.Tensor:
    """``F.linear(x, w, b)`` for float32 CPU tensors without gradients by oneDNN's kernel (module doc), else
    ``F.linear``; on ``threads`` torch threads if given (the caller's element-wise work may run on one)."""
    if threads is not None and threads != torch.get_num_threads():
        n = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return linear(x, w, b)
        finally:
            torch.set_num_threads(n)
    if not (x.dtype == w.dtype == torch.float32 and x.device.type == w.device.type == "cpu"
            and (b is None or b.dtype == torch.float32) and not torch.is_grad_enabled()):
        return F.linear(x, w, b)
    f = onednn()
    return F.linear(x, w, b) if f is None else f(x, w, b)


def _ln(x: torch.Tensor, g: torch.Tensor | None, norm: str) -> torch.Tensor:
    y = layer_norm(x, norm)
    return y if g is None else y * g


def post_ln_block(x: torch.Tensor, w: dict[str, Any], H: int, activation: str, alpha_sa: float = 1.0,
                  alpha_mlp: float = 1.0, norm: str = "layernorm", threads: int | None = None
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """One post-LN block (Eq. (5)) with output projection, as HF's BERT layer: h = LN(α_SA x + W_O SA(x) + b_O),
    x' = LN(α_MLP h + W_2 φ(W_1 h + b_1) + b_2); x (B, T, d) → (x', attention (B, H, T, T)). ``threads``: the
    projections' torch threads (:func:`linear`)."""
    B, T, d = x.shape
    dk = d // H

    def heads(wt, b):
        return linear(x, wt, b, threads).reshape(B, T, H, dk).transpose(1, 2)

    q, k, v = heads(w["wq"], w["bq"]), heads(w["wk"], w["bk"]), heads(w["wv"], w["bv"])
    A = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dk), dim=-1)
    sa = (A @ v).transpose(1, 2).reshape(B, T, d)
    if w["wo"] is not None:
        sa = linear(sa, w["wo"], w["bo"], threads)
    h = _ln(alpha_sa * x + sa, w["g1"], norm)
    out = linear(phi(activation, linear(h, w["w1"], w["b1"], threads)), w["w2"], w["b2"], threads)
    return _ln(alpha_mlp * h + out, w["g2"], norm), A


def family_embedding(spec: Spec, ids: torch.Tensor, seed: int = 0) -> torch.Tensor:
    """The family's embedding output at initialisation: LN(word + position [+ token type]) with every table
    N(0, std²) (HF ``_init_weights``), the word rows drawn for the distinct ids used."""
    gen = generator(seed + 7919)
    std, d = spec.init_std or 0.02, spec.d
    uniq, inv = ids.unique(return_inverse=True)
    x = (torch.randn(len(uniq), d, generator=gen) * std)[inv]
    x = x + torch.randn(ids.shape[1], d, generator=gen) * std
    if spec.family != "distilbert":
        x = x + torch.randn(d, generator=gen) * std  # token type 0, shared by every token
    return layer_norm(x, "layernorm")


def gaussian_tokens(B: int, T: int, d: int, seed: int = 0) -> torch.Tensor:
    """Orthogonal-ish unit tokens (ρ_0 ≈ 0) for models without an embedding (nn.TransformerEncoder)."""
    return layer_norm(torch.randn(B, T, d, generator=generator(seed + 7919)), "layernorm")


def _hf_inputs(model, ids: torch.Tensor, seed: int) -> dict[str, torch.Tensor]:
    cfg = model.config
    if getattr(cfg, "image_size", None) and getattr(cfg, "num_channels", None):  # ViT: random pixels
        s = cfg.image_size
        gen = generator(seed)
        return {"pixel_values": torch.randn(ids.shape[0], cfg.num_channels, s, s, generator=gen)}
    return {"input_ids": ids}


def _attention_of(x: torch.Tensor, w: dict[str, Any], H: int) -> torch.Tensor:
    """softmax(q kᵀ/√d_k) of a post-LN layer on its input x (B, T, d): the layer's attention weights."""
    B, T, d = x.shape
    q = F.linear(x, w["wq"], w["bq"]).reshape(B, T, H, d // H).transpose(1, 2)
    k = F.linear(x, w["wk"], w["bk"]).reshape(B, T, H, d // H).transpose(1, 2)
    return torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d // H), dim=-1)


@torch.no_grad()
def measure_hf(model, ids: torch.Tensor, seed: int = 0, layers: list | None = None, H: int = 1) -> dict[str, list]:
    """ρ_ℓ (ℓ = 0..L, 0 = embedding output) and S_ℓ/log T (ℓ = 1..L) through the model's own forward; for a
    post-LN model whose weights were read (``layers``) the attention of layer ℓ is recomputed from its input
    (hidden state ℓ − 1), else the model's own attention weights (eager attention) are used where it returns them."""
    model.eval()
    kw = _hf_inputs(model, ids, seed)
    atts = None
    if layers is None:
        try:
            out = model(**kw, output_hidden_states=True, output_attentions=True)
            atts = out.attentions
        except Exception:
            atts = None
    if atts is None:
        out = model(**kw, output_hidden_states=True)
    hs = out.hidden_states
    if layers is not None:
        atts = [_attention_of(hs[i], w, H) for i, w in enumerate(layers)]
    rho = [cosine(h) for h in hs]
    ent = [entropy(a) for a in atts] if atts else [math.nan] * (len(rho) - 1)
    return {"rho": [r[0] for r in rho], "rho_se": [r[1] for r in rho], "entropy": [math.nan, *ent],
            "q0": float(out.hidden_states[0].double().pow(2).mean())}


@torch.no_grad()
def measure_stream(spec: Spec, x: torch.Tensor, layers) -> tuple[dict[str, list[float]], list[dict[str, Any]]]:
    """Run the post-LN blocks of ``layers`` (an iterable of weight dicts) on x (B, T, d), one layer at a time;
    returns the measured curves and the weight dicts' theory parameters (read as each layer is drawn). The
    projections use every torch thread, the element-wise work one (``read.one_thread``: a few ms an operation,
    and on shared cores each parallel one waits for a descheduled thread)."""
    from attnlab.signal.mapping.read import layer_params, one_thread

    alpha = 1.0 if spec.alpha_in_wo else spec.alpha_sa
    threads = torch.get_num_threads()
    with one_thread():
        rho, se = cosine(x)
        out = {"rho": [rho], "rho_se": [se], "entropy": [math.nan], "q0": float(x.double().pow(2).mean())}
        params = []
        for _, w in zip(range(spec.L), layers, strict=False):
            params.append(layer_params(w, spec.d, spec.T_init, spec.H))
            x, A = post_ln_block(x, w, spec.H, spec.activation, alpha, spec.alpha_mlp, spec.norm, threads)
            r, s = cosine(x)
            out["rho"].append(r)
            out["rho_se"].append(s)
            out["entropy"].append(entropy(A))
    return out, params
