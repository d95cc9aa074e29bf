"""The Markov claims' statistics (checks B3b, B3d, B4): paired intervals over seeds and the chance-level band."""

import math

import numpy as np
import pytest

from attnlab.core.claims import ClaimContext
from attnlab.core.config import resolve
from attnlab.core.runs import RunStore
from attnlab.paths.claims import markov as mc
from attnlab.paths.experiments.markov import FIG2C
from attnlab.paths.keys import path_key, set_key, width_key
from attnlab.paths.summaries import MarkovSummary

CFG = resolve(FIG2C.config, "quick", {})


class _Fake(ClaimContext):
    """Each seed's fig2c run is a given summary (its other keys 0.5), a test set of 1000 labels and two widths."""

    runs: dict

    def run(self, experiment, **overrides):
        summary = {**dict.fromkeys(MarkovSummary.keys(CFG), 0.5), **self.runs[overrides.get("seed", 0)]}
        arrays = {"y_test": np.ones(1000), "theory_time": np.ones(2), "theory_U": np.ones((2, 4, 4)),
                  "theory_accuracy": np.ones(2)}  # what MarkovArrays reads
        return type("R", (), {"summary": summary, "arrays": arrays, "config": CFG})()


def _ctx(tmp_path, summaries):
    ctx = _Fake("quick", RunStore(tmp_path))
    ctx.runs = dict(enumerate(summaries))
    return ctx


A, B = width_key("acc_theory", 10), set_key("acc_gp", "good")  # the two arms as stored: A_theory(N=10), GP(good)


def test_paired_lower_is_the_t_interval_of_the_seed_differences(tmp_path):
    d = [0.02, 0.03, 0.01, 0.02]
    ctx = _ctx(tmp_path, [{A: 0.9 + x, B: 0.9} for x in d])
    got = mc.paired_lower(ctx, mc.theory_at(10), mc.gp("good"), "a − b").value
    assert got == pytest.approx(np.mean(d) - 3.1824 * np.std(d, ddof=1) / 2, abs=1e-4)
    assert mc.paired_lower(_ctx(tmp_path, [{A: 0.9 + x, B: 0.9} for x in (0.02, -0.02, 0.03, -0.01)]),
                           mc.theory_at(10), mc.gp("good"), "a − b").value < 0


@pytest.mark.parametrize("acc, passes", [(0.5, True), (0.51, True), (0.53, False), (0.47, False)])
def test_other_paths_band_is_binomial_over_the_pooled_test_sets(tmp_path, acc, passes):
    # 4 seeds × 1000 test sequences: chance is 0.5 ± 2.39 · 0.5 / √4000 = 0.5 ± 0.019
    ctx = _ctx(tmp_path, [{path_key("acc_gp", a): (acc if a == 2 else 0.5) for a in range(4)}] * 4)
    got = mc._other_paths(ctx).value
    assert got == pytest.approx(abs(acc - 0.5) / (mc.Z_CHANCE * 0.5 / math.sqrt(4000)))
    assert (got <= 1) == passes
