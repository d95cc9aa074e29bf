"""Time models of the signal study (:mod:`attnlab.core.costs`): each experiment's work as a count of its
leading operations, in nanoseconds of one unloaded CPU thread (the constants below: what one operation of each
kind costs), so ``attnlab store calibrate`` only has to find each experiment's seconds per unit.

What dominates (read from the experiments' code):

* random-init propagation (``train.simulate``, one SA head in Fig. 3, the universality scan): per slot and layer,
  drawing the block's weights (3d² + 2d·d_ff normals, ``model.init_block``), the matmuls (3Td² + 2T²d + 2Td·d_ff
  multiply-adds per sequence) and the attention matrix's softmax and its IPR / entropy hooks (``SCORE`` per entry);
* the finite-T Monte Carlo of the score field (``rem.mc_overlaps``, float64; the ``OverlapTable`` of every
  ``finite_T`` theory draws it on a 57 × 41 (β, ρ) grid): ``MC_ENTRY`` per entry of a T × T draw plus A·Aᵀ;
* MLM training (``mlm.train_mlm``, the repeat task of ``map_fix_training``): forward and backward (3 × the forward
  multiply-adds) per step, sequence and layer, plus the masked positions' logits;
* eigenvalues (Fig. C.1, ``torch.linalg.eigvals``, ``EIG`` T³) and the story corpus (``STORY`` per story).
"""

from __future__ import annotations

import math

MULADD = 0.025  # ns per float32 multiply-add in a matmul
MULADD64 = 0.05  # … in float64
RANDN = 4.0  # ns per float32 normal sample, scaled
PASS = 1.0  # ns per element of one elementwise float32 pass over a large array (layer norm, residual, ReLU, …)
PASSES = 30  # such passes per token vector in a block (norms, residuals, biases, activation, the hooks' cosines)
SCORE = 12.0  # ns per attention-score entry: scaling, softmax, the IPR and entropy (a log) of the hooks
MC_ENTRY = 250.0  # ns per entry of a float64 T × T score-field draw in rem.mc_overlaps (normals, softmax, stats,
#                   two masked_select copies, the cosine matrix; fresh pages of 2**25-float chunks), measured
ROW_ENTRY = 30.0  # ns per entry of rem.row_stats (float32: normals, 4 passes, softmax, IPR, entropy)
EIG = 1.5  # ns per T³ of torch.linalg.eigvals on a T × T matrix (float64, measured)
STORY = 2e5  # ns to generate and WordPiece-tokenize one bundled story (measured: 6000 in about 1 s)
OP = 1e4  # ns of dispatch per torch operation (small tensors)
MAP_POINT = 100.0  # ns per grid point of one block map of Eq. (19) (about 50 float64 elementwise operations)
MAP_CALL = 50 * OP  # one block map's dispatch (about 50 operations)
OVERLAP_GRID = 57 * 41  # rem.OverlapTable's default (β, ρ) grid
TANH_THEORY = 3e9  # Fig. 5's tanh quadratures (block maps, fixed points, σ_w,c² bisection): size-free, measured
OVERHEAD = 1e9  # per run: imports, setup, writing the run's files


def block(d: int, ff: int, H: int, T: int, B: int) -> float:
    """One slot of one block at initialisation on B sequences: its weights drawn, then per sequence the Q/K/V,
    scores, A·V and MLP multiply-adds, the attention entries and the token-vector passes."""
    per_seq = MULADD * (3 * T * d * d + 2 * T * T * d + 2 * T * d * ff) + SCORE * H * T * T + PASS * PASSES * T * d
    return RANDN * (3 * d * d + 2 * d * ff) + B * per_seq


def propagation(d: int, ff: int, H: int, T: int, B: int, L: int, slots: int, vocab: int = 0) -> float:
    """``train.simulate``: ``slots`` networks of L blocks on B sequences (synthetic inputs, or a random embedding
    table of ``vocab`` words per slot), plus a dispatch per layer."""
    inputs = RANDN * (B * T * d + vocab * d + (T * d if vocab else 0))
    return slots * (L * block(d, ff, H, T, B) + inputs) + L * 20 * OP


def mc(points: int, T: int, n_rep: int) -> float:
    """``rem.mc_overlaps`` on ``points`` (β, ρ) points: n_rep float64 T × T draws each, and A·Aᵀ."""
    return points * n_rep * (MC_ENTRY * T * T + MULADD64 * T**3)


def table(T: int) -> float:
    """``rem.OverlapTable(T)``: the finite-T Monte Carlo on its default grid, 4 draws per point."""
    return mc(OVERLAP_GRID, T, 4)


def theory_map(points: int, layers: int) -> float:
    """Eq. (19)'s block map iterated ``layers`` times on ``points`` grid points (one broadcast call per layer)."""
    return layers * (MAP_CALL + MAP_POINT * points)


