"""The typed summaries of paper 3's experiments (:mod:`attnlab.core.summaries`): what the claims read, as attributes.

Each class names the flat keys its experiment writes to ``summary.json``: families are keyed by the config's values
(``MarkovSummary.acc_theory[10]``: the theory's accuracy at N = 10, Fig. 2c; ``.acc_gp_layout["good"]``: the GP
line of the good path alone, Sec. 4.1.1), groups hold one nested summary per sampled width or network
(``MarkovSummary.sampled[10].pearson``, Eqs. (8)-(9); ``OneShotSummary.nets["L2_H4-4"].U_dev_from_gp[1000.0]``,
Fig. 3b). A value is a number, or None where the run stored NaN.

The experiments' summary keys are declared in :mod:`attnlab.paths.outputs`, which is part of the measured code
(:mod:`attnlab.core.fingerprint`): that declaration stays beside each ``Experiment(..., summary=...)``, and
``tests/core/test_summaries.py`` checks each class against its declaration (``keys(config)`` is the declared
summary) and against a tiny run (key for key). :func:`typed` reads a run's result; a world
(``attnlab.core.worlds``) edits a typed summary with :func:`attnlab.core.summaries.edit_summary`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from attnlab.core.arrays import Arrays, dims, nested
from attnlab.core.experiment import Result
from attnlab.core.summaries import Summary, group, key
from attnlab.paths.keys import pruned_key
from attnlab.paths.outputs import n_paths

S = TypeVar("S", bound=Summary)


# -- the Markov task (Figs. 2c, 2e, 5c, check C; Figs. 2d, 5b; paths.sample) ---------------------------------


def _solved(c) -> list[float]:
    """The widths N the theory is solved at: the config's and the sampled ones."""
    return sorted({float(N) for N in (*c.widths, *c.sample_widths)})


def _paths(c) -> list[int]:
    """The network's paths π = 0 … n − 1 (Eq. (7))."""
    return list(range(n_paths(c)))


@dataclass(frozen=True)
class Expected(Summary):
    """The good path's GP accuracy averaged over fresh test sets, and its standard error."""

    value: float = key("")
    se: float = key("_se")


@dataclass(frozen=True)
class Agreement(Summary):
    """Gibbs samples (App. F) against the theory at one width: U (Eq. (13)), the mean predictor (Eq. (29)), the
    variance (Eq. (30)), and the chains' split-R̂."""

    U_corr: float
    U_gate_b10: float
    U_gate_b9: float
    U_rel_fro: float
    acc_diff: float
    f_rel_err: float
    pearson: float
    var_ratio: float
    rhat: float


@dataclass(frozen=True)
class MarkovSampled(Agreement):
    """One sampled width of a Markov sweep."""

    acc_sample: float
    ess: float


@dataclass(frozen=True)
class MarkovSummary(Summary):
    """A Markov sweep (Fig. 2c, 2e, 5c, check C): the solver, the theory per solved width, the GP of the network,
    of each reference layout and of each path alone, and the samples per sampled width."""

    acc_gp: float
    gen_error_gp: float
    all_converged: float
    max_grad: float
    max_residual: float
    n_paths: float
    solve_seconds: float
    solver_iterations: float
    acc_gp_layout: dict[str, float] = key("acc_gp_{gp_layouts}")
    gen_error_gp_layout: dict[str, float] = key("gen_error_gp_{gp_layouts}")
    acc_gp_path: dict[int, float] = key("acc_gp_path{path}", path=_paths)  # path π alone (Sec. 4.1.1)
    acc_theory: dict[float, float] = key("acc_theory_N{N}", N=_solved)
    gen_error_theory: dict[float, float] = key("gen_error_theory_N{N}", N=_solved)
    sampled: dict[int, MarkovSampled] = group("*_N{sample_widths}", MarkovSampled)  # empty: nothing sampled
    hessian_min_eig: dict[float, float] = key("hessian_min_eig_N{N}", N=_solved, when=lambda c: c.hessian)
    history_steps: dict[float, float] = key("history_steps_N{N}", N=_solved, when=lambda c: bool(c.history_every))
    good_expected: Expected | None = group("acc_gp_good_expected*", Expected,
                                           when=lambda c: bool(c.gp_test_sets) and "good" in c.gp_layouts)


@dataclass(frozen=True)
class Fig2dSummary(Summary):
    """Fig. 2d: the kernel's top-5 PC overlap with the labels and its alignment, N = 10 against the GP limit."""

    kta_fw: float
    kta_gp: float
    max_grad: float
    top5_overlap_fw: float
    top5_overlap_gp: float
    top5_ratio: float


