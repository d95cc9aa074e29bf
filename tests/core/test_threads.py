"""The claims closest to their tolerance measure the same at 1 and 4 torch threads (issue: a verdict must not flip
with the thread count). Each experiment runs small, but with tensors large enough for torch to split its kernels
over threads, once per thread count in its own store; the summaries the claims read must agree."""

import math

import pytest
import torch

from attnlab.core.config import resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore

# experiment, overrides on its quick scale, the summary keys its borderline claims read
CASES = {
    # sgd_matches_theory_v / _loss (0.0080 ≤ 0.01, 0.052 ≤ 0.06 at quick scale)
    "specialization.fig9": ({"D": 400, "tau_max": 0.5, "record_every": 0.5, "n_mc": 20_000},
                            ("max_dv_softmax", "max_dv_softmax1", "max_dloss_softmax", "max_dloss_bsoftmax")),
    # bsoftmax_reaches_bayes (0.0069 ≤ 0.01)
    "specialization.fig5": ({"laws": ["flip"], "Hs": [2], "nus": [], "F_H": 2, "nu_H": 4.0, "seeds": 1, "tau_max": 2.0,
                             "n_mc": 20_000, "eval_mc": 20_000, "bayes_mc": 40_000},
                            ("E_flip_bsoftmax_H2", "E_flip_bayes_H")),
    # transfer_better_focus (lower end +0.005 at quick scale)
    "clustering.transfer_circuit": ({"n_seeds": 16, "epochs": 3, "epochs_new": 3, "n_train": 512, "n_test": 256},
                                    ("attn_prefix_mass_new_start", "attn_prefix_mass_new_end", "test_acc_new_mean")),
}


@pytest.fixture
def threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("name", sorted(CASES))
def test_borderline_claims_read_the_same_at_1_and_4_threads(tmp_path, threads, name):
    overrides, keys = CASES[name]
    exp = get(name)
    cfg = resolve(exp.config, "quick", overrides)
    seen = {}
    for n in (1, 4):
        torch.set_num_threads(n)
        seen[n] = RunStore(tmp_path / f"t{n}").run(exp, cfg).summary
    for key in keys:
        one, four = seen[1][key], seen[4][key]
        assert math.isfinite(one) and math.isclose(one, four, rel_tol=1e-6, abs_tol=1e-9), (key, one, four)
