"""Text for the study: a bundled generator of TinyStories-like stories (offline, deterministic), a TinyStories
loader for local files, a WordPiece tokenizer trained locally (HF ``tokenizers``, extra ``hf``), and packing
of tokenised stories into fixed-length windows; ``tokens(config, T, ctx)`` gives an experiment its windows
(the repeat task of ``data`` or a text corpus).

The paper trains on TinyStories (Eldan & Li 2023) with a 2000-token WordPiece vocabulary. Nothing here ever
downloads: ``load_tinystories`` reads the official ``TinyStories-*.txt`` (stories separated by
``<|endoftext|>``), JSON / JSONL with a ``text`` field, parquet files (pyarrow), or a ``datasets`` folder saved
with ``save_to_disk`` (only if ``datasets`` is installed).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch

from attnlab.core.rng import generator
from attnlab.core.runs import RunContext
from attnlab.signal.data.sequences import N_SPECIAL, SEP, repeat_task

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
assert len(SPECIAL_TOKENS) == N_SPECIAL

# -- the story generator ----------------------------------------------------------------------------------

NAMES = ("Lily", "Tom", "Mia", "Ben", "Sue", "Max", "Anna", "Tim", "Lucy", "Sam", "Emma", "Jack", "Zoe", "Leo",
         "Ella", "Finn", "Rosa", "Kai", "Nora", "Ollie")
ANIMALS = ("cat", "dog", "bird", "bunny", "frog", "duck", "bear", "fox", "mouse", "puppy")
OBJECTS = ("ball", "kite", "box", "hat", "cake", "book", "car", "doll", "drum", "boat", "cup", "shoe", "flower",
           "stick", "toy")
PLACES = ("park", "garden", "house", "forest", "beach", "school", "pond", "hill", "farm", "shop")
COLOURS = ("red", "blue", "green", "yellow", "big", "little", "shiny", "soft")
FEELINGS = ("happy", "sad", "scared", "excited", "tired", "proud", "angry", "surprised")
VERBS = ("found", "saw", "lost", "wanted", "took", "shared", "hid", "carried", "dropped", "fixed")
FRIENDS = ("mom", "dad", "friend", "sister", "brother", "teacher", "grandma")


def _story(rng: random.Random) -> str:
    name, animal, obj, place = rng.choice(NAMES), rng.choice(ANIMALS), rng.choice(OBJECTS), rng.choice(PLACES)
    colour, friend = rng.choice(COLOURS), rng.choice(FRIENDS)
    opening = rng.choice((
        f"Once upon a time, there was a {rng.choice(COLOURS)} {animal} named {name}.",
        f"One day, {name} the {animal} went to the {place}.",
        f"{name} was a little {animal} who lived near the {place}.",
    ))
    events = [
        f"{name} {rng.choice(VERBS)} a {colour} {obj} in the {place}.",
        f"{name} felt {rng.choice(FEELINGS)} because of the {obj}.",
        f"The {obj} was very {colour}, and {name} liked it a lot.",
        f"{name} asked the {friend}, \"Can we play with the {obj}?\"",
        f"The {friend} said, \"Yes, {name}, but be careful with the {obj}.\"",
        f"Then a {rng.choice(ANIMALS)} came and {rng.choice(VERBS)} the {obj}.",
        f"{name} ran to the {rng.choice(PLACES)} to look for the {obj}.",
        f"{name} and the {friend} {rng.choice(VERBS)} the {obj} together.",
    ]
    body = rng.sample(events, rng.randint(3, 6))
    ending = rng.choice((
        f"In the end, {name} was {rng.choice(FEELINGS)} and kept the {obj}.",
        f"{name} learned to share the {obj} with the {friend}.",
        f"From that day on, {name} always took good care of the {obj}.",
    ))
    return " ".join([opening, *body, ending])


def generate_stories(n: int, seed: int = 0) -> list[str]:
    """``n`` short stories from a probabilistic grammar (names, animals, objects, places, colours, feelings).
    A story's name and object recur, so filling a masked one needs attention to the rest of the story."""
    rng = random.Random(seed)
    return [_story(rng) for _ in range(n)]


