"""Configs of the clustering study: the paper's defaults (paper Sec. 2, App. A; docs notes 1-5) and scales.

``TrainConfig`` is one training run of S seeds trained together (seeds ``seed .. seed+n_seeds-1``). The
``pal`` preset is the model and training of the public code the paper's figures came from (facebookresearch/pal,
``projects/visualization/train.py``, its ``grid`` defaults; described behaviour, no code): gain-free RMSNorm
x/(sqrt(mean x²) + 1e-5) before the attention and before the MLP, q ~ U(±1/sqrt(d)) (an nn.Linear(d, 1)), MLP
width 32 with biases and the nested per-neuron initialisation, a 3-row token table (so 3 logits), Adam 3e-3,
batch 32, and pal's random streams (seed s = pal's ``--seed s``, ``streams.py``); explicitly given keys still win
over the preset. pal's other knobs map as: ``mlp_lr_discount`` δ → ``mlp_lr_factor`` = 1/δ, ``ffn_dim`` → ``h``,
``ffn_bias`` → ``mlp_bias``, ``ffn_dropout`` → ``mlp_dropout``, ``activation`` (any torch.nn.functional name of
``MLP_ACTIVATIONS``), ``nb_emb`` → ``n_emb`` (its ``run`` command leaves 2 rows, its ``grid`` sets 3),
``MAX_FFN_DIM`` → ``pal_table_rows`` (2048; its ``grid --ablation ffn_dim`` sets 10000). pal never
leaves training mode, so with dropout its per-epoch metrics are measured with dropout on: ``eval_dropout="on"``
does the same (default "off": attnlab evaluates without it).
"""

from __future__ import annotations

from typing import Any, Literal

import torch
from pydantic import Field, field_validator, model_validator

from attnlab.clustering.activations import canonical
from attnlab.clustering.data import Task, TestMode
from attnlab.clustering.model import MLP_ACTIVATIONS, ModelSpec, Norm
from attnlab.core.config import Config, added

PRESETS: dict[str, dict[str, Any]] = {
    "paper": {},
    "pal": {"norm": "rmsnorm", "norm_gain": False, "norm_eps": 1e-5, "rms_eps": "outside", "mlp_bias": True,
            "h": 32, "n_emb": 3, "q_init": "uniform", "mlp_init": "nested", "activation": "gelu", "mlp_dropout": 0.0,
            "lr": 3e-3, "batch_size": 32, "streams": "pal"},
}


