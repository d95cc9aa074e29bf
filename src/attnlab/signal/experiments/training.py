"""Training experiments (Figs. 1f, 4, C.2) and the attention maps at initialisation (Fig. 1a/b).

MLM runs train every initialisation of the figure in one batched computation (``mlm.train_mlm``) and
checkpoint every ``log_every`` steps, so an interrupted run resumes at its last logged step.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import torch

from attnlab.core.experiment import Experiment, Result
from attnlab.core.rng import generator
from attnlab.core.runs import RunContext
from attnlab.core.trajectory import Trajectory
from attnlab.core.units import Unit, Units
from attnlab.signal import costs, data, figures, memory, outputs, summaries
from attnlab.signal.arch import qk_std_from_beta
from attnlab.signal.configs import AttentionMapsConfig, DeepMLMConfig, MLMConfig, MLMTraining
from attnlab.signal.data import corpus
from attnlab.signal.model import attention, init_block, layer_norm
from attnlab.signal.train import mlm

STUDY = "signal"


def slot_key(kind: str, beta: float, alpha: float, seed: int, arm: str = "") -> str:
    """The summary key of one trained model's ``kind`` (``loss_final``, ``entropy_init``, ``entropy_final``): β,
    α_SA, seed and, in Fig. 1f, the arm (``rank`` or ``entropy``)."""
    return f"{kind}_{arm + '_' if arm else ''}beta{beta:g}_alpha{alpha:g}_seed{seed}"


def attention_maps(config: AttentionMapsConfig, ctx: RunContext) -> Result:
    """Fig. 1a/b: one story through embeddings + LN and a single head at init, for each β."""
    texts = corpus.generate_stories(config.n_stories, seed=ctx.seed("corpus") % 2**31) \
        if config.corpus != "tinystories" else corpus.load_tinystories(config.corpus_path, config.n_stories)
    tok = corpus.WordPiece(texts, config.vocab_size)
    ids = torch.tensor(tok.encode(texts[:1])[0][: config.n_tokens])
    T = ids.numel()
    arch = config.arch(T=T, H=1)
    P = len(config.betas)
    gen = ctx.generator("init", "cpu")  # a one-story illustration: computed on the CPU
    emb = torch.randn((tok.vocab_size, arch.d), generator=gen) * config.emb_std
    pos = torch.randn((T, arch.d), generator=gen) * config.emb_std
    x = layer_norm(emb[ids] + pos, arch.norm).expand(P, 1, T, arch.d)
    qk = torch.tensor([qk_std_from_beta(b * arch.beta_score / arch.beta, arch.d, T) for b in config.betas])
    rec = {}
    attention(x, init_block(arch, P, gen, None, qk), 1, hook=lambda n, t: rec.update(A=t))
    A = rec["A"][:, 0, 0].numpy()
    ent = -(A * np.log(np.clip(A, 1e-30, None))).sum(-1).mean(-1) / np.log(T)
    summary = {**{f"entropy_beta{b:g}": float(e) for b, e in zip(config.betas, ent, strict=True)},
               **{f"ipr_beta{b:g}": float((a * a).sum(-1).mean()) for b, a in zip(config.betas, A, strict=True)}}
    rows = [{"beta": b, "entropy": e} for b, e in zip(config.betas, ent, strict=True)]
    return Result(pd.DataFrame(rows), {"attention": A, "betas": np.asarray(config.betas),
                                       "tokens": np.asarray(tok.decode(ids))}, summary)


FIG1AB = Experiment(
    STUDY, "fig1ab", AttentionMapsConfig, attention_maps,
    ref="Fig. 1a, 1b",
    figure=figures.attention_maps,
    title="Attention at initialisation: nearly uniform (low β) vs sharp (high β)",
    cost=costs.fig1ab,
    outputs=outputs.FIG1AB,
    summary=summaries.AttentionMapsSummary,
)


def _train(config: MLMTraining, ctx: RunContext, units: Units, arch, betas, alphas, key: str = "") -> Trajectory:
    """One batched MLM run over ``betas`` × ``alphas`` × seeds: the run's unit ``key``, resumable mid-training.
    Every logged step is also published (``ctx.publish``) under the arrays' final names (``{key}_time``, …), so the
    sandbox shows the arm in training live."""

    def compute(u: Unit) -> dict[str, np.ndarray]:
        def save_and_publish(state: Callable[[], dict[str, Any]]) -> None:
            u.save(state)
            ctx.publish(lambda: mlm.history(state()["hist"]).to_arrays(f"{key}_" if key else ""))

        T = arch.T
        windows, vocab = corpus.tokens(config, T, ctx)
        if config.corpus == "repeat":
            ev = data.repeat_task(config.n_eval, T, vocab, generator(ctx.seed("eval")))
        else:
            windows, ev = windows[config.n_eval:], windows[: config.n_eval]
        slots = list(itertools.product(betas, alphas)) * config.n_seeds
        with ctx.progress(config.steps, f"MLM {key or 'training'}: {len(slots)} models, L={arch.L}") as bar:
            tr = mlm.train_mlm(arch, windows, vocab, config.optim(), betas=[s[0] for s in slots],
                               alphas=[s[1] for s in slots], eval_windows=ev, gen_init=ctx.rng(f"init{key}"),
                               gen_data=ctx.rng(f"data{key}"), device=ctx.device, emb_std=config.emb_std,
                               resume=u.resume, checkpoint=save_and_publish, progress=bar.update)
        return tr.to_arrays()

    return Trajectory.from_arrays(units.get(key, compute), time_name="step", source="training")


def _summarise(tr: Trajectory, slots, arm: str = "") -> tuple[dict, list]:
    summary, rows = {}, []
    for i, (b, a, s) in enumerate(slots):
        summary[slot_key("loss_final", b, a, s, arm)] = float(tr["eval_loss"][-1, i])
        summary[slot_key("entropy_init", b, a, s, arm)] = float(tr["entropy"][0, i, 0])
        summary[slot_key("entropy_final", b, a, s, arm)] = float(tr["entropy"][-1, i, 0])
        rows += [{"arm": arm, "beta": b, "alpha": a, "seed": s, "step": int(t),
                  "loss": float(tr["loss"][k, i]), "eval_loss": float(tr["eval_loss"][k, i]),
                  "entropy_1": float(tr["entropy"][k, i, 0]), "ipr_1": float(tr["ipr"][k, i, 0])}
                 for k, t in enumerate(tr.time)]
    return summary, rows


def mlm_betas(config: MLMConfig, ctx: RunContext) -> Result:
    """Figs. 4 / C.2: MLM loss and first-layer attention entropy over training for several β (and α_SA)."""
    arch = config.arch()
    tr = _train(config, ctx, Units(ctx), arch, config.betas, config.alphas)
    slots = [(b, a, s) for s in range(config.n_seeds) for b, a in itertools.product(config.betas, config.alphas)]
    summary, rows = _summarise(tr, slots)
    lo, hi = min(config.betas), max(config.betas)
    vocab = config.repeat_vocab if config.corpus == "repeat" else None
    gaps, changes = [], []
    for s in range(config.n_seeds):
        for a in config.alphas:
            gaps.append(summary[slot_key("loss_final", hi, a, s)] - summary[slot_key("loss_final", lo, a, s)])
            changes.append(abs(summary[slot_key("entropy_final", hi, a, s)]
                               - summary[slot_key("entropy_init", hi, a, s)]))
    summary["loss_gap_min"] = min(gaps)
    summary.update(beta_low=lo, beta_high=hi, steps=config.steps)
    summary["entropy_init_high_beta_max"] = max(summary[slot_key("entropy_init", hi, a, s)]
                                                for s in range(config.n_seeds) for a in config.alphas)
    summary["entropy_change_high_beta_max"] = max(changes)
    if vocab is not None:
        summary["uniform_loss"] = data.uniform_loss(vocab)
    arrays = {**tr.to_arrays(), "slot_betas": np.asarray([s[0] for s in slots]),
              "slot_alphas": np.asarray([s[1] for s in slots]), "slot_seeds": np.asarray([s[2] for s in slots])}
    return Result(pd.DataFrame(rows), arrays, summary)


_MLM_QUICK = {"corpus": "repeat", "d": 64, "T": 64, "d_ff": 64, "betas": (0.5, 5.0), "n_seeds": 2, "steps": 1000}
# Paper scale (App. A.3, A.1): d = 768 (lost in the paper; BERT's), T = 512, batch 64, one epoch of TinyStories
# (2.1 M stories, one padded window each: about 33 000 steps). Here the bundled story generator stands in for
# TinyStories (200 000 stories packed into 512-token windows, revisited over the 33 000 steps); corpus=tinystories
# with corpus_path reads the real files.
_MLM_PAPER = {"corpus": "stories", "d": 768, "T": 512, "n_stories": 200_000, "steps": 33_000}
FIG4 = Experiment(
    STUDY, "fig4", MLMConfig.with_defaults(
    "Fig4Config", L=1, H=1, betas=(0.1, 0.5, 1.0, 2.0, 3.0, 5.0), lr=5e-4,
    scales={"quick": _MLM_QUICK, "paper": _MLM_PAPER},
    doc="Fig. 4: 1 layer, 1 head, MLM at lr 5e-4 from β on both sides of β_c."),
    mlm_betas,
    ref="Fig. 4",
    figure=figures.mlm_betas,
    title="Entropy collapse blocks training (1 layer, lr 5e-4)",
    memory=memory.mlm,
    cost=costs.mlm,
    outputs=outputs.FIG4,
    summary=summaries.MLMSummary,
)
FIGC2 = Experiment(
    STUDY, "figC2", MLMConfig.with_defaults(
    "FigC2Config", L=1, H=1, betas=(0.1, 0.5, 1.0, 2.0, 3.0, 5.0), lr=1e-4,
    scales={"quick": {**_MLM_QUICK, "n_seeds": 1}, "paper": _MLM_PAPER},
    doc="Fig. C.2: Fig. 4 at the lower learning rate 1e-4."),
    mlm_betas,
    ref="Fig. C.2",
    figure=figures.mlm_betas,
    title="Fig. 4 at lr 1e-4",
    memory=memory.mlm,
    cost=costs.mlm,
    outputs=outputs.FIGC2,
    summary=summaries.MLMSummary,
)


def deep_mlm(config: DeepMLMConfig, ctx: RunContext) -> Result:
    """Fig. 1f: deep low-β models with α_SA below / above α_c(L) (rank-collapse arm) and shallower models with
    β above / below β_c (entropy-collapse arm), MLM loss over training."""
    units = Units(ctx)
    rank = _train(config, ctx, units, config.arch(L=config.rank_L, beta=config.rank_beta), [config.rank_beta],
                  config.rank_alphas, "rank")
    ent = _train(config, ctx, units, config.arch(L=config.entropy_L), config.entropy_betas, [config.entropy_alpha],
                 "entropy")
    rs = [(config.rank_beta, a, s) for s in range(config.n_seeds) for a in config.rank_alphas]
    es = [(b, config.entropy_alpha, s) for s in range(config.n_seeds) for b in config.entropy_betas]
    s1, r1 = _summarise(rank, rs, "rank")
    s2, r2 = _summarise(ent, es, "entropy")
    summary = {**s1, **s2}
    a_lo, a_hi = min(config.rank_alphas), max(config.rank_alphas)
    b_lo, b_hi = min(config.entropy_betas), max(config.entropy_betas)
    summary["rank_gap_min"] = min(summary[slot_key("loss_final", config.rank_beta, a_lo, s, "rank")]
                                  - summary[slot_key("loss_final", config.rank_beta, a_hi, s, "rank")]
                                  for s in range(config.n_seeds))
    summary["entropy_gap_min"] = min(summary[slot_key("loss_final", b_hi, config.entropy_alpha, s, "entropy")]
                                     - summary[slot_key("loss_final", b_lo, config.entropy_alpha, s, "entropy")]
                                     for s in range(config.n_seeds))
    arrays = {**rank.to_arrays("rank_"), **ent.to_arrays("entropy_")}
    return Result(pd.DataFrame(r1 + r2), arrays, summary)


FIG1F = Experiment(
    STUDY, "fig1f", DeepMLMConfig.with_defaults(
    "Fig1fConfig", H=6, d=720, T=512, lr=1e-4, rank_L=60, rank_alphas=(1.0, 4.0), entropy_L=12,
    entropy_betas=(3.0, 0.5),
    scales={"quick": {"corpus": "repeat", "d": 64, "H": 1, "T": 64, "d_ff": 64, "lr": 5e-4, "rank_L": 8,
                      "rank_alphas": (0.1, 3.0), "entropy_L": 4, "entropy_betas": (5.0, 0.5), "steps": 1000},
            "paper": {**_MLM_PAPER, "d": 720, "micro_batch": 8}},
    doc="Fig. 1f: MLM pre-training, trainable vs rank-collapse (60 layers) vs entropy-collapse (12 layers). At "
        "paper scale each step of 64 sequences runs as 8 micro-batches: in one pass the 60-layer arm needs about "
        "340 GB (what autograd keeps of 60 layers: 6 × 512² scores and the token vectors of each sequence), with "
        "micro-batches of 8 about 47 GB."),
    deep_mlm,
    ref="Fig. 1f",
    figure=figures.deep_mlm,
    title="Only the trainable initialisation learns (MLM)",
    memory=memory.mlm,
    cost=costs.mlm,
    outputs=outputs.FIG1F,
    summary=summaries.DeepMLMSummary,
)