@dataclass(frozen=True)
class Fig5bSummary(Summary):
    """Fig. 5b: the class contrast of each same-path kernel C_ππ, of the GP and the renormalised kernel."""

    contrast_fw: float
    contrast_gp: float
    contrast_path: dict[int, float] = key("contrast_path{path}", path=_paths)
    relative_spread_path: dict[int, float] = key("relative_spread_path{path}", path=_paths)


@dataclass(frozen=True)
class SampleWidth(Summary):
    """The chains of one width of ``paths.sample``."""

    acc_sample: float
    gen_error_sample: float
    rhat: float
    ess: float
    kept: float
    sweeps: float


@dataclass(frozen=True)
class SampleSummary(Summary):
    """``paths.sample``: Gibbs chains per width, continued or fresh."""

    continued: float
    n_paths: float
    tau_sampled: float
    width: dict[int, SampleWidth] = group("*_N{sample_widths}", SampleWidth)


# -- the one-shot task (Figs. 3, 6, 7): per network ``L…_H…``, every test set (id, each OOD set), width N --------


def _nets(c) -> list[str]:
    """The networks' names (``L2_H4-4``: L layers of Hs heads)."""
    return [v.name for v in c.variants]


def _first(c) -> list[str]:
    """The first network alone: the one that is also sampled and aligned (Fig. 3b-d)."""
    return [c.variants[0].name]


def _sets(c) -> list[str]:
    """The test sets: in distribution, then each OOD set."""
    return ["id", *c.ood]


def _score_width(c) -> list[float]:
    """The config's width nearest the score width (``experiments.oneshot._nearest``)."""
    return [min(c.widths, key=lambda N: abs(math.log(N) - math.log(c.score_width)))]


@dataclass(frozen=True)
class Net(Summary):
    """One network of a one-shot run: GD model, theory per width, GP, and U's block structure (Fig. 3c)."""

    gd_best_val: float
    gd_acc: dict[str, float] = key("gd_acc_{set}", set=_sets)
    acc_gp: dict[str, float] = key("acc_gp_{set}", set=_sets)
    acc_fw: dict[tuple[str, float], float] = key("acc_fw_{set}_N{widths}", set=_sets)  # (set, N)
    U_dev_from_gp: dict[float, float] = key("U_dev_from_gp_N{widths}")  # max |U* − I|
    U_scale: dict[float, float] = key("U_scale_N{widths}")  # ū = tr U*/n
    U_shape_dev: dict[float, float] = key("U_shape_dev_N{widths}")  # max |U*/ū − I|
    fw_minus_gp_id: dict[float, float] = key("fw_minus_gp_id_N{N}", N=_score_width)
    sign_agreement_gd: float
    block_ratio_theory: float
    block_ratio_gd: float
    block_share_theory: float
    block_share_chance: float
    block_top10_theory: float
    block_share_gd: float


@dataclass(frozen=True)
class OneShotSampled(Agreement):
    """The first network's Gibbs samples at one width: agreement with the theory, accuracy per test set."""

    acc_sample: dict[str, float] = key("acc_sample_{set}", set=_sets)


@dataclass(frozen=True)
class FirstNet(Summary):
    """What only the first network has: the kernel-PC alignment (Fig. 3d) and the samples (Fig. 3b-c)."""

    top5_overlap_fw: float
    top5_overlap_gp: float
    sampled: dict[int, OneShotSampled] = group("*_N{sample_widths}", OneShotSampled)


@dataclass(frozen=True)
class OneShotSummary(Summary):
    """A one-shot theory run (Fig. 3b-d, Fig. 6): per network, and the first network's extras (keyed by its
    name)."""

    nets: dict[str, Net] = group("{net}/*", Net, net=_nets)
    first: dict[str, FirstNet] = group("{net}/*", FirstNet, net=_first)

    def samples(self, net: str, N: int) -> OneShotSampled:
        """The samples of network ``net`` at width N (a KeyError naming them where the run has none)."""
        if net not in self.first or N not in self.first[net].sampled:
            raise KeyError(f"samples of {net} at N = {N}")
        return self.first[net].sampled[N]


@dataclass(frozen=True)
class Pruned:
    """A point of a pruning curve (Fig. 3f): network ``net`` with its ``n`` lowest-score heads pruned, tested on the
    set ``which``. Formats as its summary key (the experiment's writer, ``keys.pruned_key``)."""

    net: str
    n: int
    which: str

    def __format__(self, spec: str) -> str:
        return pruned_key(self.net, self.n, self.which)


