"""Experiment configs of the signal study: the paper's values where it gives them, documented defaults where it does
not (docs/studies/signal.md, Notes on the paper), and two scales. Every config carries the :class:`Architecture`
fields (flat keys: ``--set beta=3 --set H=6``), validated before any work (β > 0, T ≥ 2, H | d, α ≥ 0, known
activation).

``quick`` keeps the physics (same β, α, variances, depths where the claim needs them) at small width and
sequence length, few inits and sequences; ``paper`` uses the paper's sizes (d = 720–768, T = 512, 10 × 10 or
25 × 10 averaging, 60 / 200 layers) and is meant for ``--device cuda``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from attnlab.core.config import Config
from attnlab.signal.arch import Architecture
from attnlab.signal.train.mlm import Optim

Corpus = Literal["stories", "tinystories", "repeat"]


class ArchFields(Architecture):
    """The architecture fields every experiment config mixes in (``class XConfig(Config, ArchFields)``; figure
    configs are those classes' ``with_defaults``, two levels below ``Config``)."""

    def arch(self, **changes) -> Architecture:
        values = {k: getattr(self, k) for k in Architecture.model_fields}
        return Architecture(**{**values, **changes})


class ArchConfig(Config, ArchFields):
    """The architecture fields plus seed and device: a config of its own (``attnlab`` validates any of them)."""


_MIXIN = ConfigDict(frozen=True, extra="forbid", validate_default=True)


class CorpusMixin(BaseModel):
    model_config = _MIXIN
    corpus: Corpus = Field("stories", description="stories (bundled generator) | tinystories (local) | repeat task")
    corpus_path: str | None = Field(None, description="local TinyStories file or folder (corpus=tinystories)",
                                    json_schema_extra={"allowed": "an existing .txt, .json, .jsonl or .parquet file, "
                                                       "a folder of such files, or a datasets.save_to_disk folder; "
                                                       "or null (needed when corpus=tinystories)"})
    n_stories: int = Field(6000, ge=10, le=10_000_000, description="stories read / generated")
    vocab_size: int = Field(2000, ge=16, le=100_000, description="WordPiece vocabulary (paper: 2000)")
    emb_std: float = Field(0.1, gt=0, le=10, description="std of the word and position embeddings")

    @model_validator(mode="after")
    def _path_for_tinystories(self):
        if self.corpus == "tinystories" and not self.corpus_path:
            raise ValueError("key 'corpus_path' = None: corpus=tinystories needs a local file or folder "
                             "(attnlab never downloads); or use corpus=stories")
        return self


class TrainabilityConfig(Config, ArchFields):
    """Fig. 1c: theory diagram on a fine (β, α_SA) grid, α_c(L) curves, and a coarse simulated diagram."""

    n_beta: int = Field(200, ge=2, le=4000, description="β points of the theory diagram (geometric grid)")
    n_alpha: int = Field(200, ge=2, le=4000, description="α_SA points of the theory diagram (linear grid from 0)")
    beta_min: float = Field(0.01, gt=0, le=1e4, description="smallest β of the theory diagram")
    beta_max: float = Field(5.0, gt=0, le=1e4, description="largest β of the theory diagram")
    alpha_max: float = Field(10.0, gt=0, le=1e6, description="largest α_SA of the theory diagram")
    rho0: float = Field(0.0, ge=0, lt=1, description="input cosine (0: orthogonal tokens, as the paper)")
    eps: float = Field(1e-2, gt=0, lt=1, description="rank collapse: ρ_L ≥ 1 − ε (not given in the paper)")
    eps_list: tuple[Annotated[float, Field(gt=0, lt=1)], ...] = Field((1e-1, 1e-2, 1e-3), min_length=1,
                                        description="ε values of the α_c(L) curves (rank collapse: ρ_L ≥ 1 − ε)")
    Ls: tuple[Annotated[int, Field(ge=1, le=10_000)], ...] = Field(
        (6, 12, 24, 48, 60, 96, 200), min_length=2, description="depths of the α_c curves")
    finite_T: bool = Field(False, description="finite-T (Monte Carlo) q_sa, p_sa instead of Eq. (13)")
    sim_betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (0.1, 0.5, 1.0, 2.0, 3.0), description="simulated grid (may be empty)")
    sim_alphas: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] = Field(
        (0.25, 0.5, 1.0, 2.0, 4.0), description="simulated grid: α_SA values")
    sim_d: int = Field(256, ge=2, le=65536, description="width d of the simulated networks")
    sim_T: int = Field(128, ge=2, le=1_000_000, description="sequence length T of the simulated networks")
    n_inits: int = Field(5, ge=1, le=1000, description="random networks per simulated grid point")
    n_seqs: int = Field(2, ge=1, le=1000, description="input sequences per network")
    tau_entropy: float = Field(0.3, ge=0, le=1, description="simulated red: first-layer S/log T below this")
    tau_ipr: float = Field(0.3, ge=0, le=1, description="… or first-layer IPR above this")
    scales = {"quick": {"sim_d": 64, "sim_T": 64, "n_inits": 2, "n_seqs": 2}, "paper": {}}