class TrainConfig(Config):
    """Adam on sparse modular addition, S seeds vectorised (paper App. A)."""

    preset: Literal["paper", "pal"] = Field("paper",
                                            description="paper (paper Sec. 2) or pal (the public code's model)")
    # task (paper Sec. 2)
    p: int = Field(2, ge=2, le=97, description="modulus = vocabulary size")
    N: int = Field(12, ge=1, le=256, description="sequence length")
    k: int = Field(5, ge=1, le=256, description="number of informative positions")
    informative: tuple[int, ...] | None = Field(
        None, description="the informative positions I (paper Sec. 2), 0-based (null: the first k)",
        json_schema_extra={"allowed": "k distinct positions, each in 0 .. N−1, or null"})
    n_train: int = Field(2048, ge=1, le=10_000_000, description="training points, drawn with replacement")
    test_mode: TestMode = Field("iid", description="iid fresh draws | complement of the train set | full space")
    n_test: int = Field(2048, ge=1, le=10_000_000, description="test points (iid) / cap on unseen sentences")
    # model (paper Sec. 2)
    d: int = Field(2, ge=1, le=4096, description="embedding dimension")
    h: int | None = Field(None, ge=1, le=65536, description="MLP width (default 4d)")
    n_emb: int | None = Field(None, ge=2, le=4096, description="token-table rows (default p)")
    norm: Norm = Field("sphere", description="sphere (paper) | rmsnorm | smooth (Sec. 4.4 remedy) | smooth_inf")
    norm_eps: float = Field(1e-5, ge=0, description="eps of rmsnorm")
    norm_gain: bool = Field(False, description="learnable rmsnorm gains")
    mlp_bias: bool = Field(False, description="biases in the MLP (pal preset)")
    rms_eps: Literal["inside", "outside"] = Field("inside", description="rmsnorm's eps inside the root "
                                                  "(x/sqrt(mean x² + eps), torch) or outside (x/(rms + eps), pal)")
    q_init: Literal["normal", "uniform", "zeros"] = Field("normal", description="initial query law")
    activation: str = Field("gelu", description="MLP non-linearity σ (GeLU in the paper): any element-wise "
                            "torch.nn activation by name", json_schema_extra={"allowed": " | ".join(MLP_ACTIVATIONS)})
    mlp_dropout: float = Field(0.0, ge=0, lt=1, description="dropout on the MLP's output in training (pal's place)")
    eval_dropout: Literal["off", "on"] = added("off", description="per-epoch metrics measured with the dropout "
                                               "on (pal's record: it never leaves training mode) or off")
    mlp_init: Literal["independent", "nested"] = Field("independent", description="MLP init: one stream per tensor, "
                                                       "or one row per neuron so neuron i does not depend on h (pal)")
    streams: Literal["attnlab", "pal"] = Field("attnlab", description="random streams: attnlab's named per-seed "
                                               "streams, or pal's (seed s = pal's --seed s)")
    pal_table_rows: int = added(2048, ge=1, le=1_000_000, description="rows of pal's MLP table (its MAX_FFN_DIM: "
                                "2048, its ffn_dim ablation 10000), drawn before the other weights; streams 'pal' only")
    # optimisation (paper App. A)
    lr: float = Field(3e-3, gt=0, le=10, description="Adam learning rate of E, P, q, V")
    mlp_lr_factor: float = Field(1.0, gt=0, le=100, description="γ_mlp: the MLP (W, U) learns at lr·γ_mlp")
    beta1: float = Field(0.9, ge=0, lt=1, description="Adam β1, first-moment decay (paper App. A)")
    beta2: float = Field(0.999, ge=0, lt=1, description="Adam β2, second-moment decay (paper App. A)")
    adam_eps: float = Field(1e-8, gt=0, le=1, description="Adam ε added to the root of the second moment")
    weight_decay: float = Field(0.0, ge=0, le=10, description="L2 weight decay added to the gradient "
                                "(as torch.optim.Adam), 0: off (Sec. 4.4 remedy)")
    batch_size: int = Field(32, ge=1, le=10_000_000, description="mini-batch size (n_train = full batch)")
    epochs: int = Field(1000, ge=0, le=1_000_000, description="passes over the training set")
    grad_clip: float | None = Field(None, gt=0, description="per-seed max gradient norm (off by default)")
    n_seeds: int = Field(1, ge=1, le=100_000, description="seeds trained together, vectorised")
    dtype: Literal["float32", "float64"] = Field("float32", description="floating-point precision of training")
    cuda_graph: bool = Field(True, description="on CUDA, replay each epoch's Adam steps as one captured graph (the "
                                               "same kernels and numbers; one replay, not ~120 launches a step)")
    # recording
    log_every: int = Field(1, ge=1, description="epochs between full-batch metrics")
    step_log_every: int = Field(1, ge=0, description="steps between mini-batch loss/grad-norm records (0: off)")
    snapshot_every: int = Field(1, ge=0, description="epochs between parameter snapshots (0: first and last)")
    head_metrics: bool = Field(True, description="cluster score, attention mass, R_suffix, R_perm every log")

    scales = {"quick": {}, "paper": {}}

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("preset", "paper") in PRESETS:
            data = {**PRESETS[data.get("preset", "paper")], **data}
        return data

    @field_validator("activation", mode="before")
    @classmethod
    def _activation_name(cls, name: Any) -> Any:
        return canonical(name) if isinstance(name, str) else name    # GELU, LeakyReLU → gelu, leaky_relu

    @model_validator(mode="after")
    def _consistent(self):
        self.task()
        self.spec()
        if self.batch_size > self.n_train:
            raise ValueError(f"key 'batch_size' = {self.batch_size}: larger than n_train = {self.n_train}")
        if self.streams == "pal":
            need = {"q_init": "uniform", "mlp_init": "nested", "norm_gain": False, "test_mode": "iid"}
            bad = {k: v for k, v in need.items() if getattr(self, k) != v}
            if bad:
                k = next(iter(bad))
                raise ValueError(f"key '{k}' = {getattr(self, k)!r}: streams 'pal' draws pal's tensors, which need "
                                 f"{k} = {bad[k]!r}")
        elif self.pal_table_rows != 2048:
            raise ValueError(f"key 'pal_table_rows' = {self.pal_table_rows}: only streams 'pal' draws pal's MLP table "
                             "(set streams=pal or preset=pal)")
        return self

    def task(self) -> Task:
        return Task(self.p, self.N, self.k, self.informative)

    def spec(self) -> ModelSpec:
        return ModelSpec(p=self.p, N=self.N, d=self.d, h=self.h, n_emb=self.n_emb, norm=self.norm,
                         norm_eps=self.norm_eps, norm_gain=self.norm_gain, mlp_bias=self.mlp_bias,
                         q_init=self.q_init, rms_eps=self.rms_eps, activation=self.activation,
                         mlp_dropout=self.mlp_dropout, mlp_init=self.mlp_init)

    def seeds(self) -> list[int]:
        return list(range(self.seed, self.seed + self.n_seeds))

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch.float64 if self.dtype == "float64" else torch.float32

    @property
    def steps_per_epoch(self) -> int:
        return -(-self.n_train // self.batch_size)


def as_train_config(cfg: TrainConfig, **changes: Any) -> TrainConfig:
    """The plain ``TrainConfig`` part of an experiment config (plus ``changes``): what one training unit runs."""
    values = {k: v for k, v in cfg.model_dump().items() if k in TrainConfig.model_fields}
    return TrainConfig(**{**values, **changes})


def unit_config(config: TrainConfig, **changes: Any) -> TrainConfig:
    """The plain ``TrainConfig`` of one sweep unit: ``config``'s training fields, lean recording, then ``changes``."""
    return as_train_config(config, **{"step_log_every": 0, "snapshot_every": 0, "head_metrics": False, **changes})

