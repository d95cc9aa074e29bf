"""Peak-memory models of signal's heavy experiments (checked before a run starts: :mod:`attnlab.core.memory`).

Three computations dominate: MLM training (``mlm.train_mlm``: P encoders and their AdamW state at once), the
random-init propagation (``train.simulate``, float32, slots of inits processed in chunks) and the finite-T Monte
Carlo of the score field (``rem.mc_overlaps``, float64, grid points in chunks of ``2**25`` floats of attention
matrices). The chunk sizes below are read from the functions' defaults, so a model follows a change of them.
"""

from __future__ import annotations

import inspect

from attnlab.signal import train
from attnlab.signal.theory import rem
from attnlab.signal.train.simulation import OBSERVABLES

F32, F64 = 4, 8
OVERLAP_GRID = 57 * 41  # rem.OverlapTable's default (β, ρ) grid: 41 + 16 β values × 41 ρ values
STORY_TOKENS = 100  # tokens of a bundled story, at most (about 62 words and their punctuation)
MC_ARRAYS = 8  # A, A∘A, log A, A·Aᵀ, its off-diagonal copy, C, the cosine and its off-diagonal copy


def _default(fn, name: str) -> float:
    return float(inspect.signature(fn).parameters[name].default)


def block_slots(n: int, d: int, f: int, H: int, T: int, B: int, vocab: int = 0) -> int:
    """Bytes of n slots of one block at once (float32): the weights W_Q, W_K, W_V, W_1, W_2 (3d² + 2df), and per
    sequence x, q, k, v, the attention output and the residual (6·T·d), the scores, A and the three temporaries of
    its IPR and entropy (5·H·T²), the MLP's hidden layer and activation (2·T·f); a corpus run also holds each
    slot's random embedding table (vocab·d)."""
    return F32 * n * (3 * d * d + 2 * d * f + B * T * (6 * d + 5 * H * T + 2 * f) + vocab * d)


