"""The training step in closed form: loss, gradients and Adam for S seeds at once, in few and large kernels.

A step of the tiny model (66 parameters at d = 2) costs more in dispatch and memory layout than in arithmetic.
Autograd and torch.optim.Adam dispatch ~200 operators a step (~700 aten calls with the nested ones) and lay the
batched products out with the 2-wide feature axis last; this module writes the backward pass out by the chain
rule through the four equations of Sec. 2 (the algebra of Lemmas 1-2 of App. B, extended to E, P, biases, gains and
any normaliser), keeps activations feature-major and runs Adam on all parameters packed in one (S, P) buffer:
120 operators, 1.2-1.7 ms of CPU instead of 3.2 ms at S = 100 (pal preset; shared 2-core machine).
``model.forward`` with autograd stays the reference: the tests hold the two to float64 rounding, and the trainer
to a textbook torch.optim.Adam loop.

Shapes: C = n_emb·N cells (v, t) of the token table; a batch is feature- or token-major, (S, ·, B).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnlab.clustering.model import MLP_PARAMS, ModelSpec, Params, activation, normalize

# ----------------------------------------------------------------------------------------------- normalisers
# Activations are kept feature-major, (S, features, B): with d = 2 and B = 32 the batched products are 3-6×
# faster on CPU when the long axis is the output's last one, and the softmax over N = 12 is fast on axis 1.


def _norm_forward(x: torch.Tensor, spec: ModelSpec, gain: torch.Tensor | None) -> tuple[torch.Tensor, tuple]:
    """y = g ⊙ x·φ(||x||) along axis 1 and what its backward needs. Sphere: φ = 1/ρ; rmsnorm: φ = (ρ²/d + ε)^(-1/2)
    (eps inside) or 1/(ρ/sqrt(d) + ε) (outside); the smoothed normalisers of Sec. 4.4 keep their autograd form."""
    g = None if gain is None else gain[:, :, None]
    if spec.norm == "sphere":
        r = x.norm(dim=1, keepdim=True)
        phi = 1 / r.clamp_min(1e-12)
        slope = phi.pow(3).mul_(r > 1e-12).neg_()                             # φ'(ρ)/ρ (0 where clamped)
    elif spec.norm == "rmsnorm":
        ms = x.pow(2).mean(1, keepdim=True)
        if spec.rms_eps == "inside":
            phi = torch.rsqrt(ms + spec.norm_eps)
            slope = phi.pow(3) * (-1 / x.shape[1])
        else:
            rms = ms.sqrt()
            phi = 1 / (rms + spec.norm_eps)
            slope = torch.where(rms > 0, -phi.pow(2) / (rms.clamp_min(1e-30) * x.shape[1]), 0.0)
    else:
        with torch.enable_grad():
            xl = x.detach().requires_grad_(True)
            n = normalize(xl.transpose(1, 2), spec).transpose(1, 2)
        return (n.detach() if g is None else n.detach() * g), ("autograd", xl, n, g)
    n = x * phi
    return (n if g is None else n * g), ("closed", x, n, g, phi, slope)


def _norm_backward(gy: torch.Tensor, saved: tuple) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(∂L/∂x, ∂L/∂g): dx = φ·gy + (φ'(ρ)/ρ)(x·gy)·x for y = x·φ(||x||) (feature axis 1, gain summed over 2)."""
    kind, x, n, g = saved[:4]
    g_gain = None if g is None else (gy * n).sum(2)
    gn = gy if g is None else gy * g
    if kind == "autograd":
        return torch.autograd.grad(n, x, gn)[0], g_gain
    phi, slope = saved[4:]
    return gn * phi + (gn * x).sum(1, keepdim=True) * slope * x, g_gain


# ----------------------------------------------------------------------------------------------- activations
ACT_BACKWARD: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "gelu": lambda g, pre, out: torch.ops.aten.gelu_backward(g, pre),
    "gelu_tanh": lambda g, pre, out: torch.ops.aten.gelu_backward(g, pre, approximate="tanh"),
    "relu": lambda g, pre, out: torch.ops.aten.threshold_backward(g, out, 0),
    "silu": lambda g, pre, out: torch.ops.aten.silu_backward(g, pre),
    "tanh": lambda g, pre, out: torch.ops.aten.tanh_backward(g, out),
    "sigmoid": lambda g, pre, out: torch.ops.aten.sigmoid_backward(g, out),
    "identity": lambda g, pre, out: g,
}


