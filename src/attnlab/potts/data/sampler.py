"""Heat-bath (Gibbs) sampling of the generalised Potts model, vectorised over many chains (App. 'Numerical details').

    run = gibbs(potts, n_chains=30, n_samples=100, burn_in=2000, thin=200, generator=g)
    run.samples          # (n_chains, n_samples, L) colours
    run.energies         # (n_chains, n_samples) H of each saved configuration
    run.summary()        # flip rate, integrated autocorrelation time and R-hat of the energy, Hamming statistics

Every update draws c_i ~ softmax_α(F_i(α)) from the current state, Eq. (5), by inverse CDF (the probabilities in
float32, exact up to that rounding; the fields in float64). The local fields of all chains are kept in one
(n_chains, L, C) tensor and updated incrementally after each move, F_k += J_ki (U[new] - U[old]), so an update
costs O(n_chains · L · C) whatever the degree (docs/studies/potts.md); they are recomputed from scratch at every saved
configuration so that rounding never accumulates.

Scan orders: ``"sequential"`` is the paper's cyclic sweep i = 0..L-1. ``"chromatic"`` (default) visits the sites
colour class by colour class of a greedy colouring of the interaction graph: sites of one class do not interact,
so their conditionals do not depend on each other and updating them at once *is* updating them one after the
other — a cyclic sweep in another site order, with the same stationary law, in (number of classes) tensor steps
instead of L. ``beta`` may be a tensor (n_chains,): one chain per temperature, as in the β scan of the ``gibbs``
experiment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from attnlab.potts.data.potts import F64, PottsModel, mean_pairwise_hamming

Tensor = torch.Tensor
Order = Literal["chromatic", "sequential"]


def colour_classes(J: Tensor, order: Order = "chromatic") -> list[Tensor]:
    """Site groups updated together: greedy colouring of the graph J_ij ≠ 0 (largest degree first), or singletons."""
    L = J.shape[0]
    if order == "sequential":
        return [torch.tensor([i], device=J.device) for i in range(L)]
    if order != "chromatic":
        raise ValueError(f"order {order!r} is not known; allowed: chromatic, sequential")
    adj = (J != 0).cpu().numpy()
    colour = -np.ones(L, dtype=int)
    for i in sorted(range(L), key=lambda k: -adj[k].sum()):
        used = set(colour[adj[i]].tolist())
        colour[i] = next(c for c in range(L) if c not in used)
    return [torch.tensor(np.flatnonzero(colour == k), device=J.device) for k in range(colour.max() + 1)]


@dataclass(frozen=True, eq=False)
class GibbsRun:
    samples: Tensor  # (n_chains, n_samples, L) int64
    energies: Tensor  # (n_chains, n_samples) float64
    flip_rate: Tensor  # (n_chains,) fraction of site updates that changed the colour
    sweeps: int
    C: int

    def pooled(self) -> Tensor:
        """All saved configurations, chain after chain, shape (n_chains · n_samples, L)."""
        return self.samples.reshape(-1, self.samples.shape[-1])

    def hamming_within(self) -> Tensor:
        """Mean pairwise Hamming distance inside each chain, (n_chains,) (the single-chain statistic,
        docs/studies/potts.md note 1)."""
        return mean_pairwise_hamming(self.samples, self.C)

    def hamming_pooled(self) -> float:
        return float(mean_pairwise_hamming(self.pooled(), self.C))

    def summary(self) -> dict[str, float]:
        e = self.energies
        return {
            "flip_rate": float(self.flip_rate.mean()),
            "tau_int_energy": float(integrated_autocorrelation(e).mean()) if e.shape[1] > 3 else float("nan"),
            "rhat_energy": float(rhat(e)) if e.shape[0] > 1 and e.shape[1] > 1 else float("nan"),
            "hamming_pooled": self.hamming_pooled(),
            "hamming_within": float(self.hamming_within().mean()) if e.shape[1] > 1 else float("nan"),
            "sweeps": float(self.sweeps),
        }


def gibbs(
    potts: PottsModel,
    n_chains: int,
    n_samples: int,
    *,
    burn_in: int,
    thin: int,
    generator: torch.Generator,
    beta: float | Tensor | None = None,
    order: Order = "chromatic",
    init: Tensor | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> GibbsRun:
    """Run ``n_chains`` independent chains from uniform random sequences (or ``init``, (n_chains, L)).

    Saves ``n_samples`` configurations per chain, the first after ``burn_in`` sweeps and then one every ``thin``
    sweeps. All chains live on the generator's device; ``beta`` defaults to the model's.
    """
    if n_chains < 1 or n_samples < 1 or burn_in < 0 or thin < 1:
        raise ValueError(f"need n_chains, n_samples, thin >= 1 and burn_in >= 0; got {n_chains}, {n_samples}, "
                         f"{thin}, {burn_in}")
    device = torch.device(generator.device)
    potts = potts.to(device)
    J, U = potts.J, potts.U
    L, C = potts.L, potts.C
    b = torch.as_tensor(potts.beta if beta is None else beta, dtype=F64, device=device).expand(n_chains)
    if (b < 0).any():
        raise ValueError("beta must be >= 0 for every chain")
    b = b.reshape(-1, 1, 1)
    c = (torch.randint(0, C, (n_chains, L), generator=generator, device=device) if init is None
         else init.to(device).long().clone())
    groups = colour_classes(J, order)
    cols = [J[:, g] for g in groups]  # (L, |g|)
    fields = torch.einsum("ij,njc->nic", J, U[c])  # β-free local fields Σ_j J_ij U[α, c_j]
    samples = torch.empty(n_chains, n_samples, L, dtype=torch.long, device=device)
    energies = torch.empty(n_chains, n_samples, dtype=F64, device=device)
    flips = torch.zeros(n_chains, dtype=F64, device=device)
    total = burn_in + (n_samples - 1) * thin
    saved = 0

    def save(sweep: int) -> None:
        nonlocal saved, fields
        if sweep >= burn_in and (sweep - burn_in) % thin == 0:
            samples[:, saved] = c
            energies[:, saved] = potts.energy(c)
            fields = torch.einsum("ij,njc->nic", J, U[c])
            saved += 1

    save(0)  # burn_in = 0: the initial state is the first saved configuration
    for sweep in range(1, total + 1):
        u = torch.rand(n_chains, L, 1, generator=generator, device=device, dtype=torch.float32)
        before = c.clone()
        for g, Jg in zip(groups, cols, strict=True):
            # inverse-CDF draw from softmax_α(β F_iα), Eq. (5); fields accumulate in float64, the draw is float32
            cdf = torch.softmax((b * fields[:, g]).float(), -1).cumsum_(-1)  # (n, |g|, C)
            new = (cdf < u[:, g] * cdf[..., -1:]).sum(-1).clamp_(max=C - 1)
            fields += Jg @ (U[new] - U[c[:, g]])  # (L, |g|) @ (n, |g|, C) -> (n, L, C)
            c[:, g] = new
        flips += (c != before).sum(-1)
        save(sweep)
        if progress is not None and sweep % 100 == 0:
            progress(sweep, total)
    return GibbsRun(samples, energies, flips / (max(total, 1) * L), total, C)


def integrated_autocorrelation(x: Tensor, window: int | None = None) -> Tensor:
    """τ_int = 1 + 2 Σ_t ρ(t) per chain of a series x (n_chains, T), summed up to the first negative ρ."""
    x = x - x.mean(-1, keepdim=True)
    T = x.shape[-1]
    var = (x * x).mean(-1).clamp_min(1e-300)
    window = window or T // 2
    rho = torch.stack([(x[:, : T - t] * x[:, t:]).mean(-1) / var for t in range(1, window)], -1)
    positive = torch.cumprod((rho > 0).to(rho), -1)
    return 1 + 2 * (rho * positive).sum(-1)


def rhat(x: Tensor) -> Tensor:
    """Gelman-Rubin potential scale reduction of a series x (n_chains, T); ≫ 1 flags chains in different basins."""
    n = x.shape[1]
    within = x.var(-1, unbiased=True).mean()
    between = n * x.mean(-1).var(unbiased=True)
    var = (n - 1) / n * within + between / n
    return torch.sqrt(var / within.clamp_min(1e-300))


def tune_beta(
    potts: PottsModel,
    target: float,
    betas,
    *,
    generator: torch.Generator,
    protocol: Literal["single", "pooled"] = "single",
    n_samples: int = 300,
    n_chains: int = 30,
    burn_in: int = 2000,
    thin: int = 20,
    order: Order = "chromatic",
) -> tuple[float, Tensor]:
    """β of the grid whose pilot mean Hamming distance is closest to ``target`` (docs note 1), and the statistic at
    every β. All pilots run as one vectorised computation: 'single' is one chain per β (the paper's protocol, the
    within-chain statistic), 'pooled' is ``n_chains`` chains per β sharing ``n_samples``. No bisection: within one
    chain the statistic need not be monotone in β (a chain can hop between basins)."""
    b = torch.as_tensor(betas, dtype=F64, device=generator.device)
    if protocol == "single":
        run = gibbs(potts, len(b), n_samples, burn_in=burn_in, thin=thin, generator=generator, beta=b, order=order)
        stat = run.hamming_within()
    elif protocol == "pooled":
        per = -(-n_samples // n_chains)
        run = gibbs(potts, len(b) * n_chains, per, burn_in=burn_in, thin=thin, generator=generator,
                    beta=b.repeat_interleave(n_chains), order=order)
        stat = mean_pairwise_hamming(run.samples.reshape(len(b), n_chains * per, -1), potts.C)
    else:
        raise ValueError(f"protocol {protocol!r} is not known; allowed: single, pooled")
    return float(b[int((stat - target).abs().argmin())]), stat
