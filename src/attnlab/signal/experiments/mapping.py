"""``attnlab map`` measured on real architectures (paper 1, Eq. (19) with each layer's own parameters, Sec. 3.3).

``map_families``: families of post-LN encoders (``transformers`` models built from their configs at the family's
standard initialisation, every Linear N(0, init_std²); nothing downloaded) at several depths: the map's predicted
ρ_ℓ (Eq. (19) iterated layer by layer from the measured ρ_0, asymptotic attention of Eq. (13)) against ρ_ℓ measured
through the model's own forward, max over layers of the difference per (family, depth).

``map_fix_training``: a model the map places in a collapse phase and its ``--apply``-fixed version
(``mapping.place.apply_fix``: Q/K redrawn at β ≤ β_c/2, W_O scaled to α_SA ≥ 2 α_c(L)) trained side by side on the
repeat-MLM task (same head, data and masks per seed): the held-out loss drop of each, paired by seed.
"""

from __future__ import annotations

import copy
import math
from typing import Annotated, Literal

import numpy as np
import pandas as pd
import torch
from pydantic import Field
from torch import nn
from torch.nn import functional as F

from attnlab.core.config import Config, ConfigError
from attnlab.core.experiment import Experiment, Result
from attnlab.core.outputs import declare
from attnlab.core.rng import generator
from attnlab.core.runs import RunContext
from attnlab.signal import costs, summaries

STUDY = "signal"
Family = Literal["bert", "roberta", "electra", "distilbert"]
PHASES = {"trainable": 0, "rank collapse": 1, "entropy collapse": 2}
NO_DROPOUT = ("hidden_dropout_prob", "attention_probs_dropout_prob", "dropout", "attention_dropout")


def _transformers():
    try:
        import transformers
    except ImportError:
        raise ConfigError("this experiment builds transformers models: pip install -e '.[hf]'") from None
    return transformers


def build(family: str, L: int, d: int, H: int, init_std: float, positions: int, vocab: int, seed: int,
          dropout: bool = True):
    """A ``transformers`` encoder of ``family`` from its config (the family's own ``_init_weights`` at
    ``init_std``, global torch RNG seeded with ``seed``), eager attention, in eval mode."""
    from attnlab.signal.mapping import place, read

    tf = _transformers()
    spec = read.from_family(family, L, d, H, None, positions, init_std, vocab=vocab)
    cfg = place._family_config(spec, tf)
    if not dropout:
        for k in NO_DROPOUT:
            if hasattr(cfg, k):
                setattr(cfg, k, 0.0)
    torch.manual_seed(seed)
    return tf.AutoModel.from_config(cfg, attn_implementation="eager").eval()


class MapFamiliesConfig(Config):
    """Families × depths at the standard HF initialisation: the map's prediction of ρ_ℓ against its measurement."""

    families: tuple[Family, ...] = Field(("bert", "roberta", "electra", "distilbert"), min_length=1,
                                         description="model families built")
    depths: tuple[Annotated[int, Field(ge=1, le=1000)], ...] = Field((12, 24, 48), min_length=1, description="depths L")
    d: int = Field(1024, ge=2, le=8192, description="width (BERT-large's)")
    H: int = Field(16, ge=1, le=256, description="heads")
    init_std: float = Field(0.02, gt=0, le=1, description="initializer_range (HF: 0.02)")
    positions: int = Field(512, ge=2, le=100_000, description="max_position_embeddings: T_init of Eq. (11)")
    vocab: int = Field(30522, ge=16, le=300_000, description="vocabulary (BERT's)")
    T: int = Field(64, ge=2, le=4096, description="tokens per measured sequence")
    batch: int = Field(32, ge=1, le=4096, description="random-token sequences measured")
    # quick keeps the theory's parameters (σ² d of every matrix, so β, σ_v², σ_w² of a d = 1024 model at std 0.02)
    # at a quarter of the width: std 0.02 √(1024/256) = 0.04
    scales = {"quick": {"d": 256, "H": 4, "init_std": 0.04, "depths": (6, 12, 24), "vocab": 2000}, "paper": {}}


