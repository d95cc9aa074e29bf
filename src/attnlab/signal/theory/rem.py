"""Self-attention as a Random Energy Model (paper Secs. 3.1–3.2, App. B.2–B.7, C.1).

Closed forms (asymptotic in log T): the critical β_c(ρ) = √(2/(1−ρ)) (Eq. (13)), the IPR q_sa (Eq. (13) = B.12),
the normalised row entropy (B.18), the frozen-phase entropy under Poisson–Dirichlet weights, the one-layer
cosine update (Eq. (14)) and the finite-T heuristic (Eqs. (15)/(B.19)).

Finite T: the exact second-order Gaussian field of the scores (Eq. (10), App. B.2),
s_ab = σ_s [ρ G + √(ρ(1−ρ)) (g_a + h_b) + (1−ρ) e_ab], in which G and g_a cancel in the softmax, is sampled
directly (:func:`mc_overlaps`) for q_sa, p_sa and the mean-of-ratios output cosine; :class:`OverlapTable`
caches it on a (β, ρ) grid for depth iterations and diagrams. All functions broadcast over tensors.
"""

from __future__ import annotations

import math

import torch

from attnlab.core import rng

F64 = torch.float64


def _t(x, device=None) -> torch.Tensor:
    return torch.as_tensor(x, dtype=F64, device=device)


def beta_c(rho) -> torch.Tensor:
    """Critical β of the REM row with input cosine ρ: √(2/(1−ρ)) (Eq. (13)); +inf at ρ = 1."""
    rho = _t(rho).clamp(0.0, 1.0)
    return torch.sqrt(2.0 / (1.0 - rho))


def q_sa(beta, rho) -> torch.Tensor:
    """Asymptotic IPR E Σ_b A_ab²: 0 for β < β_c(ρ), 1 − β_c/β above (Eq. (13))."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    return (1.0 - beta_c(rho) / beta).clamp(min=0.0)


def entropy_norm(beta, rho=0.0) -> torch.Tensor:
    """Asymptotic S/log T of a row: 1 − β²/β_c² below β_c, 0 above (B.18)."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    return (1.0 - beta**2 / beta_c(rho) ** 2).clamp(min=0.0)


def entropy_frozen(beta, rho=0.0) -> torch.Tensor:
    """O(1) entropy of a frozen row under PD(m*), m* = β_c/β: ψ(1) − ψ(1 − m*) (the REM frozen phase, Sec. 3.2.3);
    inf below β_c."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    m = beta_c(rho) / beta
    out = torch.special.digamma(torch.ones_like(m)) - torch.special.digamma((1.0 - m).clamp(min=1e-300))
    return torch.where(m < 1, out, torch.full_like(m, math.inf))


def effective_keys(beta, rho=0.0) -> torch.Tensor:
    """1/q_sa = β/(β − β_c): the O(1) number of attended keys in the frozen phase (inf below β_c)."""
    q = q_sa(beta, rho)
    return torch.where(q > 0, 1.0 / q.clamp(min=1e-300), torch.full_like(q, math.inf))


def sa_cosine(beta, rho, qsa=None, psa=None, sigma_v2=1.0, sigma_b2=0.0, alpha=0.0) -> torch.Tensor:
    """Cosine after one SA layer (and a skip of strength α): Eq. (14) (σ_v² = 1, σ_b² = α = 0) and Eq. (16).

    ρ' = (σ_v² p_SA + σ_b² + α² ρ)/(σ_v² q_SA + σ_b² + α²) with q_SA = ρ + (1−ρ) q_sa, p_SA = ρ + (1−ρ) p_sa.
    The 0/0 of uniform attention on orthogonal tokens (ρ = 0, q_sa = 0) is its physical limit ρ' = 1.
    """
    rho = _t(rho).clamp(0.0, 1.0)
    qsa = q_sa(beta, rho) if qsa is None else _t(qsa)
    psa = torch.zeros_like(qsa) if psa is None else _t(psa)
    num = sigma_v2 * (rho + (1 - rho) * psa) + sigma_b2 + alpha**2 * rho
    den = sigma_v2 * (rho + (1 - rho) * qsa) + sigma_b2 + alpha**2
    out = num / torch.where(den > 0, den, torch.ones_like(den))
    return torch.where(den > 0, out, torch.ones_like(out)).clamp(0.0, 1.0)


def q_sa_finite_heuristic(beta, rho, T: int) -> torch.Tensor:
    """Eqs. (15)/(B.19): below β_c the row spreads over e^S keys, q_sa(T) ≈ T^{−(1−β²/β_c²)}; Eq. (13) above."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    s = entropy_norm(beta, rho)
    return torch.where(s > 0, float(T) ** (-s), q_sa(beta, rho))


