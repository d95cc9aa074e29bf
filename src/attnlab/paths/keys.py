"""Summary keys and array names built from parameters, shared by the experiments that write them and the claims,
figures and views that read them (``outputs.py`` declares them, so a rename fails ``tests/core/test_outputs.py``)."""

from __future__ import annotations


def width_key(name: str, N: float | str) -> str:
    """Key of ``name`` (acc_theory, acc_sample, rhat, …) at width N; a str N is an outputs template field such as
    ``"{widths}"``."""
    return f"{name}_N{N if isinstance(N, str) else format(N, 'g')}"


def set_key(name: str, which: str) -> str:
    """Key of ``name`` (acc_gp, gen_error_gp, contrast, …) for a test set (val, id, an OOD set), a GP layout
    (good, all, …) or a kernel (fw, gp)."""
    return f"{name}_{which}"


def path_key(name: str, a: int) -> str:
    """Key of ``name`` (acc_gp, contrast, relative_spread) of the network's path ``a`` alone (paper 3, Sec. 4.1.1)."""
    return f"{name}_path{a}"


def net_key(net: str, name: str, which: str | None = None, N: float | str | None = None) -> str:
    """Key of ``name`` of the one-shot network ``net`` (its ``L…_H…`` name), for the set ``which`` and at width N
    when given: ``f"{net}/{name}_{which}_N{N:g}"``."""
    key = name if which is None else set_key(name, which)
    return f"{net}/{key if N is None else width_key(key, N)}"


def pruned_key(net: str, n: int, which: str) -> str:
    """Key of the accuracy of network ``net`` on the set ``which`` after pruning its ``n`` lowest-score heads
    (paper 3, Fig. 3f)."""
    return net_key(net, f"acc_pruned{n}", which)
