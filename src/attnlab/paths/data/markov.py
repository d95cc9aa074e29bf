"""The hidden-Markov-chain classification task and its hand-built attention heads (Sec. 4.1, App. G).

A sequence is a hidden two-state chain c_1..c_T (T = 30) whose switching probability p is 0.3 for class
y = +1 and 0.7 for y = −1 (optionally depending on the state it leaves, the public code's p_{a±}, p_{b±}).
Token t is x_t = v_{c_t} + n_t with orthogonal state vectors v± ∈ R^{N0} (v+ = √2 on the first half, v− = √2
on the second) and Gaussian noise of variance σ∥² in span{v+, v−} and σ⊥² out of that plane (App. G.1); the
two in-plane directions may get their own strengths (the public code's "perpendicular" v+ − v−, which
blurs the state, and "parallel" v+ + v−). A zero bos token is prepended and a one-hot position of size T+1
is appended to every token, so a sequence is an array (T+1, D) with D = N0 + T + 1 (= 231).

Heads are bilinear logit matrices W (D×D, key on the left, query on the right): logits_st = β x_sᵀ W x_t,
softmax over the key s. The good layer-1 head follows the public code's "same_token" construction (App. G.2.1's
constants are garbled in the text we have): W_ff = (v+−v−)(v+−v−)ᵀ/N0² (noise-free logit/β +1 same
state, −1 opposite), W_pp = δ_{s,t−1} + 1.5 δ_{s,0} for queries t ≥ 1. Random heads are Gaussian with the
per-subspace normalisation of App. G.2.2.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnlab.core import rng

Tensor = torch.Tensor
F64 = torch.float64


@dataclass(frozen=True)
class MarkovTask:
    """Sizes and noise of the Markov task (paper defaults)."""

    T: int = 30
    N0: int = 200
    p_plus: float = 0.3  # switching probability of class y = +1
    p_minus: float = 0.7  # switching probability of class y = −1
    sigma_par: float = 1.0  # σ∥: noise inside span{v+, v−}
    sigma_perp: float = 1.0  # σ⊥: noise out of that plane
    sigma_diff: float | None = None  # noise along v+ − v− (None: σ∥)
    sigma_sum: float | None = None  # noise along v+ + v− (None: σ∥)
    switch_plus: tuple[float, float] | None = None  # class +1: switching probability out of state + and out of −
    switch_minus: tuple[float, float] | None = None  # class −1: the same (None: p_plus / p_minus from both states)

    def __post_init__(self) -> None:
        if self.T < 2:
            raise ValueError(f"key 'T' = {self.T}: need at least 2 tokens")
        if self.N0 < 2 or self.N0 % 2:
            raise ValueError(f"key 'N0' = {self.N0}: must be an even number ≥ 2 (v± live on the two halves)")
        for key in ("p_plus", "p_minus"):
            if not 0.0 <= getattr(self, key) <= 1.0:
                raise ValueError(f"key {key!r} = {getattr(self, key)}: a probability in [0, 1]")
        for key in ("sigma_par", "sigma_perp", "sigma_diff", "sigma_sum"):
            if getattr(self, key) is not None and getattr(self, key) < 0:
                raise ValueError(f"key {key!r} = {getattr(self, key)}: a noise strength ≥ 0")
        for key in ("switch_plus", "switch_minus"):
            v = getattr(self, key)
            if v is not None and (len(v) != 2 or not all(0.0 <= p <= 1.0 for p in v)):
                raise ValueError(f"key {key!r} = {v}: two probabilities in [0, 1] (leaving state +, leaving state −)")

    def switching(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """((p leaving +, p leaving −) of class +1, the same of class −1)."""
        return (tuple(self.switch_plus or (self.p_plus,) * 2), tuple(self.switch_minus or (self.p_minus,) * 2))

    def in_plane(self) -> tuple[float, float]:
        """Noise strengths along (v+ − v−)/|·| and (v+ + v−)/|·|."""
        return (self.sigma_par if self.sigma_diff is None else self.sigma_diff,
                self.sigma_par if self.sigma_sum is None else self.sigma_sum)

    @property
    def D(self) -> int:
        """Token width: features + one-hot position (bos included)."""
        return self.N0 + self.T + 1

    def state_vectors(self, device=None) -> tuple[Tensor, Tensor]:
        half = self.N0 // 2
        vp = torch.zeros(self.N0, dtype=F64, device=device)
        vm = torch.zeros(self.N0, dtype=F64, device=device)
        vp[:half] = 2**0.5
        vm[half:] = 2**0.5
        return vp, vm


@dataclass(frozen=True)
class MarkovData:
    """P sequences: tokens X (P, T+1, D) with bos at t = 0, labels y (P,) ∈ ±1, hidden states (P, T) ∈ ±1."""

    X: Tensor
    y: Tensor
    states: Tensor

    def __len__(self) -> int:
        return self.X.shape[0]


def sample_chains(task: MarkovTask, y: Tensor, generator: torch.Generator) -> Tensor:
    """Hidden states (P, T) ∈ {+1, −1}: uniform initial state, then at every step a switch with probability
    p(y, c_{t−1}) (one uniform draw per step, compared with the probability of the state being left)."""
    P, dev = y.shape[0], y.device
    (pp, pm), (mp, mm) = task.switching()
    first = torch.where(torch.rand(P, 1, generator=generator, device=dev, dtype=F64) < 0.5, 1.0, -1.0)
    u = torch.rand(P, task.T - 1, generator=generator, device=dev, dtype=F64)
    if pp == pm and mp == mm:  # state-independent: all steps at once
        flips = u < torch.where(y > 0, pp, mp).to(F64)[:, None]
        return torch.cat([first, first * torch.cumprod(torch.where(flips, -1.0, 1.0).to(F64), dim=1)], dim=1)
    p_from = torch.stack([torch.where(y > 0, pp, mp), torch.where(y > 0, pm, mm)]).to(F64)  # (2, P): leaving +, −
    states = [first[:, 0]]
    for t in range(task.T - 1):
        c = states[-1]
        states.append(torch.where(u[:, t] < torch.where(c > 0, p_from[0], p_from[1]), -c, c))
    return torch.stack(states, dim=1)


def sample(task: MarkovTask, P: int, generator: torch.Generator, balanced: bool = True) -> MarkovData:
    """P sequences of the task (float64, on the generator's device).

    ``balanced``: exactly ⌈P/2⌉ sequences of class +1 in random order (the public code's choice; the class
    prior is ½ either way); otherwise iid labels.
    """
    if P < 1:
        raise ValueError(f"key 'P' = {P}: need at least one sequence")
    dev = generator.device
    if balanced:
        y = torch.where(torch.arange(P, device=dev) < (P + 1) // 2, 1.0, -1.0).to(F64)
        y = y[torch.randperm(P, generator=generator, device=dev)]
    else:
        y = torch.where(torch.rand(P, generator=generator, device=dev, dtype=F64) < 0.5, 1.0, -1.0)
    states = sample_chains(task, y, generator)
    vp, vm = task.state_vectors(dev)
    feats = torch.where(states[..., None] > 0, vp, vm)  # (P, T, N0)
    g = torch.randn(P, task.T, task.N0, generator=generator, device=dev, dtype=F64)
    e = torch.stack([vp - vm, vp + vm]) / (vp - vm).norm()  # orthonormal basis of the plane (2, N0)
    coef = g @ e.T  # (P, T, 2)
    s_diff, s_sum = task.in_plane()
    feats = feats + (coef * torch.tensor([s_diff, s_sum], dtype=F64, device=dev)) @ e + task.sigma_perp * (g - coef @ e)
    bos = torch.zeros(P, 1, task.N0, dtype=F64, device=dev)
    pos = torch.eye(task.T + 1, dtype=F64, device=dev).expand(P, -1, -1)
    X = torch.cat([torch.cat([bos, feats], dim=1), pos], dim=2)
    return MarkovData(X, y, states)


# -- fixed attention heads (App. G.2) ---------------------------------------------------------------


def token_head(task: MarkovTask, kind: str = "same_token", beta: float = 10.0, shift: int = -1,
               bos_strength: float = 1.5, device=None) -> Tensor:
    """The public code's hand-built layer-1 heads (App. G.2.1): attend to the token at ``shift`` from the query
    if its state is the same (``same_token``, the paper's good head) or the opposite (``different_token``),
    else to the bos.

    W_ff = ±(v+−v−)(v+−v−)ᵀ/N0² (noise-free logit/β ±1 same state, ∓1 opposite), W_pp = δ_{s,t+shift} for keys
    s ≥ 1 plus ``bos_strength`` on the bos for every query t ≥ 1, W_fp = W_pf = 0. For the same-token head,
    noise-free logit/β by key: the token at ``shift``, same state 2; bos 1.5; other same-state tokens 1; the
    token at ``shift``, opposite state 0; other opposite-state tokens −1.
    """
    if kind not in ("same_token", "different_token"):
        raise ValueError(f"head kind {kind!r}: allowed: same_token, different_token")
    D, N0, T = task.D, task.N0, task.T
    vp, vm = task.state_vectors(device)
    w = vp - vm
    W = torch.zeros(D, D, dtype=F64, device=device)
    W[:N0, :N0] = (1.0 if kind == "same_token" else -1.0) * torch.outer(w, w) / N0**2
    pos = W[N0:, N0:]
    q = torch.arange(1, T + 1, device=device)
    ok = (q + shift >= 1) & (q + shift <= T)
    pos[q[ok] + shift, q[ok]] = 1.0  # key s = t + shift
    pos[0, 1:] = bos_strength  # every query t ≥ 1 may attend to the bos
    return beta * W


def good_head(task: MarkovTask, beta: float = 10.0, bos_strength: float = 1.5, device=None) -> Tensor:
    """Layer-1 "same-state" head (:func:`token_head` with ``same_token``, shift −1): attend to the previous
    token if it is in the same state, else to the bos."""
    return token_head(task, "same_token", beta, -1, bos_strength, device)


def uniform_head(task: MarkovTask, device=None) -> Tensor:
    """Uniform attention: Ω_st = 1/(T+1) (all logits equal)."""
    return torch.zeros(task.D, task.D, dtype=F64, device=device)


def random_head(task: MarkovTask, generator: torch.Generator, beta: float = 10.0, strength: float = 1.0) -> Tensor:
    """Gaussian head normalised per subspace (App. G.2.2): ff ~ N(0,1)/N0, fp and pf ~ N(0,1)/√N0, pp ~ N(0,1)."""
    D, N0 = task.D, task.N0
    g = torch.randn(D, D, generator=generator, device=generator.device, dtype=F64)
    scale = torch.full((D, D), N0**-0.5, dtype=F64, device=g.device)
    scale[:N0, :N0] = 1.0 / N0
    scale[N0:, N0:] = 1.0
    return beta * strength * g * scale


def markov_heads(task: MarkovTask, layout: str, generator: torch.Generator, beta: float = 10.0,
                 random_strength: float = 1.0) -> list[Tensor]:
    """Per-layer head stacks (H_ℓ, D, D) of the paper's networks (L = 2).

    ``layout``:
      * ``all``: layer 1 {good, random}, layer 2 {uniform, random} — the 4-path network of Fig. 2b
        (paths (1,1) good, (2,1) denoising, (1,2) and (2,2) adversarial);
      * ``good``: {good}, {uniform} — the good path alone (Hs = [1, 1]);
      * ``good_denoising``: {good, random}, {uniform} (Hs = [2, 1], Fig. 2e);
      * ``good_uniform``: {good, uniform}, {uniform} (Fig. 5c: the denoising head made uniform);
      * ``random``: {random ×3}, {random ×3} at ``random_strength`` (check C).
    The random heads are drawn in a fixed order (layer 1 then layer 2) so every layout shares them.
    """
    dev = generator.device
    r1 = random_head(task, generator, beta, random_strength)
    r2 = random_head(task, generator, beta, random_strength)
    good, uni = good_head(task, beta, device=dev), uniform_head(task, device=dev)
    if layout == "all":
        layers = [[good, r1], [uni, r2]]
    elif layout == "good":
        layers = [[good], [uni]]
    elif layout == "good_denoising":
        layers = [[good, r1], [uni]]
    elif layout == "good_uniform":
        layers = [[good, uni], [uni]]
    elif layout == "random":
        extra = [random_head(task, generator, beta, random_strength) for _ in range(4)]
        layers = [[r1, extra[0], extra[1]], [r2, extra[2], extra[3]]]
    else:
        raise ValueError(f"key 'layout' = {layout!r}: allowed: all, good, good_denoising, good_uniform, random")
    return [torch.stack(heads) for heads in layers]




def build_heads(task: MarkovTask, specs, generator: torch.Generator, beta: float = 10.0,
                random_strength: float = 1.0) -> list[Tensor]:
    """Per-layer head stacks from head specs (objects with ``kind``, ``shift``, ``beta``, ``perturbation``; see
    ``configs.HeadSpec``): a hand-built head plus, where ``perturbation`` > 0, a Gaussian head of that strength
    (App. G.2.2 normalisation; a ``random`` head is nothing but that, at ``random_strength`` unless given).
    Random draws are taken from ``generator`` in the order the heads are listed (layer 1 first); a head with its own
    ``seed`` or separate block strengths is built by :func:`block_head`."""
    dev = generator.device
    layers = []
    for layer in specs:
        heads = []
        for h in layer:
            b = beta if h.beta is None else h.beta
            if any(getattr(h, k, None) is not None for k in BLOCK_KEYS):
                heads.append(block_head(task, h, generator, b, random_strength))
                continue
            if h.kind == "random":
                heads.append(random_head(task, generator, b, random_strength if h.perturbation is None
                                         else h.perturbation))
                continue
            A = uniform_head(task, dev) if h.kind == "uniform" else token_head(task, h.kind, b, h.shift, device=dev)
            if h.perturbation:
                A = A + random_head(task, generator, b, h.perturbation)
            heads.append(A)
        layers.append(torch.stack(heads))
    return layers


def seeded_head(task: MarkovTask, kind: str, beta: float, shift: int, seed: int, features: float,
                positions: float, cross: float, device=None) -> Tensor:
    """One head drawn from its own ``seed`` in the public code's order: the hand-built head (``same_token``,
    ``different_token``, ``uniform``; ``random``: zero), plus ``features``·N(0,1)/N0 on the features block (drawn
    only when > 0), ``positions``·N(0,1) on the positions block (always drawn), ``cross``·N(0,1)/√N0 on the two
    cross blocks (one D×D draw, only when > 0), then times β (App. G.2.2's per-subspace normalisation)."""
    g = rng.generator(seed)
    N0, D = task.N0, task.D
    if kind in ("same_token", "different_token"):
        W = token_head(task, kind, 1.0, shift)
    else:
        W = uniform_head(task)
    if features > 0:
        W[:N0, :N0] += features * torch.randn(N0, N0, generator=g, dtype=F64) / N0
    W[N0:, N0:] += positions * torch.randn(D - N0, D - N0, generator=g, dtype=F64)
    if cross > 0:
        R = torch.randn(D, D, generator=g, dtype=F64) / N0**0.5
        R[:N0, :N0] = 0.0
        R[N0:, N0:] = 0.0
        W = W + cross * R
    return (beta * W).to(device)


BLOCK_KEYS = ("seed", "features_perturbation", "positions_perturbation", "cross_perturbation")


def block_head(task: MarkovTask, h, generator: torch.Generator, beta: float, random_strength: float) -> Tensor:
    """A head with its own ``seed`` or separate feature / position / cross perturbation strengths (the public
    code's per-head options): each strength left None takes ``perturbation`` (None: ``random_strength`` for a
    random head, 0 otherwise). With a seed, the head draws from its own generator in the public code's order
    (:func:`seeded_head`); without, one D×D Gaussian from ``generator`` (as :func:`random_head`), scaled
    per block by /N0, 1 and /√N0 (App. G.2.2) times its strength."""
    base = h.perturbation if h.perturbation is not None else random_strength if h.kind == "random" else 0.0
    f, p, c = (base if getattr(h, k, None) is None else getattr(h, k) for k in BLOCK_KEYS[1:])
    dev = generator.device
    if getattr(h, "seed", None) is not None:
        return seeded_head(task, h.kind, beta, h.shift, h.seed, f, p, c, device=dev)
    N0 = task.N0
    if h.kind in ("same_token", "different_token"):
        A = token_head(task, h.kind, beta, h.shift, device=dev)
    else:
        A = uniform_head(task, dev)
    if max(f, p, c) > 0:
        g = torch.randn(task.D, task.D, generator=generator, device=dev, dtype=F64)
        scale = torch.full_like(g, c / N0**0.5)
        scale[:N0, :N0] = f / N0
        scale[N0:, N0:] = p
        A = A + beta * g * scale
    return A


PATH_NAMES = {(0, 0): "good", (1, 0): "denoising", (0, 1): "adversarial (1,2)", (1, 1): "adversarial (2,2)"}
