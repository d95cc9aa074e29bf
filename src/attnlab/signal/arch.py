"""The architecture both sides of the paired API read: one validated, immutable description of a transformer
encoder at initialisation (paper Sec. 2), and the β conventions of Eq. (11) and App. B.1.

``Architecture`` is what ``train.simulate`` builds random networks from and what ``theory.predict`` iterates
Eq. (19) for. Experiment configs inherit its fields (flat keys, so ``--set beta=3`` works) and call
``config.arch()``.

β conventions (Eq. (11), App. B.1; docs/studies/signal.md, Notes on the paper): the theory's β is the *per-head score*
scale, Var(s_ab) = β² log T. The authors' code sets σ_qk² = β √(log T)/d_k, so with H heads its β is the per-head β
divided by H (``beta_convention="authors_dk"``). ``T_init`` is the length the Q/K scale was set for (e.g. the 512
positions of BERT) and ``T`` the number of keys actually attended; the theory then sees β_T = β √(log T_init / log
T) (docs/studies/signal.md, Notes on the paper).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import torch
from pydantic import BaseModel, ConfigDict, Field, model_validator

Activation = Literal["relu", "tanh", "gelu", "linear"]
Norm = Literal["rms", "layernorm"]
Position = Literal["post", "pre"]
Convention = Literal["per_head_score", "authors_dk"]
ACTIVATIONS = get_args(Activation)


def phi(name: str, u: torch.Tensor) -> torch.Tensor:
    """The MLP's non-linearity φ ``name`` (relu | tanh | gelu | linear; paper Sec. 2), which the model applies and the
    theory's kernels integrate."""
    if name == "relu":
        return torch.relu(u)
    if name == "tanh":
        return torch.tanh(u)
    if name == "gelu":
        return torch.nn.functional.gelu(u)
    if name == "linear":
        return u
    raise ValueError(f"activation {name!r} is not allowed; allowed: {', '.join(ACTIVATIONS)}")


class Architecture(BaseModel):
    """A post-LN (or pre-LN) transformer encoder at initialisation: sizes, Q/K scale β, residual strengths α
    (which multiply the skip branch, Eq. (5)) and weight variances in fan-in units (Sec. 2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    d: int = Field(128, ge=2, le=65536, description="model width")
    H: int = Field(1, ge=1, le=1024, description="attention heads (must divide d)")
    d_ff: int | None = Field(None, ge=1, le=1_000_000, description="MLP hidden width (default d, as the authors)")
    T: int = Field(64, ge=2, le=1_000_000, description="sequence length = number of keys attended")
    T_init: int | None = Field(None, ge=2, le=1_000_000, description="length the Q/K scale is set for (default T)")
    L: int = Field(12, ge=1, le=10_000, description="depth (transformer blocks)")
    beta: float = Field(0.1, gt=0, le=1e4, description="Q/K scale: Var(s) = β² log T_init (Eq. (11))")
    beta_convention: Convention = Field("per_head_score", description="per_head_score (theory) | authors_dk")
    alpha_sa: float = Field(1.0, ge=0, le=1e6, description="α_SA: skip strength around self-attention (Eq. (5))")
    alpha_mlp: float = Field(1.0, ge=0, le=1e6, description="α_MLP: skip strength around the MLP (Eq. (5))")
    sigma_v2: float = Field(0.2, ge=0, le=1e4, description="σ_v²: value weights N(0, σ_v²/d)")
    sigma_w2: float = Field(0.2, ge=0, le=1e4, description="σ_w²: MLP weights N(0, σ_w²/fan-in)")
    sigma_w2_out: float | None = Field(None, ge=0, le=1e4, description="σ² of W_2 if it differs from σ_w² (HF)")
    sigma_b2: float = Field(4e-4, ge=0, le=1e4, description="σ_b²: every bias (value, b1, b2) N(0, σ_b²)")
    activation: Activation = Field("relu", description="MLP non-linearity: relu | tanh | gelu | linear")
    norm: Norm = Field("rms", description="rms: √d x/‖x‖ (Eq. (1), the theory) | layernorm (centres, HF)")
    ln_position: Position = Field("post", description="post (the paper) | pre (an extension)")

    @model_validator(mode="after")
    def _heads_divide_width(self):
        if self.d % self.H:
            raise ValueError(f"key 'H' = {self.H}: the number of heads must divide the width d = {self.d} "
                             f"(allowed: a divisor of {self.d}, e.g. 1, 2, 4)")
        return self

    # -- derived -------------------------------------------------------------------------------------
    @property
    def d_k(self) -> int:
        return self.d // self.H

    @property
    def ff(self) -> int:
        return self.d_ff or self.d

    @property
    def sw2_out(self) -> float:
        return self.sigma_w2 if self.sigma_w2_out is None else self.sigma_w2_out

    @property
    def t_init(self) -> int:
        return self.T_init or self.T

    @property
    def beta_score(self) -> float:
        """Per-head score β at the initialisation length: std(s)/√(log T_init)."""
        return self.beta * (self.H if self.beta_convention == "authors_dk" else 1)

    @property
    def beta_theory(self) -> float:
        """The β the REM of T keys sees: β_score √(log T_init / log T) (Eq. (11) at the attended length)."""
        return self.beta_score * math.sqrt(math.log(self.t_init) / math.log(self.T))

    @property
    def qk_std(self) -> float:
        """Per-entry std of W_Q and W_K giving Var(s) = β_score² log T_init (Eq. (11), exact second moment)."""
        return qk_std_from_beta(self.beta_score, self.d, self.t_init)

    def replace(self, **changes) -> Architecture:
        return type(self)(**{**self.model_dump(), **changes})


def qk_std_from_beta(beta: float, d: int, T: int) -> float:
    """σ_qk with σ_qk⁴ d² = β² log T (per-head score convention of Eq. (11))."""
    return math.sqrt(beta * math.sqrt(math.log(T)) / d)


def beta_from_std(sigma: float, d: int, H: int, T: int, convention: Convention = "per_head_score") -> float:
    """β of a model whose W_Q, W_K entries have std σ (App. B.1).

    ``authors_dk`` is the paper's B.1 formula β_eff = σ² d_k/√(log T) (BERT-base: 0.0102);
    ``per_head_score`` is the score scale the theory needs, std(s)/√(log T) = σ² d/√(log T) = H β_eff.
    """
    width = d // H if convention == "authors_dk" else d
    return sigma**2 * width / math.sqrt(math.log(T))


def std_from_beta(beta: float, d: int, H: int, T: int, convention: Convention = "per_head_score") -> float:
    """Inverse of :func:`beta_from_std`."""
    width = d // H if convention == "authors_dk" else d
    return math.sqrt(beta * math.sqrt(math.log(T)) / width)


def convert_beta(beta: float, H: int, to: Convention, frm: Convention = "per_head_score") -> float:
    """β in one convention → β in the other (per-head score β = H × authors' β)."""
    score = beta * H if frm == "authors_dk" else beta
    return score / H if to == "authors_dk" else score
