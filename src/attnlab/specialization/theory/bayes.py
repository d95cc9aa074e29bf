"""Bayes-optimal estimation for paper 0 (Sec. IV): Bayes posterior (16) and Bayes risk,
the Bayes-softmax construction of Prop. IV.2 (with the corrected bias: docs/studies/specialization.md) and the softmax-1
construction of Prop. IV.3. Constructions return reduced parameters {m, r, b, v} that can be fed to
:func:`attnlab.specialization.theory.reduced_loss` on the same MC samples.
"""

from __future__ import annotations

import math

import torch

from attnlab.specialization.theory import MCSamples, law_info, mc_samples

Tensor = torch.Tensor


def bayes_posterior(chi_star: Tensor, law, p: Tensor | None = None) -> Tensor:
    """π_ℓ = P(ε = ℓ | χ*) = softmax_ℓ Λ(χ*_{:,ℓ}), Eq. (16) in reduced variables; χ* (..., F, L) -> (..., L).

    Λ is the law's ``log_marginal`` (closed form per law, Eq. (16)); ``p`` the finite-D weight."""
    lam = law.log_marginal(chi_star.mT, p)  # (..., L)
    return torch.softmax(lam, dim=-1)


def samples_chi_star(samples: MCSamples) -> Tensor:
    """The full χ* (N, F, L) of a sample set (token 0 relevant)."""
    chi = samples.z.permute(1, 0, 2).clone()
    chi[:, :, 0] = samples.chi0().T
    return chi


def bayes_per_sample(samples: MCSamples, law) -> Tensor:
    """Per-sample Bayes loss Σ_ℓ (δ_ℓ0 - π_ℓ)² on an MC sample set, shape (N,); weighted mean = Bayes risk."""
    pi = bayes_posterior(samples_chi_star(samples), law)
    return (pi * pi).sum(-1) - 2 * pi[:, 0] + 1


def bayes_risk(law, L: int, n: int = 400_000, *, seed: int = 0, chunk: int = 100_000,
               dtype=torch.float64, device="cpu") -> tuple[float, float]:
    """E_Bayes = E Σ_ℓ (δ_ℓε - π_ℓ(χ*))² (normalised by D like (7)) by MC with n samples
    (discrete θ stratified, Gaussian θ integrated). Returns (risk, standard error)."""
    total, sq, wsum = 0.0, 0.0, 0.0
    for i in range(math.ceil(n / chunk)):
        s = mc_samples(law, L, 1, min(chunk, n - i * chunk), seed=seed * 100_003 + i, symmetrize=False,
                       antithetic=False, dtype=dtype, device=device)
        loss = bayes_per_sample(s, law)
        total += float(loss @ s.w)
        sq += float((loss * loss) @ s.w)
        wsum += 1.0
    mean, second = total / wsum, sq / wsum
    return mean, math.sqrt(max(second - mean * mean, 0.0) / n)


def bsoftmax_bayes_params(law, H: int | None = None, dtype=torch.float64) -> dict:
    """Prop. IV.2: B-softmax with one head per support point θ^h: m_h = θ^h, r = 0,
    b_h = log P(θ^h) - ||θ^h||²/2 (the corrected bias, docs/studies/specialization.md).
    ``H`` > |support| repeats support points cyclically (b_h lowered by log(copies) so the estimator is
    unchanged). Returns {m, r, b, v}."""
    info = law_info(law)
    if info["kind"] != "discrete":
        raise ValueError("bsoftmax_bayes_params needs a discrete law (is_discrete=True)")
    sup, pr = info["support"], info["probs"]
    n_sup = sup.shape[0]
    H = n_sup if H is None else H
    if n_sup > H:
        raise ValueError(f"need H >= |support| = {n_sup}, got H={H}")
    idx = torch.arange(H) % n_sup
    copies = torch.bincount(idx, minlength=n_sup).to(torch.float64)
    m = sup[idx]
    b = torch.log(pr[idx]) - (m * m).sum(-1) / 2 - torch.log(copies[idx])
    out = {"m": m, "r": m.new_zeros(H, H), "b": b, "v": m.new_ones(())}
    return {k: x.to(dtype) for k, x in out.items()}


def softmax1_construction(B: float, direction: Tensor | None = None, F: int = 1, dtype=torch.float64) -> dict:
    """Prop. IV.3(b): softmax-1, H = 2, m_1 = B u (u unit, default e_1), m_2 = -m_1, r = 0,
    b_1 = b_2 = B^{3/2}, v = H = 2. Returns {m, r, b, v}."""
    if direction is None:
        u = torch.zeros(F, dtype=torch.float64)
        u[0] = 1.0
    else:
        u = torch.as_tensor(direction, dtype=torch.float64)
    u = u / u.norm()
    m = torch.stack([B * u, -B * u])
    out = {"m": m, "r": m.new_zeros(2, 2), "b": m.new_full((2,), B**1.5), "v": m.new_full((), 2.0)}
    return {k: x.to(dtype) for k, x in out.items()}
