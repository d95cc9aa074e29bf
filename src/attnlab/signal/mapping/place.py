"""``attnlab map``: a model on the trainability diagram of paper 1 (Fig. 1c), its predicted and measured signal
propagation, and the fix.

``map_model(obj)`` reads the model's actual weights (:mod:`.read`: per-layer β from the Q/K weights in both
conventions of App. B.1, σ_v² from the value and output projections, the MLP fan-in variances, activation, α_SA,
α_MLP, LN placement), iterates the block map of Eq. (19) layer by layer with each layer's own parameters (the
prediction of ρ_ℓ, and of S_ℓ/log T by B.18), measures both on inputs (:mod:`.measure`), places the model on
the (β, α_SA) diagram of its depth with β_c (Eq. (13)) and α_c(L), and gives the phase, the margin to the nearest
boundary and the fix: β and α_SA (as a Q/K std and an output-projection scale) inside the trainable region by a
factor ``margin``. ``apply_fix`` writes the fixed model (``hf.reinit`` for the BERT layout).
"""

from __future__ import annotations

import copy
import math
import time
from typing import Any

import torch

from attnlab.core.config import ConfigError
from attnlab.core.rng import generator
from attnlab.signal.arch import Architecture, std_from_beta
from attnlab.signal.mapping import measure as mm
from attnlab.signal.mapping import read as mr
from attnlab.signal.mapping.read import one_thread
from attnlab.signal.theory import diagram, propagation, rem

PARAMS = ("beta", "beta_paper", "sigma_v2", "sigma_w2", "sigma_w2_out", "sigma_b2", "qk_std", "qk_bias_rms",
          "ln_gain_rms")


def _arch(spec: mr.Spec, p: dict[str, float], T: int) -> Architecture:
    """The study's Architecture for one layer's parameters (α_SA realised in W_O is undone: σ_v² × α²)."""
    fold = spec.alpha_sa**2 if spec.alpha_in_wo else 1.0
    return Architecture(d=spec.d, H=spec.H, d_ff=spec.ff, T=T, T_init=spec.T_init, L=spec.L, beta=max(p["beta"], 1e-12),
                        alpha_sa=spec.alpha_sa, alpha_mlp=spec.alpha_mlp, sigma_v2=min(p["sigma_v2"] * fold, 1e4),
                        sigma_w2=p["sigma_w2"], sigma_w2_out=p["sigma_w2_out"], sigma_b2=p["sigma_b2"],
                        activation=spec.activation, norm="layernorm", ln_position="post")


def predict_layers(spec: mr.Spec, params: list[dict[str, float]], T: int, rho0: float, start: int = 0,
                   table: rem.OverlapTable | None = None) -> dict[str, list[float]]:
    """ρ_ℓ (Eq. (19)) and S_ℓ/log T (B.18 at the layer's input cosine) with each layer's own parameters, from ρ at
    layer ``start`` (NaN before it)."""
    rho, q = torch.tensor(float(rho0), dtype=torch.float64), None
    out_rho, out_ent = [math.nan] * start + [float(rho0)], [math.nan] * (start + 1)
    for p in params[start:]:
        o = propagation.block(rho, _arch(spec, p, T), table=table, q=q)
        rho, q = o["rho"], o["q"]
        out_rho.append(float(rho))
        out_ent.append(float(o["entropy"]))
    return {"rho": out_rho, "entropy": out_ent}


def mean_params(params: list[dict[str, float]]) -> dict[str, float]:
    return {k: sum(p[k] for p in params) / len(params) for k in PARAMS}


