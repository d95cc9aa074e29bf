"""The deep multi-head attention network of Sec. 2 / App. A, in its two equal forms.

Inputs are batches X (P, T, D) of T tokens of width D (= the paper's N0). Every layer ℓ has H_ℓ heads whose
attention is computed from the *bare* input (Eqs. (3)/(16)): Ω^{ℓh}_{st} = softmax_s(x_sᵀ A^{ℓh} x_t), with A a
D×D bilinear logit matrix (hand-built, random, or A = W_Kᵀ W_Q/(D√G) from query/key weights). Since Ω does
not depend on the value weights, it is computed once per data set.

* layer recursion (Eqs. (1)-(4)): x^(1) = V⁰x/√D, X^(ℓ+1) = (N H_ℓ)^{-1/2} Σ_h V^{ℓh} X^(ℓ) Ω^{ℓh},
  f = a·x^(L+1)_{t*}/√N  — :func:`forward`;
* path sum (Eqs. (5)-(7)): f = (n N D)^{-1/2} Σ_π V_eff^π V⁰ ξ^π over the n = Π_ℓ H_ℓ paths π = (h_1..h_L),
  V_eff^π = N^{-L/2} a V^{L h_L}···V^{1 h_1}, ξ^π = Xᵀ Ω^{1h_1}···Ω^{Lh_L} r — :func:`forward_paths`.

Paths are ordered lexicographically with h_1 most significant (the order of Fig. 2c's U). The path features ξ are built
right to left down the tree of partial paths (:func:`path_features`), Σ_ℓ Π_{k≥ℓ} H_k T² work per example.
Value weights may carry a leading batch axis (chains / samples): V0 (C, N, D), V[ℓ] (C, H_ℓ, N, N), a (C, N).

Named activations (TransformerLens-style, the hook protocol of :mod:`attnlab.core.hooks`): ``hook(name, tensor)``
is called with ``hook_embed`` (x^(1)), then per layer ℓ = l + 1 ``blocks.{l}.attn.hook_pattern`` (Ω, (P, H, T, T),
indexed [s, t]: softmax over the key s, Eq. (3)) and ``blocks.{l}.hook_resid_post`` (x^(ℓ+1): the layer's output;
the network has no skip connection), and ``hook_readout`` (the read-out token x_{t*}); it may return a replacement.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from attnlab.core.hooks import Hook, call, run_with_cache

Tensor = torch.Tensor


def check_heads(heads: Sequence[Tensor], D: int, Hs: Sequence[int] | None = None) -> tuple[int, ...]:
    """Validate per-layer head stacks (H_ℓ, D, D); return Hs. Errors say what is wrong and what is expected."""
    if len(heads) < 1:
        raise ValueError("heads: need at least one attention layer")
    for ell, A in enumerate(heads, 1):
        if A.ndim != 3 or A.shape[1:] != (D, D):
            raise ValueError(f"heads of layer {ell} have shape {tuple(A.shape)}; expected (H_{ell}, {D}, {D}) "
                             f"for inputs of width D = {D}")
    found = tuple(int(A.shape[0]) for A in heads)
    if Hs is not None and tuple(Hs) != found:
        raise ValueError(f"key 'Hs' = {list(Hs)} does not match the heads given per layer {list(found)} "
                         f"(L = {len(found)} layers)")
    return found


def readout_vector(T: int, readout: str | int, dtype=torch.float64, device=None) -> Tensor:
    """r ∈ R^T with x_{t*} = Xᵀ r: ``"mean"`` (1/T, Eq. (18)) or a token index t* (negative counts from the end)."""
    if readout == "mean":
        return torch.full((T,), 1.0 / T, dtype=dtype, device=device)
    if isinstance(readout, int) and -T <= readout < T:
        r = torch.zeros(T, dtype=dtype, device=device)
        r[readout] = 1.0
        return r
    raise ValueError(f"key 'readout' = {readout!r}: 'mean' or a token index in [-{T}, {T - 1}]")


NONLINEARITIES = ("softmax", "hardmax")


def _normalise(logits: Tensor, nonlinearity: str) -> Tensor:
    """Softmax over the keys (dim −2 of [.., s, t]) or hardmax: weight 1 on the first largest logit (β → ∞)."""
    if nonlinearity == "softmax":
        return torch.softmax(logits, dim=-2)
    if nonlinearity == "hardmax":
        return torch.zeros_like(logits).scatter_(-2, logits.argmax(dim=-2, keepdim=True), 1.0)
    raise ValueError(f"key 'attention' = {nonlinearity!r}: allowed: {', '.join(NONLINEARITIES)}")


def _zero_heads(A: Tensor) -> Tensor:
    """(H,) bool: heads whose logit matrix is exactly zero (uniform attention, no GEMM needed)."""
    return ~A.reshape(A.shape[0], -1).ne(0).any(dim=1)


def attention(X: Tensor, A: Tensor, nonlinearity: str = "softmax") -> Tensor:
    """Ω (P, H, T, T) with Ω[p, h, s, t] = softmax over keys s of x_sᵀ A_h x_t (columns sum to 1).

    One GEMM (P·T, D) × (D, H·D) for every head at once, then a batched (T·H, D) × (D, T) per example; a head
    whose matrix is zero skips both (its logits are 0). ``nonlinearity="hardmax"`` puts weight 1 on the first
    largest logit of each column (the public code's hardmax).
    """
    if X.shape[-1] != A.shape[-1]:
        raise ValueError(f"inputs have width {X.shape[-1]} but the heads expect width D = {A.shape[-1]}")
    P, T, D = X.shape
    A = A.to(X.dtype)
    zero = _zero_heads(A)
    logits = torch.zeros(P, A.shape[0], T, T, dtype=X.dtype, device=X.device)
    live = (~zero).nonzero().flatten().tolist()
    if live:
        H = len(live)
        XA = X.reshape(P * T, D) @ A[live].permute(1, 0, 2).reshape(D, H * D)  # [p·s, (h, e)] = (x_s A_h)_e
        lg = (XA.view(P, T * H, D) @ X.mT).view(P, T, H, T).transpose(1, 2)  # [p, h, s, t]
        logits[:, live] = lg
    return _normalise(logits, nonlinearity)


def readout_attention(X: Tensor, A: Tensor, readout: str | int, nonlinearity: str = "softmax") -> Tensor:
    """Ω r (P, H, T) of the last layer: for a token readout t* only the column t* is computed (logits
    X A x_{t*}: P·D² work instead of P·T·D²); for the mean readout the full Ω averaged over queries."""
    r = readout_vector(X.shape[1], readout, X.dtype, X.device)
    if readout == "mean":
        return attention(X, A, nonlinearity) @ r
    if X.shape[-1] != A.shape[-1]:
        raise ValueError(f"inputs have width {X.shape[-1]} but the heads expect width D = {A.shape[-1]}")
    A = A.to(X.dtype)
    q = torch.einsum("pe,hde->phd", X[:, int(readout)], A)  # A_h x_{t*}
    logits = q @ X.mT  # (P, H, T): [p, h, s] = x_sᵀ A_h x_{t*}
    return _normalise(logits[..., None], nonlinearity)[..., 0]


def attentions(X: Tensor, heads: Sequence[Tensor], nonlinearity: str = "softmax") -> list[Tensor]:
    """Ω of every layer: a list of (P, H_ℓ, T, T)."""
    return [attention(X, A, nonlinearity) for A in heads]


def path_features(X: Tensor, heads: Sequence[Tensor], readout: str | int, omegas: Sequence[Tensor] | None = None,
                  chunk: int = 4096, nonlinearity: str = "softmax") -> Tensor:
    """Ξ (P, n, D): the attentioned inputs ξ^π of Eq. (7) for every example and path (h_1 most significant).

    Right-to-left tree: a^(L) = Ω^L r, a^(ℓ)_{(h, π_{ℓ+1})} = Ω^{ℓh} a^(ℓ+1)_{π_{ℓ+1}}, then ξ = Xᵀ a^(1). Only
    the readout column of the last layer's Ω is computed (:func:`readout_attention`). Examples are processed
    in chunks so that memory stays bounded for large P.
    """
    D = X.shape[-1]
    check_heads(heads, D)
    if X.ndim != 3:
        raise ValueError(f"inputs have shape {tuple(X.shape)}; expected (P, T, D)")
    out = []
    for i in range(0, X.shape[0], chunk):
        Xc = X[i:i + chunk]
        if omegas is not None:
            Om = [o[i:i + chunk] for o in omegas]
            a = Om[-1] @ readout_vector(Xc.shape[1], readout, Xc.dtype, Xc.device)  # (P, H_L, T)
        else:
            Om = [attention(Xc, A, nonlinearity) for A in heads[:-1]]
            a = readout_attention(Xc, heads[-1], readout, nonlinearity)
        for om in reversed(Om[:-1] if omegas is not None else Om):
            a = (om[:, :, None] @ a[:, None, :, :, None]).squeeze(-1)  # (P, H_ℓ, n_{ℓ+1}, T)
            a = a.reshape(a.shape[0], -1, a.shape[-1])
        out.append(a @ Xc)
    return torch.cat(out)


def path_features_naive(X: Tensor, heads: Sequence[Tensor], readout: str | int) -> Tensor:
    """Reference for :func:`path_features`: Eq. (7) path by path, multiplied left to right, Xᵀ Ω¹ Ω² ··· r."""
    Om = attentions(X, heads)
    r = readout_vector(X.shape[1], readout, X.dtype, X.device)
    feats = []
    for path in itertools.product(*[range(A.shape[0]) for A in heads]):
        M = X.mT
        for om, h in zip(Om, path, strict=True):
            M = M @ om[:, h]
        feats.append(M @ r)
    return torch.stack(feats, dim=1)


# -- value weights and the two forward passes -----------------------------------------------------------


@dataclass
class Weights:
    """Value-side weights Θ = (V⁰, {V^ℓ}, a), optionally with a leading batch axis C."""

    V0: Tensor  # (C, N, D)
    V: list[Tensor]  # [(C, H_ℓ, N, N)]
    a: Tensor  # (C, N)

    @property
    def N(self) -> int:
        return self.a.shape[-1]

    @property
    def Hs(self) -> tuple[int, ...]:
        return tuple(v.shape[-3] for v in self.V)

    @staticmethod
    def prior(C: int, N: int, D: int, Hs: Sequence[int], generator: torch.Generator, sigma2: float = 1.0,
              dtype=torch.float64, widths: Sequence[int] | None = None,
              variances: Sequence[float] | None = None) -> Weights:
        """C independent draws from the Gaussian prior N(0, σ²) of every entry; ``widths`` (N_1, ..., N_L, N_a)
        and ``variances`` (σ_0², ..., σ_L², σ_a²) per layer: V⁰ (N_1, D), V^ℓ (H_ℓ, N_{ℓ+1}, N_ℓ), a (N_a)."""
        L, dev = len(Hs), generator.device
        ns = list(widths) if widths is not None else [N] * (L + 1)
        var = list(variances) if variances is not None else [sigma2] * (L + 2)

        def g(v, *shape):
            return math.sqrt(v) * torch.randn(*shape, generator=generator, device=dev, dtype=dtype)

        return Weights(g(var[0], C, ns[0], D), [g(var[ell + 1], C, H, ns[ell + 1], ns[ell]) for ell, H in
                                                 enumerate(Hs)], g(var[-1], C, ns[-1]))


def forward(X: Tensor, heads: Sequence[Tensor], w: Weights, readout: str | int, hook: Hook | None = None,
            nonlinearity: str = "softmax") -> Tensor:
    """f (C, P) by the layer recursion, Eqs. (1)-(4). ``hook`` sees the named activations (module docstring):
    ``hook_embed`` (C,P,T,N), ``blocks.{l}.attn.hook_pattern`` (P,H,T,T), ``blocks.{l}.hook_resid_post``
    (C,P,T,N), ``hook_readout`` (C,P,N)."""
    Hs = check_heads(heads, X.shape[-1], w.Hs)
    N, D = w.N, X.shape[-1]
    x = call(hook, "hook_embed", torch.einsum("ptd,cnd->cptn", X, w.V0) / math.sqrt(D))
    for ell, (A, V) in enumerate(zip(heads, w.V, strict=True), 1):
        om = call(hook, f"blocks.{ell - 1}.attn.hook_pattern", attention(X, A, nonlinearity))
        # x^(ℓ+1)_t = Σ_h Σ_s Ω_st V^h x_s: (Ωᵀ X) Vᵀ summed over heads, over √(N_ℓ H_ℓ) (N_ℓ: fan-in)
        x = torch.einsum("phst,cpsn,chmn->cptm", om, x, V) / math.sqrt(V.shape[-1] * Hs[ell - 1])
        x = call(hook, f"blocks.{ell - 1}.hook_resid_post", x)
    r = readout_vector(X.shape[1], readout, X.dtype, X.device)
    z = call(hook, "hook_readout", torch.einsum("cptn,t->cpn", x, r))
    return (z @ w.a[..., None]).squeeze(-1) / math.sqrt(N)


def effective_weights(w: Weights) -> Tensor:
    """V_eff^π = N^{-L/2} a V^{L h_L} ··· V^{1 h_1} for every path (Eq. (6)): (C, n, N_1), h_1 most significant
    (per-layer widths: each product over the summed width N_{ℓ+1})."""
    b = w.a[:, None, :]  # (C, 1, N_{L+1}): partial products over π_{ℓ+1}
    for V in reversed(w.V):
        b = torch.einsum("cqi,chij->chqj", b, V).reshape(b.shape[0], -1, V.shape[-1]) / math.sqrt(V.shape[-2])
    return b


def forward_paths(Xi: Tensor, w: Weights) -> Tensor:
    """f (C, P) from the path features, Eq. (5): (n N_1 D)^{-1/2} Σ_π V_eff^π V⁰ ξ^π."""
    n, D, N = Xi.shape[1], Xi.shape[2], w.V0.shape[-2]
    veff = effective_weights(w)
    if veff.shape[1] != n:
        raise ValueError(f"path features have {n} paths but the weights have {veff.shape[1]} (Hs = {list(w.Hs)})")
    z = torch.einsum("pad,cnd->cpan", Xi, w.V0)  # V⁰ ξ^π
    return torch.einsum("cpan,can->cp", z, veff) / math.sqrt(n * N * D)


def order_parameter(w: Weights) -> Tensor:
    """Empirical U^{ππ'} = N_1^{-1} V_eff^π · V_eff^{π'} (Eq. (13)) of each weight draw: (C, n, n)."""
    veff = effective_weights(w)
    return veff @ veff.mT / w.V0.shape[-2]


# -- the gradient-descent model of the one-shot task (App. H.1) -------------------------------------------


class AttentionPathNet(nn.Module):
    """The same network with every weight trainable, Q and K included (App. H.1).

    Ω^{ℓh} = softmax_s((W_K x_s)·(W_Q x_t)/(D√G)); ``head_mask`` (per layer, bool) removes heads from the sum
    of Eq. (2); the kept heads are rescaled by (N H_kept)^{-1/2} when ``rescale`` (the public code's pruning)
    or keep (N H_ℓ)^{-1/2} otherwise. Initialisation N(0, 1) everywhere: the forward pass carries the 1/√fan-in.
    ``forward(X, hook)`` calls ``hook`` with the named activations of :func:`forward` (the pattern after the head
    mask); ``run_with_cache`` returns them (TransformerLens style).
    """

    def __init__(self, D: int, N: int, G: int, Hs: Sequence[int], readout: str | int = "mean",
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        if len(Hs) < 1 or min(Hs) < 1:
            raise ValueError(f"key 'Hs' = {list(Hs)}: one positive head count per layer")
        self.D, self.N, self.G, self.Hs, self.readout = D, N, G, tuple(Hs), readout

        def p(*shape):
            return nn.Parameter(torch.randn(*shape, generator=generator))

        self.V0 = p(N, D)
        self.V = nn.ParameterList([p(H, N, N) for H in Hs])
        self.WQ = nn.ParameterList([p(H, G, D) for H in Hs])
        self.WK = nn.ParameterList([p(H, G, D) for H in Hs])
        self.a = p(N)
        self.head_mask: list[Tensor] | None = None
        self.rescale = True

    def logit_matrices(self) -> list[Tensor]:
        """A^{ℓh} = W_Kᵀ W_Q/(D√G): the bilinear forms the Bayesian theory takes as fixed heads."""
        c = 1.0 / (self.D * math.sqrt(self.G))
        return [c * (wk.mT @ wq) for wq, wk in zip(self.WQ, self.WK, strict=True)]

    def attention(self, X: Tensor, ell: int) -> Tensor:
        q = torch.einsum("ptd,hgd->phtg", X, self.WQ[ell])
        k = torch.einsum("ptd,hgd->phtg", X, self.WK[ell])
        return torch.softmax(k @ q.mT / (self.D * math.sqrt(self.G)), dim=-2)  # [s, t]

    def prune(self, mask: Sequence[Sequence[bool]] | None, rescale: bool = True) -> None:
        """Keep only the heads marked True (per layer); ``None`` restores all heads."""
        if mask is None:
            self.head_mask = None
            return
        if [len(m) for m in mask] != list(self.Hs):
            raise ValueError(f"head mask sizes {[len(m) for m in mask]} do not match Hs = {list(self.Hs)}")
        if any(not any(m) for m in mask):
            raise ValueError("a head mask removes every head of a layer; keep at least one per layer")
        self.head_mask = [torch.as_tensor(list(m), dtype=torch.bool) for m in mask]
        self.rescale = rescale

    def run_with_cache(self, X: Tensor) -> tuple[Tensor, dict[str, Tensor]]:
        """(f, {name: activation}) of one forward pass, detached."""
        return run_with_cache(lambda hook: self.forward(X, hook))

    def forward(self, X: Tensor, hook: Hook | None = None) -> Tensor:
        if X.shape[-1] != self.D:
            raise ValueError(f"inputs have width {X.shape[-1]}; the model expects D = {self.D}")
        x = call(hook, "hook_embed", X @ self.V0.mT / math.sqrt(self.D))  # (P, T, N)
        for ell, V in enumerate(self.V):
            om = self.attention(X, ell)
            H = V.shape[0]
            scale = 1.0 / math.sqrt(self.N * H)
            if self.head_mask is not None:
                keep = self.head_mask[ell].to(X.device)
                om = om * keep[None, :, None, None].to(om.dtype)
                if self.rescale:
                    scale = 1.0 / math.sqrt(self.N * int(keep.sum()))
            om = call(hook, f"blocks.{ell}.attn.hook_pattern", om)
            x = call(hook, f"blocks.{ell}.hook_resid_post", torch.einsum("phst,psn,hmn->ptm", om, x, V) * scale)
        r = readout_vector(X.shape[1], self.readout, X.dtype, X.device)
        z = call(hook, "hook_readout", torch.einsum("ptn,t->pn", x, r))
        return z @ self.a / math.sqrt(self.N)

    def weights(self) -> Weights:
        """The value-side weights (detached, float64, batch axis 1) for :func:`order_parameter`."""
        d = torch.float64
        return Weights(self.V0.detach()[None].to(d), [v.detach()[None].to(d) for v in self.V],
                       self.a.detach()[None].to(d))