class DepthConfig(Config, ArchFields, CorpusMixin):
    """Figs. 1d/e: mean cosine over depth, simulation (inits × sequences) against Eq. (19) from the measured ρ_0."""

    inputs: Literal["corpus", "synthetic"] = Field("corpus", description="corpus windows through random embeddings | "
                                                          "synthetic tokens of input cosine rho0")
    rho0: float = Field(0.05, ge=0, lt=1, description="input cosine of synthetic inputs")
    hf_std: float | None = Field(None, gt=0, le=10,
                                 description="off-the-shelf Q/K std, e.g. HF 0.02 (sets β by App. B.1)")
    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] | None = Field(
        None, description="configurations: β values (default: beta)")
    alphas: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] = Field(
        (1.0,), min_length=1, description="configurations: α_SA values")
    pairs: tuple[tuple[Annotated[float, Field(gt=0, le=1e4)], Annotated[float, Field(ge=0, le=1e6)]], ...] | None = (
        Field(None, description="explicit (β, α_SA) configurations (instead of betas × alphas)",
              json_schema_extra={"allowed": "(β, α_SA) pairs, each β > 0, ≤ 10000 and α_SA ≥ 0, ≤ 1000000; or "
                                            "null (null or empty: betas × alphas)"}))
    n_inits: int = Field(10, ge=1, le=10_000, description="random networks per configuration")
    n_seqs: int = Field(10, ge=1, le=10_000, description="input sequences per network")
    finite_T: bool = Field(True, description="also the finite-T theory (MC table)")
    scales = {"quick": {"d": 128, "H": 2, "T": 64, "n_inits": 4, "n_seqs": 4}, "paper": {}}


class SALayerConfig(Config, ArchFields):
    """Fig. 3: output cosine of one SA head over (β, input ρ): Eq. (14), finite-T MC and simulation."""

    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0), min_length=2,
                                     description="β grid (per-head score scale, Eq. (11))")
    rhos: tuple[Annotated[float, Field(ge=0, lt=1)], ...] = Field((0.0, 0.05, 0.2, 0.25, 0.5, 0.75, 0.9), min_length=2,
                                    description="input cosines ρ_in of the grid")
    n_inits: int = Field(3, ge=1, le=1000, description="random heads (and input sequences) per grid point")
    n_rep: int = Field(4, ge=1, le=1000, description="MC draws per grid point")
    ipr_level: float = Field(0.3, gt=0, lt=1, description="β*(ρ): where the measured IPR crosses this")
    scales = {"quick": {"T": 256, "d": 256}, "paper": {}}


class UniversalityConfig(Config, ArchFields):
    """β_c does not depend on d, H (and the frozen phase not on T): IPR of real attention layers vs β."""

    # d ≥ T throughout: for T > d the T scores of a row span only d dimensions (a rank-deficient REM), which
    # moves the measured transition (d = 64, T = 256 crosses at β* ≈ 1.66 vs 1.54 at d = 256)
    combos: tuple[tuple[Annotated[int, Field(ge=2, le=65536)], Annotated[int, Field(ge=1, le=1024)],
                       Annotated[int, Field(ge=2, le=1_000_000)]], ...] = Field(
        ((256, 1, 256), (512, 1, 256), (512, 4, 256), (512, 1, 64), (512, 1, 512)), min_length=2,
        description="(d, H, T) triples; the first T is the one the (d, H) comparison uses",
        json_schema_extra={"allowed": "at least 2 (d, H, T) triples, each d ≥ 2, ≤ 65536; H ≥ 1, ≤ 1024, dividing d; "
                                      "T ≥ 2, ≤ 1000000"})
    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (*(1.0 + 0.1 * i for i in range(11)), 2.5, 3.0, 3.5), min_length=3,
                                     description="β values scanned (per-head score scale, Eq. (11))")
    n_inits: int = Field(4, ge=1, le=1000, description="random layers per (β, d, H, T)")
    ipr_level: float = Field(0.3, gt=0, lt=1, description="β*: where the measured IPR crosses this level")
    scales = {"quick": {"n_inits": 2}, "paper": {"n_inits": 8}}

    @model_validator(mode="after")
    def _heads_divide(self):
        for d, H, T in self.combos:
            if d % H or T < 2:
                raise ValueError(f"key 'combos' = {(d, H, T)}: H must divide d and T ≥ 2")
        return self


