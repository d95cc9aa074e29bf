"""Summary keys and array names built from parameters, shared by the experiments that write them and the claims
and figures that read them (the typed summaries, ``summaries/``, declare them, so a rename fails
``tests/core/test_outputs.py``)."""

from __future__ import annotations


def scaled_key(name: str, c: float) -> str:
    """Summary key of ``name`` (accuracy, grad_norm) of the Fig. 1 construction at scale λ = μ = 10c."""
    return f"{name}_c{c:g}"


def check_key(name: str, p: int, N: int, k: int, d: int) -> str:
    """Summary key of ``name`` (n_clusters, accuracy, …) of the construction checked at (p, N, k, d) (footnote 1)."""
    return f"{name}_p{p}_N{N}_k{k}_d{d}"


def unit_key(unit: str, name: str) -> str:
    """Summary key of ``name`` (n_onsets, drop_ratio_min, …) of the training unit ``unit`` of a dynamics run."""
    return f"{unit}_{name}"


def d_key(name: str, d: int) -> str:
    """Summary key of ``name`` (n_success, n_models, sparsity_success, spearman, …) at embedding dimension d."""
    return f"{name}_d{d}"


def bar_key(name: str, kind: str, q: int) -> str:
    """Summary key of ``name`` (mean_acc, n_success, n_perfect, …) for the Fig. 14 bar ``kind`` (scratch |
    finetune) at p' = q."""
    return f"{name}_{kind}_p{q}"


def bar_array(name: str, kind: str, q: int) -> str:
    """Array ``name`` (test_acc, epochs: (E, S), (E,)) of the Fig. 14 bar ``kind`` at p' = q."""
    return f"{kind}_p{q}/{name}"