def map_families(config: MapFamiliesConfig, ctx: RunContext) -> Result:
    """Per (family, depth): ``mapping.place.map_model`` on the built model (measured through its own forward), the max
    over layers ℓ ≥ 1 of |ρ_ℓ(predicted) − ρ_ℓ(measured)| and ρ_L of each."""
    from attnlab.signal.mapping import place

    F_, D, Lmax = len(config.families), len(config.depths), max(config.depths)
    dev = np.full((F_, D), np.nan)
    curves = {k: np.full((F_, D, Lmax + 1), np.nan) for k in ("rho_predicted", "rho_measured", "rho_se")}
    summary, rows = {}, []
    for i, fam in enumerate(config.families):
        for j, L in enumerate(config.depths):
            seed = ctx.seed(f"{fam}_L{L}") % 2**31
            model = build(fam, L, config.d, config.H, config.init_std, config.positions, config.vocab, seed)
            doc = place.map_model(model, T=config.T, batch=config.batch, seed=seed)
            del model
            pred, meas = np.array(doc["predicted"]["rho"], float), np.array(doc["measured"]["rho"], float)
            curves["rho_predicted"][i, j, : L + 1], curves["rho_measured"][i, j, : L + 1] = pred, meas
            curves["rho_se"][i, j, : L + 1] = doc["measured"]["rho_se"]
            dev[i, j] = float(np.nanmax(np.abs(pred[1:] - meas[1:])))
            worst = int(np.nanargmax(np.abs(pred[1:] - meas[1:]))) + 1
            summary[f"max_dev_{fam}_L{L}"], summary[f"worst_layer_{fam}_L{L}"] = float(dev[i, j]), worst
            summary[f"rho_L_predicted_{fam}_L{L}"] = float(pred[-1])
            summary[f"rho_L_measured_{fam}_L{L}"] = float(meas[-1])
            rows.append({"family": fam, "L": L, "max_dev": dev[i, j], "worst_layer": worst, "rho0": doc["rho0"],
                         "rho_L_predicted": pred[-1], "rho_L_measured": meas[-1], "phase": doc["map"]["phase"],
                         "beta": doc["params"]["beta"], "sigma_v2": doc["params"]["sigma_v2"]})
    summary["max_dev"] = float(np.nanmax(dev))
    return Result(pd.DataFrame(rows), {"max_dev": dev, "depths": np.asarray(config.depths), **curves}, summary)


MAP_FAMILIES_OUTPUTS = declare(tiny={"families": ["bert", "distilbert"], "depths": [2, 3], "d": 32, "H": 2,
                                     "T": 16, "batch": 4, "vocab": 100, "positions": 64},
        arrays={"max_dev": ("len(families)", "len(depths)"), "depths": ("len(depths)",),
                "rho_predicted rho_measured rho_se": ("len(families)", "len(depths)", "max(depths) + 1")},
        index={"max_dev": ("family", "depth"), "rho_*": ("family", "depth", "layer")})

MAP_FAMILIES = Experiment(
    STUDY, "map_families", MapFamiliesConfig, map_families,
    ref="Eq. 19, Sec. 3.2.2, App. B.1",
    title="attnlab map on real families: predicted vs measured ρ_ℓ at initialisation",
    cost=costs.map_families,
    outputs=MAP_FAMILIES_OUTPUTS,
    summary=summaries.MapFamiliesSummary,
)


class MapFixTrainingConfig(Config):
    """A collapsing model and its ``--apply`` fix, trained side by side on the repeat-MLM task."""

    family: Family = Field("bert", description="model family built")
    L: int = Field(48, ge=1, le=1000, description="depth L (encoder layers)")
    d: int = Field(1024, ge=2, le=8192, description="width d")
    H: int = Field(16, ge=1, le=256, description="heads")
    init_std: float = Field(0.02, gt=0, le=10, description="initializer_range of the original model")
    positions: int = Field(512, ge=2, le=100_000, description="max_position_embeddings (T_init)")
    T: int = Field(64, ge=4, le=4096, description="sequence length (even: the repeat task)")
    vocab: int = Field(64, ge=8, le=100_000, description="repeat-task vocabulary (5 special tokens included)")
    steps: int = Field(2000, ge=1, le=1_000_000, description="AdamW steps per arm")
    lr: float = Field(1e-4, gt=0, le=1, description="AdamW learning rate (constant)")
    batch: int = Field(32, ge=1, le=4096, description="sequences per step")
    n_eval: int = Field(256, ge=1, le=100_000, description="held-out sequences")
    n_seeds: int = Field(3, ge=2, le=100, description="paired seeds (init, head, data)")
    n_log: int = Field(10, ge=1, le=1000, description="held-out evaluations over training")
    margin: float = Field(2.0, ge=1, le=100, description="the fix lies this factor inside both boundaries")
    fix: bool = Field(True, description="apply the map's fix to the second arm (False: train the original twice)")
    # quick: a 2-layer d = 64 BERT initialised at std 0.3 (β ≈ 2 β_c: entropy collapse), on the CPU in about a
    # minute; paper: BERT-large's width at 48 layers, standard init (the map: rank collapse, docs/map.md)
    scales = {"quick": {"L": 2, "d": 64, "H": 2, "init_std": 0.3, "steps": 1000, "lr": 5e-4, "n_seeds": 4},
              "paper": {}}


class _MLM(nn.Module):
    """An encoder with a linear MLM head (the head's initialisation given, shared by both arms)."""

    def __init__(self, enc, head: nn.Linear):
        super().__init__()
        self.enc, self.head = enc, head

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(input_ids=ids).last_hidden_state)


def _loss(model: _MLM, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index=-100)


