"""Claims of paper 1 computed directly, without a run: the closed forms of Eqs. (13), (14), (16), (19), (B.22),
the β conventions of App. B.1, the Gaussian integrator of Eq. (18), a wide random MLP against its kernel
(Eqs. (17)-(18)) and the score moments of Eqs. (10)-(11). The worlds where they are false
(:mod:`attnlab.signal.claims.worlds`) patch names of this module (``beta_from_std``, ``mlp``, ``_draw_qk``)."""

from __future__ import annotations

import math

import torch

from attnlab.core.claims import claim
from attnlab.core.rng import generator
from attnlab.signal import theory
from attnlab.signal.arch import Architecture, beta_from_std
from attnlab.signal.model import init_block, mlp
from attnlab.signal.theory import kernels, rem

F64 = torch.float64


# -- exact identities (Eqs. (13), (14), (16), (19), (B.22), App. B.1) --------------------------------------------------

_CLOSED_FORMS = [  # (value, reference) pairs, the references evaluated by hand from the closed forms
    (lambda: rem.beta_c(0.0), 1.414214), (lambda: rem.beta_c(0.5), 2.0),
    (lambda: rem.q_sa(3, 0), 0.528595), (lambda: rem.q_sa(2, 0.2), 0.209431), (lambda: rem.q_sa(5, 0.5), 0.6),
    (lambda: rem.q_sa(1.3, 0.0), 0.0),
    (lambda: rem.sa_cosine(3, 0.1), 0.180902), (lambda: rem.sa_cosine(2, 0.2), 0.544152),
    (lambda: rem.sa_cosine(5, 0.5), 0.625), (lambda: rem.sa_cosine(1, 0.3), 1.0),
    (lambda: kernels.relu_f(0.0), 1 / math.pi), (lambda: kernels.relu_f(1.0), 1.0), (lambda: kernels.relu_f(-1.0), 0.0),
    (lambda: kernels.mlp_moments(torch.tensor(1.0), "relu", 2.0, 0.0)[0], 2.0),
    (lambda: theory.block(0.05, Architecture(beta=0.1))["rho"], 0.065841),
    (lambda: theory.block(0.05, Architecture(beta=3.0))["rho"], 0.060603),
    (lambda: theory.block(0.3, Architecture(beta=2.0, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0))["rho"], 0.515784),
    (lambda: theory.block(0.3, Architecture(beta=0.5, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0))["rho"], 0.542930),
]
claim("signal.closed_forms", "Eqs. (13), (14), (16), (19), (B.22)",
      "β_c(ρ) = √(2/(1−ρ)), q_sa = 1 − β_c/β, Eq. 14, the arc-cosine kernel and the full block map give the "
      "values worked out by hand", "max |value − reference| over 18 values (β_c, q_sa, Eq. 14, f(c), q², Eq. 19)",
      lambda ctx: max(abs(float(f()) - e) for f, e in _CLOSED_FORMS), 1e-5, "le")
claim("signal.bert_beta_paper", "App. B.1", "BERT-base (std 0.02, d=768, H=12, T=512) has β_eff ≈ 0.01",
      "β_eff = σ² d_k/√(log T), the paper's convention",
      lambda ctx: beta_from_std(0.02, 768, 12, 512, "authors_dk"), 0.01025, "approx", 1e-4)
claim("signal.bert_beta_per_head", "App. B.1, Eq. (11)",
      "in per-head score units BERT-base has β = H β_eff ≈ 0.123, far below β_c = √2",
      "β = σ² d/√(log T)", lambda ctx: beta_from_std(0.02, 768, 12, 512), 0.1230, "approx", 1e-4)


def _relu_quadrature(ctx) -> float:
    c = torch.linspace(-1, 1, 41, dtype=F64)
    return float((kernels.gauss_cross("relu", 1.7, c) / (1.7 / 2) - kernels.relu_f(c)).abs().max())


claim("signal.relu_kernel_quadrature", "Eqs. (18), (B.22)",
      "the numerical Gaussian integrator of Eq. 18 reproduces the ReLU arc-cosine kernel",
      "max over 41 cosines of |quadrature − f(c)| (q¹ = 1.7)", _relu_quadrature, 1e-4, "le")


