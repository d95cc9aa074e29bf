"""Paper 2's data sets: a Potts model of Eq. (1) and its train and test sequences, sampled by Gibbs sweeps
(App. 'Numerical details'), memoised within a process and placed on a device.

The model and its exact quantities live in :mod:`attnlab.potts.data.potts`, the sampler in
:mod:`attnlab.potts.data.sampler`; this module joins them, so that neither imports the other's user.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlab.core.rng import generator
from attnlab.potts.data.potts import PottsModel, PottsSpec, mean_pairwise_hamming
from attnlab.potts.data.sampler import gibbs


@dataclass(frozen=True, eq=False)
class PottsData:
    """A model and its train/test samples (colours, int64 on the model's device) with sampler diagnostics."""

    potts: PottsModel
    train: Tensor
    test: Tensor
    diagnostics: dict

    @functools.cached_property
    def optimal_loss(self) -> float:
        return self.potts.optimal_loss(self.test)

    def subset(self, M: int, generator: torch.Generator | None = None) -> Tensor:
        """M training sequences: a random subset (``generator``) or the first M."""
        if self.train.shape[0] < M:
            raise ValueError(f"M = {M} exceeds the {self.train.shape[0]} training sequences of this data set")
        if generator is None:
            return self.train[:M]
        perm = torch.randperm(self.train.shape[0], generator=generator, device=generator.device)
        return self.train[perm[:M].to(self.train.device)]


def _per_chain(M: int, n_chains: int) -> int:
    return -(-M // n_chains)


def sample_dataset(spec: PottsSpec) -> PottsData:
    """Sample the train and test sets of ``spec`` on the CPU (no memo; see :func:`potts_dataset`)."""
    potts = spec.model()
    sets, diag = [], {}
    for name, M, seed in (("train", spec.M_train, spec.train_seed), ("test", spec.M_test, spec.test_seed)):
        g = generator(seed)
        run = gibbs(potts, spec.n_chains, _per_chain(M, spec.n_chains), burn_in=spec.burn_in, thin=spec.thin,
                    generator=g, order=spec.order)
        sets.append(run.samples.reshape(-1, spec.L)[:M])
        diag.update({f"{name}_{k}": v for k, v in run.summary().items()})
    diag["d_hamming_train"] = float(mean_pairwise_hamming(sets[0], spec.C))
    return PottsData(potts, sets[0], sets[1], diag)


_memo = functools.lru_cache(maxsize=8)(sample_dataset)


def potts_dataset(spec: PottsSpec, device: torch.device | str = "cpu") -> PottsData:
    """Sample (or reuse, within a process) the data set of ``spec`` and place it on ``device``.

    Sampling runs on the CPU with torch generators seeded from the spec, so a data set is the same on every
    device; the memo makes the experiments and claims of one ``attnlab check`` share the 20 s of Gibbs sampling.
    """
    d = _memo(spec)
    if d.train.device == torch.device(device):
        return d
    return PottsData(d.potts.to(device), d.train.to(device), d.test.to(device), d.diagnostics)