def alpha_c(n_L: int, n_eps: int, L_max: int, points: int = 256, passes: int = 3) -> float:
    """``diagram.alpha_c``: the end points, then ``passes`` grids of ``points`` α values for every (L, ε), each
    one map iteration over max(Ls) layers."""
    return theory_map(2 * n_L * n_eps, L_max) + passes * theory_map(n_L * n_eps * (points + 1), L_max)


def corpus(c) -> float:
    """Generating and tokenising the bundled stories (the repeat task and local files cost next to nothing)."""
    return STORY * c.n_stories if getattr(c, "corpus", "stories") == "stories" else 0.0


# -- one attention layer -------------------------------------------------------------------------------------


def fig3(c) -> float:
    """Fig. 3: |β| × |ρ| × n_inits one-head SA slots (input, weights, attention) plus the finite-T MC of the grid."""
    a = c.arch(H=1)
    points = len(c.betas) * len(c.rhos)
    slot = RANDN * (a.T * a.d + 3 * a.d * a.d + 2 * a.d * a.ff) + MULADD * (3 * a.T * a.d**2 + 2 * a.T**2 * a.d) \
        + SCORE * a.T**2 + PASS * PASSES * a.T * a.d
    return OVERHEAD + points * c.n_inits * slot + mc(points, a.T, c.n_rep)


def universality(c) -> float:
    """β_c universality (Eqs. (11), (13)): per (d, H, T), |β| × n_inits SA slots as in Fig. 3 (with d_ff = d)."""
    total = 0.0
    for d, H, T in c.combos:
        slot = RANDN * (T * d + 5 * d * d) + MULADD * (3 * T * d * d + 2 * T * T * d) + SCORE * H * T * T \
            + PASS * PASSES * T * d
        total += len(c.betas) * c.n_inits * slot
    return OVERHEAD + total


