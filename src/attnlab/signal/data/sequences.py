"""Inputs of the study: token sequences with a prescribed cosine (Fig. 3, App. A.2), the synthetic repeat-MLM
task (this project's stand-in for TinyStories at CPU scale, docs/studies/signal.md) and BERT masking (mask
probability 0.15, 80/10/10; HF ``DataCollatorForLanguageModeling``).

Text corpora (the bundled story generator, TinyStories from local files) and the tokenizer live in
``corpus.py``; both end as (N, T) id windows that ``mask_tokens`` turns into MLM batches.
"""

from __future__ import annotations

import math

import torch

from attnlab.signal.model import layer_norm

#: Special token ids shared by every vocabulary of the study (the tokenizer reserves the same five).
PAD, UNK, CLS, SEP, MASK = 0, 1, 2, 3, 4
N_SPECIAL = 5


def prescribed_cosine(rho, P: int, B: int, T: int, d: int, gen: torch.Generator | None = None, device=None,
                      norm: str = "rms", dtype=torch.float32) -> torch.Tensor:
    """Sequences x_a = LN(√ρ c + √(1−ρ) ξ_a), c, ξ_a ~ N(0, I_d): pairwise cosine ρ + O(1/√d) (Fig. 3 right).

    ``rho`` is a scalar or one value per slot (P,); the result is (P, B, T, d)."""
    r = torch.as_tensor(rho, dtype=dtype, device=device).clamp(0.0, 1.0)
    r = r.reshape(-1, 1, 1, 1) if r.ndim else r
    c = torch.randn((P, B, 1, d), generator=gen, device=device, dtype=dtype)
    xi = torch.randn((P, B, T, d), generator=gen, device=device, dtype=dtype)
    return layer_norm(torch.sqrt(r) * c + torch.sqrt(1 - r) * xi, norm)


def mean_cosine(x: torch.Tensor) -> torch.Tensor:
    """Mean pairwise cosine over the T tokens of each sequence, x (…, T, d) → (…): (‖Σ x̂_a‖² − T)/(T(T−1))."""
    T = x.shape[-2]
    xn = x / x.norm(dim=-1, keepdim=True).clamp(min=1e-30)
    return (xn.sum(-2).pow(2).sum(-1) - T) / (T * (T - 1))


def repeat_task(n: int, T: int = 64, vocab: int = 64, gen: torch.Generator | None = None, device=None) -> torch.Tensor:
    """The repeat-MLM task (Figs. 4, 1f at CPU scale): T/2 uniform content tokens followed by the same T/2 again,
    so a masked token is recoverable only by attending to its partner T/2 positions away. ids (n, T)."""
    if T % 2 or vocab <= N_SPECIAL + 1:
        raise ValueError(f"repeat task needs an even T (got {T}) and vocab > {N_SPECIAL + 1} (got {vocab})")
    half = torch.randint(N_SPECIAL, vocab, (n, T // 2), generator=gen, device=device)
    return torch.cat([half, half], dim=1)


def mask_tokens(ids: torch.Tensor, vocab: int, gen: torch.Generator | None = None, p: float = 0.15,
                special: int = N_SPECIAL) -> tuple[torch.Tensor, torch.Tensor]:
    """BERT masking: each non-special token is a target with probability p; of the targets 80% become [MASK],
    10% a random token, 10% stay. Returns (inputs, labels) with labels −100 off the targets."""
    dev = ids.device
    u = torch.rand(ids.shape, generator=gen, device=dev)
    target = (u < p) & (ids >= special)
    labels = torch.where(target, ids, torch.full_like(ids, -100))
    v = torch.rand(ids.shape, generator=gen, device=dev)
    rand_tok = torch.randint(special, vocab, ids.shape, generator=gen, device=dev)
    inputs = torch.where(target & (v < 0.8), torch.full_like(ids, MASK), ids)
    inputs = torch.where(target & (v >= 0.8) & (v < 0.9), rand_tok, inputs)
    return inputs, labels


def uniform_loss(vocab: int, special: int = N_SPECIAL) -> float:
    """Cross-entropy of a uniform guess over the content tokens (log of their number)."""
    return math.log(vocab - special)