def train_arm(enc, head: nn.Linear, config: MapFixTrainingConfig, seed: int, device) -> np.ndarray:
    """AdamW on the repeat task (same data and masks for every arm of a seed); held-out loss at n_log + 1 points."""
    from attnlab.signal.data import mask_tokens, repeat_task

    model = _MLM(enc, head).to(device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.01)
    gen = generator(seed)
    ev_in, ev_lab = mask_tokens(repeat_task(config.n_eval, config.T, config.vocab, gen), config.vocab, gen)
    ev_in, ev_lab = ev_in.to(device), ev_lab.to(device)
    at = set(np.linspace(0, config.steps, config.n_log + 1).round().astype(int).tolist())
    hist = []
    for step in range(config.steps + 1):
        if step in at:
            model.eval()
            with torch.no_grad():
                hist.append(float(_loss(model, ev_in, ev_lab)))
            model.train()
        if step == config.steps:
            break
        x, y = mask_tokens(repeat_task(config.batch, config.T, config.vocab, gen), config.vocab, gen)
        loss = _loss(model, x.to(device), y.to(device))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    return np.asarray(hist)


def map_fix_training(config: MapFixTrainingConfig, ctx: RunContext) -> Result:
    """Per seed: the original model (mapped: its phase and the fix) and its fixed version, trained on the same
    data from the same head; the held-out loss drop (first − last evaluation) of each arm."""
    from attnlab.signal.mapping import place, read

    losses = np.full((config.n_seeds, 2, config.n_log + 1), np.nan)
    summary, rows = {}, []
    for s in range(config.n_seeds):
        seed = ctx.seed("init", s) % 2**31
        model = build(config.family, config.L, config.d, config.H, config.init_std, config.positions, config.vocab,
                      seed, dropout=False)
        spec = read.read(model)
        doc = place.map_model(spec, T=config.T, batch=16, seed=seed, margin=config.margin)
        fix = doc["map"]["fix"]
        if config.fix and fix["feasible"]:
            fixed = place.apply_fix(spec, fix["beta"], fix["alpha_sa"], None, seed)
        else:
            fixed = copy.deepcopy(model)
        head = nn.Linear(config.d, config.vocab)
        with torch.no_grad():
            head.weight.copy_(torch.randn(head.weight.shape, generator=generator(seed)) * 0.02)
            head.bias.zero_()
        data_seed = ctx.seed("data", s) % 2**31
        for a, enc in enumerate((model, fixed)):
            losses[s, a] = train_arm(enc, copy.deepcopy(head), config, data_seed, ctx.device)
        drops = losses[s, :, 0] - losses[s, :, -1]
        summary[f"drop_original_seed{s}"], summary[f"drop_fixed_seed{s}"] = map(float, drops)
        rows.append({"seed": s, "phase": doc["map"]["phase"], "beta": doc["map"]["beta"],
                     "beta_c": doc["map"]["beta_c"], "alpha_c": doc["map"]["alpha_c"], "beta_fix": fix["beta"],
                     "alpha_fix": fix["alpha_sa"], "loss_start": losses[s, 0, 0], "loss_original": losses[s, 0, -1],
                     "loss_fixed": losses[s, 1, -1], "drop_original": drops[0], "drop_fixed": drops[1]})
        summary[f"phase_seed{s}"] = float(PHASES[doc["map"]["phase"]])
        summary[f"loss_original_seed{s}"], summary[f"loss_fixed_seed{s}"] = map(float, losses[s, :, -1])
        if s == 0:
            summary.update(beta=doc["map"]["beta"], beta_c=doc["map"]["beta_c"], alpha_c=doc["map"]["alpha_c"],
                           beta_fix=fix["beta"], alpha_fix=fix["alpha_sa"])
    diff = (losses[:, 1, 0] - losses[:, 1, -1]) - (losses[:, 0, 0] - losses[:, 0, -1])
    summary["drop_gain_mean"] = float(diff.mean())
    summary["drop_gain_sd"] = float(diff.std(ddof=1)) if len(diff) > 1 else math.nan
    summary["uniform_loss"] = math.log(config.vocab - 5)
    summary["loss_start"] = float(losses[:, :, 0].mean())
    return Result(pd.DataFrame(rows), {"eval_loss": losses}, summary)


MAP_FIX_TRAINING_OUTPUTS = declare(tiny={"L": 1, "d": 16, "H": 1, "T": 8, "steps": 3, "batch": 2, "n_eval": 4,
                                         "n_seeds": 2, "n_log": 1, "positions": 16, "vocab": 16},
        arrays={"eval_loss": ("n_seeds", 2, "n_log + 1")})

MAP_FIX_TRAINING = Experiment(
    STUDY, "map_fix_training", MapFixTrainingConfig, map_fix_training,
    ref="Sec. 3.3, Fig. 1c, 1f",
    title="attnlab map --apply: a collapsing model and its fix, trained",
    cost=costs.map_fix_training,
    outputs=MAP_FIX_TRAINING_OUTPUTS,
    summary=summaries.MapFixSummary,
)