class AlphaCConfig(Config, ArchFields):
    """α_c(L) by bisection for several ε, and the simulated check that α > α_c keeps ρ_L < 1 − ε (Sec. 3.3)."""

    Ls: tuple[Annotated[int, Field(ge=1, le=10_000)], ...] = Field(
        (6, 12, 24, 48, 60, 96, 200), min_length=2, description="depths L of α_c(L)")
    eps_list: tuple[Annotated[float, Field(gt=0, lt=1)], ...] = Field((1e-1, 1e-2, 1e-3), min_length=1,
                                        description="ε values (rank collapse: ρ_L ≥ 1 − ε)")
    rho0: float = Field(0.05, ge=0, lt=1, description="input cosine ρ_0")
    sim_L: int = Field(24, ge=1, le=10_000, description="depth L of the simulated networks (the architecture's "
                                                       "bound: at most 10 000 layers)")
    sim_eps: float = Field(0.1, gt=0, lt=1, description="ε of the simulated check")
    sim_alphas: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] = Field((0.5, 0.75, 1.0, 1.25, 1.5), min_length=1,
                                          description="α_SA values of the simulated networks")
    n_inits: int = Field(3, ge=1, le=1000, description="random networks per α_SA")
    n_seqs: int = Field(2, ge=1, le=1000, description="input sequences per network")
    scales = {"quick": {"d": 128, "T": 64}, "paper": {"d": 256, "T": 128, "n_inits": 5}}


class TanhConfig(Config, ArchFields):
    """Fig. 5: the tanh block map F(ρ) for several σ_w² and ρ_l over depth (theory lines, simulation dots)."""

    sigma_w2s: tuple[Annotated[float, Field(ge=0, le=1e4)], ...] = Field((1.0, 4.0, 8.0, 16.0, 32.0), min_length=1,
                                         description="σ_w² values of the theory lines (block map F(ρ), ρ_l)")
    sim_sigma_w2s: tuple[Annotated[float, Field(ge=0, le=1e4)], ...] = Field(
        (4.0, 16.0, 32.0), description="σ_w² values simulated (may be empty)")
    rho0: float = Field(0.1, ge=0, lt=1, description="input cosine ρ_0")
    n_inits: int = Field(25, ge=1, le=10_000, description="random networks per simulated σ_w²")
    n_seqs: int = Field(10, ge=1, le=10_000, description="input sequences per network")
    scales = {"quick": {"L": 100, "d": 256, "T": 64, "n_inits": 3, "n_seqs": 2}, "paper": {}}


class REMConfig(Config, ArchFields):
    """Figs. B.1/B.2: q_sa, S/log T, q^SA and p^SA against β: Eqs. (13)/(B.18) and finite-T simulations."""

    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        tuple(0.25 * i for i in range(1, 25)), min_length=2,
                                     description="β values (score std β √(log T), Eq. (10))")
    rhos: tuple[Annotated[float, Field(ge=0, lt=1)], ...] = Field(
        (0.0, 0.25, 0.5), min_length=1, description="input cosines ρ")
    Ts: tuple[Annotated[int, Field(ge=2, le=1_000_000)], ...] = Field(
        (256, 1024, 4096), min_length=1, description="sequence lengths T of the row statistics")
    n_rows: int = Field(128, ge=1, le=100_000, description="attention rows per draw (rows share the key field)")
    n_rep: int = Field(16, ge=1, le=100_000, description="draws of the score field per (β, ρ, T)")
    mc_T: int = Field(256, ge=2, le=8192, description="T of the full-matrix MC (p_sa, cosines)")
    scales = {"quick": {"n_rep": 8, "n_rows": 64}, "paper": {"n_rep": 64}}


class SpectrumConfig(Config, ArchFields):
    """Fig. C.1: eigenvalues of attention matrices, standard (σ_s fixed) vs rescaled (σ_s² = β² log T) init."""

    sigma_std: float = Field(1.0, gt=0, le=10, description="score std of the standard init, independent of T")
    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (0.5, 2.0), min_length=1, description="β of the rescaled inits, σ_s² = β² log T")
    T_show: int = Field(1024, ge=4, le=16384, description="T of the plotted spectra (one T × T matrix each)")
    Ts: tuple[Annotated[int, Field(ge=2, le=16384)], ...] = Field(
        (64, 128, 256, 512, 1024), min_length=2, description="T values of |λ_2| and the "
                                "bulk radius")
    n_rep: int = Field(4, ge=1, le=10_000, description="matrices per T")
    scales = {"quick": {"n_rep": 2}, "paper": {"n_rep": 8, "Ts": (64, 128, 256, 512, 1024, 2048)}}


