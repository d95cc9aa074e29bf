"""The worlds' typed edits (paths/claims/edits.py) change exactly the flat keys the world names, as the string-key
edits they replace did (core.worlds.swap_summary, scale_summary), and leave every other stored value alone."""

from types import SimpleNamespace

import pytest

from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.paths.claims import edits
from attnlab.paths.experiments.markov import FIG2C
from attnlab.paths.experiments.pruning import FIG7

MARKOV = resolve(FIG2C.config, "quick", {})
PRUNING = resolve(FIG7.config, "quick", {})


def _run(name: str, cfg):
    flat = {k: float(i) for i, k in enumerate(get(name).summary.keys(cfg))}  # every value distinct
    return flat, SimpleNamespace(summary=dict(flat), config=cfg)


def _changed(before: dict, after: dict) -> dict:
    assert set(after) == set(before)
    return {k: after[k] for k in before if after[k] != before[k]}


def test_markov_edits_change_only_the_named_keys():
    flat, r = _run("paths.fig2c", MARKOV)
    assert _changed(flat, edits.swap_gp("all", "good")("paths.fig2c", r).summary) == {
        "acc_gp_all": flat["acc_gp_good"], "acc_gp_good": flat["acc_gp_all"]}
    flat, r = _run("paths.fig2c", MARKOV)
    assert _changed(flat, edits.scale_theory(10000, by=1.1)("paths.fig2c", r).summary) == {
        "acc_theory_N10000": pytest.approx(1.1 * flat["acc_theory_N10000"])}
    flat, r = _run("paths.fig2c", MARKOV)
    assert _changed(flat, edits.paths_like(0, (1, 2, 3))("paths.fig2c", r).summary) == {
        f"acc_gp_path{a}": flat["acc_gp_path0"] for a in (1, 2, 3)}


def test_pruning_edits_change_only_the_named_keys():
    flat, r = _run("paths.fig7", PRUNING)
    v, o = "L2_H4-4", PRUNING.ood[0]
    assert _changed(flat, edits.swap_full_pruned(v, 2, o)("paths.fig7", r).summary) == {
        f"{v}/acc_pruned2_{o}": flat[f"{v}/acc_full_{o}"], f"{v}/acc_full_{o}": flat[f"{v}/acc_pruned2_{o}"]}
    flat, r = _run("paths.fig7", PRUNING)
    assert _changed(flat, edits.swap_score_drops(v, "id")("paths.fig7", r).summary) == {
        f"{v}/drop_lowest_score_id": flat[f"{v}/drop_highest_score_id"],
        f"{v}/drop_highest_score_id": flat[f"{v}/drop_lowest_score_id"]}
    flat, r = _run("paths.fig7", PRUNING)
    assert _changed(flat, edits.negate_spearman()("paths.fig7", r).summary) == {
        k: -x for k, x in flat.items() if "spearman_score_drop" in k and x != 0}
    flat, r = _run("paths.fig7", PRUNING)
    assert edits.swap_full_pruned(v, 2, "no_such_set")("paths.fig7", r).summary == flat