def _pruned(c) -> list[Pruned]:
    """Every point of every network's curve: 1 … Σ(H_ℓ − 1) heads pruned (a layer keeps its last head)."""
    return [Pruned(v.name, n, s) for v in c.variants for s in _sets(c) for n in range(1, sum(v.Hs) - v.L + 1)]


@dataclass(frozen=True)
class PrunedNet(Summary):
    """One network of a head-pruning run (Fig. 3e): scores from U at N = score_width, single-head drops per set."""

    gd_best_val: float
    param_fraction_per_head: float
    rankings_agree: float
    scores_max: float
    scores_min: float
    tau_star: float
    acc_full: dict[str, float] = key("acc_full_{set}", set=_sets)
    drop_highest_score: dict[str, float] = key("drop_highest_score_{set}", set=_sets)
    drop_lowest_score: dict[str, float] = key("drop_lowest_score_{set}", set=_sets)
    drop_max: dict[str, float] = key("drop_max_{set}", set=_sets)
    drop_min: dict[str, float] = key("drop_min_{set}", set=_sets)
    spearman_score_drop: dict[str, float] = key("spearman_score_drop_{set}", set=_sets)


@dataclass(frozen=True)
class PruningSummary(Summary):
    """A head-pruning run (Figs. 3e-f, Fig. 7): per network, and the accuracy after pruning (``acc_pruned[Pruned(
    net, n, set)]``: its length depends on the network, so it is keyed by the point)."""

    nets: dict[str, PrunedNet] = group("{net}/*", PrunedNet, net=_nets)
    acc_pruned: dict[Pruned, float] = key("{point}", point=_pruned)


# -- typed arrays (:mod:`attnlab.core.arrays`): the arrays the claims read, with their named dimensions ----------


@dataclass(frozen=True, eq=False)
class MarkovArrays(Arrays):
    """A Markov sweep's arrays (Fig. 2c, 2e, 5c, check C): the test labels and the theory at every solved width."""

    y_test: np.ndarray = dims("test_point")
    theory_time: np.ndarray = dims("width")  # the solved widths N, ascending
    theory_U: np.ndarray = dims("width", "path", "path_prime", observable="U")  # U*(N), Eq. (13)
    theory_accuracy: np.ndarray = dims("width")


@dataclass(frozen=True, eq=False)
class NetArrays(Arrays):
    """One network of a one-shot run: the theory's U*(N, τ*) per width and the GD model's empirical U (Fig. 3c)."""

    widths: np.ndarray = dims("width")
    U_star: np.ndarray = dims("width", "path", "path_prime")
    U_gd: np.ndarray = dims("path", "path_prime")


@dataclass(frozen=True, eq=False)
class NetEpisodes(Arrays):
    """One network of a one-shot run: per test episode of each set, 1 where the mean predictor is right (the FW
    network at each width, the GP), Fig. 3b."""

    widths: np.ndarray = dims("width")
    correct_fw: dict[str, np.ndarray] = dims("width", "episode", key="correct_fw_{set}", set=_sets)
    correct_gp: dict[str, np.ndarray] = dims("episode", key="correct_gp_{set}", set=_sets)


@dataclass(frozen=True, eq=False)
class OneShotArrays(Arrays):
    """A one-shot theory run's U per network (Figs. 3, 6): ``OneShotArrays.from_result(run).nets["L2_H4-4"]``."""

    nets: dict[str, NetArrays] = nested("{net}/*", NetArrays, net=_nets)


@dataclass(frozen=True, eq=False)
class OneShotEpisodes(Arrays):
    """A one-shot theory run's per-episode correctness per network (a run stored before it was recorded lacks it,
    hence a class of its own)."""

    nets: dict[str, NetEpisodes] = nested("{net}/*", NetEpisodes, net=_nets)


#: experiment key → the typed arrays classes its runs are read with (``tests/core/test_arrays.py`` checks each)
ARRAYS: dict[str, tuple[type[Arrays], ...]] = {
    **{f"paths.{name}": (MarkovArrays,) for name in ("fig2c", "fig2e", "fig5c", "generic")},
    **{f"paths.{name}": (OneShotArrays, OneShotEpisodes) for name in ("fig3", "fig6")},
}


def typed(cls: type[S], result: Result) -> S:
    """The typed summary ``cls`` of ``result`` (a run that a claim context loaded: it carries its config)."""
    return cls.from_result(result)