def _mlp_vs_kernel(ctx) -> float:
    """Wide random MLPs (d = d_ff = 1024, 5 draws, T = 64 tokens) vs Eqs. 17–18 at the measured input cosine."""
    gen = generator(0)
    worst = 0.0
    for act in ("relu", "tanh"):
        arch = Architecture(d=1024, T=64, sigma_w2=2.0, sigma_b2=0.05, activation=act)
        for c in (0.05, 0.3, 0.9):
            from attnlab.signal.data import mean_cosine, prescribed_cosine

            x = prescribed_cosine(c, 5, 1, 64, 1024, gen)
            y = mlp(x, init_block(arch, 5, gen), act)
            c_in = float(mean_cosine(x).mean())
            q2, p2, _ = kernels.mlp_moments(torch.tensor(c_in), act, 2.0, 0.05)
            worst = max(worst, abs(float(mean_cosine(y).mean()) - float(p2 / q2)))
    return worst


claim("signal.mlp_kernel_vs_wide_mlp", "Eqs. (17)-(18), (B.22)",
      "a wide random ReLU / tanh MLP maps cosine c to p²/q² of the mean-field kernel",
      "d = d_ff = 1024, σ_w² = 2, σ_b² = 0.05, 5 draws × 64 tokens; max |Δ| over c ∈ {0.05, 0.3, 0.9} × 2 φ",
      _mlp_vs_kernel, 0.02, "le")


def _draw_qk(n: int, dk: int, d: int, std: float, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """n independent (W_Q, W_K) of one head, i.i.d. N(0, std²) entries (Eq. (11)'s initialisation)."""
    return tuple(torch.randn((n, dk, d), generator=gen, dtype=F64) * std for _ in range(2))


def _score_moments(ctx) -> tuple[float, float]:
    """Eq. (10) against the sample Gram of 8 tokens (d = 64, 4000 draws); Eq. (11) variance in both conventions."""
    from attnlab.signal.data import prescribed_cosine

    gen = generator(0)
    d, T, n = 64, 8, 4000
    x = prescribed_cosine(0.4, 1, 1, T, d, gen, dtype=F64)[0, 0]
    G = x @ x.T / d  # unit diagonal (RMS-normalised tokens)
    corr_err, var_err = 0.0, 0.0
    for H, conv in ((1, "per_head_score"), (4, "per_head_score"), (4, "authors_dk")):
        arch = Architecture(d=d, H=H, T=T, beta=1.0, beta_convention=conv)
        dk = d // H
        wq, wk = _draw_qk(n, dk, d, arch.qk_std, gen)
        s = torch.einsum("nkd,ad,nke,be->nab", wq, x, wk, x) / math.sqrt(dk)  # (n, T, T), the first head
        var = s.pow(2).mean(0)
        var_err = max(var_err, abs(float(var.mean()) / (arch.beta_score**2 * math.log(T)) - 1))
        if H == 1:
            z = (s / var.sqrt()).reshape(n, T * T)
            corr = (z.T @ z / n).reshape(T, T, T, T)           # Corr(s_ab, s_cd)
            pred = torch.einsum("ac,bd->abcd", G, G)           # Eq. (10): ∝ G_ac G_bd
            a, b, c, e = torch.meshgrid(*(torch.arange(T),) * 4, indexing="ij")
            kinds = {"same query": (a == c) & (b != e) & (a != b) & (a != e),
                     "same key": (b == e) & (a != c) & (a != b) & (c != b),
                     "distinct": (a != b) & (a != c) & (a != e) & (b != c) & (b != e) & (c != e)}
            for mask in kinds.values():
                corr_err = max(corr_err, float((corr[mask] - pred[mask]).abs().mean()))
    return corr_err, var_err


claim("signal.score_covariance_eq10", "Eq. (10), App. B.2",
      "attention scores are correlated Gaussians with E s_ab s_cd ∝ ρ_ac ρ_bd (the correlation hierarchy)",
      "d = 64, T = 8, ρ = 0.4, 4000 draws of (W_Q, W_K): mean |Corr(s_ab, s_cd) − G_ac G_bd| over the "
      "same-query, same-key and all-distinct quadruples (worst kind), against the sample Gram G",
      lambda ctx: _score_moments(ctx)[0], 0.03, "le")
claim("signal.score_variance_eq11", "Eq. (11), App. B.1",
      "Var(s) = β² log T for the per-head convention, (Hβ)² log T for the authors' d_k convention",
      "as above, H ∈ {1, 4} and both conventions; relative error of the mean Var(s_ab) (worst setting)",
      lambda ctx: _score_moments(ctx)[1], 0.05, "le")