# -- TinyStories from local files -------------------------------------------------------------------------


def load_tinystories(path: str | Path | None, limit: int | None = None) -> list[str]:
    """Stories from a local TinyStories copy: ``*.txt`` (``<|endoftext|>``-separated), ``*.json``/``*.jsonl``
    (``text`` field), ``*.parquet``, or a ``datasets.save_to_disk`` folder. Never downloads."""
    if path is None or str(path) == "":
        raise ValueError("load_tinystories needs a local path (TinyStories-train.txt, a .jsonl/.parquet file or a "
                         "datasets folder); attnlab never downloads data — use corpus='stories' to train offline")
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"TinyStories path {str(p)!r} does not exist")
    if p.is_dir():
        files = sorted([*p.glob("*.txt"), *p.glob("*.jsonl"), *p.glob("*.json"), *p.glob("*.parquet")])
        if (p / "dataset_info.json").exists() or (p / "state.json").exists():
            return _take(_load_arrow_dir(p), limit)
        if not files:
            raise ValueError(f"{str(p)!r} holds no .txt/.json/.jsonl/.parquet files and is not a datasets folder")
        out: list[str] = []
        for f in files:
            out += load_tinystories(f, None if limit is None else limit - len(out))
            if limit is not None and len(out) >= limit:
                break
        return out[:limit] if limit is not None else out
    suffix = p.suffix.lower()
    if suffix == ".txt":
        texts = p.read_text(encoding="utf-8").split("<|endoftext|>")
    elif suffix == ".jsonl":
        texts = [json.loads(line)["text"] for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    elif suffix == ".json":
        data = json.loads(p.read_text(encoding="utf-8"))
        texts = [r["text"] if isinstance(r, dict) else str(r) for r in (data if isinstance(data, list) else [data])]
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        texts = pq.read_table(p, columns=["text"]).column("text").to_pylist()
    else:
        raise ValueError(f"unknown TinyStories file type {suffix!r}; allowed: .txt, .json, .jsonl, .parquet")
    return _take([t.strip() for t in texts if t and t.strip()], limit)


def _load_arrow_dir(p: Path) -> list[str]:
    try:
        import datasets
    except ImportError:
        raise ImportError(f"{str(p)!r} is a HuggingFace datasets folder; reading it needs `pip install datasets` "
                          "(or export the stories as .txt/.jsonl/.parquet)") from None
    ds = datasets.load_from_disk(str(p))
    if isinstance(ds, datasets.DatasetDict):
        ds = ds["train"] if "train" in ds else next(iter(ds.values()))
    return [t for t in ds["text"] if t and t.strip()]


def _take(texts: list[str], limit: int | None) -> list[str]:
    return texts if limit is None else texts[:limit]


# -- tokenizer ---------------------------------------------------------------------------------------------


class WordPiece:
    """A WordPiece tokenizer trained locally on the given texts (lower-cased BERT pre-tokenisation), with the
    study's special ids [PAD]=0, [UNK]=1, [CLS]=2, [SEP]=3, [MASK]=4."""

    def __init__(self, texts: Iterable[str], vocab_size: int = 2000, train_on: int | None = 5000) -> None:
        try:
            from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
        except ImportError:
            raise ImportError("the WordPiece tokenizer needs HuggingFace tokenizers: pip install -e '.[hf]'") from None
        tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=list(SPECIAL_TOKENS),
                                            show_progress=False)
        texts = list(texts) if train_on is None else list(texts)[:train_on]
        tok.train_from_iterator(texts, trainer)
        self.tok = _fixed_ids(tok, texts)
        self._cache: dict[str, list[int]] = {}
        for i, s in enumerate(SPECIAL_TOKENS):
            assert tok.token_to_id(s) == i, (s, tok.token_to_id(s))

    @property
    def vocab_size(self) -> int:
        return self.tok.get_vocab_size()

    def encode(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids per text. Words are split as BERT pre-tokenisation does (whitespace, then punctuation) and
        each distinct word is WordPiece-encoded once: the same ids as ``tokenizers``' own batch encoding on
        ASCII text, at a fraction of its single-thread cost."""
        out = []
        for text in texts:
            ids: list[int] = []
            for word in _WORDS.findall(text.lower()):
                if word not in self._cache:
                    self._cache[word] = self.tok.encode(word, add_special_tokens=False).ids
                ids += self._cache[word]
            out.append(ids)
        return out

    def encode_exact(self, texts: Sequence[str]) -> list[list[int]]:
        """``tokenizers``' own encoding (reference for :meth:`encode`)."""
        return [e.ids for e in self.tok.encode_batch(list(texts), add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> list[str]:
        return [self.tok.id_to_token(int(i)) for i in ids]


_WORDS = re.compile(r"\w+|[^\w\s]")


def _fixed_ids(tok, texts: Sequence[str]):
    """``tok`` with its ids in a fixed order: the special tokens, then the tokens that encode the training texts'
    words, then the others, each sorted. ``tokenizers``' trainer numbers the subword tokens it creates in hash-map
    order, which changes from one process to the next (huggingface/tokenizers issue 1794), so the same corpus gave
    another id → embedding assignment, and other values, in every run. On the bundled stories every word ends as one
    token, so the tokens that encode the corpus, and now their ids, are the same in every process; on a corpus that
    fills the vocabulary (TinyStories at 2000) the trainer's merges on tied counts can still differ."""
    from tokenizers import Tokenizer, models

    vocab = tok.get_vocab()
    words = {w for text in texts for w in _WORDS.findall(text.lower())}
    used = {t for w in words for t in tok.encode(w, add_special_tokens=False).tokens} - set(SPECIAL_TOKENS)
    order = [*SPECIAL_TOKENS, *sorted(used), *sorted(set(vocab) - used - set(SPECIAL_TOKENS))]
    fixed = Tokenizer(models.WordPiece(vocab={t: i for i, t in enumerate(order)}, unk_token="[UNK]"))
    fixed.normalizer, fixed.pre_tokenizer = tok.normalizer, tok.pre_tokenizer
    return fixed


def pack(encoded: Sequence[Sequence[int]], T: int) -> torch.Tensor:
    """Concatenate tokenised stories with [SEP] between them and cut the stream into (N, T) windows."""
    stream = [i for ids in encoded for i in (*ids, SEP)]
    n = len(stream) // T
    if n == 0:
        raise ValueError(f"the corpus has {len(stream)} tokens, fewer than one window of T = {T}")
    return torch.tensor(stream[: n * T], dtype=torch.long).reshape(n, T)


def corpus_windows(source: str = "stories", T: int = 64, n_stories: int = 20000, vocab_size: int = 2000,
                   path: str | None = None, seed: int = 0) -> tuple[torch.Tensor, WordPiece]:
    """(N, T) token windows and the tokenizer: ``stories`` (bundled generator) or ``tinystories`` (local path)."""
    if source == "stories":
        texts = generate_stories(n_stories, seed)
    elif source == "tinystories":
        texts = load_tinystories(path, n_stories)
    else:
        raise ValueError(f"corpus {source!r} is not allowed; allowed: stories, tinystories")
    tok = WordPiece(texts, vocab_size)
    return pack(tok.encode(texts), T), tok


def tokens(config, T: int, ctx: RunContext, n: int | None = None) -> tuple[torch.Tensor, int]:
    """(N, T) token windows and the vocabulary size of ``config.corpus``: the repeat task (``n`` sequences from
    the ``corpus`` seed), the bundled stories or local TinyStories (WordPiece trained on them). Built from
    fixed seeds, not from a checkpointed stream, so a resumed run sees the same corpus."""
    if config.corpus == "repeat":
        vocab = getattr(config, "repeat_vocab", 64)
        gen = generator(ctx.seed("corpus"))
        return repeat_task(n or getattr(config, "n_train", 4096), T, vocab, gen), vocab
    windows, tok = corpus_windows(config.corpus, T, config.n_stories, config.vocab_size, config.corpus_path,
                                  seed=ctx.seed("corpus") % 2**31)
    return windows, tok.vocab_size
