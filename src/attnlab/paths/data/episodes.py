"""One-shot in-context episodes and their ViT-style tokenisation (Sec. 4.2, App. H).

An episode is three images: two support images of distinct classes carrying the labels "+" and "−" in
random order, and a query image — another instance of one of the two classes — carrying "?". The target is
y = +1 if the query matches the "+" image, else −1. Each image is cut into p patches of ps×ps pixels (tokens
in the order image 1, image 2, query: T = 3p, width N0 = channels·ps²); a fixed random label vector
v+, v− or v? (iid N(0, 1), drawn once per run) is added to every token of its image, and the sinusoidal
positional encoding PE(t, 2i) = sin(t/10000^{2i/N0}), PE(t, 2i+1) = cos(t/10000^{2i/N0}) to every token.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.paths.data.images import ImageSet

Tensor = torch.Tensor


def sinusoidal_pe(T: int, width: int) -> Tensor:
    """Vaswani et al.'s positional encoding (T, width)."""
    t = torch.arange(T, dtype=torch.float64)[:, None]
    i = torch.arange(0, width, 2, dtype=torch.float64)
    ang = t / 10000 ** (i / width)
    pe = torch.zeros(T, width, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(ang)
    pe[:, 1::2] = torch.cos(ang[:, : width // 2])
    return pe


def patches(images: Tensor, ps: int) -> Tensor:
    """(M, C, S, S) → (M, p, C·ps·ps), patches in row-major order, each flattened channel-first."""
    M, C, S, _ = images.shape
    if S % ps:
        raise ValueError(f"key 'patch' = {ps}: must divide the image size {S}")
    x = images.reshape(M, C, S // ps, ps, S // ps, ps).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(M, (S // ps) ** 2, C * ps * ps)


@dataclass(frozen=True)
class Tokenizer:
    """Patch size, label vectors (3, N0) for (+, −, ?) and the positional encoding (T, N0) of a run."""

    patch: int
    image_size: int
    channels: int
    labels: Tensor
    pe: Tensor

    @staticmethod
    def make(image_size: int, patch: int, channels: int, generator: torch.Generator) -> Tokenizer:
        if image_size % patch:
            raise ValueError(f"key 'patch' = {patch}: must divide key 'image_size' = {image_size}")
        width = channels * patch * patch
        p = (image_size // patch) ** 2
        labels = torch.randn(3, width, generator=generator, dtype=torch.float64, device=generator.device)
        return Tokenizer(patch, image_size, channels, labels.cpu(), sinusoidal_pe(3 * p, width))

    @property
    def width(self) -> int:
        return self.labels.shape[1]

    @property
    def tokens(self) -> int:
        return self.pe.shape[0]

    def __call__(self, first: Tensor, second: Tensor, query: Tensor, first_is_plus: Tensor) -> Tensor:
        """Tokens (M, 3p, N0) float64 of M episodes (images (M, C, S, S); ``first_is_plus`` (M,) bool)."""
        if first.shape[1:] != (self.channels, self.image_size, self.image_size):
            raise ValueError(f"images have shape {tuple(first.shape[1:])}; the tokenizer expects "
                             f"({self.channels}, {self.image_size}, {self.image_size})")
        plus, minus, q = self.labels
        lab1 = torch.where(first_is_plus[:, None], plus, minus)[:, None]
        lab2 = torch.where(first_is_plus[:, None], minus, plus)[:, None]
        x = torch.cat([patches(first.double(), self.patch) + lab1, patches(second.double(), self.patch) + lab2,
                       patches(query.double(), self.patch) + q], dim=1)
        return x + self.pe


def sample_episodes(images: ImageSet, n: int, tokenizer: Tokenizer, generator: torch.Generator,
                    meta: dict | None = None) -> tuple[Tensor, Tensor]:
    """n episodes (tokens (n, T, N0), targets (n,) ∈ ±1) from the classes of ``images``.

    Two distinct classes, one instance each as support; the query class is either with probability ½ and its
    instance differs from the support instance when the class has more than one. ``meta`` (a dict) receives
    the image indices ``first``, ``second``, ``query`` and ``first_is_plus``.
    """
    if n < 1:
        raise ValueError(f"key 'P' = {n}: need at least one episode")
    g = generator
    cls, inverse, counts = torch.unique(images.labels, return_inverse=True, return_counts=True)
    if len(cls) < 2:
        raise ValueError(f"{images.name}: an episode needs two classes, the set has {len(cls)}")
    order = torch.argsort(inverse, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    a = torch.randint(len(cls), (n,), generator=g)
    b = (a + 1 + torch.randint(len(cls) - 1, (n,), generator=g)) % len(cls)  # b ≠ a
    ia = (torch.rand(n, generator=g) * counts[a]).long()
    ib = (torch.rand(n, generator=g) * counts[b]).long()
    q_is_a = torch.rand(n, generator=g) < 0.5
    qc = torch.where(q_is_a, a, b)
    qi_sup = torch.where(q_is_a, ia, ib)
    m = counts[qc]
    j = (torch.rand(n, generator=g) * (m - 1).clamp(min=1)).long()
    qi = torch.where(m > 1, j + (j >= qi_sup).long(), qi_sup)  # another instance of the query class

    def pick(c: Tensor, i: Tensor) -> Tensor:
        return images.images[order[starts[c] + i]]

    first_is_plus = torch.rand(n, generator=g) < 0.5
    if meta is not None:
        meta.update(first=order[starts[a] + ia], second=order[starts[b] + ib], query=order[starts[qc] + qi],
                    first_is_plus=first_is_plus)
    X = tokenizer(pick(a, ia), pick(b, ib), pick(qc, qi), first_is_plus)
    y = torch.where(q_is_a == first_is_plus, 1.0, -1.0).to(torch.float64)
    return X, y
