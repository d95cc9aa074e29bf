"""Shared small problems of the paths study (float64, one thread), as fixtures returning factories."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
import torch

from attnlab.paths.data import markov as data
from attnlab.paths.theory import kernels, problems

torch.set_num_threads(1)


def _markov(layout: str = "all", P: int = 100, P_test: int = 300, seed: int = 0, readout=1,
            sigma_perp: float = 1.0, random_strength: float = 1.0) -> kernels.Problem:
    """The Markov checks' seeds: data s, test s + 1000, heads s + 1."""
    G = torch.Generator
    return problems.markov_problem(data.MarkovTask(sigma_perp=sigma_perp), layout, P, P_test,
                                   data=G().manual_seed(seed), test=G().manual_seed(seed + 1000),
                                   heads=G().manual_seed(seed + 1), readout=readout, random_strength=random_strength)


def _random(Hs=(2, 2), P: int = 12, P_test: int = 7, D: int = 9, seed: int = 0, sigma2: float = 1.0):
    g = torch.Generator().manual_seed(seed)
    n = 1
    for H in Hs:
        n *= H
    Xi = torch.randn(P, n, D, generator=g, dtype=torch.float64)
    Xt = torch.randn(P_test, n, D, generator=g, dtype=torch.float64)
    y = torch.sign(torch.randn(P, generator=g, dtype=torch.float64))
    yt = torch.sign(torch.randn(P_test, generator=g, dtype=torch.float64))
    return kernels.Problem(Xi, y, Xt, yt, tuple(Hs), sigma2)


@pytest.fixture(scope="session")
def markov_problem():
    return _markov


@pytest.fixture(scope="session")
def random_problem():
    return _random


@pytest.fixture(scope="session")
def markov_all():
    return _markov("all")


def _write_idx(path, arr: np.ndarray, gz: bool = False) -> None:
    """An IDX file (MNIST's format: magic 0 0 0x08 ndim, big-endian int32 dims, uint8 data), gzipped or not."""
    header = bytes([0, 0, 0x08, arr.ndim]) + struct.pack(f">{arr.ndim}i", *arr.shape)
    raw = header + arr.astype(np.uint8).tobytes()
    if gz:
        with gzip.open(str(path) + ".gz", "wb") as f:
            f.write(raw)
    else:
        path.write_bytes(raw)


@pytest.fixture(scope="session")
def write_idx():
    return _write_idx
