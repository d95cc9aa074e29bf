"""Inputs: prescribed cosines, the repeat task, BERT masking, the story generator, tokenizer, TinyStories files."""

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from attnlab.signal import data
from attnlab.signal.data import corpus


def test_prescribed_cosine():
    x = data.prescribed_cosine(torch.tensor([0.0, 0.3, 0.8]), 3, 4, 32, 512, torch.Generator().manual_seed(0))
    c = data.mean_cosine(x).mean(1)
    assert torch.allclose(c, torch.tensor([0.0, 0.3, 0.8]), atol=0.03)


def test_repeat_task_and_masking():
    g = torch.Generator().manual_seed(0)
    ids = data.repeat_task(400, 16, 30, g)
    assert torch.equal(ids[:, :8], ids[:, 8:]) and int(ids.min()) >= data.N_SPECIAL
    inp, lab = data.mask_tokens(ids, 30, g)
    target = lab >= 0
    assert 0.12 < float(target.float().mean()) < 0.18
    assert torch.equal(lab[target], ids[target])
    masked = (inp == data.MASK) & target
    assert 0.75 < float(masked.sum() / target.sum()) < 0.85
    assert torch.equal(inp[~target], ids[~target])
    with pytest.raises(ValueError, match="even T"):
        data.repeat_task(2, 7, 30)


def test_stories_are_deterministic_and_recurring():
    a, b = corpus.generate_stories(20, seed=3), corpus.generate_stories(20, seed=3)
    assert a == b and a != corpus.generate_stories(20, seed=4)
    name = a[0].split()[0] if a[0].split()[0] in corpus.NAMES else None
    assert name is None or a[0].count(name) >= 2


def test_wordpiece_fast_encode_matches_tokenizers_and_packs():
    texts = corpus.generate_stories(300, seed=0)
    tok = corpus.WordPiece(texts, vocab_size=500)
    assert tok.encode(texts[:40]) == tok.encode_exact(texts[:40])
    w = corpus.pack(tok.encode(texts), 32)
    assert w.shape[1] == 32 and int(w.max()) < tok.vocab_size
    assert int((w == data.SEP).sum()) > 0
    with pytest.raises(ValueError, match="fewer than one window"):
        corpus.pack([[5, 6]], 32)


def test_load_tinystories_formats(tmp_path):
    stories = ["Once there was a cat.", "Tom had a red ball.", "The end."]
    (tmp_path / "t.txt").write_text("<|endoftext|>".join(stories))
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps({"text": s}) for s in stories))
    pq.write_table(pa.table({"text": stories}), tmp_path / "t.parquet")
    for name in ("t.txt", "t.jsonl", "t.parquet"):
        assert corpus.load_tinystories(tmp_path / name) == stories
    assert corpus.load_tinystories(tmp_path / "t.txt", limit=2) == stories[:2]
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / "a.txt").write_text("<|endoftext|>".join(stories))
    assert corpus.load_tinystories(folder) == stories
    with pytest.raises(ValueError, match="never downloads"):
        corpus.load_tinystories(None)
    with pytest.raises(FileNotFoundError):
        corpus.load_tinystories(tmp_path / "missing.txt")
    windows, tok = corpus.corpus_windows("tinystories", T=4, n_stories=3, vocab_size=100, path=str(tmp_path / "t.txt"))
    assert windows.shape[1] == 4 and tok.vocab_size > data.N_SPECIAL


def test_the_same_stories_give_the_same_token_windows_every_time():
    """tokenizers' WordPiece trainer numbers the subword tokens it creates in hash-map order (a new order for each
    trained tokenizer, huggingface/tokenizers issue 1794); the corpus's ids must not depend on it."""
    import hashlib
    import subprocess
    import sys

    here = [corpus.corpus_windows("stories", T=32, n_stories=300, vocab_size=2000)[0] for _ in range(4)]
    assert all(torch.equal(here[0], w) for w in here[1:])
    code = ("import hashlib; from attnlab.signal.data.corpus import corpus_windows; "
            "print(hashlib.sha1(corpus_windows('stories', T=32, n_stories=300, vocab_size=2000)[0].numpy()"
            ".tobytes()).hexdigest())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert other == hashlib.sha1(here[0].numpy().tobytes()).hexdigest()
