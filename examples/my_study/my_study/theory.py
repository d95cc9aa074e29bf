"""The exact law of the walk x_T = Σ_t (drift + ξ_t), ξ_t ~ N(0, I_dim): E x_T = drift·T per coordinate and
E|x_T|² = dim·T·(1 + drift²·T), so that |x_T|²/(dim·T) → 1 without drift (diffusion)."""

from __future__ import annotations


def mean_square(dim: int, steps: int, drift: float = 0.0) -> float:
    """E|x_T|² after ``steps`` steps."""
    return dim * steps * (1.0 + drift**2 * steps)


def diffusion_ratio(drift: float = 0.0, steps: int = 1) -> float:
    """E|x_T|²/(dim·T) = 1 + drift²·T: 1 for a walk without drift, whatever T."""
    return mean_square(1, steps, drift) / steps
