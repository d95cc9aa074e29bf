"""Experiment configs of the specialization study: the paper's settings (figure captions, App. B) and scales.

Every config validates its θ law when built (``make_law``), so F mismatching the law, ν ≤ 0 or ν1 < ν2 for
the non-isotropic Gaussian stop with one line before any work. ``quick`` scales keep the physics and shrink
D (with the p-corrected theory, docs/studies/specialization.md), the number of Monte-Carlo samples and the time horizon.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from attnlab.core.config import Config, added
from attnlab.specialization.data.laws import ThetaLaw, make_law

Activation = Literal["softmax", "softmax1", "bsoftmax"]
LawName = Literal["flip", "onehot", "gaussian", "gaussian_iso"]
ACTIVATIONS: tuple[Activation, ...] = ("softmax", "softmax1", "bsoftmax")


def law_from(name: str, F: int, nu: float, nu1: float, nu2: float) -> ThetaLaw:
    """The θ law of a config: 'flip' F=2 uses (ν1, ν2); one-hot 'flip'/'onehot' and 'gaussian_iso' use ν;
    'gaussian' (non-isotropic, linspace ν1 → ν2) uses (ν1, ν2)."""
    if (name == "flip" and F == 2) or name == "gaussian":
        return make_law(name, F, nu1=nu1, nu2=nu2)
    return make_law(name, F, nu=nu)


class LawFields(BaseModel):
    """One θ law (paper 0, Sec. II) and the sequence length L, with the numerics of the reduced-loss gradient flow
    (App. B): the fields every experiment's config mixes in (``class XConfig(Config, LawFields)``; figure configs
    are those classes' ``with_defaults``, two levels below ``Config``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    n_mc: int = Field(100_000, ge=100, le=10_000_000, description="fixed Monte-Carlo samples of Eq. (10)")
    dt: float = Field(0.02, gt=0, le=1, description="Euler step δ / initial adaptive step")
    solver: Literal["euler", "adaptive"] = Field("euler", description="euler (paper, App. B) or adaptive RK23")
    eta: float = Field(1.0, gt=0, description="init scale: k_h ~ N(0, η²/D I)")
    init_noise_var: float = Field(1e-4, ge=0, description="theory init m ~ N(0, var), r = ηI + N(0, var)")
    symmetrize: bool = Field(True, description="sign-mirrored, stratified MC samples (docs: Notes on the paper)")
    law: LawName = Field("flip", description="flip (F=2: ν1,ν2; F>2: one-hot ν), onehot, gaussian, gaussian_iso")
    F: int = Field(2, ge=1, le=64, description="number of hidden spikes")
    nu: float = Field(2.0, gt=0, description="signal ν of one-hot / isotropic laws")
    nu1: float = Field(2.0, gt=0, description="ν1: constant direction (flip F=2) / largest variance (gaussian)")
    nu2: float = Field(2.0, gt=0, description="ν2: flipping direction (flip F=2) / smallest variance (gaussian)")
    L: int = Field(5, ge=2, le=1000, description="tokens per sequence")

    @model_validator(mode="after")
    def _law_is_valid(self):
        self.theta_law()
        return self

    def theta_law(self, **changes: float) -> ThetaLaw:
        values = {"nu": self.nu, "nu1": self.nu1, "nu2": self.nu2, **changes}
        return law_from(self.law, self.F, **values)

    def theory_kwargs(self) -> dict[str, Any]:
        """The flow's numerics as keyword arguments of :func:`attnlab.specialization.theory.predict`."""
        return {"n_mc": self.n_mc, "solver": self.solver, "dt": self.dt, "eta": self.eta,
                "init_noise_var": self.init_noise_var, "symmetrize": self.symmetrize}


def record_times(tau_max: float, every: float) -> np.ndarray:
    """τ = 0, every, 2·every, ... up to the multiple of ``every`` nearest ``tau_max``: the recorded times."""
    n = round(tau_max / every)
    return np.linspace(0.0, n * every, n + 1)