def _act_forward(pre: torch.Tensor, name: str) -> tuple[torch.Tensor, tuple]:
    if name in ACT_BACKWARD:
        out = activation(name)(pre)
        return out, (name, pre, out)
    with torch.enable_grad():
        pl = pre.detach().requires_grad_(True)
        out = activation(name)(pl)
    return out.detach(), ("autograd", pl, out)


def _act_backward(g: torch.Tensor, saved: tuple) -> torch.Tensor:
    name, pre, out = saved
    if name == "autograd":
        return torch.autograd.grad(out, pre, g)[0]
    return ACT_BACKWARD[name](g, pre, out)


def _batch_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Σ_b a[:, :, b] b[:, :, b]ᵀ for feature-major a (S, m, B), b (S, n, B): (S, m, n), computed as (narrower
    operand) @ (wider operand's transposed view), the fastest of the layouts on CPU at B = 32 and at B = 4096."""
    if a.shape[1] >= b.shape[1]:
        return torch.bmm(b, a.transpose(1, 2)).transpose(1, 2)
    return torch.bmm(a, b.transpose(1, 2))


def _linear(w: torch.Tensor, x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """w (S, m, n) @ x (S, n, B) (+ bias (S, m))."""
    return torch.bmm(w, x) if bias is None else torch.baddbmm(bias[:, :, None], w, x)


# ----------------------------------------------------------------------------------------------- loss + grads
def one_hot(x: torch.Tensor, n: int, dtype: torch.dtype) -> torch.Tensor:
    """One-hot of integer tokens along a new axis 1: (S, ...) -> (S, n, ...)."""
    shape = (1, n) + (1,) * (x.dim() - 1)
    return (x[:, None] == torch.arange(n, device=x.device).view(shape)).to(dtype)


def loss_and_grads(params: Params, x_hot: torch.Tensor, y_hot: torch.Tensor, spec: ModelSpec,
                   keep: torch.Tensor | None = None) -> tuple[torch.Tensor, Params]:
    """Mean cross-entropy of each seed on its batch (S,) and its gradient with respect to every parameter.

    ``x_hot`` (S, p, N, B) are the batch's tokens one-hot (``one_hot(x, p)`` of token-major x (S, N, B)), ``y_hot``
    (S, n_emb, B) its labels one-hot; ``keep`` the MLP dropout mask divided by the keep probability (S, d, B) or
    None. Gathers and scatters over the token table are products with ``x_hot``; only the p rows of E that are
    tokens enter the attention (the pal preset's third row is an output only). The same numbers, up to rounding,
    as autograd through ``model.forward`` (eqs. token embedding, sentence embedding, sentence transform, logits)."""
    E, P, q, V = (params[k] for k in ("E", "P", "q", "V"))
    S, n_tok, N, B = x_hot.shape
    d = E.shape[2]
    # the normalised token table (S, d, C), attention (S, N, B), ξ = V Σ_t a_t z_t (S, d, B)
    eT = (E[:, :n_tok].transpose(1, 2)[:, :, :, None] + P.transpose(1, 2)[:, :, None, :]).reshape(S, d, n_tok * N)
    zT, saved_z = _norm_forward(eT, spec, params.get("g_attn"))
    qs = q * (1 / math.sqrt(d))
    table_scores = torch.bmm(qs[:, None, :], zT).view(S, n_tok, N, 1)
    a = torch.softmax((x_hot * table_scores).sum(1), dim=1)
    poolT = (x_hot * a[:, None]).reshape(S, n_tok * N, B)                             # (S, C, B)
    pooledT = torch.bmm(zT, poolT)
    tail = tail_loss_and_grads(params, torch.bmm(V, pooledT), y_hot, spec, keep=keep)
    grads, g_xiT = tail.grads, tail.g_xi
    # the head's backward: V, the attention, the token table, E and P
    grads["V"] = _batch_sum(g_xiT, pooledT)
    g_pooledT = torch.bmm(V.transpose(1, 2).contiguous(), g_xiT)
    g_zT = torch.bmm(g_pooledT, poolT.transpose(1, 2).contiguous())                  # (S, d, C)
    g_a = (torch.bmm(zT.transpose(1, 2).contiguous(), g_pooledT).view(S, n_tok, N, B) * x_hot).sum(1)
    g_scores = a * (g_a - (a * g_a).sum(1, keepdim=True))                             # (S, N, B)
    g_table = (x_hot * g_scores[:, None]).sum(3).view(S, n_tok * N)
    grads["q"] = torch.bmm(zT, g_table[:, :, None]).squeeze(2) * (1 / math.sqrt(d))
    g_zT = torch.baddbmm(g_zT, qs[:, :, None], g_table[:, None, :])
    g_eT, g_gain = _norm_backward(g_zT, saved_z)
    g_eT = g_eT.view(S, d, n_tok, N)
    grads["E"][:, :n_tok] += g_eT.sum(3).transpose(1, 2)
    grads["P"] = g_eT.sum(2).transpose(1, 2)
    if g_gain is not None:
        grads["g_attn"] = g_gain
    return tail.loss, {k: grads[k] for k in params}


@dataclass
class Tail:
    """What ``tail_loss_and_grads`` returns: loss (S,), log-probabilities (S, n_emb, B), the gradients of the
    tail's parameters (E through the unembedding, W, U, biases, g_mlp) and ∂L/∂ξ (S, d, B)."""

    loss: torch.Tensor
    logp: torch.Tensor
    grads: Params
    g_xi: torch.Tensor


def tail_loss_and_grads(params: Params, xiT: torch.Tensor, y_hot: torch.Tensor, spec: ModelSpec,
                        weight: torch.Tensor | None = None, keep: torch.Tensor | None = None) -> Tail:
    """From ξ (S, d, B) to the loss and back: ψ = ξ + U σ(W Norm(ξ)) (+ biases, dropout), ζ = E ψ, the
    cross-entropy of one-hot labels ``y_hot`` (S or 1, n_emb, B) weighted by ``weight`` (S, B) (default 1/B
    each), and its backward."""
    E, W, U = params["E"], params["W"], params["U"]
    bW, bU = params.get("bW"), params.get("bU")
    B = xiT.shape[2]
    xnT, saved_xi = _norm_forward(xiT, spec, params.get("g_mlp"))
    hidT, saved_act = _act_forward(_linear(W, xnT, bW), spec.activation)
    mlpT = _linear(U, hidT, bU)
    psiT = xiT + (mlpT if keep is None else mlpT * keep)
    logp = torch.log_softmax(torch.bmm(E, psiT), 1)                                  # (S, n_emb, B)
    picked = (logp * y_hot).sum(1)
    loss = picked.mean(1).neg() if weight is None else (picked * weight).sum(1).neg()
    g_logits = logp.exp().sub_(y_hot)
    g_logits = g_logits.mul_(1 / B) if weight is None else g_logits.mul_(weight[:, None, :])
    grads: Params = {"E": _batch_sum(g_logits, psiT)}
    g_psiT = torch.bmm(E.transpose(1, 2).contiguous(), g_logits)                     # (S, d, B)
    g_mlpT = g_psiT if keep is None else g_psiT * keep
    grads["U"] = _batch_sum(g_mlpT, hidT)
    g_preT = _act_backward(torch.bmm(U.transpose(1, 2).contiguous(), g_mlpT), saved_act)
    grads["W"] = _batch_sum(g_preT, xnT)
    g_xiT, g_gain = _norm_backward(torch.bmm(W.transpose(1, 2).contiguous(), g_preT), saved_xi)
    if bW is not None:
        grads["bW"] = g_preT.sum(2)
    if bU is not None:
        grads["bU"] = g_mlpT.sum(2)
    if g_gain is not None:
        grads["g_mlp"] = g_gain
    return Tail(loss, logp, grads, g_xiT + g_psiT)


def chunked_tail(params: Params, xiT: torch.Tensor, y_hot: torch.Tensor, spec: ModelSpec, weight: torch.Tensor,
                 elements: int = 2**19) -> Tail:
    """``tail_loss_and_grads`` over many sentences (the per-epoch record's 4096), in chunks of about ``elements``
    hidden activations: a (S, h, B) pass that stays in cache is 3× faster on a CPU whose memory bandwidth is shared."""
    S, h, B = xiT.shape[0], params["W"].shape[1], xiT.shape[2]
    c = max(32, min(B, elements // max(1, S * h)))
    parts = [tail_loss_and_grads(params, xiT[:, :, i:i + c], y_hot[..., i:i + c], spec, weight=weight[:, i:i + c])
             for i in range(0, B, c)]
    grads = {k: torch.stack([t.grads[k] for t in parts]).sum(0) for k in parts[0].grads}
    return Tail(torch.stack([t.loss for t in parts]).sum(0), torch.cat([t.logp for t in parts], 2), grads,
                torch.cat([t.g_xi for t in parts], 2))


# ----------------------------------------------------------------------------------------------- flat Adam
class Flat:
    """All parameters of S seeds packed in one (S, P) buffer; ``views`` are the named tensors inside it."""

    def __init__(self, params: Params) -> None:
        self.names = list(params)
        self.shapes = {k: tuple(v.shape[1:]) for k, v in params.items()}
        self.sizes = [math.prod(self.shapes[k]) for k in self.names]
        S = next(iter(params.values())).shape[0]
        self.data = torch.cat([params[k].reshape(S, -1) for k in self.names], 1).contiguous()
        self.views = self.unpack(self.data)

    def unpack(self, flat: torch.Tensor) -> Params:
        out, at = {}, 0
        for k, n in zip(self.names, self.sizes, strict=True):
            out[k] = flat[:, at:at + n].view(flat.shape[0], *self.shapes[k])
            at += n
        return out

    def pack(self, tensors: Params) -> torch.Tensor:
        S = self.data.shape[0]
        return torch.cat([tensors[k].reshape(S, -1) for k in self.names], 1)

    def group_matrix(self) -> torch.Tensor:
        """(P, G) indicator of which column belongs to which named tensor (per-group norms in one product)."""
        m = torch.zeros(self.data.shape[1], len(self.names), dtype=self.data.dtype, device=self.data.device)
        at = 0
        for i, n in enumerate(self.sizes):
            m[at:at + n, i] = 1
            at += n
        return m


class Adam:
    """torch.optim.Adam's update (Kingma & Ba 2015, Alg. 1; ε added to sqrt(v̂), L2 ``weight_decay`` added to the
    gradient) on a packed (S, P) buffer: the MLP's columns learn at ``lr·mlp_factor`` (Fig. 16's discount)."""

    def __init__(self, flat: Flat, lr: float, mlp_factor: float, betas: tuple[float, float], eps: float,
                 weight_decay: float) -> None:
        self.lr, self.betas, self.eps, self.wd = lr, betas, eps, weight_decay
        self.m, self.v, self.t = torch.zeros_like(flat.data), torch.zeros_like(flat.data), 0
        self.t_dev: torch.Tensor | None = None
        self.lr_cols = None
        if mlp_factor != 1:
            cols = [torch.full((n,), lr * (mlp_factor if k in MLP_PARAMS else 1.0), dtype=flat.data.dtype,
                               device=flat.data.device) for k, n in zip(flat.names, flat.sizes, strict=True)]
            self.lr_cols = torch.cat(cols)

    def step(self, param: torch.Tensor, grad: torch.Tensor) -> None:
        b1, b2 = self.betas
        if self.wd:
            grad = grad.add(param, alpha=self.wd)
        self.m.lerp_(grad, 1 - b1)
        self.v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
        if self.t_dev is None:
            self.t += 1
            bc1, bc2_sqrt = 1 - b1**self.t, math.sqrt(1 - b2**self.t)
            denom = (self.v.sqrt() / bc2_sqrt).add_(self.eps)
            if self.lr_cols is None:
                param.addcdiv_(self.m, denom, value=-self.lr / bc1)
            else:
                param.addcdiv_(self.m * self.lr_cols, denom, value=-1 / bc1)
            return
        self.t_dev += 1                              # capturable: no host scalar depends on the step count
        bc1 = 1 - torch.pow(b1, self.t_dev)
        denom = (self.v.sqrt() / (1 - torch.pow(b2, self.t_dev)).sqrt()).add_(self.eps)
        lr = self.lr if self.lr_cols is None else self.lr_cols
        param.addcdiv_(self.m * (lr * (-1 / bc1)), denom)

    def capturable(self) -> None:
        """Keep the step count on the device (a CUDA graph replays the update with the count it reads there);
        the caller advances ``t`` by the number of replayed steps."""
        self.t_dev = torch.tensor(float(self.t), dtype=torch.float64, device=self.m.device)

    def state_dict(self) -> dict:
        return {"t": self.t, "m": self.m.clone(), "v": self.v.clone()}

    def load_state_dict(self, state: dict, flat: Flat | None = None) -> None:
        """Resume from ``state_dict()``, or (given ``flat``) from a torch.optim.Adam state of the same tensors."""
        if "state" in state and flat is not None:        # a checkpoint written before the packed Adam
            per = [state["state"][i] for i in range(len(flat.names))]
            state = {"t": int(per[0]["step"]), **{k: flat.pack(dict(zip(flat.names, [s[key] for s in per],
                                                                          strict=True)))
                                                  for k, key in (("m", "exp_avg"), ("v", "exp_avg_sq"))}}
        self.t = int(state["t"])
        self.m.copy_(state["m"])
        self.v.copy_(state["v"])
        if self.t_dev is not None:
            self.t_dev.fill_(float(self.t))


def cross_entropy(logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of each seed (S,) for logits (S, B, C) and labels (S, B)."""
    S, B, C = logits.shape
    return F.cross_entropy(logits.reshape(S * B, C), y.reshape(S * B), reduction="none").view(S, B).mean(1)
