"""One-shot pieces: the real-data readers on tiny files in the standard formats, synthetic glyphs, episodes,
GD training with best-validation checkpointing, head scores and pruning."""

import numpy as np
import pytest
import torch

from attnlab.paths import model
from attnlab.paths.data import episodes, images
from attnlab.paths.theory import scores as pruning
from attnlab.paths.train import gd


@pytest.mark.parametrize("gz", [False, True])
def test_idx_reader_and_mnist_layout(tmp_path, gz, write_idx):
    raw = tmp_path / "FashionMNIST" / "raw"
    raw.mkdir(parents=True)
    imgs = np.random.default_rng(0).integers(0, 256, (7, 28, 28))
    labels = np.arange(7) % 3
    write_idx(raw / "t10k-images-idx3-ubyte", imgs, gz)
    write_idx(raw / "t10k-labels-idx1-ubyte", labels, gz)
    s = images.load_idx_dataset(tmp_path, "fashion_mnist", "t10k", size=28, channels=3)
    assert s.images.shape == (7, 3, 28, 28) and s.labels.tolist() == labels.tolist()
    assert torch.allclose(s.images[:, 0], torch.from_numpy(imgs / 255.0).float())
    small = images.load_idx_dataset(tmp_path, "fashion_mnist", size=16, channels=1)
    assert small.images.shape == (7, 1, 16, 16) and 0 <= float(small.images.min()) <= float(small.images.max()) <= 1
    with pytest.raises(FileNotFoundError, match="t10k-images-idx3-ubyte"):
        images.load_idx_dataset(tmp_path, "mnist")  # no MNIST files there (only FashionMNIST)
    (tmp_path / "bad").write_bytes(b"\x01\x02\x03\x04")
    with pytest.raises(ValueError, match="not an IDX file"):
        images.read_idx(tmp_path / "bad")