def q_sa_annealed(beta, rho, T: int) -> torch.Tensor:
    """Annealed IPR e^{σ_s²(1−ρ)}/T = T^{β²(1−ρ) − 1}: exact to leading order while β²(1−ρ) < 1/2 (Eq. (15);
    docs/studies/signal.md, Notes on the paper)."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    return float(T) ** (beta**2 * (1 - rho) - 1)


def p_sa_annealed(beta, rho, T: int) -> torch.Tensor:
    """Sub-leading cross-overlap of two rows in the annealed region, p_sa ≈ T^{−(1 − β²ρ(1−ρ))} (B.13–B.16,
    App. B.5): → 0 as T → ∞, which is why Eq. (14) keeps p^SA = ρ."""
    beta, rho = torch.broadcast_tensors(_t(beta), _t(rho))
    return float(T) ** (-(1 - beta**2 * rho * (1 - rho)))


# -- finite T: Monte Carlo of the score field ---------------------------------------------------------------


def sample_attention(beta, rho, T: int, n_rep: int, gen: torch.Generator | None = None,
                     device=None, dtype=F64) -> torch.Tensor:
    """Attention matrices (…, n_rep, T, T) drawn from the Gaussian score field of Eq. (10) (App. B.2, B.7).

    ``beta`` and ``rho`` broadcast to a batch shape; the key field h_b is shared by all rows (correlation ρ
    between two rows' key-dependent parts), the row field cancels in the softmax.
    """
    beta, rho = torch.broadcast_tensors(_t(beta, device), _t(rho, device))
    shape = (*beta.shape, n_rep)
    sig = (beta * math.sqrt(math.log(T)))[..., None, None, None].to(dtype)
    r = rho.clamp(0.0, 1.0)[..., None, None, None].to(dtype)
    h = torch.randn((*shape, 1, T), generator=gen, device=beta.device, dtype=dtype)
    e = torch.randn((*shape, T, T), generator=gen, device=beta.device, dtype=dtype)
    return torch.softmax(sig * (torch.sqrt(r * (1 - r)) * h + (1 - r) * e), dim=-1)


def row_stats(beta, rho, T: int, n_rows: int = 64, n_rep: int = 1, gen: torch.Generator | None = None,
              device=None, dtype=torch.float32) -> dict[str, torch.Tensor]:
    """IPR and S/log T of ``n_rows`` rows of the score field (rows share the key field): O(n_rows T) per draw,
    so T = 4096 is cheap (App. B.4 / Fig. B.1 simulations). Broadcasts over β and ρ; one draw of
    all β at a time to bound memory."""
    beta, rho = torch.broadcast_tensors(_t(beta, device), _t(rho, device))
    sig = (beta * math.sqrt(math.log(T)))[..., None, None].to(dtype)
    r = rho.clamp(0.0, 1.0)[..., None, None].to(dtype)
    out: dict[str, torch.Tensor] = {}
    for _ in range(n_rep):
        h = torch.randn((*beta.shape, 1, T), generator=gen, device=beta.device, dtype=dtype)
        e = torch.randn((*beta.shape, n_rows, T), generator=gen, device=beta.device, dtype=dtype)
        A = torch.softmax(sig * (torch.sqrt(r * (1 - r)) * h + (1 - r) * e), dim=-1)
        for k, v in attention_stats(A).items():
            out[k] = out.get(k, 0) + v.double() / n_rep
    return out


def attention_stats(A: torch.Tensor) -> dict[str, torch.Tensor]:
    """Row statistics of attention matrices (…, T, T), averaged over rows: IPR Σ_b A² and S/log T."""
    T = A.shape[-1]
    ipr = (A * A).sum(-1).mean(-1)
    ent = -(A * torch.log(A.clamp(min=torch.finfo(A.dtype).tiny))).sum(-1).mean(-1) / math.log(T)
    return {"ipr": ipr, "entropy": ent}


def mc_overlaps(beta, rho, T: int, n_rep: int = 4, gen: torch.Generator | None = None, *, sigma_v2: float = 1.0,
                sigma_b2: float = 0.0, device=None, chunk: int = 2**25) -> dict[str, torch.Tensor]:
    """Finite-T q_sa, p_sa, IPR/entropy and the measured SA output cosine, by Monte Carlo (App. B.7, Sec. 3.2.2).

    ``cos`` is the mean over pairs a ≠ c of C_ac/√(C_aa C_cc) with C = σ_v²(ρ + (1−ρ) A Aᵀ) + σ_b² (the
    experiments' "mean of ratios"); ``cos_ratio`` is Eqs. (14)/(16) with the MC q_sa, p_sa ("ratio of means").
    Costs O(n_rep T³) per point; points are processed in chunks of ``chunk`` floats.
    """
    beta, rho = torch.broadcast_tensors(_t(beta, device), _t(rho, device))
    flat_b, flat_r = beta.reshape(-1), rho.reshape(-1)
    per = max(1, chunk // (n_rep * T * T))
    keys = ("q_sa", "p_sa", "cos", "entropy")
    out: dict[str, list[torch.Tensor]] = {k: [] for k in keys}
    eye = torch.eye(T, dtype=torch.bool, device=beta.device)
    for i in range(0, flat_b.numel(), per):
        b, r = flat_b[i:i + per], flat_r[i:i + per]
        A = sample_attention(b, r, T, n_rep, gen, beta.device)
        st = attention_stats(A)
        AA = A @ A.transpose(-1, -2)
        off = AA.masked_select(~eye).reshape(*AA.shape[:-2], T * (T - 1))
        rr = r.clamp(0, 1)[:, None, None, None]
        C = sigma_v2 * (rr + (1 - rr) * AA) + sigma_b2
        dg = torch.diagonal(C, dim1=-2, dim2=-1)
        cos = C / torch.sqrt(dg[..., :, None] * dg[..., None, :])
        cos_off = cos.masked_select(~eye).reshape(*AA.shape[:-2], T * (T - 1))
        out["q_sa"].append(st["ipr"].mean(-1))
        out["entropy"].append(st["entropy"].mean(-1))
        out["p_sa"].append(off.mean(-1).mean(-1))
        out["cos"].append(cos_off.mean(-1).mean(-1))
    res = {k: torch.cat(v).reshape(beta.shape) for k, v in out.items()}
    res["cos_ratio"] = sa_cosine(beta, rho, res["q_sa"], res["p_sa"], sigma_v2, sigma_b2)
    return res


class OverlapTable:
    """Finite-T (q_sa, p_sa) on a (β, ρ) grid, bilinearly interpolated: the MC of :func:`mc_overlaps` done
    once, for depth iterations and trainability diagrams at finite T (the Monte Carlo cached on a grid)."""

    def __init__(self, T: int, betas=None, rhos=None, n_rep: int = 4, seed: int = 0, device=None) -> None:
        self.T = T
        default = torch.cat([torch.linspace(0.0, 4.0, 41), torch.linspace(4.5, 12.0, 16)])
        self.betas = _t(default if betas is None else betas, device)
        self.rhos = _t(torch.linspace(0.0, 1.0, 41) if rhos is None else rhos, device)
        gen = rng.generator(seed, self.betas.device)
        bb, rr = torch.meshgrid(self.betas.clamp(min=1e-9), self.rhos, indexing="ij")
        mc = mc_overlaps(bb, rr, T, n_rep, gen, device=device)
        self.q, self.p, self.s = mc["q_sa"], mc["p_sa"], mc["entropy"]

    def __call__(self, beta, rho) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(q_sa, p_sa, S/log T) at (β, ρ); β beyond the grid is clamped to its last point."""
        beta, rho = torch.broadcast_tensors(_t(beta, self.betas.device), _t(rho, self.betas.device))
        return tuple(_bilinear(t, self.betas, self.rhos, beta, rho) for t in (self.q, self.p, self.s))


def _bilinear(table, xs, ys, x, y) -> torch.Tensor:
    x = x.clamp(xs[0], xs[-1])
    y = y.clamp(ys[0], ys[-1])
    i = torch.searchsorted(xs, x.contiguous()).clamp(1, len(xs) - 1)
    j = torch.searchsorted(ys, y.contiguous()).clamp(1, len(ys) - 1)
    x0, x1, y0, y1 = xs[i - 1], xs[i], ys[j - 1], ys[j]
    tx, ty = (x - x0) / (x1 - x0), (y - y0) / (y1 - y0)
    return ((1 - tx) * (1 - ty) * table[i - 1, j - 1] + tx * (1 - ty) * table[i, j - 1]
            + (1 - tx) * ty * table[i - 1, j] + tx * ty * table[i, j])


# -- spectrum of the attention matrix (App. C.1) --------------------------------------------------------------


def bulk_radius(sigma_s, T: int) -> torch.Tensor:
    """Bordenave–Caputo–Chafaï radius of the non-Perron bulk of a random Markov matrix with i.i.d. lognormal
    weights exp(s), s ~ N(0, σ_s²): √(e^{σ_s²} − 1)/√T (App. C.1)."""
    return torch.sqrt(torch.expm1(_t(sigma_s) ** 2) / T)


def attention_eigenvalues(sigma_s: float, T: int, gen: torch.Generator | None = None, n_rep: int = 1,
                          device=None) -> torch.Tensor:
    """Complex eigenvalues (n_rep, T) of softmax rows of i.i.d. N(0, σ_s²) scores (orthogonal tokens)."""
    s = sigma_s * torch.randn((n_rep, T, T), generator=gen, dtype=F64, device=device)
    return torch.linalg.eigvals(torch.softmax(s, dim=-1))


def second_eigenvalue(eig: torch.Tensor) -> torch.Tensor:
    """|λ_2|: the largest modulus after the Perron eigenvalue 1 (per matrix)."""
    mod = eig.abs().sort(dim=-1, descending=True).values
    return mod[..., 1]
