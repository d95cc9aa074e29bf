"""The one-shot pipeline shared by Figs. 3, 6 and 7: data → GD model → its Q/K as fixed heads → theory.

1. :func:`load_data`: in-distribution class splits (train / val / test), out-of-distribution sets, the
   run's tokenizer (label vectors and positional encoding);
2. :func:`train_model`: the gradient-descent model of a variant (resumable, best-validation model);
3. :func:`problem`: episodes through the model's learned attention → path features, with the validation,
   ID-test and OOD-test episodes stacked as one test set (``slices`` names the parts);
4. :func:`theory_grid`: the saddle point on the τ grid × width grid (warm-started along N), the
   validation-selected τ*(N) (App. H.2.1 does not say on which split; here a validation split, not the test
   set as the public code does: docs/studies/paths.md), and the accuracies at τ*(N) on every test set, plus
   the GP limit at its own validation-selected τ; also every test episode's correctness (1: sign f = y) for both,
   for paired intervals over the same episodes (the claims on Fig. 3b's finite-width gain).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from attnlab.core.runs import RunContext
from attnlab.core.units import Unit
from attnlab.paths import model
from attnlab.paths.configs import OneShotConfig, Variant
from attnlab.paths.data import episodes
from attnlab.paths.data import images as data
from attnlab.paths.theory import kernels
from attnlab.paths.theory import saddle as theory
from attnlab.paths.train import gd

F64 = torch.float64


@dataclass
class OneShotData:
    train: data.ImageSet
    val: data.ImageSet
    test: data.ImageSet
    ood: dict[str, data.ImageSet]
    tokenizer: episodes.Tokenizer


def load_images(name: str, config: OneShotConfig, ctx: RunContext, ood: bool = False) -> data.ImageSet:
    """One image set: bundled (digits, mnist_5k), read from data_root (omniglot; mnist and fashion_mnist: their
    training files in distribution, their test files out of it) or generated (glyphs, glyphs_blocks; letters: 40
    rendered instances of each of the 42 ``data.LETTERS``, from the run's ``ood_letters`` stream)."""
    S, C = config.image_size, config.channels
    if name in data.BUNDLED:
        return data.load_bundled(name, S, C)
    if name == "omniglot":
        return data.load_omniglot(config.data_root, S, C)
    if name in ("mnist", "fashion_mnist"):
        return data.load_idx_dataset(config.data_root, name, "t10k" if ood else "train", S, C)
    if name == "letters":
        return data.rendered_letters(40, S, C, generator=ctx.generator("ood_letters", "cpu"))
    if name == "glyphs":
        return data.synthetic_glyphs(config.glyph_classes, 20, S, C, "strokes", generator=ctx.generator("data", "cpu"))
    n_cls = max(10, min(100, config.glyph_classes // 10))
    return data.synthetic_glyphs(n_cls, 20, S, C, "blocks", generator=ctx.generator("ood", "cpu"))


def class_split(config: OneShotConfig, n_classes: int) -> tuple[int, int, int]:
    """Train / val / test classes: the config's, Omniglot's 1028/172/423, 5/2/3 of ten, else those proportions."""
    if config.class_split is not None:
        return config.class_split
    if config.dataset == "omniglot":
        return data.OMNIGLOT_SPLIT
    if n_classes == 10:
        return data.DIGIT_SPLIT
    k = n_classes / sum(data.OMNIGLOT_SPLIT)
    return round(1028 * k), max(2, round(172 * k)), max(2, round(423 * k))


def load_data(config: OneShotConfig, ctx: RunContext) -> OneShotData:
    """The ID set split by class (then, with rotations, each part's classes × 4 rotations), the OOD sets; with
    ``standardize`` every set to zero mean and unit std with its own statistics."""
    full = load_images(config.dataset, config, ctx)
    parts = full.split(class_split(config, len(full.classes)))
    if config.rotations_on:
        parts = [p.with_rotations() for p in parts]
    ood = {name: load_images(name, config, ctx, ood=True) for name in config.ood}
    if config.standardize:
        m, s = full.images.mean(), full.images.std()
        parts = [data.ImageSet((p.images - m) / s, p.labels, p.name) for p in parts]
        ood = {k: v.standardized() for k, v in ood.items()}
    train, val, test = parts
    tok = episodes.Tokenizer.make(config.image_size, config.patch, config.channels, ctx.generator("teacher", "cpu"))
    return OneShotData(train, val, test, ood, tok)


def episode_sets(config: OneShotConfig, ctx: RunContext, d: OneShotData) -> dict[str, tuple]:
    """The fixed episode sets: Bayesian training (P), validation, ID test and one test set per OOD data set."""
    tok = d.tokenizer
    sets = {"train": episodes.sample_episodes(d.train, config.P, tok, ctx.generator("bayes_train", "cpu")),
            "val": episodes.sample_episodes(d.val, config.P_val, tok, ctx.generator("val", "cpu")),
            "id": episodes.sample_episodes(d.test, config.P_test, tok, ctx.generator("eval", "cpu"))}
    for name, s in d.ood.items():
        sets[name] = episodes.sample_episodes(s, config.P_test, tok, ctx.generator(f"eval_{name}", "cpu"))
    return sets


def pruning_sets(config: OneShotConfig, ctx: RunContext, d: OneShotData) -> dict[str, tuple]:
    """``P_prune`` fresh episodes of the ID test classes and of every OOD set, on which the GD model's pruning
    drops are measured (Fig. 3e-f): the single-head drops differ by a few hundredths, below the noise of P*."""
    tok = d.tokenizer
    sets = {"id": episodes.sample_episodes(d.test, config.P_prune, tok, ctx.generator("prune_id", "cpu"))}
    for name, s in d.ood.items():
        sets[name] = episodes.sample_episodes(s, config.P_prune, tok, ctx.generator(f"prune_{name}", "cpu"))
    return sets


def train_model(config: OneShotConfig, ctx: RunContext, units, d: OneShotData, variant: Variant,
                val: tuple[torch.Tensor, torch.Tensor]) -> tuple[model.AttentionPathNet, dict]:
    """The variant's GD model (App. H.1), trained once per run and resumable mid-training."""
    G = variant.G or config.G

    def build() -> model.AttentionPathNet:
        g = ctx.generator(f"init_{variant.name}", "cpu")
        return model.AttentionPathNet(config.width, config.N_gd, G, variant.Hs, "mean", generator=g).to(ctx.device)

    def compute(u: Unit):
        net = build()
        with ctx.progress(config.gd_steps, f"GD {variant.name}") as bar:
            res = gd.train_gd(net, d.train, d.tokenizer, val, steps=config.gd_steps, batch=config.gd_batch,
                              lr=config.gd_lr, eval_every=config.eval_every,
                              generator=ctx.generator(f"gd_{variant.name}", "cpu"), state=u.resume,
                              progress=bar.update, checkpoint=u.save)
        return {"state": {k: v.cpu() for k, v in res.state.items()}, "best_val": res.best_val,
                "best_step": res.best_step, "history": res.history}

    out = units.get(f"gd_{variant.name}", compute)
    net = build()
    net.load_state_dict(out["state"])
    net.eval()
    return net, out


def problem(net: model.AttentionPathNet, sets: dict, sigma2: float, device) -> tuple[kernels.Problem, dict]:
    """Path features through the learned attention; test = every set but ``train``, stacked (``slices``)."""
    heads = [A.detach().to(device, F64) for A in net.logit_matrices()]
    names = [k for k in sets if k != "train"]
    Xtr, ytr = sets["train"]
    Xt = torch.cat([sets[k][0] for k in names])
    yt = torch.cat([sets[k][1] for k in names])
    slices, i = {}, 0
    for k in names:
        slices[k] = slice(i, i + sets[k][0].shape[0])
        i += sets[k][0].shape[0]
    pb = kernels.Problem(model.path_features(Xtr.to(device, F64), heads, "mean"), ytr.to(device, F64),
                         model.path_features(Xt.to(device, F64), heads, "mean"), yt.to(device, F64), net.Hs, sigma2)
    return pb, slices


def theory_grid(pb: kernels.Problem, slices: dict, widths, taus, kern: kernels.PathKernels, units, tag: str,
                solve_kw: dict) -> dict[str, np.ndarray]:
    """Accuracies on every test set for every (τ, N), the GP per τ, τ*(N) and U*(N) at τ*(N)."""
    y = pb.y_test.cpu().numpy()
    acc = {k: np.zeros((len(taus), len(widths))) for k in slices}
    gp = {k: np.zeros(len(taus)) for k in slices}
    Us = np.zeros((len(taus), len(widths), pb.n, pb.n))
    fmean = np.zeros((len(taus), len(widths), len(y)))
    fvar = np.zeros_like(fmean)
    gp_f = np.zeros((len(taus), len(y)))
    for a, tau in enumerate(taus):
        tr = units.get(f"{tag}theory_tau{tau:g}", lambda u, tau=tau:
                       theory.predict(pb, list(widths), tau, kern=kern, checkpoint=u, **solve_kw))
        Us[a], fmean[a], fvar[a] = tr["U"], tr["f_mean"], tr["f_var"]
        for k, s in slices.items():
            acc[k][a] = (np.sign(tr["f_mean"][:, s]) == y[s]).mean(-1)
        g = gp_f[a] = theory.predict_gp(pb, tau, kern).mean.cpu().numpy()
        for k, s in slices.items():
            gp[k][a] = (np.sign(g[s]) == y[s]).mean()
    best = acc["val"].argmax(0)  # τ*(N) on validation; first (smallest τ) on ties
    gp_best = int(gp["val"].argmax())
    cols = np.arange(len(widths))
    out = {"taus": np.asarray(taus, float), "widths": np.asarray(widths, float), "tau_star": np.asarray(taus)[best],
           "U_star": Us[best, cols], "f_star": fmean[best, cols], "fvar_star": fvar[best, cols],
           "tau_gp": np.asarray(taus[gp_best])}
    for k, s in slices.items():
        out[f"acc_grid_{k}"] = acc[k]
        out[f"acc_fw_{k}"] = acc[k][best, cols]
        out[f"acc_gp_grid_{k}"] = gp[k]
        out[f"acc_gp_{k}"] = np.asarray(gp[k][gp_best])
        out[f"correct_fw_{k}"] = (np.sign(out["f_star"][:, s]) == y[s]).astype(np.int8)  # (widths, episodes)
        out[f"correct_gp_{k}"] = (np.sign(gp_f[gp_best, s]) == y[s]).astype(np.int8)
    return out
