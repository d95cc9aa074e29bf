"""The public code's Markov run (tiberilor/attention-paths-interplay, the 4-path script and its LOOP_RUN flags):
its settings, its random streams, its seeded heads. Written from its described behaviour, not its code.

The paper's defaults (Sec. 4.1, App. G) and the public run differ in (``preset="public"`` sets them):

* the readout: the paper reads the first token after the bos, t* = 1 (Sec. 4.1.1, App. G.2); the public script
  hard-codes the last token (``readout=-1``);
* the width grid: N ∈ {10, 30, 50, 100, 300, 500, 1000} (the LOOP_RUN script) instead of Fig. 2c's 10 … 10⁴;
* the heads are drawn each from its own seed (LOOP_RUN's seed 7: main heads 127 / 217, "blank" random heads
  147 / 247 with feature, position and cross perturbation 1), in the public code's order of draws
  (:func:`seeded_head`), where attnlab draws every random head from one ``teacher`` stream;
* the tokens come from fixed seeds, 27 for the training set and 59 for the test set, whatever the run's seed,
  labels unshuffled (P/2 of class +1, then P/2 of class −1) (:func:`sample_public`, ``streams="public"``).

Everything else is the same law: P = 100, T = 30, N0 = 200, stay probabilities 0.7 / 0.3 (switching 0.3 / 0.7),
all noise strengths 1, β = 10, τ = 0.01, σ² = 1, a GP start (its perturbed start at strength 0). Its Adam
(lr 0.1, to max|∂S/∂U| < 1e-5) and attnlab's L-BFGS (to 1e-8) find the same saddle point.

Reproduced: the heads' Gaussian numbers and the tokens' coins and noise are the public code's own (torch's CPU
Mersenne-Twister stream from the same seeds, float64, drawn in the same order and shapes); deterministic parts
agree to rounding (≈ 1e-16 relative: e.g. the good head's features block is built as q qᵀ with q = w/(|w|²/2)
there, w wᵀ/N0² here). Not reproduced: its posterior sampler's streams (NumPyro NUTS, ``RUN_sample_posterior``;
attnlab samples by blocked Gibbs from its ``sampler`` stream), and the public code's streams on a CUDA generator.
One deliberate difference: the public code scales the cross blocks of a head by its *features* perturbation
strength (a slip; LOOP_RUN sets all three to 1, where it does not matter); attnlab uses the cross strength.
"""

from __future__ import annotations

import torch

from attnlab.core import rng
from attnlab.paths.data.markov import F64, MarkovData, MarkovTask

Tensor = torch.Tensor

LOOP_SEED = 7  # LOOP_RUN's ``seed``: head seeds 120 + s, 140 + s (layer 1), 210 + s, 240 + s (layer 2)
TRAIN_SEED, TEST_SEED = 27, 59  # the public data preparation's fixed seeds
PUBLIC_WIDTHS = (10, 30, 50, 100, 300, 500, 1000)
_BLANK = {"features_perturbation": 1.0, "positions_perturbation": 1.0, "cross_perturbation": 1.0}
_GOOD = {"kind": "same_token", "shift": -1, "seed": 120 + LOOP_SEED}
_DENOISE = {"kind": "random", "seed": 140 + LOOP_SEED, **_BLANK}
_UNIFORM = {"kind": "uniform", "seed": 210 + LOOP_SEED}
_ADVERSARIAL = {"kind": "random", "seed": 240 + LOOP_SEED, **_BLANK}
# the heads of the public runs by attnlab layout (4paths/data/all_paths, good_path, good_and_denoising_paths)
PUBLIC_HEADS = {"all": [[_GOOD, _DENOISE], [_UNIFORM, _ADVERSARIAL]], "good": [[_GOOD], [_UNIFORM]],
                "good_denoising": [[_GOOD, _DENOISE], [_UNIFORM]]}


def preset(layout: str) -> dict:
    """The config values of ``preset="public"`` for a network ``layout`` (heads only where a public run of that
    network exists: all, good, good_denoising)."""
    out: dict = {"readout": -1, "widths": PUBLIC_WIDTHS, "streams": "public"}
    if layout in PUBLIC_HEADS:
        out["heads"] = PUBLIC_HEADS[layout]
    return out


def apply(data, default_layout: str):
    """A config's raw values with those of ``preset="public"`` under the keys given."""
    if isinstance(data, dict) and data.get("preset", "paper") == "public":
        data = {**preset(data.get("layout", default_layout)), **data}
    return data


def check(config) -> None:
    """``streams="public"`` draws half of the sequences per class: P and P* even."""
    if config.streams == "public":
        for key in ("P", "P_test"):
            if getattr(config, key) % 2:
                raise ValueError(f"key {key!r} = {getattr(config, key)}: streams 'public' draws half of the "
                                 "sequences per class; give an even number")


def sample_public(task: MarkovTask, P: int, seed: int, device=None) -> MarkovData:
    """P sequences drawn as the public code draws them from ``seed`` (27: training set, 59: test set).

    Labels: P/2 of class +1, then P/2 of class −1 (P even). Per sequence, in that order, one uniform coin for the
    first state (≥ ½: state +) and one per later step (below the stay probability 1 − p_switch of the current
    state: stay), all from one CPU generator; then one standard normal array of shape (P, N0, T) (features
    before tokens), split into its parts along (v+ − v−)/|·|, (v+ + v−)/|·| and out of the plane, scaled by
    σ_diff, σ_sum, σ⊥ (App. G.1's noise with the in-plane split).
    """
    if P < 2 or P % 2:
        raise ValueError(f"key 'P' = {P}: streams 'public' draws P/2 sequences per class; give an even P")
    g = rng.generator(seed)
    half, T, N0 = P // 2, task.T, task.N0
    y = torch.cat([torch.ones(half, dtype=F64), -torch.ones(half, dtype=F64)])
    coins = torch.rand(P, T, generator=g, dtype=F64)  # = P·T draws of one coin each, in this order
    stay = torch.tensor([[1.0 - p for p in pair] for pair in task.switching()], dtype=F64)  # (class, state left)
    states = torch.empty(P, T, dtype=F64)
    states[:, 0] = torch.where(coins[:, 0] >= 0.5, 1.0, -1.0)
    cls = (y < 0).long()
    for t in range(1, T):
        c = states[:, t - 1]
        p_stay = stay[cls, (c < 0).long()]
        states[:, t] = torch.where(coins[:, t] < p_stay, c, -c)
    noise = torch.randn(P, N0, T, generator=g, dtype=F64).transpose(1, 2)  # (P, T, N0)
    vp, vm = task.state_vectors()
    e_diff, e_sum = (vp - vm) / (vp - vm).norm(), (vp + vm) / (vp + vm).norm()
    par, perp = (noise @ e_sum)[..., None] * e_sum, (noise @ e_diff)[..., None] * e_diff
    s_diff, s_sum = task.in_plane()
    feats = torch.where(states[..., None] > 0, vp, vm) + s_sum * par + s_diff * perp + \
        task.sigma_perp * (noise - par - perp)
    bos = torch.zeros(P, 1, N0, dtype=F64)
    pos = torch.eye(T + 1, dtype=F64).expand(P, -1, -1)
    X = torch.cat([torch.cat([bos, feats], dim=1), pos], dim=2)
    return MarkovData(X.to(device), y.to(device), states.to(device))