def place(arch: Architecture, rho0: float, eps: float, margin: float, n: int = 121,
          table: rem.OverlapTable | None = None) -> dict[str, Any]:
    """The diagram at the model's depth, its point, phase, margins and the fix (module doc). β in score units at
    T_init (Eq. (11)); β_c converted from the REM's units (Eq. (13) at the attended length T)."""
    L, beta, alpha = arch.L, arch.beta, arch.alpha_sa
    to_score = arch.beta / arch.beta_theory
    bc = float(rem.beta_c(rho0)) * to_score
    a_c = float(diagram.alpha_c(arch, [L], [eps], rho0=rho0, table=table)[0, 0])
    rho_L = float(diagram.rho_L(arch, torch.tensor([alpha], dtype=torch.float64), [L], rho0=rho0, table=table)[0, 0])
    phase = "entropy collapse" if beta >= bc else "rank collapse" if rho_L >= 1 - eps else "trainable"
    betas = torch.logspace(math.log10(min(beta, bc) / 30), math.log10(max(beta, bc) * 4), n, dtype=torch.float64)
    alphas = torch.logspace(math.log10(min(alpha, a_c if a_c > 0 else alpha) / 30),
                            math.log10(max(alpha, a_c if math.isfinite(a_c) else alpha) * 30), n, dtype=torch.float64)
    grid = diagram.trainability(arch, betas, alphas, rho0=rho0, eps=eps, table=table)
    beta_fix = min(beta, bc / margin)
    a_fix_c = float(diagram.alpha_c(arch.replace(beta=beta_fix), [L], [eps], rho0=rho0, table=table)[0, 0])
    alpha_fix = max(alpha, margin * a_fix_c) if math.isfinite(a_fix_c) else math.nan
    Ls = sorted({*range(1, 2 * L + 1, max(1, L // 24)), L})
    curve = diagram.alpha_c(arch, Ls, [eps], rho0=rho0, table=table)[:, 0]
    log_b = math.log10(bc / beta)
    log_a = math.log10(alpha / a_c) if a_c > 0 and math.isfinite(a_c) else (math.inf if a_c == 0 else -math.inf)
    nearest = "beta_c (entropy collapse)" if abs(log_b) <= abs(log_a) else "alpha_c (rank collapse)"
    fix_needed = beta_fix != beta or alpha_fix != alpha
    return {
        "phase": phase, "beta": beta, "alpha_sa": alpha, "beta_c": bc, "beta_c_paper": bc / arch.H,
        "alpha_c": a_c, "rho_L": rho_L, "eps": eps,
        "margin": {"log10_beta_c_over_beta": log_b, "log10_alpha_over_alpha_c": log_a, "nearest": nearest},
        "fix": {"needed": fix_needed, "feasible": math.isfinite(alpha_fix), "beta": beta_fix,
                "beta_paper": beta_fix / arch.H, "alpha_sa": alpha_fix, "alpha_c_at_beta": a_fix_c,
                "qk_std": std_from_beta(beta_fix, arch.d, arch.H, arch.t_init), "margin_factor": margin,
                "output_projection_scale": (1 / alpha_fix) if math.isfinite(alpha_fix) else math.nan},
        "diagram": {"betas": betas.tolist(), "alphas": alphas.tolist(), "phase": grid["phase"].tolist(),
                    "alpha_c_L": {"L": Ls, "alpha_c": curve.tolist()}},
    }


def map_model(obj, *, T: int = 64, batch: int = 32, text=None, measure: bool = True, eps: float = 1e-2,
              margin: float = 2.0, rho0: float | None = None, seed: int = 0, finite_T: bool = False) -> dict[str, Any]:
    """The whole map of a model (module doc) as one JSON-able dict; ``obj`` is anything :func:`.read.read`
    takes, or a :class:`.read.Spec`. ``finite_T``: the attention of T keys by the finite-T Monte Carlo of
    App. B.7 (:class:`rem.OverlapTable`, seconds at T ≤ 64) instead of the asymptotic Eq. (13)."""
    t0 = time.perf_counter()
    spec = mr.read(obj)
    doc: dict[str, Any] = {"family": spec.family, "source": spec.source, "covered": spec.covered,
                           "reason": spec.reason, "d": spec.d, "H": spec.H, "L": spec.L, "d_ff": spec.ff,
                           "T_init": spec.T_init, "activation": spec.activation, "ln_position": spec.ln,
                           "alpha_sa": spec.alpha_sa, "alpha_mlp": spec.alpha_mlp, "T": T, "notes": []}
    measured, params = None, None
    if spec.model is None and not spec.covered and not spec.layers:
        spec.model = _build_outside(spec)
    if measure:
        ids = mm.token_ids(spec, batch, T, text, seed)
        doc["T"], doc["batch"] = T, batch = ids.shape[1], ids.shape[0]
        doc["inputs"] = ("random tokens" if text is None else "the bundled stories" if mm.is_stories(text)
                         else f"text file {text}")
        if spec.model is not None:
            read = spec.layers if spec.covered and isinstance(spec.layers, list) else None
            measured = mm.measure_hf(spec.model, ids, seed, read, spec.H)
        elif spec.model is None and spec.layers is not None:
            x = (mm.family_embedding(spec, ids, seed) if spec.family in mr.POST_LN
                 else mm.gaussian_tokens(batch, T, spec.d, seed))
            measured, params = mm.measure_stream(spec, x, spec.iter_layers(seed))
    if spec.covered and params is None:
        params = [mr.layer_params(w, spec.d, spec.T_init, spec.H) for _, w in zip(range(spec.L),
                                                                                  spec.iter_layers(seed), strict=False)]
    doc["t_measure_s"] = time.perf_counter() - t0
    if measured is not None:
        doc["measured"] = measured
    if not spec.covered:
        doc["notes"].append(spec.reason)
        doc["t_total_s"] = time.perf_counter() - t0
        return doc
    doc["layers"] = params
    start = 0
    r0 = 0.0 if rho0 is None else rho0
    if measured is not None and rho0 is None:
        r0 = measured["rho"][0]
        if abs(measured["q0"] - 1) > 0.1:  # e.g. ELECTRA's projected embeddings: the first input is not normalised
            start, r0 = 1, measured["rho"][1]
            doc["notes"].append(f"embedding output not layer-normalised (mean square {measured['q0']:.3g}): the "
                                "prediction starts from the measured ρ_1")
    doc["rho0"] = r0
    table = rem.OverlapTable(T, seed=seed) if finite_T else None
    doc["theory"] = "finite-T (App. B.7)" if finite_T else "asymptotic in log T (Eqs. 13, 19)"
    with one_thread():
        pred = predict_layers(spec, params, T, r0, start, table)
    doc["predicted"] = pred
    mp = mean_params(params)
    doc["params"] = mp
    arch = _arch(spec, mp, T)
    with one_thread():
        doc["map"] = place(arch, r0, eps, margin, table=table)
    if measured is not None:
        diff = [m - p for m, p in zip(measured["rho"], pred["rho"], strict=True)]
        doc["difference"] = {"rho": diff, "max_abs_rho": max(abs(x) for x in diff if not math.isnan(x)),
                             "entropy": [m - p for m, p in zip(measured["entropy"], pred["entropy"], strict=True)]}
    doc["t_total_s"] = time.perf_counter() - t0
    return doc


def _build_outside(spec: mr.Spec):
    """A model outside the theory given by family and sizes is built with transformers (measured only)."""
    try:
        import transformers
    except ImportError:
        raise ConfigError(f"{spec.family} is outside the theory and is only measured, which needs transformers: "
                          "pip install -e '.[hf]'") from None
    names = {"gpt2": dict(n_embd=spec.d, n_layer=spec.L, n_head=spec.H, n_inner=spec.ff, n_positions=spec.T_init,
                          vocab_size=spec.vocab, bos_token_id=0, eos_token_id=0),
             "vit": dict(hidden_size=spec.d, num_hidden_layers=spec.L, num_attention_heads=spec.H,
                         intermediate_size=spec.ff, image_size=64, patch_size=8)}
    kw = names.get(spec.family, dict(hidden_size=spec.d, num_hidden_layers=spec.L, num_attention_heads=spec.H,
                                     intermediate_size=spec.ff, max_position_embeddings=spec.T_init,
                                     vocab_size=spec.vocab))
    cfg = transformers.AutoConfig.for_model(spec.family, initializer_range=spec.init_std, **kw)
    spec.config = cfg
    return transformers.AutoModel.from_config(cfg, attn_implementation="eager")


def fixed_spec(spec: mr.Spec, beta: float, alpha_sa: float, seed: int = 0) -> mr.Spec:
    """The spec of the fixed model without building it: W_Q, W_K redrawn at the Q/K std of β (Eq. (11), biases 0)
    and α_SA realised as W_O/α (or, for the study's Encoder, as the residual itself)."""
    std = std_from_beta(beta, spec.d, spec.H, spec.T_init)
    new = copy.copy(spec)
    new.alpha_sa, new.model, new.source = alpha_sa, None, spec.source + f" → fixed (β = {beta:.4g}, α_SA = " \
        f"{alpha_sa:.4g})"
    old_alpha = spec.alpha_sa

    def layers(s: int):
        gen = generator(s + 104729)
        for w in spec.iter_layers(s):
            w = dict(w)
            for k in ("wq", "wk"):
                w[k] = torch.randn(w[k].shape, generator=gen) * std
            w["bq"] = w["bk"] = None
            if spec.alpha_in_wo:
                key = "o" if w["wo"] is not None else "v"
                w["w" + key] = w["w" + key] * (old_alpha / alpha_sa)
                if w["b" + key] is not None:
                    w["b" + key] = w["b" + key] * (old_alpha / alpha_sa)
            yield w

    new.layers = layers
    return new


def apply_fix(spec: mr.Spec, beta: float, alpha_sa: float, out=None, seed: int = 0):
    """The fixed model: a ``transformers`` model (the loaded one, or one built from the config) re-initialised by
    ``hf.reinit`` (DistilBERT: the same rescaling), with ``config.attnlab_alpha_sa``; saved to ``out`` if given."""
    try:
        import transformers
    except ImportError:
        raise ConfigError("--apply writes a transformers checkpoint: pip install -e '.[hf]'") from None
    if not spec.covered:
        raise ConfigError(f"--apply: {spec.family} is outside the theory, there is no predicted fix to apply")
    if spec.model is not None:
        model = copy.deepcopy(spec.model)
    else:
        cfg = spec.config or _family_config(spec, transformers)
        model = transformers.AutoModel.from_config(cfg, attn_implementation="eager")
    from attnlab.signal.mapping import hf

    if mr.POST_LN.get(model.config.model_type) == "bert":
        for out_mod in (lay.attention.output for lay in hf._layers(model)):
            out_mod._attnlab_alpha = spec.alpha_sa  # the α already realised in this checkpoint's W_O
        hf.reinit(model, beta=beta, alpha_sa=alpha_sa, T=spec.T_init, seed=seed)
    else:
        _reinit_distil(model, beta, alpha_sa, spec, seed)
    model.config.attnlab_alpha_sa = alpha_sa
    if out is not None:
        model.save_pretrained(str(out))
    return model


def _family_config(spec: mr.Spec, transformers):
    kw = dict(hidden_size=spec.d, num_hidden_layers=spec.L, num_attention_heads=spec.H, intermediate_size=spec.ff,
              max_position_embeddings=spec.T_init, vocab_size=spec.vocab, initializer_range=spec.init_std or 0.02)
    if spec.family == "distilbert":
        kw = dict(dim=spec.d, n_layers=spec.L, n_heads=spec.H, hidden_dim=spec.ff, vocab_size=spec.vocab,
                  max_position_embeddings=spec.T_init, initializer_range=spec.init_std or 0.02)
    if spec.family == "electra":
        kw["embedding_size"] = spec.d
    if spec.family == "roberta":
        kw["max_position_embeddings"] = spec.T_init + 2
    return transformers.AutoConfig.for_model(spec.family, **kw)


@torch.no_grad()
def _reinit_distil(model, beta: float, alpha_sa: float, spec: mr.Spec, seed: int) -> None:
    std = std_from_beta(beta, spec.d, spec.H, spec.T_init)
    gen = generator(seed)
    for lay in model.transformer.layer:
        for lin in (lay.attention.q_lin, lay.attention.k_lin):
            lin.weight.copy_(torch.randn(lin.weight.shape, generator=gen) * std)
            lin.bias.zero_()
        lay.attention.out_lin.weight.mul_(spec.alpha_sa / alpha_sa)
        lay.attention.out_lin.bias.mul_(spec.alpha_sa / alpha_sa)


def map_with_fix(obj, *, apply=None, **kw) -> dict[str, Any]:
    """:func:`map_model`, and, for a model the theory covers, the map of its fixed version (``fixed``) — built from
    the saved checkpoint when ``apply`` is a folder, else drawn layer by layer (:func:`fixed_spec`)."""
    spec = mr.read(obj) if not isinstance(obj, mr.Spec) else obj
    doc = map_model(spec, **kw)
    if not spec.covered:
        if apply is not None:
            raise ConfigError(f"--apply: {spec.family} is outside the theory, there is no predicted fix to apply")
        return doc
    fix = doc["map"]["fix"]
    if not fix["needed"] and apply is None:
        doc["notes"].append(f"trainable with a factor {fix['margin_factor']:g} margin on both boundaries: no fix "
                            "needed")
        return doc
    if not fix["feasible"]:
        doc["notes"].append("no α_SA makes this depth trainable at this β: the MLP alone collapses the signal")
        return doc
    if apply is not None or spec.model is not None:
        model = apply_fix(spec, fix["beta"], fix["alpha_sa"], apply, kw.get("seed", 0))
        fixed = mr.read(model)
        fixed.source = f"{apply} (fixed checkpoint)" if apply is not None else spec.source + " → fixed (reinit)"
        doc["applied"] = None if apply is None else str(apply)
    else:
        fixed = fixed_spec(spec, fix["beta"], fix["alpha_sa"], kw.get("seed", 0))
    kw2 = {**kw, "rho0": None}
    doc["fixed"] = map_model(fixed, **kw2)
    return doc