class SimVsTheoryConfig(Config, LawFields):
    """SGD at finite D against the gradient flow started from the SGD's empirical order parameters."""

    activations: tuple[Activation, ...] = Field(("softmax",), min_length=1, description="rows of the figure")
    H: int = Field(2, ge=1, le=256, description="heads")
    D: int = Field(10_000, ge=8, le=200_000, description="token dimension of the simulation")
    batch: int | None = Field(None, ge=1, description="N_b sequences per SGD step (None: N_b = D)")
    gamma: float = Field(0.02, gt=0, le=10, description="SGD learning rate γ; τ = γ t")
    tau_max: float = Field(30.0, gt=0, le=1e5, description="horizon τ_max of the SGD and of the flow (τ = γ t)")
    record_every: float = Field(0.5, gt=0, description="Δτ between recorded points")
    p_correction: bool = Field(True, description="finite-D p-corrected theory (docs: Notes on the paper)")
    symmetrize: bool = Field(False, description="the SGD's own init breaks the symmetries")
    noise_method: Literal["auto", "mt19937", "splitmix64", "philox"] = added(
        "auto", description="the SGD's token stream (Eq. (2) noise, a function of (seed, step, sequence)): auto = "
        "the device's default; mt19937 = torch.randn groups seeded per counter (CPU default); splitmix64 = "
        "SplitMix64 words + Box-Muller (GPU default, fused in two Triton kernels); philox = Triton's tl.randn4x "
        "(Philox-4x32-10) at each token's counter, fused in one Triton kernel per step")
    # N_mc = 1e5 also at quick scale: at 2e4 the fixed-sample bias shifts the B-softmax escape by ~1 in τ
    scales = {"quick": {"D": 500, "n_mc": 100_000, "solver": "adaptive", "record_every": 1.0}, "paper": {}}


