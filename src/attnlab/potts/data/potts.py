"""The generalised Potts model of paper 2, Eqs. (1), (5), (6) (Eq. (1)): structure, conditionals, exact
enumeration, Hamming statistics, the optimal MLM loss and the seeded spec of the experiments' data sets.

    potts = PottsModel(J, U, beta)                 # validated: L, C >= 2, J = Jᵀ with zero diagonal, U = Uᵀ, β >= 0
    potts.energy(c)                                # H(c) = -½ Σ_ij J_ij U[c_i, c_j], Eq. (1); c (n, L) colours
    potts.conditional_logp(c)                      # (n, L, C): log p(s_i = α | s_\\i), Eq. (5)
    potts.pseudo_loglik(c)                         # Eq. (6); the optimal MLM loss (Fig. 2a) is its negative
    J = make_J(20, "er", rng, p=0.2); U = make_U(20, rng)           # planted structures (the paper's Fig. 2 set-up)

Sequences are integer tensors of colours (n, L); the one-hot spin s_i = e_{c_i} is never materialised where an
index does the same work. The Gibbs sampler lives in ``data/sampler.py``, the sampled data sets
(``potts_dataset(PottsSpec())``: the seeded `cpu_fig2` set-up, memoised) in ``data/sets.py``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

Tensor = torch.Tensor
F64 = torch.float64
JKind = Literal["er", "contact", "block"]


def _as64(x, name: str) -> Tensor:
    t = torch.as_tensor(x, dtype=F64)
    if t.ndim != 2 or t.shape[0] != t.shape[1]:
        raise ValueError(f"{name} must be a square matrix, got shape {tuple(t.shape)}")
    if not torch.isfinite(t).all():
        raise ValueError(f"{name} has non-finite entries")
    return t


def check_couplings(J, U, beta: float, tol: float = 1e-10) -> tuple[Tensor, Tensor]:
    """Validate (J, U, β) of Eq. (1); return float64 copies. Errors say what to change."""
    J, U = _as64(J, "J"), _as64(U, "U")
    L, C = J.shape[0], U.shape[0]
    if L < 2:
        raise ValueError(f"L = {L}: a Potts sequence needs L >= 2 sites")
    if C < 2:
        raise ValueError(f"C = {C}: a Potts spin needs C >= 2 colours")
    if (asym := float((J - J.T).abs().max())) > tol:
        raise ValueError(f"J must be symmetric (max |J - Jᵀ| = {asym:.3g}); eq. (5) is the conditional of eq. (1) "
                         "only for J = Jᵀ: pass (J + Jᵀ)/2")
    if (diag := float(J.diagonal().abs().max())) > tol:
        raise ValueError(f"J must have a zero diagonal (max |J_ii| = {diag:.3g}); set J_ii = 0 (paper, after eq. (1))")
    if (asym := float((U - U.T).abs().max())) > tol:
        raise ValueError(f"U must be symmetric (max |U - Uᵀ| = {asym:.3g}); eq. (5) is the conditional of eq. (1) "
                         "only for U = Uᵀ: pass (U + Uᵀ)/2")
    if not (isinstance(beta, int | float) and math.isfinite(beta) and beta >= 0):
        raise ValueError(f"beta = {beta!r}: the inverse temperature must be a finite number >= 0")
    return J, U


@dataclass(frozen=True, eq=False)
class PottsModel:
    """Generalised Potts model H(s) = -½ Σ_ij J_ij s_iᵀ U s_j at inverse temperature β, Eq. (1)."""

    J: Tensor
    U: Tensor
    beta: float

    def __post_init__(self) -> None:
        J, U = check_couplings(self.J, self.U, self.beta)
        device = self.J.device if isinstance(self.J, Tensor) else torch.device("cpu")
        object.__setattr__(self, "J", J.to(device))
        object.__setattr__(self, "U", U.to(device))
        object.__setattr__(self, "beta", float(self.beta))

    @property
    def L(self) -> int:
        return self.J.shape[0]

    @property
    def C(self) -> int:
        return self.U.shape[0]

    @property
    def device(self) -> torch.device:
        return self.J.device

    def to(self, device: torch.device | str) -> PottsModel:
        return PottsModel(self.J.to(device), self.U.to(device), self.beta)

    def with_beta(self, beta: float) -> PottsModel:
        return PottsModel(self.J, self.U, beta)

    def energy(self, c: Tensor) -> Tensor:
        """H(c) = -½ Σ_{i≠j} J_ij U[c_i, c_j] of Eq. (1) for colours c (..., L) → (...)."""
        Uc = self.U[c.unsqueeze(-1), c.unsqueeze(-2)]  # (..., L, L): U[c_i, c_j]
        return -0.5 * (self.J * Uc).sum((-1, -2))

    def local_fields(self, c: Tensor) -> Tensor:
        """F_i(α) = β Σ_j J_ij U[α, c_j] (Eq. (5)), shape (..., L, C); J_ii = 0 drops site i itself."""
        return self.beta * torch.einsum("ij,...jc->...ic", self.J, self.U[c])

    def conditional_logp(self, c: Tensor) -> Tensor:
        """log p(s_i = α | s_\\i) of Eq. (5), shape (..., L, C)."""
        return torch.log_softmax(self.local_fields(c), dim=-1)

    def pseudo_loglik(self, c: Tensor) -> Tensor:
        """L^PL = (1/ML) Σ_{μ,i} log p(s_i^μ | s_\\i^μ), Eq. (6), for colours c (M, L)."""
        return true_class_logp(self.conditional_logp(c), c).mean()

    def optimal_loss(self, c: Tensor) -> float:
        """Bayes MLM test loss ε_opt = E[-(1/L) Σ_i log p(s_i | s_\\i)] on samples c (Fig. 2a's optimal loss)."""
        return float(-self.pseudo_loglik(c))

    @property
    def degrees(self) -> Tensor:
        """k_i = Σ_j J_ij (the row sums that fix the sink of the exact softmax representation,
        docs/studies/potts.md note 6)."""
        return self.J.sum(1)


def true_class_logp(logp: Tensor, c: Tensor) -> Tensor:
    """log p̃_i(c_i) picked from (..., L, C) log-probabilities at the observed colours c (..., L)."""
    c = c.expand(logp.shape[:-1]) if c.shape != logp.shape[:-1] else c
    return logp.gather(-1, c.unsqueeze(-1)).squeeze(-1)


# -- planted structures (Fig. 2's J and U; docs/studies/potts.md note 2) -----------------------------------------------


def make_J(L: int, kind: JKind = "er", rng: np.random.Generator | None = None, *, p: float = 0.2,
           min_degree: int = 0, n_long: int | None = None, blocks: int = 4, max_tries: int = 1000) -> np.ndarray:
    """A symmetric {0, 1} interaction matrix with zero diagonal (the paper shows J only as an image).

    'er': J_ij ~ Bernoulli(p) for i < j, mirrored (default p = 0.2, mean degree p(L-1));
    'contact': backbone J_{i,i+1} = 1 plus ``n_long`` (default L // 2) random pairs with |i - j| >= 3;
    'block': ``blocks`` communities of consecutive sites, fully connected inside.
    ``min_degree`` resamples 'er' until every site has at least that many neighbours.
    """
    if L < 2:
        raise ValueError(f"L = {L}: need L >= 2 sites")
    rng = rng if rng is not None else np.random.default_rng(0)
    if kind == "er":
        if not 0 <= p <= 1:
            raise ValueError(f"p = {p}: the edge probability must lie in [0, 1]")
        for _ in range(max_tries):
            upper = np.triu(rng.random((L, L)) < p, 1)
            J = (upper | upper.T).astype(float)
            if J.sum(1).min() >= min_degree:
                return J
        raise ValueError(f"no ER(p={p}) graph on L={L} sites with min_degree={min_degree} in {max_tries} draws")
    if kind == "contact":
        J = np.zeros((L, L))
        idx = np.arange(L - 1)
        J[idx, idx + 1] = J[idx + 1, idx] = 1
        pairs = [(i, j) for i in range(L) for j in range(i + 3, L)]
        n = min(len(pairs), L // 2 if n_long is None else n_long)
        for k in rng.choice(len(pairs), size=n, replace=False) if n else []:
            i, j = pairs[k]
            J[i, j] = J[j, i] = 1
        return J
    if kind == "block":
        if not 1 <= blocks <= L:
            raise ValueError(f"blocks = {blocks}: need 1 <= blocks <= L = {L}")
        labels = np.repeat(np.arange(blocks), -(-L // blocks))[:L]
        J = (labels[:, None] == labels[None, :]).astype(float)
        np.fill_diagonal(J, 0)
        return J
    raise ValueError(f"J kind {kind!r} is not known; allowed: er, contact, block (or pass a matrix)")


def make_U(C: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Symmetric colour similarity with diagonal and upper triangle i.i.d. N(0, 1) (Fig. 2's set-up)."""
    if C < 2:
        raise ValueError(f"C = {C}: need C >= 2 colours")
    rng = rng if rng is not None else np.random.default_rng(0)
    G = rng.standard_normal((C, C))
    return np.triu(G) + np.triu(G, 1).T


# -- exact enumeration (tests and small-L·C checks) -------------------------------------------------------------------


def enumerate_states(L: int, C: int, device: torch.device | str = "cpu") -> Tensor:
    """All C^L colourings, shape (C^L, L), lexicographic."""
    if C**L > 5_000_000:
        raise ValueError(f"C^L = {C}^{L} states is too many to enumerate (limit 5e6)")
    return torch.tensor(list(itertools.product(range(C), repeat=L)), dtype=torch.long, device=device)


def exact_distribution(potts: PottsModel) -> tuple[Tensor, Tensor]:
    """(states (C^L, L), probabilities (C^L,)) of P(s) ∝ exp(-βH(s)), by enumeration."""
    states = enumerate_states(potts.L, potts.C, potts.device)
    return states, torch.softmax(-potts.beta * potts.energy(states), 0)


def state_index(c: Tensor, C: int) -> Tensor:
    """Position of each colouring (..., L) in :func:`enumerate_states` order."""
    L = c.shape[-1]
    weights = C ** torch.arange(L - 1, -1, -1, device=c.device)
    return (c.long() * weights).sum(-1)


def total_variation(samples: Tensor, probs: Tensor, C: int) -> float:
    """TV distance between the empirical law of ``samples`` (n, L) and the exact ``probs``."""
    counts = torch.bincount(state_index(samples.reshape(-1, samples.shape[-1]), C), minlength=probs.numel())
    return 0.5 * float((counts.to(probs) / counts.sum() - probs).abs().sum())


# -- Hamming statistics (docs/studies/potts.md note 1) -----------------------------------------------------------------


def mean_pairwise_hamming(c: Tensor, C: int) -> Tensor:
    """Mean normalised Hamming distance (1/L) Σ_i [c_i ≠ c'_i] over all pairs of distinct rows of c (..., n, L).

    Exact and O(n L C): the pairs agreeing at site i number Σ_α n_iα (n_iα - 1) / 2 with n_iα colour counts.
    """
    n, L = c.shape[-2:]
    counts = torch.nn.functional.one_hot(c.long(), C).sum(-3).to(F64)  # (..., L, C)
    agree = (counts * (counts - 1)).sum((-1, -2)) / (n * (n - 1) * L)
    return 1.0 - agree


def colour_frequencies(c: Tensor, C: int) -> Tensor:
    """Empirical frequency of each colour over all sites and samples, shape (C,)."""
    return torch.bincount(c.reshape(-1).long(), minlength=C).to(F64) / c.numel()


# -- data sets of the experiments (Fig. 2's set-up; the default `cpu_fig2`) --------------------------------------------


@dataclass(frozen=True)
class PottsSpec:
    """Everything that fixes a Potts data set; `cpu_fig2` by default
    (docs/studies/potts.md, 'The default data set').

    J and U come from ``numpy.random.default_rng(structure_seed)`` (J first) unless given as ``J_custom`` /
    ``U_custom`` (nested tuples, validated by :class:`PottsModel`); the train and test sets are separate Gibbs runs
    with seeds ``train_seed`` and ``test_seed``: ``n_chains`` chains each, ``burn_in`` sweeps, then one saved
    configuration every ``thin`` sweeps.
    """

    L: int = 20
    C: int = 20
    J_kind: JKind = "er"
    p: float = 0.2
    min_degree: int = 0
    beta: float = 1.0
    structure_seed: int = 1
    n_chains: int = 30
    burn_in: int = 2000
    thin: int = 200
    M_train: int = 3000
    M_test: int = 1020
    train_seed: int = 1
    test_seed: int = 2
    order: Literal["chromatic", "sequential"] = "chromatic"
    J_custom: tuple[tuple[float, ...], ...] | None = None
    U_custom: tuple[tuple[float, ...], ...] | None = None

    def structure(self) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng(self.structure_seed)
        J = (np.asarray(self.J_custom, float) if self.J_custom is not None
             else make_J(self.L, self.J_kind, rng, p=self.p, min_degree=self.min_degree))
        U = np.asarray(self.U_custom, float) if self.U_custom is not None else make_U(self.C, rng)
        return J, U

    def model(self, device: torch.device | str = "cpu") -> PottsModel:
        J, U = self.structure()
        return PottsModel(torch.tensor(J, device=device), torch.tensor(U, device=device), self.beta)
