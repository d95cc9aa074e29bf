"""Exact identities of paper 0 registered as claims: Eqs. (3)-(4), (8)-(11), Prop. III.1, Lemmas A.1, A.3.

Each measure returns the largest deviation from an identity that holds to round-off (or, for Prop. III.1 at
finite D, to the O(1/D) finite-size and Monte-Carlo error): they check that the theory's reduced variables
describe the network, independently of any training run.
"""

from __future__ import annotations

import numpy as np
import torch

from attnlab.core import rng
from attnlab.core.claims import ClaimContext, claim
from attnlab.specialization import theory
from attnlab.specialization.claims.worlds import IDENTITY_WORLDS
from attnlab.specialization.data import iter_sequences, make_law, sample_spikes, symsqrt
from attnlab.specialization.model.activations import bsoftmax, softmax, softmax1
from attnlab.specialization.model.attention import attend, order_parameters

F64 = torch.float64
ACTS = ("softmax", "softmax1", "bsoftmax")


def activation_identities(ctx: ClaimContext | None = None) -> float:
    """Eqs. (3)-(4), (17): softmax rows sum to 1; softmax-1 rows sum to v S/(e^b + S); B-softmax sums to H and is shift
    invariant in b; softmax-1 with b = −50 is v·softmax. Largest violation."""
    g = rng.generator(0)
    chi = 2 * torch.randn(7, 3, 5, generator=g, dtype=F64)
    b = torch.randn(7, 3, generator=g, dtype=F64)
    v = 1.3
    S = chi.exp().sum(-1)
    errs = [
        (softmax(chi).sum(-1) - 1).abs().max(),
        (softmax1(chi, b, v).sum(-1) - v * S / (b.exp() + S)).abs().max(),
        (bsoftmax(chi, b).sum((-2, -1)) - 3).abs().max(),
        (bsoftmax(chi, b + 0.7) - bsoftmax(chi, b)).abs().max(),
        (softmax1(chi, torch.full_like(b, -50.0), v) - v * softmax(chi)).abs().max(),
    ]
    return float(max(errs))


def loss_at_origin(ctx: ClaimContext | None = None) -> float:
    """Eq. (10) at m = 0, r = 0, where the reduced loss is exact: (L−1)/L for softmax and B-softmax, 1 − 2s + L s² with
    s = v/(L + e^b̃) for softmax-1. Largest deviation over L ∈ {4, 5, 10}."""
    worst = 0.0
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    for L in (4, 5, 10):
        prep = theory.mc_samples(law, L, 2, 500, seed=0).prepare()
        m, r = torch.zeros(1, 2, 2, dtype=F64), torch.zeros(1, 2, 2, dtype=F64)
        for act in ACTS:
            b, v = (0.3, 1.2) if act == "softmax1" else (0.0, 1.0)
            got = float(theory.reduced_loss(m, r, torch.full((1, 2), b, dtype=F64), torch.tensor([v], dtype=F64),
                                            prep, act)[0])
            s = v / (L + np.exp(b))
            want = 1 - 2 * s + L * s * s if act == "softmax1" else (L - 1) / L
            worst = max(worst, abs(got - want))
    return worst


FINITE_D_SEQUENCES = 20_000  # fresh sequences of the network's population loss (Prop. III.1 check)


def finite_d_consistency(ctx: ClaimContext | None = None, D: int = 2000, n: int | None = None) -> float:
    """Prop. III.1: the empirical population loss (7) of a network with keys K = m_target K* + R (R ⊥ K*,
    R Rᵀ = 0.3 I) at D = 2000, over 2·10^4 fresh sequences, against the reduced loss Ẽ(m, r) (N_mc = 10^5) at
    its actual order parameters. Largest |difference| over the three activations."""
    n = FINITE_D_SEQUENCES if n is None else n
    g = rng.generator(11)
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    K_star = sample_spikes(2, D, generator=g, dtype=F64)
    R = torch.randn(2, D, generator=g, dtype=F64)
    Q, _ = torch.linalg.qr(K_star.T)  # orthonormal basis of span K*
    R = R - (R @ Q) @ Q.T
    R = np.sqrt(0.3) * torch.linalg.qr(R.T)[0].T
    K = torch.tensor([[1.0, 0.8], [1.0, -0.8]], dtype=F64) @ K_star + R
    op = order_parameters(K, K_star)
    prep = theory.mc_samples(law, 5, 2, 100_000, seed=12, symmetrize=False).prepare(symsqrt(op.p))
    m_tilde = op.m @ torch.linalg.inv(symsqrt(op.p))  # the p-corrected flow's variable
    worst = 0.0
    zero_b, one_v = torch.zeros(2, dtype=F64), torch.tensor(1.0, dtype=F64)
    for act in ACTS:
        total = 0.0
        for batch in iter_sequences(law, K_star, n, L=5, generator=rng.generator(13), chunk=1000,
                                    dtype=F64):
            out = attend(batch.X, K, zero_b, one_v, act)["output"]
            total += float(((batch.y - out) ** 2).sum()) / D
        reduced = float(theory.reduced_loss(m_tilde[None], op.r[None], None, None, prep, act)[0])
        worst = max(worst, abs(total / n - reduced))
    return worst