def mc_chunk(points: int, T: int, n_rep: int) -> int:
    """Bytes of one chunk of :func:`rem.mc_overlaps`: ``MC_ARRAYS`` float64 arrays of (points, n_rep, T, T), at
    most ``chunk`` floats each."""
    per = max(1, int(_default(rem.mc_overlaps, "chunk")) // (n_rep * T * T))
    return F64 * MC_ARRAYS * min(points, per) * n_rep * T * T


def depth(config) -> tuple[int, str]:
    """One (β, α_SA) configuration at a time (n_inits slots, chunked as ``train.simulate`` does), then the
    finite-T table's Monte Carlo: the larger of the two."""
    a = config.arch()
    per_slot = config.n_seqs * a.T * (a.d + 2 * a.T * a.H + a.ff)
    n = min(config.n_inits, max(1, int(_default(train.simulate, "max_floats") // per_slot)))
    vocab = config.vocab_size if config.inputs == "corpus" else 0
    sim = block_slots(n, a.d, a.ff, a.H, a.T, config.n_seqs, vocab)
    mc = mc_chunk(OVERLAP_GRID, a.T, 4) if config.finite_T else 0
    return max(sim, mc), "lower T, d, n_seqs or n_inits (or finite_T=false)"


def propagation(a, n_inits: int, n_seqs: int, n_configs: int = 1) -> int:
    """:func:`train.simulate` over ``n_configs`` (β, α_SA) configurations at once (n_configs · n_inits slots, in
    chunks of ``max_floats`` activations): one chunk's slots (:func:`block_slots`) and the observables every slot
    keeps per layer and sequence (float32 while it runs, then a float64 copy and its deviation from the mean)."""
    per_slot = n_seqs * a.T * (a.d + 2 * a.T * a.H + a.ff)
    slots = n_configs * n_inits
    n = min(slots, max(1, int(_default(train.simulate, "max_floats") // per_slot)))
    observables = len(OBSERVABLES) * (a.L + 1) * slots * n_seqs * (F32 + 2 * F64)
    return block_slots(n, a.d, a.ff, a.H, a.T, n_seqs) + observables


SIM = "lower T, d, n_seqs or n_inits"


def alphac(config) -> tuple[int, str]:
    """Fig. 1c: the networks of depth sim_L, every α_SA of ``sim_alphas`` in one call (the α_c(L) bisection of
    Sec. 3.3 holds a few numbers per depth)."""
    a = config.arch().replace(L=config.sim_L)
    return propagation(a, config.n_inits, config.n_seqs, len(config.sim_alphas)), f"{SIM}, sim_L or sim_alphas"


TANH_THEORY = 64 * 2**20  # Fig. 5's theory: F(ρ) on 201 points, its fixed points and σ_w,c² (measured: 50 MiB)


def fig5(config) -> tuple[int, str]:
    """Fig. 5: one σ_w² of ``sim_sigma_w2s`` at a time, after the tanh block map's quadratures (``TANH_THEORY``,
    whatever the sizes)."""
    a = config.arch(activation="tanh")
    return TANH_THEORY + propagation(a, config.n_inits, config.n_seqs), f"{SIM} or L"


def fig_c3(config) -> tuple[int, str]:
    """Fig. C.3: every β of ``table_betas`` in one call, then the finite-T theory's Monte Carlo table (Eq. (19) at
    finite T, 4 repetitions): the larger of the two."""
    a = config.arch(alpha_sa=0.0, alpha_mlp=0.0)
    sim = propagation(a, config.n_inits, config.n_seqs, len(config.table_betas))
    return max(sim, mc_chunk(OVERLAP_GRID, a.T, 4)), f"{SIM}, L or table_betas"


def sa_layer(config) -> tuple[int, str]:
    """The last chunk of SA-layer slots (chunks of 2·10⁷ // (T(T + 3d)) slots, one sequence each) is still held
    when the Monte Carlo over the (β, ρ) grid runs: the sum of the two."""
    a = config.arch(H=1)
    points = len(config.betas) * len(config.rhos)
    n = min(points * config.n_inits, max(1, int(2e7 // (a.T * (a.T + 3 * a.d)))))
    return block_slots(n, a.d, a.ff, 1, a.T, 1) + mc_chunk(points, a.T, config.n_rep), "lower T, d or n_rep"


def mlm_slots(P: int, L: int, d: int, f: int, H: int, T: int, B: int, vocab: int, mask_prob: float) -> int:
    """Bytes of P encoders trained together by ``mlm.train_mlm`` (float32): each slot's parameters four times
    (weights, gradients, AdamW's two moments: 2·V·d + T·d + V + L(3d² + 2df + 2d + f)), the activations autograd
    keeps for the backward pass, per layer B·T·(14d + 3d_ff) (embeddings, q, k, v, the SA output and its copy, the
    residuals and both RMS norms, the MLP's pre-activation, bias and ReLU) and 3·H·B·T² (the scaled scores, their
    softmax and its gradient), and the logits at the M = p·B·T masked positions with their log-softmax and
    gradient (3·M·V)."""
    params = 2 * vocab * d + T * d + vocab + L * (3 * d * d + 2 * d * f + 2 * d + f)
    acts = 3 * B * T * d + L * (B * T * (14 * d + 3 * f) + 3 * H * B * T * T)
    logits = 3 * int(mask_prob * B * T + 0.5) * vocab
    return F32 * P * (4 * params + acts + logits)


def mlm(config) -> tuple[int, str]:
    """One batched MLM run (Figs. 4, C.2: every β × α_SA × seed at once; Fig. 1f: its rank and entropy arms one
    after the other, so the larger of the two), plus the token windows (int64; the bundled stories are under
    ``STORY_TOKENS`` tokens each)."""
    a = config.arch()
    vocab = config.repeat_vocab if config.corpus == "repeat" else config.vocab_size
    if hasattr(config, "rank_L"):
        arms = [(config.rank_L, len(config.rank_alphas)), (config.entropy_L, len(config.entropy_betas))]
    else:
        arms = [(a.L, len(config.betas) * len(config.alphas))]
    B = min(config.batch, config.micro_batch or config.batch)
    need = max(mlm_slots(n * config.n_seeds, L, a.d, a.ff, a.H, a.T, B, vocab, config.mask_prob) for L, n in arms)
    windows = 8 * (a.T * config.n_train if config.corpus == "repeat" else STORY_TOKENS * config.n_stories)
    return need + windows, "set micro_batch, or lower T, d, L or the number of β × α_SA × seeds"
