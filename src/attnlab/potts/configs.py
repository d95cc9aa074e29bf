"""Experiment configs of the potts study: the paper's settings where it states them (Figs. 2, 3, App. 'Numerical
details'), the choices of docs/studies/potts.md where it does not, and the two scales.

Validation happens before any work: C < 2, L < 2, a non-symmetric J or U (or J with a non-zero diagonal), β < 0,
ν <= 2 (precision Ω/√L + νI not positive definite), L > C for Eq. (2)'s one-hot positions, or an unknown model
name stop with one line naming the key, the value and what is allowed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from attnlab.core.config import Config
from attnlab.potts.data.potts import PottsSpec, check_couplings
from attnlab.potts.train.mlm import Optim

Matrix = tuple[tuple[float, ...], ...]
Model = Literal["factored", "vanilla1", "vanilla3"]


class PottsDataConfig(Config):
    """The Potts data set: the seeded `cpu_fig2` set by default (ER(0.2) J, Gaussian U, β = 1, 30 chains;
    docs/studies/potts.md, 'The default data set') at both scales. The paper's protocol (one chain, 10 000 sweeps
    between saved configurations, β tuned to d_H = 0.3) is 4·10⁷ sweeps for its 4000 sequences, hours of CPU, and
    its target is not reproducible (docs note 1): ``n_chains=1, thin=10000, burn_in=10000`` and ``beta`` run it."""

    L: int = Field(20, ge=2, le=200, description="sequence length (sites); a Potts sequence needs L >= 2")
    C: int = Field(20, ge=2, le=200, description="colours (vocabulary); a Potts spin needs C >= 2")
    J_kind: Literal["er", "contact", "block"] = Field("er", description="planted J (docs note 2), unless J is given")
    p: float = Field(0.2, ge=0, le=1, description="edge probability of the ER J")
    beta: float = Field(1.0, ge=0, le=50, description="inverse temperature β >= 0 of Eq. (1)")
    J: Matrix | None = Field(None, description="custom symmetric L×L couplings with zero diagonal (else planted)",
                             json_schema_extra={"allowed": "an L×L matrix (L rows of L finite numbers), symmetric, "
                                                           "with a zero diagonal; or null (the planted J)"})
    U: Matrix | None = Field(None, description="custom symmetric C×C colour similarity (else Gaussian)",
                             json_schema_extra={"allowed": "a C×C matrix (C rows of C finite numbers), symmetric; "
                                                           "or null (the Gaussian U)"})
    structure_seed: int = Field(1, ge=0, description="numpy seed of the planted J and U (`cpu_fig2`: 1)")
    n_chains: int = Field(30, ge=1, le=100_000, description="independent Gibbs chains per set")
    burn_in: int = Field(2000, ge=0, le=10_000_000, description="sweeps before the first saved configuration")
    thin: int = Field(200, ge=1, le=10_000_000,
                      description="sweeps between saved configurations (paper: 10000, one chain)")
    M_train: int = Field(3000, ge=1, le=1_000_000, description="training sequences M")
    M_test: int = Field(1020, ge=2, le=1_000_000, description="test sequences")
    train_seed: int = Field(1, ge=0, description="sampler seed of the training set")
    test_seed: int = Field(2, ge=0, description="sampler seed of the test set")
    order: Literal["chromatic", "sequential"] = Field("chromatic", description="Gibbs site order (the paper: cyclic)")

    @model_validator(mode="after")
    def _couplings_are_valid(self):
        for key, mat, n in (("J", self.J, self.L), ("U", self.U, self.C)):
            if mat is not None and (len(mat) != n or any(len(row) != n for row in mat)):
                raise ValueError(f"key {key!r} = {len(mat)}-row matrix: must be {n}×{n} "
                                 f"({'L' if key == 'J' else 'C'} = {n})")
        J, U = self.spec().structure()
        try:
            check_couplings(J, U, self.beta)
        except ValueError as exc:
            key = "U" if str(exc).startswith("U") else "J" if str(exc).startswith("J") else "beta"
            shown = {"J": f"{len(J)}×{len(J)} matrix", "U": f"{len(U)}×{len(U)} matrix"}.get(key, self.beta)
            raise ValueError(f"key {key!r} = {shown}: {exc}") from None
        return self

    def spec(self) -> PottsSpec:
        return PottsSpec(L=self.L, C=self.C, J_kind=self.J_kind, p=self.p, beta=self.beta,
                         structure_seed=self.structure_seed, n_chains=self.n_chains, burn_in=self.burn_in,
                         thin=self.thin, M_train=self.M_train, M_test=self.M_test, train_seed=self.train_seed,
                         test_seed=self.test_seed, order=self.order, J_custom=self.J, U_custom=self.U)


class Training(Config):
    """MLM training of factored attention (Adam 0.05, 100 epochs, batch 100, cosine, no decay: docs/studies/potts.md
    note 3); mixed into the experiment configs beside :class:`PottsDataConfig`."""

    optimizer: Literal["adam", "sgd"] = Field("adam", description="adam (spec default) or sgd (the paper's)")
    lr: float = Field(0.05, gt=0, le=100, description="initial learning rate of the factored layer")
    epochs: int = Field(100, ge=1, le=100_000, description="training epochs (passes over the M_train sequences)")
    batch: int = Field(100, ge=1, le=1_000_000, description="sequences per step (each gives its L masked predictions)")
    schedule: Literal["cosine", "constant"] = Field("cosine", description="learning-rate schedule over the epochs: "
                                                                           "cosine decay to 0, or constant")
    attn: Literal["softmax", "softmax_nosink", "linear"] = Field("softmax", description="Eq. (4) variant")
    seeds: int = Field(1, ge=1, le=64, description="independent factored models trained in one computation")

    def optim(self) -> Optim:
        return Optim(self.optimizer, self.lr, self.epochs, self.batch, self.schedule)


class PLFit(Config):
    """Full-batch factored pseudo-likelihood (L-BFGS to convergence) over sample sizes and realisations; mixed into
    the experiment configs beside :class:`PottsDataConfig` (whose ``M_train`` bounds the sizes)."""

    Ms: tuple[int, ...] = Field((1, 2, 3, 5, 10, 15, 20, 30, 40, 60, 80, 120, 200, 400), min_length=1,
                                description="sample sizes M (training sequences per fit, α = M/L), in 1..M_train",
                                json_schema_extra={"allowed": "one or more integers, each in 1..M_train; strictly "
                                                              "ascending when warm_start is true"})
    lams: tuple[float, ...] = Field((1e-4, 1e-2), min_length=1, description="l2 strengths λ of the PLM fit",
                                    json_schema_extra={"allowed": "one or more numbers, each ≥ 0"})
    reg_form: Literal["sum", "mean"] = Field("sum", description="λ/(2M)||θ||² ('sum', Eq. (7)) or λ/2||θ||²")
    n_real: int = Field(30, ge=1, le=1000, description="realisations: random training subsets and inits")
    attn: Literal["softmax", "softmax_nosink", "linear"] = Field("softmax", description="Eq. (4) variant")
    max_iter: int = Field(20_000, ge=10, le=1_000_000, description="L-BFGS iteration cap per fit")
    gtol: float = Field(1e-6, gt=0, le=1, description="L-BFGS stop: max |gradient| < gtol")
    warm_start: bool = Field(True, description="start the fit at M from the same realisation's fit at the "
                                               "previous M of the (ascending) grid; else from a fresh init")

    @field_validator("lams")
    @classmethod
    def _lams_nonnegative(cls, v):
        if any(lam < 0 for lam in v):
            raise ValueError(f"key 'lams' = {list(v)}: regularisation strengths must be >= 0")
        return v

    @model_validator(mode="after")
    def _sizes_fit(self):
        if max(self.Ms) > self.M_train or min(self.Ms) < 1:
            raise ValueError(f"key 'Ms' = {list(self.Ms)}: sample sizes must lie in 1..M_train = {self.M_train}")
        if self.warm_start and list(self.Ms) != sorted(set(self.Ms)):
            raise ValueError(f"key 'Ms' = {list(self.Ms)}: warm starts follow the grid, which must ascend "
                             "(or set warm_start = false)")
        return self


# the data sizes of every Potts-data experiment's fast check (each Experiment's ``tiny``)
TINY_DATA = {"L": 6, "C": 8, "n_chains": 10, "burn_in": 30, "thin": 3, "M_train": 100, "M_test": 40}
