"""Inputs of paper 1's experiments: token sequences with a prescribed cosine, the repeat-MLM task and BERT masking
(``sequences``, re-exported here), and text: the bundled story generator, a TinyStories reader for local files and a
locally trained WordPiece tokenizer (``corpus``).
"""

from attnlab.signal.data import corpus
from attnlab.signal.data.sequences import (
    CLS,
    MASK,
    N_SPECIAL,
    PAD,
    SEP,
    UNK,
    mask_tokens,
    mean_cosine,
    prescribed_cosine,
    repeat_task,
    uniform_loss,
)

__all__ = ["CLS", "MASK", "N_SPECIAL", "PAD", "SEP", "UNK", "corpus", "mask_tokens", "mean_cosine",
           "prescribed_cosine", "repeat_task", "uniform_loss"]