class Panel(BaseModel):
    """One panel of a trajectory figure: activation, heads, signal and seed."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    activation: Activation = Field("softmax", description="attention activation σ: softmax, softmax-1 (sink) "
                                                          "or B-softmax (Eq. (4))")
    H: int = Field(2, ge=1, le=256, description="heads H")
    nu1: float = Field(2.0, gt=0, description="ν1 of the panel's law (flip F=2, gaussian)")
    nu2: float = Field(2.0, gt=0, description="ν2 of the panel's law (flip F=2, gaussian)")
    nu: float = Field(2.0, gt=0, description="ν of the panel's law (one-hot, isotropic)")
    seed: int = Field(0, ge=0, description="offset of the panel's init and Monte-Carlo streams")


class TrajectoriesConfig(Config, LawFields):
    """Theory trajectories m_h(τ) in feature space, one panel per (activation, H, ν, seed)."""

    panels: tuple[Panel, ...] = Field(
        min_length=1, description="list of {activation, H, nu1, nu2, nu, seed}",
        json_schema_extra={"allowed": "one or more mappings {activation: softmax | softmax1 | bsoftmax, H: 1..256, "
                                      "nu1, nu2, nu: > 0, seed: ≥ 0} (a key left out takes softmax, 2, 2.0, 2.0, "
                                      "2.0, 0), no other keys; (nu1, nu2, nu) must make a valid θ law with the "
                                      "config's law and F"})
    tau_max: float = Field(200.0, gt=0, le=1e5, description="horizon τ_max of the flow (12)")
    record_every: float = Field(0.5, gt=0, description="Δτ between recorded points")

    @model_validator(mode="after")
    def _panel_laws_are_valid(self):
        for p in self.panels:
            self.theta_law(nu=p.nu, nu1=p.nu1, nu2=p.nu2)
        return self


class FinalErrorConfig(Config, LawFields):
    """Final error E^∞ after training (theory to convergence) vs H and vs ν (Fig. 5), 3 activations + Bayes."""

    activations: tuple[Activation, ...] = Field(ACTIVATIONS, min_length=1, description="activations σ compared")
    laws: tuple[LawName, ...] = Field(("flip", "gaussian_iso"), min_length=1,
                                      description="θ laws (flip / one-hot spike, isotropic Gaussian)")
    Hs: tuple[Annotated[int, Field(ge=1, le=256)], ...] = Field(
        (1, 2, 3, 4, 5, 6, 7, 8), min_length=1, description="left panel: H grid")
    F_H: int = Field(4, ge=1, le=64, description="left panel: F")
    nu_H: float = Field(10.0, gt=0, description="left panel: ν")
    nus: tuple[float, ...] = Field((1, 2, 4, 6, 8, 10, 15, 20), description="right panel: ν grid (may be empty)",
                                   json_schema_extra={"allowed": "zero or more numbers, each > 0 (a valid ν of "
                                                                 "every law in laws with F = F_nu)"})
    F_nu: int = Field(2, ge=1, le=64, description="right panel: F")
    H_nu: int = Field(4, ge=1, le=256, description="right panel: H")
    seeds: int = Field(5, ge=1, le=100, description="theory inits per point (mean ± std)")
    tau_max: float = Field(1000.0, gt=0, le=1e6, description="training horizon τ_max of the flow (12)")
    eval_mc: int = Field(100_000, ge=1000, le=10_000_000, description="fresh MC samples for the final loss")
    bayes_mc: int = Field(400_000, ge=1000, le=100_000_000, description="samples of the Bayes risk")
    L: int = Field(5, ge=2, le=1000, description="tokens per sequence")
    dt: float = Field(0.1, gt=0, le=1, description="initial adaptive step (Euler step δ with solver=euler)")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    scales = {
        # 4 H × 3 ν × 3 inits (the claims read H = 4, 8) with fewer MC samples and a shorter horizon: the paper's
        # 8 × 8 grid × 5 inits (114 units) took ≈ 20 CPU-min, most of the quick check; this one ≈ 1/5 of it
        "quick": {"Hs": (1, 2, 4, 8), "nus": (2.0, 10.0, 20.0), "seeds": 3, "n_mc": 10_000, "eval_mc": 40_000,
                  "bayes_mc": 200_000, "tau_max": 600.0},
        "paper": {},
    }

    @model_validator(mode="after")
    def _laws_are_valid(self):
        for law in self.laws:
            law_from(law, self.F_H, self.nu_H, self.nu_H, self.nu_H)
            for nu in self.nus:
                law_from(law, self.F_nu, nu, nu, nu)
        return self


class PruningConfig(Config, LawFields):
    """Greedy head pruning after training (Fig. 7)."""

    activations: tuple[Activation, ...] = Field(ACTIVATIONS, min_length=1, description="activations σ compared")
    laws: tuple[LawName, ...] = Field(("flip", "gaussian_iso"), min_length=1,
                                      description="θ laws (flip / one-hot spike, isotropic Gaussian)")
    H: int = Field(8, ge=2, le=64, description="heads H trained, then pruned one by one")
    F: int = Field(4, ge=1, le=64, description="number of hidden spikes")
    nu: float = Field(10.0, gt=0, description="signal ν of the laws")
    seeds: int = Field(5, ge=1, le=100, description="theory inits per (law, activation)")
    tau_max: float = Field(1000.0, gt=0, le=1e6, description="training horizon τ_max of the flow (12)")
    eval_mc: int = Field(100_000, ge=1000, le=10_000_000, description="fresh MC samples of each loss while pruning")
    dt: float = Field(0.1, gt=0, le=1, description="initial adaptive step (Euler step δ with solver=euler)")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    # quick keeps the paper's 5 inits: the claim that specialised heads cost more to prune is a Welch interval over
    # inits, which 2 inits could not resolve (measured: lower end −0.077 for softmax-1 on the one-hot law)
    scales = {"quick": {"n_mc": 10_000, "eval_mc": 40_000, "tau_max": 600.0}, "paper": {}}

    @model_validator(mode="after")
    def _laws_are_valid(self):
        for law in self.laws:
            law_from(law, self.F, self.nu, self.nu, self.nu)
        return self


class AttentionMapsConfig(Config, LawFields):
    """Attention maps of trained models (Fig. 6): H×L maps for a few sequences, per activation."""

    activations: tuple[Activation, ...] = Field(ACTIVATIONS, min_length=1, description="activations σ compared")
    law: LawName = Field("gaussian_iso", description="flip (F=2: ν1,ν2; F>2: one-hot ν), onehot, gaussian, "
                                                      "gaussian_iso")
    F: int = Field(3, ge=1, le=64, description="number of hidden spikes")
    nu: float = Field(9.0, gt=0, description="signal ν of the law")
    H: int = Field(4, ge=1, le=256, description="heads H")
    sequences: int = Field(5, ge=1, le=100, description="sequences whose H×L attention maps are drawn")
    tau_max: float = Field(1000.0, gt=0, le=1e6, description="training horizon τ_max of the flow (12)")
    eval_mc: int = Field(100_000, ge=1000, le=10_000_000, description="samples for the off-target attention mass")
    dt: float = Field(0.1, gt=0, le=1, description="initial adaptive step (Euler step δ with solver=euler)")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    scales = {"quick": {"n_mc": 10_000, "eval_mc": 20_000, "tau_max": 400.0}, "paper": {}}


class McResamplingConfig(Config, LawFields):
    """Fixed vs resampled Monte-Carlo samples along the flow (Fig. 8)."""

    activation: Activation = Field("softmax", description="attention activation σ: softmax, softmax-1 (sink) "
                                                          "or B-softmax (Eq. (4))")
    H: int = Field(2, ge=1, le=256, description="heads H")
    L: int = Field(8, ge=2, le=1000, description="tokens per sequence")
    tau_max: float = Field(40.0, gt=0, le=1e5, description="horizon τ_max of the two Euler flows")
    record_every: float = Field(0.2, gt=0, description="Δτ between recorded points")
    scales = {"quick": {"n_mc": 20_000, "tau_max": 10.0}, "paper": {}}


class CosineGridConfig(Config, LawFields):
    """Final cosine similarity of two heads over a (ν1, ν2) grid (Fig. 11)."""

    activation: Activation = Field("softmax", description="attention activation σ: softmax, softmax-1 (sink) "
                                                          "or B-softmax (Eq. (4))")
    H: int = Field(2, ge=2, le=256, description="heads H (the first two are compared)")
    L: int = Field(4, ge=2, le=1000, description="tokens per sequence")
    nu1s: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
       (0.5, 1, 2, 4, 8), min_length=1, description="grid of ν1 (constant direction)")
    nu2s: tuple[Annotated[float, Field(gt=0, le=1e4)], ...] = Field(
       (0.5, 1, 2, 4, 8), min_length=1, description="grid of ν2 (flipping direction)")
    tau_max: float = Field(1000.0, gt=0, le=1e6, description="training horizon τ_max of the flow (12)")
    dt: float = Field(0.1, gt=0, le=1, description="initial adaptive step (Euler step δ with solver=euler)")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    scales = {"quick": {"nu1s": (0.5, 2, 8), "nu2s": (0.5, 2, 8), "n_mc": 10_000, "tau_max": 400.0}, "paper": {}}


class PhasesConfig(Config, LawFields):
    """Unspecialised phase (Prop. III.3): flip spike and isotropic Gaussian, theory from the paper's init."""

    activation: Activation = Field("softmax", description="attention activation σ: softmax, softmax-1 (sink) "
                                                          "or B-softmax (Eq. (4))")
    H: int = Field(2, ge=1, le=256, description="heads H")
    L: int = Field(10, ge=2, le=1000, description="tokens per sequence")
    tau_max: float = Field(5.0, gt=0, le=1e5, description="horizon τ_max of the two flows")
    record_every: float = Field(0.1, gt=0, description="Δτ between recorded points")
    scales = {"quick": {"n_mc": 20_000}, "paper": {}}


