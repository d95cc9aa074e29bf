"""Simulation at initialisation: propagate token sequences through random networks and measure, per layer, what
the theory predicts (the paired API's simulation side; paper Figs. 1d/e, 3, 5, C.3).

``simulate(arch, …)`` draws ``n_inits`` random networks for each configuration (a β and/or α_SA per
configuration, so a whole grid runs in one batched computation), feeds each the same ``n_seqs`` sequences
(synthetic with a prescribed cosine, or corpus windows through random word + position embeddings) and returns a
:class:`Trajectory` over layers l = 0..L with observables of shape (C,) per layer — mean over inits × sequences
— and their standard deviations (``<name>_std``): ``rho`` (mean pairwise cosine of the block output),
``rho_mid`` (after SA + skip), ``q`` (‖x‖²/d), ``ipr`` (Σ_b A_ab²), ``entropy`` (S/log T), ``q_attn_out`` and
``q_mlp_out`` (‖·‖²/d of the SA and MLP outputs). Networks are drawn block by block and never stored, so
depth costs time, not memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import torch

from attnlab.core.trajectory import Trajectory
from attnlab.signal.arch import Architecture, qk_std_from_beta
from attnlab.signal.data import sequences as data
from attnlab.signal.model import block, init_block, layer_norm

OBSERVABLES = ("rho", "rho_mid", "q", "ipr", "entropy", "q_attn_out", "q_mlp_out")


def block_flops(arch: Architecture, B: int = 1) -> float:
    """Multiply-add FLOPs of one block on B sequences: Q/K/V 6Td², scores and A·V 4T²d, MLP 4T d d_ff."""
    T, d = arch.T, arch.d
    return float(B) * (6 * T * d * d + 4 * T * T * d + 4 * T * d * arch.ff)


def _stats(name: str, t: torch.Tensor, rec: dict[str, torch.Tensor]) -> None:
    """Per (slot, sequence) statistics of a hooked activation."""
    kind = name.rsplit(".", 1)[-1]
    if kind == "hook_pattern":
        T = t.shape[-1]
        rec["ipr"] = (t * t).sum(-1).mean((-1, -2))
        rec["entropy"] = -(t * torch.log(t.clamp(min=1e-30))).sum(-1).mean((-1, -2)) / math.log(T)
    elif kind == "hook_attn_out":
        rec["q_attn_out"] = t.pow(2).mean((-1, -2))
    elif kind == "hook_resid_mid":
        rec["rho_mid"] = data.mean_cosine(t)
    elif kind == "hook_mlp_out":
        rec["q_mlp_out"] = t.pow(2).mean((-1, -2))
    elif kind == "hook_resid_post":
        rec["rho"] = data.mean_cosine(t)
        rec["q"] = t.pow(2).mean((-1, -2))


def simulate(arch: Architecture, *, n_inits: int = 4, n_seqs: int = 4, rho0: float = 0.05,
             tokens: torch.Tensor | None = None, vocab: int | None = None, emb_std: float = 0.1,
             betas=None, alphas=None, L: int | None = None, gen: torch.Generator | None = None, device=None,
             dtype=torch.float32, max_floats: float = 4e7,
             progress: Callable[[float], None] | None = None) -> Trajectory:
    """Random-init propagation, the simulation side of the paired API (see module doc).

    ``betas`` / ``alphas`` (in ``arch``'s β convention) give one configuration each (broadcast together);
    ``tokens`` (n_seqs, T) switches from synthetic inputs of cosine ``rho0`` to corpus windows embedded by
    per-init random tables N(0, emb_std²). Slots are processed in chunks of at most ``max_floats`` activations.
    """
    L = arch.L if L is None else L
    betas_t = torch.as_tensor(arch.beta if betas is None else betas, dtype=torch.float64).reshape(-1)
    alphas_t = torch.as_tensor(arch.alpha_sa if alphas is None else alphas, dtype=torch.float64).reshape(-1)
    betas_t, alphas_t = torch.broadcast_tensors(betas_t, alphas_t)
    C = betas_t.numel()
    scale = arch.beta_score / arch.beta
    qk = torch.tensor([qk_std_from_beta(float(b) * scale, arch.d, arch.t_init) for b in betas_t], dtype=dtype)
    P = C * n_inits
    slot_qk = qk.repeat_interleave(n_inits).to(device)
    slot_alpha = alphas_t.to(dtype).repeat_interleave(n_inits).to(device)
    if tokens is not None:
        n_seqs = tokens.shape[0]
        vocab = int(tokens.max()) + 1 if vocab is None else vocab
    per_slot = n_seqs * arch.T * (arch.d + 2 * arch.T * arch.H + arch.ff)
    chunk = max(1, min(P, int(max_floats // per_slot)))
    rows: dict[str, list[torch.Tensor]] = {k: [] for k in OBSERVABLES}
    total = P * L
    done = 0
    for s0 in range(0, P, chunk):
        sl = slice(s0, min(P, s0 + chunk))
        n = sl.stop - sl.start
        if tokens is None:
            x = data.prescribed_cosine(rho0, n, n_seqs, arch.T, arch.d, gen, device, arch.norm, dtype)
        else:
            tok = torch.randn((n, vocab, arch.d), generator=gen, device=device, dtype=dtype) * emb_std
            pos = torch.randn((n, arch.T, arch.d), generator=gen, device=device, dtype=dtype) * emb_std
            x = layer_norm(tok[:, tokens.to(device)] + pos[:, None], arch.norm)
        nan = torch.full((n, n_seqs), math.nan, device=device, dtype=dtype)
        per_layer = [{**{k: nan for k in OBSERVABLES}, "rho": data.mean_cosine(x), "q": x.pow(2).mean((-1, -2))}]
        for layer in range(L):
            rec: dict[str, torch.Tensor] = {}
            p = init_block(arch, n, gen, device, slot_qk[sl], dtype)
            x = block(x, p, arch, alpha_sa=slot_alpha[sl], hook=lambda name, t, rec=rec: _stats(name, t, rec),
                      layer=layer)
            per_layer.append(rec)
            done += n
            if progress is not None:
                progress(done / total)
        for k in OBSERVABLES:
            rows[k].append(torch.stack([r[k] for r in per_layer]))  # (L+1, n, n_seqs)
    obs: dict[str, np.ndarray] = {}
    for k in OBSERVABLES:
        v = torch.cat(rows[k], dim=1).double().reshape(L + 1, C, n_inits * n_seqs)
        obs[k] = v.mean(-1).cpu().numpy()
        obs[f"{k}_std"] = v.std(-1, correction=0).cpu().numpy()
    meta = {"n_inits": n_inits, "n_seqs": n_seqs, "T": arch.T, "d": arch.d, "H": arch.H,
            "flops": block_flops(arch, n_seqs) * P * L}
    return Trajectory(np.arange(L + 1), obs, time_name="layer", source="simulation", meta=meta)
