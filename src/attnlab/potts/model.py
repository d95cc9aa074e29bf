"""The networks of paper 2 (Eqs. (2), (4)): factored self-attention, Eq. (4); self-attention with the position/embedding
mixing a, Eq. (2); the vanilla post-LN transformer of the UvA tutorial; the MLM cross-entropy, Eq. (3).

The factored and perturbed layers are functions of explicit, stacked parameters with any leading model axes
(``W (..., L, L)``, ``V (..., C, C)``), so many seeds or configurations train as one tensor program::

    logits = factored_logits(c, W, V)                  # c (n, L) or (..., n, L) colours -> (..., n, L, C)
    loss = mlm_loss(logits, c)                         # (...,) mean cross-entropy over sequences and sites
    A = attention(W)                                   # (..., L, L), rows sum to 1, A_ii = the sink
    W, V = potts_representation(potts)                 # exact softmax representation of Eq. (5) (docs note 6)
    model = VanillaTransformer(C=20, L=20, n_layers=1); logits, cache = model.run_with_cache(x)   # core.hooks names

Every site i of a sequence is predicted with s_i replaced by the masking token t = 0; for the factored layer the
attention is input-independent, so all L masked predictions come from one pass.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn

from attnlab.core import rng
from attnlab.core.hooks import Hook, call, run_with_cache
from attnlab.potts.data.potts import PottsModel, true_class_logp

Tensor = torch.Tensor
Attn = Literal["softmax", "softmax_nosink", "linear"]
NEG = -50.0  # log 0 of an exactly zero attention weight in constructions (docs/studies/potts.md note 5)


def one_hot(c: Tensor, C: int, dtype: torch.dtype) -> Tensor:
    return torch.nn.functional.one_hot(c.long(), C).to(dtype)


def attention(W: Tensor, attn: Attn = "softmax") -> Tensor:
    """Factored attention A from position scores W = QᵀK (..., L, L), Eq. (4).

    'softmax' normalises each row over all k including k = i: the diagonal is the "sink", mass that multiplies
    the zero value of the masked token (docs/studies/potts.md note 5). 'softmax_nosink' masks the diagonal before the
    softmax; 'linear' uses W itself (unnormalised, the replica model's layer).
    """
    if attn == "softmax":
        return torch.softmax(W, -1)
    eye = torch.eye(W.shape[-1], dtype=torch.bool, device=W.device)
    if attn == "softmax_nosink":
        return torch.softmax(W.masked_fill(eye, float("-inf")), -1)
    if attn == "linear":
        return W.masked_fill(eye, 0.0)
    raise ValueError(f"attn {attn!r} is not known; allowed: softmax, softmax_nosink, linear")


def _spin_index(c: Tensor, C: int, batch: tuple, L_rows: int) -> Tensor:
    """Positions n·C + c_nj of the spins in a flat (n·C) row, (..., L_rows, n·L), for scatter/gather."""
    n, L = c.shape[-2:]
    idx = (c + C * torch.arange(n, device=c.device)[:, None]).expand(*batch, n, L).reshape(*batch, 1, n * L)
    return idx.expand(*batch, L_rows, n * L)


def attend(A_off: Tensor, c: Tensor, C: int) -> Tensor:
    """Y_i = Σ_{j≠i} A_ij s_j for every sequence, laid out (..., L, n·C): a scatter-add of the L² weights into the
    one-hot positions (L times less work than multiplying by the one-hot spins)."""
    n, L = c.shape[-2:]
    batch = torch.broadcast_shapes(A_off.shape[:-2], c.shape[:-2])
    src = A_off.expand(*batch, L, L).unsqueeze(-2).expand(*batch, L, n, L).reshape(*batch, L, n * L)
    Y = torch.zeros(*batch, L, n * C, dtype=A_off.dtype, device=A_off.device)
    return Y.scatter_add_(-1, _spin_index(c, C, batch, L), src)


def factored_logits(c: Tensor, W: Tensor, V: Tensor, attn: Attn = "softmax") -> Tensor:
    """h_iα = Σ_{j≠i} A_ij (V s_j)_α, Eq. (4): logits of every masked site, shape (..., n, L, C)."""
    L, C, n = W.shape[-1], V.shape[-1], c.shape[-2]
    A = attention(W, attn)
    A_off = A * (1 - torch.eye(L, dtype=A.dtype, device=A.device))  # s_i = t = 0
    Y = attend(A_off, c, C)  # (..., L, n·C): Σ_j A_ij s_j
    h = Y.reshape(*Y.shape[:-2], L * n, C) @ V.mT  # (..., L·n, C)
    return h.reshape(*h.shape[:-2], L, n, C).transpose(-3, -2)


def mlm_loss(logits: Tensor, c: Tensor, weights: Tensor | None = None) -> Tensor:
    """MLM cross-entropy -(1/L) Σ_i log p̃_i(c_i), averaged over sequences (optionally weighted), Eq. (3)."""
    per_seq = -true_class_logp(torch.log_softmax(logits, -1), c).mean(-1)  # (..., n)
    if weights is None:
        return per_seq.mean(-1)
    return (per_seq * weights).sum(-1) / weights.sum(-1)


def factored_loss_grad(c: Tensor, W: Tensor, V: Tensor, weights: Tensor | None = None,
                       attn: Attn = "softmax") -> tuple[Tensor, Tensor, Tensor]:
    """MLM loss of Eq. (4) and its closed-form gradient in (W, V): with Y = A_off s (the attended one-hot
    spins), h = Y Vᵀ and G = ∂loss/∂h = (p̃ - s)/(nL): ∂V = Σ Gᵀ Y, ∂A_ij = Σ_n (G V)_{n,i,c_nj} (j ≠ i), and the
    softmax Jacobian ∂W_ij = A_ij (∂A_ij - Σ_k A_ik ∂A_ik). Batched over leading model axes; c (..., n, L);
    ``weights`` (..., n) weight the sequences. Y and ∂A are a scatter-add and a gather over the one-hot positions,
    not products with one-hot spins. Checked against autograd and finite differences (check 8);
    benchmarks/potts.py times it against autograd."""
    L, C, n = W.shape[-1], V.shape[-1], c.shape[-2]
    A = attention(W, attn)
    off = 1 - torch.eye(L, dtype=W.dtype, device=W.device)
    Y = attend(A * off, c, C)  # (..., L, n·C)
    Yf = Y.reshape(*Y.shape[:-2], L * n, C)
    p = torch.softmax(Yf @ V.mT, -1)  # (..., L·n, C), site-major: row i·n + b is site i of sequence b
    cf = c.transpose(-1, -2).reshape(*c.shape[:-2], L * n, 1).expand(*p.shape[:-2], L * n, 1)
    p_true = p.gather(-1, cf)
    if weights is None:
        w_site = torch.full((1, 1), 1.0 / (n * L), dtype=W.dtype, device=W.device)
        loss = -torch.log(p_true).sum((-1, -2)) / (n * L)
    else:
        w = weights.to(W.dtype) / (weights.to(W.dtype).sum(-1, keepdim=True) * L)  # (..., n)
        w_site = w.unsqueeze(-2).expand(*w.shape[:-1], L, n).reshape(*w.shape[:-1], L * n, 1)
        loss = -(torch.log(p_true) * w_site).sum((-1, -2))
    G = p.scatter_add_(-1, cf, -torch.ones_like(p_true)).mul_(w_site)  # ∂loss/∂h = (p̃ - s) w, in place of p
    gV = G.mT @ Yf  # (..., C, C)
    GV = (G @ V).reshape(*G.shape[:-2], L, n * C)
    idx = _spin_index(c, C, GV.shape[:-2], L)
    gA = GV.gather(-1, idx).reshape(*GV.shape[:-1], n, L).sum(-2) * off  # ∂A_ij = Σ_n (G V)_{n,i,c_nj}
    if attn == "linear":
        return loss, gA, gV
    gW = A * (gA - (A * gA).sum(-1, keepdim=True))
    return loss, (gW * off if attn == "softmax_nosink" else gW), gV


def potts_representation(potts: PottsModel, kappa: float | None = None,
                         attn: Attn = "softmax") -> tuple[Tensor, Tensor]:
    """(W, V) whose factored attention computes the Potts conditionals (5) exactly (docs/studies/potts.md notes 5-6).

    'linear': A = βJ, V = U. 'softmax' (needs J >= 0): A_ij = κβJ_ij, A_ii = 1 - κβk_i (the sink), V = U/κ with
    κ = 1/(β max_i k_i) by default; zero weights get W = log 0 := -50. 'softmax_nosink' applies the same recipe
    without a sink and is exact only when every row has the same total coupling (the ablation of check 6).
    """
    J, U, beta = potts.J, potts.U, potts.beta
    if attn == "linear":
        return beta * J, U.clone()
    if (J < 0).any():
        raise ValueError("a softmax attention cannot represent negative couplings; use attn='linear'")
    k = J.sum(1)
    kappa = kappa if kappa is not None else 1.0 / (beta * float(k.max()))
    A = kappa * beta * J
    if attn == "softmax":
        A = A + torch.diag(1 - kappa * beta * k)
        if (A.diagonal() < -1e-12).any():
            raise ValueError(f"kappa = {kappa} is too large: need kappa <= 1/(beta max_i k_i)")
    else:
        A = A / A.sum(1, keepdim=True).clamp_min(1e-300)
    W = torch.where(A > 0, A.clamp_min(1e-300).log(), torch.full_like(A, NEG))
    return W, U / kappa


# -- Eq. (2): self-attention with the position/embedding mixing a -------------------------------------------------


def perturbed_logits(c: Tensor, W: Tensor, V: Tensor, a: Tensor | float, E: Tensor | None = None,
                     return_attention: bool = False) -> Tensor | tuple[Tensor, Tensor]:
    """Eq. (2) with one-hot positions p_j = e_j ∈ R^d and masking token t = 0 (Eq. (2)), logits (..., n, L, d).

    z_ij = (E t + p_i)ᵀ QᵀK (a E s_j + p_j) depends on Q, K only through W = QᵀK (..., d, d), which is what is
    passed (and trained): z_ij = W_i·(a E s_j + p_j), and for j = i the key is p_i, z_ii = W_ii. Values
    v_j = V(E s_j + a p_j), v_i = a V p_i. V (..., d, d); E (..., d, C) or None for E = I (d = C); a a scalar or
    (...,). With a = 0 this is Eq. (4) with W[:L, :L]. ``return_attention`` also returns A (..., n, L, L).
    """
    L, d = c.shape[-1], W.shape[-1]
    if d < L:
        raise ValueError(f"one-hot positions need L <= d (L = {L}, d = {d})")
    a = torch.as_tensor(a, dtype=W.dtype, device=W.device)
    s = one_hot(c, d if E is None else E.shape[-1], W.dtype)  # (..., n, L, C)
    e = s if E is None else s @ E.unsqueeze(-3).mT  # (..., n, L, d): token embeddings E s_j
    P = torch.eye(d, dtype=W.dtype, device=W.device)[:L]  # (L, d): row j = p_j
    Wp = W[..., :L, :]  # (..., L, d): row i = p_iᵀ QᵀK, the query side of the masked token
    z = Wp.unsqueeze(-3) @ (a[..., None, None, None] * e + P).mT  # (..., n, L, L)
    eye = torch.eye(L, dtype=torch.bool, device=W.device)
    z_self = W[..., :L, :L].diagonal(dim1=-2, dim2=-1)  # (..., L): the masked site's key is p_i
    A = torch.softmax(torch.where(eye, z_self[..., None, :, None], z), -1)
    v = (e + a[..., None, None, None] * P) @ V.unsqueeze(-3).mT  # (..., n, L, d)
    masked_value = (a[..., None, None] * (P @ V.mT)).unsqueeze(-3)  # (..., 1, L, d): a V p_i
    h = (A * ~eye) @ v + A.diagonal(dim1=-2, dim2=-1).unsqueeze(-1) * masked_value
    return (h, A) if return_attention else h


# -- the vanilla transformer (UvA DL tutorial 6, App. 'Numerical details') ------------------------------------------


def sinusoidal_positions(L: int, d: int) -> Tensor:
    """PE[pos, 2k] = sin(pos / 10000^{2k/d}), PE[pos, 2k+1] = cos(pos / 10000^{2k/d})."""
    pos = torch.arange(L, dtype=torch.float64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(L, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)[:, : d // 2]
    return pe.float()


def _lecun_normal_(layer: nn.Linear, generator: torch.Generator) -> nn.Linear:
    """flax's default Dense init: truncated normal with variance 1/fan_in, zero bias."""
    std = 1.0 / math.sqrt(layer.in_features) / 0.87962566103423978
    with torch.no_grad():
        nn.init.trunc_normal_(layer.weight, std=std, a=-2 * std, b=2 * std, generator=generator)
        layer.bias.zero_()
    return layer


def _xavier_(layer: nn.Linear, generator: torch.Generator) -> nn.Linear:
    with torch.no_grad():
        nn.init.xavier_uniform_(layer.weight, generator=generator)
        layer.bias.zero_()
    return layer


class EncoderBlock(nn.Module):
    """Post-LN block: x = LN(x + Attn(x)); x = LN(x + FF(x)); single head, FF width 2d, dropout 0."""

    def __init__(self, d: int, generator: torch.Generator) -> None:
        super().__init__()
        self.qkv = _xavier_(nn.Linear(d, 3 * d), generator)
        self.o_proj = _xavier_(nn.Linear(d, d), generator)
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1 = _lecun_normal_(nn.Linear(d, 2 * d), generator)
        self.ff2 = _lecun_normal_(nn.Linear(2 * d, d), generator)

    def forward(self, x: Tensor, hook: Hook | None = None, name: str = "") -> Tensor:
        q, k, v = self.qkv(x).chunk(3, -1)
        pattern = call(hook, f"{name}.attn.hook_pattern", torch.softmax(q @ k.mT / math.sqrt(x.shape[-1]), -1))
        x = self.norm1(x + self.o_proj(pattern @ v))
        x = self.norm2(x + self.ff2(torch.relu(self.ff1(x))))
        return call(hook, f"{name}.hook_resid_post", x)


class VanillaTransformer(nn.Module):
    """Dense(C → d) + sinusoidal positions → ``n_layers`` post-LN blocks → head (UvA tutorial, paper appendix).

    ``head='uva'`` is the unmodified tutorial's Dense(d) → LayerNorm → ReLU → Dense(C); ``'linear'`` the paper's
    text, Dense(d → C). Input: one-hot spins (n, L, C) with the masked site set to the zero vector.
    Named activations (the hook protocol of :mod:`attnlab.core.hooks`, TransformerLens's names): ``hook(name,
    tensor)`` is called with ``hook_embed`` (embedding + positions, (n, L, d)), ``blocks.{l}.attn.hook_pattern``
    ((n, L, L), softmax over the key) and ``blocks.{l}.hook_resid_post`` (the block's output, (n, L, d)); it may
    return a replacement. ``run_with_cache`` collects them.
    """

    def __init__(self, C: int, L: int, d: int = 20, n_layers: int = 1, head: Literal["uva", "linear"] = "uva",
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        g = generator or rng.generator(0)
        self.C, self.L, self.d = C, L, d
        self.embed = _lecun_normal_(nn.Linear(C, d), g)
        self.register_buffer("pe", sinusoidal_positions(L, d))
        self.blocks = nn.ModuleList(EncoderBlock(d, g) for _ in range(n_layers))
        if head == "uva":
            self.head = nn.Sequential(_lecun_normal_(nn.Linear(d, d), g), nn.LayerNorm(d), nn.ReLU(),
                                      _lecun_normal_(nn.Linear(d, C), g))
        elif head == "linear":
            self.head = _lecun_normal_(nn.Linear(d, C), g)
        else:
            raise ValueError(f"head {head!r} is not known; allowed: uva, linear")

    def forward(self, x: Tensor, hook: Hook | None = None) -> Tensor:
        h = call(hook, "hook_embed", self.embed(x) + self.pe)
        for i, block in enumerate(self.blocks):
            h = block(h, hook, f"blocks.{i}")
        return self.head(h)

    def run_with_cache(self, x: Tensor, names: tuple[str, ...] | None = None) -> tuple[Tensor, dict[str, Tensor]]:
        """(logits, {name: activation}) for the hooks in ``names`` (all if None), detached."""
        return run_with_cache(lambda hook: self(x, hook), names)

    def masked_inputs(self, c: Tensor, sites: Tensor) -> Tensor:
        """One-hot inputs (n, L, C) of sequences c (n, L) with site ``sites[b]`` of row b masked (t = 0)."""
        x = one_hot(c, self.C, self.pe.dtype)
        x[torch.arange(c.shape[0], device=c.device), sites] = 0.0
        return x

    def all_masked(self, c: Tensor) -> Tensor:
        """The L masked copies of each sequence, (n·L, L, C): copy (b, i) has site i masked."""
        n, L = c.shape
        rep = c.repeat_interleave(L, 0)
        return self.masked_inputs(rep, torch.arange(L, device=c.device).repeat(n))

    def mlm_logits(self, c: Tensor, with_maps: bool = False) -> tuple[Tensor, Tensor | None]:
        """Exact MLM logits (n, L, C): site i read in the copy where site i is masked; optionally each layer's
        attention row i of that copy, (n_layers, n, L, L) (the maps of Fig. 2b, App. 'Numerical details')."""
        n, L = c.shape
        names = tuple(f"blocks.{i}.attn.hook_pattern" for i in range(len(self.blocks)))
        out, cache = self.run_with_cache(self.all_masked(c), names) if with_maps else (self(self.all_masked(c)), {})
        out = out.reshape(n, L, L, self.C)
        idx = torch.arange(L, device=c.device)
        logits = out[:, idx, idx]  # (n, L, C)
        if not with_maps:
            return logits, None
        maps = torch.stack([cache[name].reshape(n, L, L, L)[:, idx, idx]
                            for name in names])
        return logits, maps
