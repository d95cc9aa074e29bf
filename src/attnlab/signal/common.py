"""Plumbing shared by the experiment modules: the corpus of a config and CPU generators."""

from __future__ import annotations

import torch

from attnlab.core.runs import RunContext
from attnlab.signal import corpus as corpus_mod
from attnlab.signal import data


def cpu_rng(ctx: RunContext, name: str) -> torch.Generator:
    """A CPU generator of the named stream (the same numbers as ``ctx.rng(name)`` on CPU): for the theory's Monte
    Carlo and index draws, which run on the CPU whatever the run's device."""
    return torch.Generator().manual_seed(ctx.seed(name))


def corpus_tokens(config, T: int, ctx: RunContext, n: int | None = None) -> tuple[torch.Tensor, int]:
    """(N, T) token windows and the vocabulary size of ``config.corpus``: the repeat task (``n`` sequences from
    the ``corpus`` seed), the bundled stories or local TinyStories (WordPiece trained on them). Built from
    fixed seeds, not from a checkpointed stream, so a resumed run sees the same corpus."""
    if config.corpus == "repeat":
        vocab = getattr(config, "repeat_vocab", 64)
        gen = torch.Generator().manual_seed(ctx.seed("corpus"))
        return data.repeat_task(n or getattr(config, "n_train", 4096), T, vocab, gen), vocab
    windows, tok = corpus_mod.corpus_windows(config.corpus, T, config.n_stories, config.vocab_size,
                                             config.corpus_path, seed=ctx.seed("corpus") % 2**31)
    return windows, tok.vocab_size
