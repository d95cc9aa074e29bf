"""Experiment configs of the potts study: the paper's settings where it states them (Figs. 2, 3, App. 'Numerical
details'), the choices of docs/studies/potts.md where it does not, and the two scales.

Validation happens before any work: C < 2, L < 2, a non-symmetric J or U (or J with a non-zero diagonal), β < 0,
ν <= 2 (precision Ω/√L + νI not positive definite), L > C for eq. (2)'s one-hot positions, or an unknown model
name stop with one line naming the key, the value and what is allowed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator
from pydantic.fields import FieldInfo

from attnlab.core.config import Config
from attnlab.potts.data import PottsSpec, check_couplings
from attnlab.potts.train import Optim

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
    beta: float = Field(1.0, ge=0, le=50, description="inverse temperature β >= 0 of eq. (1)")
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
    attn: Literal["softmax", "softmax_nosink", "linear"] = Field("softmax", description="eq. (4) variant")
    seeds: int = Field(1, ge=1, le=64, description="independent factored models trained in one computation")

    def optim(self) -> Optim:
        return Optim(self.optimizer, self.lr, self.epochs, self.batch, self.schedule)


class Fig2Config(PottsDataConfig, Training):
    """Fig. 2a-c: factored attention vs vanilla transformers with 1 and 3 layers on the same Potts data."""

    models: tuple[Model, ...] = Field(("factored", "vanilla1", "vanilla3"), min_length=1,
                                      description="architectures trained: factored attention (eq. (4)), the vanilla "
                                                  "transformer with 1 or 3 layers")
    vanilla_lr: float = Field(1e-3, gt=0, le=10, description="Adam lr of the vanilla transformers (docs note 3)")
    vanilla_epochs: int = Field(60, ge=1, le=100_000, description="training epochs of the vanilla transformers")
    vanilla_mask: Literal["random", "all"] = Field("random", description="one random masked site per sequence, "
                                                                           "or all L copies (exact MLM)")
    head: Literal["uva", "linear"] = Field("uva", description="vanilla output head (App. 'Numerical details')")
    d: int = Field(20, ge=2, le=512, description="embedding dimension of the vanilla transformer")
    eval_every: int = Field(1, ge=1, le=100_000, description="epochs between evaluations of the vanilla models")
    n_eval: int | None = Field(None, ge=2, le=1_000_000,
                               description="test sequences of the per-epoch vanilla evaluation (None: all)")
    scales = {"quick": {"vanilla_epochs": 40, "eval_every": 2, "n_eval": 300}, "paper": {"seeds": 3}}


class Fig2dConfig(PottsDataConfig, Training):
    """Fig. 2d: test loss vs the position/embedding mixing a of eq. (2), several seeds per a, one computation."""

    a_values: tuple[float, ...] = Field((0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0), min_length=2,
                                        description="mixings a >= 0 of positions and embeddings in eq. (2) "
                                                    "(a = 0: factored attention)",
                                        json_schema_extra={"allowed": "two or more numbers, each ≥ 0"})
    seeds: int = Field(3, ge=1, le=64,
                       description="independent models (initialisations) per a, trained in one computation")
    scales = {"quick": {"a_values": (0.0, 0.1, 0.3, 1.0), "epochs": 30}, "paper": {}}

    @field_validator("a_values")
    @classmethod
    def _a_nonnegative(cls, v):
        if any(a < 0 for a in v):
            raise ValueError(f"key 'a_values' = {list(v)}: the mixing a of eq. (2) must be >= 0")
        return v

    @model_validator(mode="after")
    def _positions_fit(self):
        if self.L > self.C:
            raise ValueError(f"key 'L' = {self.L}: eq. (2) uses one-hot positions in R^d with d = C, so L <= C "
                             f"(C = {self.C})")
        return self


class PLFit(Config):
    """Full-batch factored pseudo-likelihood (L-BFGS to convergence) over sample sizes and realisations; mixed into
    the experiment configs beside :class:`PottsDataConfig` (whose ``M_train`` bounds the sizes)."""

    Ms: tuple[int, ...] = Field((1, 2, 3, 5, 10, 15, 20, 30, 40, 60, 80, 120, 200, 400), min_length=1,
                                description="sample sizes M (training sequences per fit, α = M/L), in 1..M_train",
                                json_schema_extra={"allowed": "one or more integers, each in 1..M_train; strictly "
                                                              "ascending when warm_start is true"})
    lams: tuple[float, ...] = Field((1e-4, 1e-2), min_length=1, description="l2 strengths λ of the PLM fit",
                                    json_schema_extra={"allowed": "one or more numbers, each ≥ 0"})
    reg_form: Literal["sum", "mean"] = Field("sum", description="λ/(2M)||θ||² ('sum', eq. (7)) or λ/2||θ||²")
    n_real: int = Field(30, ge=1, le=1000, description="realisations: random training subsets and inits")
    attn: Literal["softmax", "softmax_nosink", "linear"] = Field("softmax", description="eq. (4) variant")
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


def _default(key: str, value):
    """PLFit's field ``key`` with a new default (type, bounds and description kept)."""
    return FieldInfo.merge_field_infos(PLFit.model_fields[key], default=value)