class NoSkipConfig(Config, ArchFields):
    """Fig. C.3: a block without skip connections (α_SA = α_MLP = 0)."""

    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        tuple(0.1 * i for i in range(1, 101)), min_length=2,
                                     description="β grid of the theory maps")
    rhos: tuple[Annotated[float, Field(ge=0, lt=1)], ...] = Field(tuple(0.01 * i for i in range(0, 100)), min_length=2,
                                    description="input cosines ρ_in of the one-block map")
    rho0: float = Field(0.01, ge=0, lt=1, description="input cosine ρ_0 of the depth iteration")
    table_betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (1.5, 3.0, 10.0), description="β values simulated (and tabulated)")
    n_inits: int = Field(3, ge=1, le=10_000, description="random networks per simulated β")
    n_seqs: int = Field(2, ge=1, le=10_000, description="input sequences per network")
    scales = {"quick": {"d": 128, "T": 64}, "paper": {"d": 256, "T": 256}}


class AttentionMapsConfig(Config, ArchFields, CorpusMixin):
    """Fig. 1a/b: attention of a 1-layer, 1-head model at initialisation on one story, low vs high β."""

    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (0.5, 3.0), min_length=1, description="β of the maps shown (low, high)")
    n_tokens: int = Field(24, ge=2, le=512, description="tokens of the story shown (T)")
    scales = {"quick": {"d": 256, "n_stories": 500}, "paper": {"d": 768}}


class MLMTraining(BaseModel):
    """The optimiser and task fields every MLM training shares (App. A: AdamW, linear schedule, batch 64, p = 0.15)."""

    model_config = _MIXIN

    n_seeds: int = Field(1, ge=1, le=100, description="seeds (initialisation and data) per β × α_SA")
    steps: int = Field(1000, ge=1, le=10_000_000, description="optimiser steps")
    lr: float = Field(5e-4, gt=0, le=1, description="peak AdamW learning rate (linear warmup and decay)")
    batch: int = Field(64, ge=1, le=100_000, description="sequences per step (App. A: 64)")
    micro_batch: int | None = Field(None, ge=1, le=100_000, description="accumulate each step's gradient over "
                                    "micro-batches of this size (less memory, the same step; None: one pass)")
    warmup_ratio: float = Field(0.05, ge=0, lt=1, description="fraction of the steps in linear warmup")
    weight_decay: float = Field(0.01, ge=0, le=10, description="AdamW weight decay")
    max_grad_norm: float = Field(1.0, gt=0, le=1e6, description="gradient-norm clipping threshold")
    mask_prob: float = Field(0.15, gt=0, lt=1, description="MLM masking probability p")
    log_every: int = Field(25, ge=1, le=10_000_000, description="steps between logged evaluations (and checkpoints)")
    n_eval: int = Field(256, ge=8, le=100_000, description="held-out sequences of each evaluation")
    repeat_vocab: int = Field(64, ge=8, le=100_000, description="vocabulary of the repeat task")
    n_train: int = Field(20000, ge=16, le=10_000_000, description="sequences of the repeat task")

    def optim(self) -> Optim:
        return Optim(self.steps, self.lr, self.batch, self.warmup_ratio, self.weight_decay, self.max_grad_norm,
                     self.mask_prob, self.log_every, self.n_eval, self.micro_batch)


class MLMConfig(Config, ArchFields, CorpusMixin, MLMTraining):
    """Figs. 4, C.2: MLM training from several initialisations (one slot per β × α × seed)."""

    betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (0.5, 3.0, 5.0), min_length=1, description="β of the trained initialisations")
    alphas: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] = Field(
        (1.0,), min_length=1, description="α_SA of the trained initialisations")


class DeepMLMConfig(Config, ArchFields, CorpusMixin, MLMTraining):
    """Fig. 1f: a rank-collapse arm (deep, low β, α_SA below / above α_c(L)) and an entropy-collapse arm
    (shallower, β above / below β_c), each trained as one batched run."""

    rank_L: int = Field(60, ge=1, le=1000, description="depth L of the rank-collapse arm")
    rank_beta: float = Field(0.1, gt=0, le=1e4, description="β of the rank-collapse arm (below β_c)")
    rank_alphas: tuple[Annotated[float, Field(ge=0, le=1e6)], ...] = Field(
        (1.0, 4.0), min_length=1, description="α_SA < α_c(L) and > α_c(L)")
    entropy_L: int = Field(12, ge=1, le=1000, description="depth L of the entropy-collapse arm")
    entropy_betas: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
        (3.0, 0.5), min_length=1, description="β above / below β_c")
    entropy_alpha: float = Field(1.0, ge=0, le=1e6, description="α_SA of the entropy-collapse arm")
