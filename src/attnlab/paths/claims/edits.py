"""The result functions of the worlds where paths' claims are false (:mod:`attnlab.core.worlds`), written on the
typed summaries (:mod:`attnlab.paths.summaries`): each changes a run's summary the way the world says (two arms
swapped, a theory scaled, a sign flipped), and the run's other summary values stay as stored."""

from __future__ import annotations

import dataclasses

from attnlab.core.summaries import edit_summary, swap_entries
from attnlab.paths.summaries import Pruned, PruningSummary

replace = dataclasses.replace


def swap_gp(a: str, b: str):
    """The GP lines of the reference layouts ``a`` and ``b`` swapped (Sec. 4.1.1: the two arms exchanged)."""
    return swap_entries("acc_gp_layout", a, b)


def paths_like(path: int, others: tuple[int, ...]):
    """The GP accuracy of each path of ``others`` alone replaced by that of ``path`` alone."""
    return edit_summary(lambda s: replace(s, acc_gp_path={**s.acc_gp_path,
                                                                 **{a: s.acc_gp_path[path] for a in others}}))


def scale_theory(N: float, by: float):
    """The theory's accuracy at width N multiplied by ``by`` (Fig. 2c)."""
    return edit_summary(lambda s: replace(s, acc_theory={**s.acc_theory, N: by * s.acc_theory[N]}))


def U_off_gp(floor: float):
    """Every network's max deviations of U* from GP's (max |U* − I|, max |U*/ū − I|), at every width, raised to at
    least ``floor`` (Fig. 3b: a U* that stays away from U_GP)."""

    def at_least(values: dict) -> dict:
        return {k: max(x, floor) for k, x in values.items()}

    return edit_summary(lambda s: replace(s, nets={
        name: replace(net, U_dev_from_gp=at_least(net.U_dev_from_gp), U_shape_dev=at_least(net.U_shape_dev))
        for name, net in s.nets.items()}))


def swap_score_drops(net: str, which: str):
    """Network ``net``'s accuracy drops of its lowest- and highest-score heads on the set ``which`` swapped
    (Fig. 3e)."""

    def fn(s: PruningSummary) -> PruningSummary:
        n = s.nets[net]
        return replace(s, nets={**s.nets, net: replace(
            n, drop_lowest_score={**n.drop_lowest_score, which: n.drop_highest_score[which]},
            drop_highest_score={**n.drop_highest_score, which: n.drop_lowest_score[which]})})

    return edit_summary(fn)


def negate_spearman():
    """Every network's Spearman correlation of the head scores with the drops, on every set, with its sign flipped
    (the scores ranked upside down)."""
    return edit_summary(lambda s: replace(s, nets={name: replace(n, spearman_score_drop={
        k: -x for k, x in n.spearman_score_drop.items()}) for name, n in s.nets.items()}))


def swap_full_pruned(net: str, n_pruned: int, which: str):
    """Network ``net``'s accuracy on the set ``which``, full and with its ``n_pruned`` lowest-score heads pruned,
    swapped (Fig. 3f); a run without that set is left as it is."""

    def fn(s: PruningSummary) -> PruningSummary:
        n, point = s.nets[net], Pruned(net, n_pruned, which)
        if which not in n.acc_full:
            return s
        return replace(s, acc_pruned={**s.acc_pruned, point: n.acc_full[which]},
                       nets={**s.nets, net: replace(n, acc_full={**n.acc_full, which: s.acc_pruned[point]})})

    return edit_summary(fn)