class Fig3RightConfig(PottsDataConfig, PLFit):
    """Fig. 3-right: test loss of factored attention vs the number of samples (L-BFGS)."""

    # quick: the grid of check 20 (M <= 200) at the paper's small λ, 4 realisations
    scales = {"quick": {"Ms": (1, 2, 3, 5, 10, 15, 20, 30, 40, 60, 80, 120, 200), "lams": (1e-4,), "n_real": 4},
              "paper": {}}


class ConsistencyConfig(PottsDataConfig, PLFit):
    """PL consistency (check 10): corr(A, J) and test - optimal along M (L-BFGS, reg 'sum', λ = 1e-2)."""

    Ms: tuple[int, ...] = _default("Ms", (120, 400, 1000, 3000))
    lams: tuple[float, ...] = _default("lams", (1e-2,))
    n_real: int = _default("n_real", 3)
    max_iter: int = _default("max_iter", 3000)
    warm_start: bool = _default("warm_start", False)
    scales = {"quick": {"Ms": (120, 400, 3000), "n_real": 2}, "paper": {}}


class EquivalenceConfig(PottsDataConfig, Training):
    """MLM = pseudo-likelihood (Eqs. (4)-(6)): exact identities at the true couplings, and factored attention trained
    by Adam vs the factored PLM solved by L-BFGS on the same data."""

    lam: float = Field(1e-2, ge=0, le=1000,
                       description="λ of the L-BFGS PLM (reg 'sum': λ/(2M)||θ||², 3e-6 per sample)")
    max_iter: int = Field(1000, ge=10, le=100_000, description="L-BFGS iteration cap of the PLM fit")


class GibbsConfig(PottsDataConfig):
    """The sampler and β (App. 'Numerical details', docs/studies/potts.md note 1): Hamming distance vs β pooled over
    chains and within one chain, β tuned
    to the paper's target, and a paper-faithful single chain at the tuned β."""

    betas: tuple[float, ...] = Field((0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.6, 1.7, 1.8, 1.9, 2.0, 2.5, 3.0),
                                     min_length=2, description="β grid (fine where one chain crosses d_H = 0.3)",
                                     json_schema_extra={"allowed": "two or more numbers, each ≥ 0"})
    pilot_samples: int = Field(300, ge=2, le=100_000, description="saved configurations per β in the scan")
    pilot_thin: int = Field(20, ge=1, description="sweeps between pilot samples of the single-chain scan")
    target: float = Field(0.3, gt=0, lt=1, description="target mean Hamming distance (paper: 0.3)")
    chain_samples: int = Field(4000, ge=2, le=1_000_000, description="saved configurations of the paper-faithful chain")
    chain_thin: int = Field(10_000, ge=1, description="sweeps between them (paper: 10000)")
    chain_count: int = Field(8, ge=1, le=1000, description="independent paper-faithful chains at the tuned β (one "
                                                           "computation; the first is the one shown)")
    # paper: the paper's thinning, 300 samples per chain rather than its 4000 (8 chains × 3·10⁶ sweeps)
    scales = {"quick": {"chain_samples": 200, "chain_thin": 500}, "paper": {"chain_samples": 300}}

    @field_validator("betas")
    @classmethod
    def _betas_nonnegative(cls, v):
        if any(b < 0 for b in v):
            raise ValueError(f"key 'betas' = {list(v)}: inverse temperatures must be >= 0")
        return v