class EscapeConfig(Config, LawFields):
    """Escape time from the saddle vs D (Prop. III.4)."""

    activations: tuple[Activation, ...] = Field(("softmax", "bsoftmax"), min_length=1,
                                                description="activations σ compared")
    H: int = Field(2, ge=2, le=256, description="heads H")
    L: int = Field(10, ge=2, le=1000, description="tokens per sequence")
    Ds: tuple[Annotated[float, Field(ge=8, le=1e9)], ...] = Field((1e2, 1e3, 1e4, 1e5), min_length=2,
                                  description="dimensions D of the O(D^-1/2) inits, one flow each")
    threshold: float = Field(0.2, gt=0, description="τ_s: first τ with |m_12 − m_22| above this")
    tau_max: float = Field(300.0, gt=0, le=1e5, description="horizon τ_max of the flows")
    record_every: float = Field(0.25, gt=0, description="Δτ between recorded points")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    scales = {"quick": {"n_mc": 10_000, "tau_max": 100.0, "record_every": 0.5}, "paper": {}}


class SplitTimeConfig(Config, LawFields):
    """τ^s of Fig. 1 (flip ν = (2, 2), softmax, L = 10, H = 2) at D = 10^4 over ``seeds`` random inits."""

    activation: Activation = Field("softmax", description="attention activation σ: softmax, softmax-1 (sink) "
                                                          "or B-softmax (Eq. (4))")
    H: int = Field(2, ge=2, le=256, description="heads H")
    L: int = Field(10, ge=2, le=1000, description="tokens per sequence")
    D: int = Field(10_000, ge=8, le=10**9, description="dimension of the random inits (only m(0), q(0), p)")
    seeds: int = Field(32, ge=1, le=1000, description="random inits, batched through the flow")
    thresholds: tuple[Annotated[float, Field(gt=0)], ...] = Field((0.05, 0.2, 0.5), min_length=1,
                                          description="τ^s(a): first τ with |m_12 − m_22| > a")
    tau_max: float = Field(150.0, gt=0, le=1e5, description="horizon τ_max of the flow")
    record_every: float = Field(0.5, gt=0, description="Δτ between recorded points")
    solver: Literal["euler", "adaptive"] = Field("adaptive", description="euler (paper, App. B) or adaptive RK23")
    scales = {"quick": {"seeds": 6, "n_mc": 20_000, "tau_max": 100.0}, "paper": {}}