def test_omniglot_reader(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, alpha in (("images_background", "Alpha"), ("images_evaluation", "Beta")):
        for c in range(2):
            d = tmp_path / split / alpha / f"character{c + 1:02d}"
            d.mkdir(parents=True)
            for i in range(3):
                Image.fromarray((rng.random((105, 105)) > 0.5).astype(np.uint8) * 255).convert("1").save(
                    d / f"{i}.png")
    s = images.load_omniglot(tmp_path, size=32, channels=3)
    assert s.images.shape == (12, 3, 32, 32) and sorted(set(s.labels.tolist())) == [0, 1, 2, 3]
    tr, va, te = s.split((2, 1, 1))
    assert len(tr.classes) == 2 and len(va.classes) == 1 and len(te.classes) == 1
    with pytest.raises(FileNotFoundError, match="images_background"):
        images.load_omniglot(tmp_path / "nowhere")


@pytest.mark.parametrize(("name", "shape", "counts", "digest"), [
    ("digits", (1797, 8, 8), [178, 182, 177, 183, 181, 182, 181, 179, 174, 180], "0b7e9c3202d7bcd2"),
    ("mnist_5k", (5000, 28, 28), [500] * 10, "1f75c140503b3082"),
])
def test_bundled_real_digits(name, shape, counts, digest):
    raw, labels = images.bundled_arrays(name)
    assert raw.shape == shape and raw.dtype == np.uint8 and int(raw.max()) == 255
    assert np.bincount(labels).tolist() == counts and images.checksum(raw, labels) == digest
    s = images.load_bundled(name, size=16, channels=3)
    assert s.images.shape == (shape[0], 3, 16, 16) and 0 <= float(s.images.min()) <= float(s.images.max()) <= 1
    assert torch.equal(s.images[:, 0], s.images[:, 2]) and torch.equal(s.labels, torch.from_numpy(labels))
    native = images.load_bundled(name, size=shape[1], channels=1)  # no resize: the pixels / 255
    assert torch.allclose(native.images[:, 0], torch.from_numpy(raw / 255.0).float())
    train, val, test = s.split(images.DIGIT_SPLIT)
    assert [c.classes.tolist() for c in (train, val, test)] == [[0, 1, 2, 3, 4], [5, 6], [7, 8, 9]]
    with pytest.raises(ValueError, match="allowed: digits, mnist_5k"):
        images.bundled_arrays("emnist")


def test_rotated_classes_and_standardised_pixels():
    imgs = torch.arange(2 * 1 * 3 * 3, dtype=torch.float32).reshape(2, 1, 3, 3)
    s = images.ImageSet(imgs, torch.tensor([0, 1]), "t")
    r = s.with_rotations()
    assert r.labels.tolist() == [0, 4, 1, 5, 2, 6, 3, 7] and len(r.classes) == 8
    assert torch.equal(r.images[2, 0], torch.rot90(imgs[0, 0], 1)) and torch.equal(r.images[4, 0], imgs[0, 0].flip(
        0).flip(1))  # 90° and 180°
    z = s.standardized()
    assert abs(float(z.images.mean())) < 1e-6 and abs(float(z.images.std()) - 1) < 1e-6


def test_synthetic_glyphs_are_shifted_noisy_templates():
    g = torch.Generator().manual_seed(0)
    s = images.synthetic_glyphs(5, 20, 16, 1, "strokes", flip=0.0, shift=0, generator=g)
    assert torch.equal(s.images[0], s.images[1])  # no noise, no shift: identical instances
    n = images.synthetic_glyphs(5, 20, 16, 2, "blocks", generator=g)
    assert n.images.shape == (100, 2, 16, 16) and set(n.images.unique().tolist()) <= {0.0, 1.0}
    with pytest.raises(ValueError, match="family"):
        images.synthetic_glyphs(5, 2, 16, generator=g, family="zigzag")


def test_episodes_and_tokenizer_errors():
    g = torch.Generator().manual_seed(1)
    s = images.synthetic_glyphs(6, 4, 16, 1, generator=g)
    tok = episodes.Tokenizer.make(16, 8, 1, g)
    X, y = episodes.sample_episodes(s, 64, tok, g)
    assert X.shape == (64, 12, 64) and set(y.tolist()) <= {-1.0, 1.0}
    with pytest.raises(ValueError, match="patch"):
        episodes.Tokenizer.make(16, 5, 1, g)
    with pytest.raises(ValueError, match="tokenizer expects"):
        tok(torch.zeros(2, 3, 16, 16), torch.zeros(2, 3, 16, 16), torch.zeros(2, 3, 16, 16), torch.ones(2).bool())
    with pytest.raises(ValueError, match="two classes"):
        episodes.sample_episodes(s.subset([0]), 4, tok, g)
    pe = episodes.sinusoidal_pe(5, 6)
    assert torch.allclose(pe[:, 0], torch.sin(torch.arange(5.0)).double()) and torch.allclose(pe[0, 1::2],
                                                                                            torch.ones(3).double())


def test_gd_training_keeps_the_best_validation_model():
    g = torch.Generator().manual_seed(2)
    s = images.synthetic_glyphs(20, 5, 8, 1, generator=g)
    tr, va = s.subset(range(14)), s.subset(range(14, 20))
    tok = episodes.Tokenizer.make(8, 4, 1, g)
    val = episodes.sample_episodes(va, 100, tok, g)
    net = model.AttentionPathNet(tok.width, 8, 4, [2, 2], "mean", generator=g)
    res = gd.train_gd(net, tr, tok, val, steps=30, batch=16, lr=3e-3, eval_every=5, generator=g)
    assert len(res.history["val_acc"]) == 6 and res.best_val == max(res.history["val_acc"])
    assert gd.accuracy(net, *val) == res.best_val  # the returned model is the best-validation one
    drops = gd.single_head_drops(net, {"val": val})
    curve = gd.pruning_curve(net, [(0, 0), (1, 1)], {"val": val}, 2)
    assert len(drops["val"]) == 4 and len(curve["val"]) == 3 and curve["val"][0] == res.best_val
    assert net.head_mask is None  # pruning is undone after the measurements
    assert all(0 <= a <= 1 for a in curve["val"])  # the pruned model (kept heads rescaled) runs


def test_paired_gain_interval():
    from attnlab.paths.claims.oneshot import _paired

    a, b = np.r_[np.ones(60), np.zeros(40)], np.r_[np.ones(50), np.zeros(50)]  # a right on 10 more of 100
    mean, lo, n = _paired(a, b)
    assert n == 100 and np.isclose(mean, 0.1) and np.isclose(lo, 0.1 - 1.96 * np.std(a - b, ddof=1) / 10)
    assert _paired(b, a)[1] < 0 < lo


def test_head_scores_and_order():
    Hs = (2, 3)
    U = np.eye(6)
    U[0, 0] = 5.0  # path (1,1)
    U[0, 4] = U[4, 0] = -2.0  # paths (1,1) and (2,2)
    both = pruning.head_scores(U, Hs, "both")
    either = pruning.head_scores(U, Hs, "either")
    # layer-1 head 1 holds paths 0-2: |5| + 1 + 1 = 7 (both); head 2: 3 (both)
    assert np.allclose(both[0], [7 / 7, 3 / 7]) and np.isclose(max(max(s) for s in both), 1.0)
    # 'either' adds the cross pairs (0,4), (4,0) to both heads of layer 1
    assert np.allclose(either[0] * 11, [11, 7])
    for sc in (both, either):  # normalised (Fig. 3e): in [0, 1], the largest over all layers exactly 1
        assert max(max(s) for s in sc) == 1.0 and min(min(s) for s in sc) >= 0
    order = pruning.pruning_order(both)
    assert len(order) == (2 - 1) + (3 - 1) and (0, 0) not in order
    with pytest.raises(ValueError, match="score_mode"):
        pruning.head_scores(U, Hs, "sum")


def test_block_share_reads_the_h1_blocks():
    from attnlab.paths.experiments.oneshot import block_share

    Hs = (4, 4)
    h1 = pruning.path_heads(Hs)[:, 0]
    blocks = np.equal.outer(h1, h1) * 0.5 + np.eye(16)
    assert block_share(blocks, Hs) == (1.0, 0.2, 1.0)
    flat = np.full((16, 16), 0.3) + np.eye(16)
    share, chance, _ = block_share(flat, Hs)
    assert np.isclose(share, chance) and np.isclose(chance, 48 / 240)