def permutation_invariance(ctx: ClaimContext | None = None) -> float:
    """Lemma A.1: started on the unspecialised manifold with head-symmetrised MC samples, the heads stay
    identical: max_τ max_h ||m_h − m_1|| over τ ∈ [0, 20]."""
    law = make_law("flip", 2, nu1=2.0, nu2=2.0)
    m0 = torch.tensor([[[0.1, 0.05], [0.1, 0.05]]], dtype=F64)
    r0 = 0.9 * torch.eye(2, dtype=F64) + 0.1
    q0 = m0 @ m0.mT + r0 @ r0.mT
    tr = theory.predict("softmax", law, 5, 2, np.linspace(0, 20, 21), m0=m0, q0=q0, n_mc=4000, symmetrize=True,
                        head_cyclic=True, solver="adaptive", dt=0.1)
    m = tr["m"][:, 0]
    return float(np.abs(m - m[:, :1]).max())


def r_gradient_at_zero(ctx: ClaimContext | None = None) -> float:
    """Lemma A.3: ∇_r Ẽ(m, 0, b, v) = 0 with antithetic ξ samples, for random m; largest entry."""
    law = make_law("gaussian", 2, nu1=3.0, nu2=1.0)
    prep = theory.mc_samples(law, 5, 3, 4000, seed=3, antithetic=True).prepare()
    g = rng.generator(4)
    m = torch.randn(4, 3, 2, generator=g, dtype=F64)
    r = torch.zeros(4, 3, 3, dtype=F64)
    worst = 0.0
    for act in ACTS:
        _, (_, gr, _, _) = theory.loss_and_grad(m, r, torch.zeros(4, 3, dtype=F64), torch.ones(4, dtype=F64), prep,
                                               act)
        worst = max(worst, float(gr.abs().max()))
    return worst


def order_parameter_extraction(ctx: ClaimContext | None = None) -> float:
    """Eqs. (8)-(9): for K = A K* + R with R ⊥ K* and orthonormal K*: m = A and r rᵀ = R Rᵀ; symsqrt is symmetric."""
    g = rng.generator(5)
    K_star = sample_spikes(3, 300, generator=g, dtype=F64, orthonormal=True)
    A = torch.randn(4, 3, generator=g, dtype=F64)
    R = torch.randn(4, 300, generator=g, dtype=F64) / 300**0.5
    R = R - (R @ K_star.T) @ K_star
    op = order_parameters(A @ K_star + R, K_star)
    return float(max((op.m - A).abs().max(), (op.rr - R @ R.T).abs().max(), (op.r - op.r.T).abs().max(),
                     (op.r @ op.r - op.rr).abs().max()))


for _id, _ref, _statement, _fn, _tol in (
    ("activation_identities", "Eqs. (3)-(4), (17)",
     "softmax rows sum to 1, softmax-1 to vS/(e^b+S), B-softmax to H and is invariant to b + c",
     activation_identities, 1e-12),
    ("loss_at_origin", "Eq. (10), Lemma A.4",
     "at m = r = 0 the reduced loss is (L−1)/L (softmax, B-softmax) and 1 − 2s + Ls² (softmax-1)",
     loss_at_origin, 1e-12),
    ("finite_d_consistency", "Prop. III.1, Eqs. (7), (10)-(11)",
     "the network's population loss at D = 2000 equals the reduced loss of its order parameters",
     finite_d_consistency, 0.01),
    ("permutation_invariance", "Lemma A.1",
     "the unspecialised manifold m_h = m_1 is invariant under the flow", permutation_invariance, 1e-6),
    ("r_gradient_at_zero", "Lemma A.3", "r = 0 is a fixed point: ∇_r Ẽ(m, 0, b, v) = 0",
     r_gradient_at_zero, 1e-10),
    ("order_parameter_extraction", "Eqs. (8)-(9)",
     "m = K K*ᵀ and r rᵀ = q − m p⁻¹ mᵀ recover the planted decomposition K = A K* + R",
     order_parameter_extraction, 1e-10),
):
    claim(id=f"specialization.{_id}", ref=_ref, statement=_statement,
          how=(_fn.__doc__ or "").split("\n\n")[0].replace("\n", " ").strip(), measure=_fn,
          expected=_tol, relation="le", falsify=IDENTITY_WORLDS[_id])