def fig_b1(c) -> float:
    """Figs. B.1/B.2: per ρ, row statistics of n_rep × (n_rows + 1) × T entries for every β and T, and the
    float64 MC at mc_T with max(2, n_rep // 4) draws."""
    rows = len(c.betas) * c.n_rep * (c.n_rows + 1) * sum(c.Ts) * ROW_ENTRY
    return OVERHEAD + len(c.rhos) * (rows + mc(len(c.betas), c.mc_T, max(2, c.n_rep // 4)))


def fig_c1(c) -> float:
    """Fig. C.1: for the standard init and each β, one T_show eigendecomposition and n_rep at every T of Ts."""
    settings = 1 + len(c.betas)
    return OVERHEAD + settings * EIG * (c.T_show**3 + c.n_rep * sum(t**3 for t in c.Ts))


def fig1ab(c) -> float:
    """Fig. 1a/b: the stories and their WordPiece (one story then goes through one head: next to nothing)."""
    return OVERHEAD + corpus(c) + len(c.betas) * RANDN * 5 * c.d * c.d


# -- depth ------------------------------------------------------------------------------------------------------


def fig1c(c) -> float:
    """Fig. 1c: the n_β × n_α theory diagram over L layers, α_c(L) for every (L, ε) and at (L, ε), the finite-T
    table if asked, and the simulated |sim_β| × |sim_α| diagram (n_inits networks of L blocks each)."""
    a = c.arch()
    work = theory_map(c.n_beta * c.n_alpha, a.L) + alpha_c(len(c.Ls), len(c.eps_list), max(c.Ls))
    work += 2 * alpha_c(1, 1, a.L)
    work += table(a.T) if c.finite_T else 0.0
    configs = len(c.sim_betas) * len(c.sim_alphas)
    if configs:
        H = math.gcd(a.H, c.sim_d)
        work += propagation(c.sim_d, a.d_ff or c.sim_d, H, c.sim_T, c.n_seqs, a.L, configs * c.n_inits)
    return OVERHEAD + work


def depth(c) -> float:
    """Figs. 1d/e and the synthetic grid: per (β, α_SA) configuration n_inits networks of L blocks on n_seqs
    sequences (corpus: a random embedding table per network), the stories, and the finite-T table."""
    a = c.arch()
    n = len(c.pairs) if c.pairs else len(c.betas or (a.beta,)) * len(c.alphas)
    vocab = c.vocab_size if c.inputs == "corpus" else 0
    work = n * propagation(a.d, a.ff, a.H, a.T, c.n_seqs, a.L, c.n_inits, vocab)
    work += corpus(c) if c.inputs == "corpus" else 0.0
    return OVERHEAD + work + (table(a.T) if c.finite_T else 0.0) + theory_map(n, 2 * a.L)


def alphac(c) -> float:
    """Sec. 3.3: α_c(L, ε) for every (L, ε) and at (sim_L, sim_eps), and |sim_α| × n_inits simulated networks
    of sim_L blocks."""
    a = c.arch()
    work = alpha_c(len(c.Ls), len(c.eps_list), max(c.Ls)) + alpha_c(1, 1, c.sim_L)
    work += propagation(a.d, a.ff, a.H, a.T, c.n_seqs, c.sim_L, len(c.sim_alphas) * c.n_inits)
    return OVERHEAD + work


def fig5(c) -> float:
    """Fig. 5: the tanh theory (quadratures, size-free) and, per simulated σ_w², n_inits networks of L blocks."""
    a = c.arch(activation="tanh")
    sim = len(c.sim_sigma_w2s) * propagation(a.d, a.ff, a.H, a.T, c.n_seqs, a.L, c.n_inits)
    return OVERHEAD + TANH_THEORY + sim


def fig_c3(c) -> float:
    """Fig. C.3: the |ρ| × |β| one-block map, |β| depth iterations, |table_β| × n_inits simulated networks and the
    finite-T table (the simulated blocks' theory at finite T)."""
    a = c.arch(alpha_sa=0.0, alpha_mlp=0.0)
    work = theory_map(len(c.rhos) * len(c.betas), 1) + theory_map(len(c.betas), a.L)
    work += propagation(a.d, a.ff, a.H, a.T, c.n_seqs, a.L, len(c.table_betas) * c.n_inits)
    return OVERHEAD + work + table(a.T)


# -- training ---------------------------------------------------------------------------------------------------


def train_step(d: int, ff: int, H: int, T: int, L: int, B: int, vocab: float, mask_prob: float) -> float:
    """One training step of one model on B sequences: forward and backward (3 × the forward's multiply-adds and
    attention entries) of L blocks and of the logits at the masked positions."""
    per_seq = L * (MULADD * (3 * T * d * d + 2 * T * T * d + 2 * T * d * ff) + SCORE * H * T * T
                   + PASS * PASSES * T * d) + MULADD * mask_prob * T * d * vocab
    return 3 * B * per_seq


def mlm(c) -> float:
    """Figs. 4, C.2, 1f: per arm, P = (β × α_SA values) × n_seeds models trained together for ``steps`` steps of
    ``batch`` sequences (plus the n_eval held-out forwards every log_every steps and the AdamW update), and the
    corpus."""
    a = c.arch()
    vocab = c.repeat_vocab if c.corpus == "repeat" else c.vocab_size
    if hasattr(c, "rank_L"):
        arms = [(c.rank_L, len(c.rank_alphas)), (c.entropy_L, len(c.entropy_betas))]
    else:
        arms = [(a.L, len(c.betas) * len(c.alphas))]
    work = 0.0
    for L, n in arms:
        P = n * c.n_seeds
        step = train_step(a.d, a.ff, a.H, a.T, L, c.batch, vocab, c.mask_prob)
        evals = train_step(a.d, a.ff, a.H, a.T, L, c.n_eval, vocab, c.mask_prob) / 3 / c.log_every
        params = 2 * vocab * a.d + L * (3 * a.d * a.d + 2 * a.d * a.ff)
        adam = 15 * PASS * params
        work += c.steps * (P * (step + evals + adam) + L * 300 * OP)
    return OVERHEAD + work + corpus(c)


# -- attnlab map on real architectures ---------------------------------------------------------------------------

HF_LAYER = 5e7  # ns to construct one transformers encoder layer (modules, config, the init walk), Python-bound


def map_families(c) -> float:
    """``map_families``: per family and depth, building the model (HF_LAYER per layer, its weights drawn: 12 d²
    per layer and the embedding tables) and one forward of ``batch`` sequences of T tokens."""
    total = 0.0
    for L in c.depths:
        build = L * (HF_LAYER + RANDN * 12 * c.d * c.d) + RANDN * (c.vocab + c.positions) * c.d
        forward = c.batch * L * (MULADD * (12 * c.T * c.d**2 + 2 * c.T**2 * c.d) + SCORE * c.H * c.T**2
                                 + PASS * PASSES * c.T * c.d)
        total += build + forward
    return OVERHEAD + len(c.families) * total


def map_fix_training(c) -> float:
    """``map_fix_training``: per seed, two BERT arms (d_ff = 4d) of L layers trained ``steps`` steps of ``batch``
    repeat-task sequences (per-step dispatch of about 300 operations per layer), with n_log + 1 held-out
    evaluations of n_eval sequences, and the model built and mapped once."""
    step = train_step(c.d, 4 * c.d, c.H, c.T, c.L, c.batch, c.vocab, 1.0) + c.L * 300 * OP  # logits at every token
    evals = (c.n_log + 1) * train_step(c.d, 4 * c.d, c.H, c.T, c.L, c.n_eval, c.vocab, 1.0) / 3
    build = c.L * (HF_LAYER + RANDN * 12 * c.d * c.d)
    return OVERHEAD + c.n_seeds * (2 * (c.steps * step + evals) + build)
