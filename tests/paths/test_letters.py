"""The rendered-letters OOD set (a class and domain shift standing in for the paper's FashionMNIST / MNIST, which
no installed package ships) and its use at paper scale only: the quick one-shot configs keep their run ids."""

import string
from types import SimpleNamespace

import pytest
import torch

from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.paths.configs import OneShotConfig
from attnlab.paths.data import images as data
from attnlab.paths.experiments import images as pipeline

ONESHOT = ("fig3", "fig3ef", "fig6", "fig7")
# run ids of the quick configs before letters existed (the store's runs of the previous commit carry them): a
# deliberate change of a quick value updates them, a paper-scale change must not
QUICK_IDS = {"fig3": "1d44ec5ec9312051", "fig3ef": "47c6c3b39790ba84", "fig6": "737ef5b544855a85",
             "fig7": "2baa6c1b82d457d9"}


def _letters(seed: int, **kw) -> data.ImageSet:
    return data.rendered_letters(**{"per_class": 3, "size": 16, "channels": 2, **kw},
                                 generator=torch.Generator().manual_seed(seed))


def test_letters_classes_shape_and_ink():
    assert len(data.LETTERS) == len(set(data.LETTERS)) == 42 and set(data.LETTERS) <= set(string.ascii_letters)
    s = _letters(0)
    assert s.images.shape == (42 * 3, 2, 16, 16) and s.name == "letters"
    assert s.labels.tolist() == [k for k in range(42) for _ in range(3)]
    assert torch.equal(s.images[:, 0], s.images[:, 1])  # grey replicated to the channels
    assert float(s.images.min()) >= 0 and float(s.images.max()) <= 1
    ink = s.images[:, 0].flatten(1)
    assert bool((ink.amax(1) > 0.5).all())  # every image shows its letter, white on black as the digit sets
    assert 0.03 < float(ink.mean()) < 0.4
    sub = data.rendered_letters(2, 8, 1, letters="Ab", generator=torch.Generator().manual_seed(0))
    assert sub.images.shape == (4, 1, 8, 8) and sub.classes.tolist() == [0, 1]
    with pytest.raises(ValueError, match="none repeated"):
        data.rendered_letters(2, 8, 1, letters="AA")


def test_letters_deterministic_per_seed_and_differ_across_seeds():
    a, b, c = _letters(0), _letters(0), _letters(1)
    assert torch.equal(a.images, b.images) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.images, c.images)
    assert float((a.images - c.images).abs().mean()) > 0.02  # other faces, sizes, angles, not a rounding change


def test_letters_share_no_class_with_the_in_distribution_digits():
    """The OOD letters contain no digit, nor a letter drawn like the training digits 0 and 1 (O, o, I, l)."""
    assert not set(data.LETTERS) & set(string.digits + "OoIl")
    cfg = resolve(get("paths.fig3").config, "paper")
    assert cfg.dataset == "mnist_5k" and cfg.ood[0] == "letters"  # ID: the ten digits' classes only
    streams = []
    ctx = SimpleNamespace(generator=lambda name, dev: streams.append(name) or torch.Generator().manual_seed(7))
    small = OneShotConfig(dataset="glyphs", ood=("letters",), image_size=8, patch=4, channels=1)
    s = pipeline.load_images("letters", small, ctx, ood=True)
    assert streams == ["ood_letters"] and s.images.shape == (42 * 40, 1, 8, 8)
    assert torch.equal(s.images, data.rendered_letters(40, 8, 1, generator=torch.Generator().manual_seed(7)).images)


@pytest.mark.parametrize("exp", ONESHOT)
def test_letters_only_at_paper_scale_and_quick_run_ids_unchanged(exp):
    e = get(f"paths.{exp}")
    quick, paper = resolve(e.config, "quick"), resolve(e.config, "paper")
    assert quick.hash(e.key) == QUICK_IDS[exp]
    assert quick.ood == ("digits",) and e.config().ood == ("digits",)  # quick and the default: unchanged
    assert paper.ood == ("letters", "digits")  # the claims read ood[0]: letters
