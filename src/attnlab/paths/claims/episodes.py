"""Check D1 (paper 3 Sec. 4.2): the one-shot episodes themselves, on 2000 episodes of generated glyphs — tokens are
image patches + the image's label vector + positional encoding, the targets are balanced, and the query is a new
instance of exactly one support class whose label y names. Computed directly (seconds); each world patches the
episode sampler.
"""

from __future__ import annotations

import torch

from attnlab.core import rng
from attnlab.core.claims import ClaimContext, claim
from attnlab.core.worlds import World
from attnlab.paths.data import episodes
from attnlab.paths.data import images as data


def _episodes(n: int = 2000):
    g = rng.generator(0)
    imgs = data.synthetic_glyphs(30, 5, 16, 1, generator=g)
    tok = episodes.Tokenizer.make(16, 8, 1, g)
    meta: dict = {}
    X, y = episodes.sample_episodes(imgs, n, tok, g, meta)
    return imgs, tok, X, y, meta


def _d1_tokens(ctx: ClaimContext) -> float:
    imgs, tok, X, _, m = _episodes()
    p = (16 // 8) ** 2
    if X.shape[1] != 3 * p or X.shape[2] != tok.width:
        return float("inf")
    plus, minus, q = tok.labels
    fp = m["first_is_plus"][:, None, None]
    want = torch.cat([episodes.patches(imgs.images[m["first"]].double(), 8) + torch.where(fp, plus, minus),
                      episodes.patches(imgs.images[m["second"]].double(), 8) + torch.where(fp, minus, plus),
                      episodes.patches(imgs.images[m["query"]].double(), 8) + q], dim=1) + tok.pe
    return float((X - want).abs().max())


claim("paths.episode_tokens", "Sec. 4.2 (check D1)",
      "tokens are patches + the image's label vector + positional encoding",
      "2000 episodes: T = 3p, and max |token − (patch + v_label + PE)| over all tokens", _d1_tokens, 1e-12, "le",
      falsify=World("episodes built without the positional encoding: the tokens are not patch + label + PE",
                    patch={"attnlab.paths.data.episodes:sample_episodes": lambda f: lambda im, n, tok, *a, **k: (
                        lambda X, y: (X - tok.pe, y))(*f(im, n, tok, *a, **k))}))


def _d1_balance(ctx: ClaimContext) -> float:
    return float((_episodes()[3] > 0).double().mean())


claim("paths.episode_labels_balanced", "Sec. 4.2 (check D1)", "the targets are balanced", "fraction of y = +1 in 2000 "
      "episodes", _d1_balance, (0.45, 0.55), "in",
      falsify=World("every target set to +1: the labels are not balanced", patch={
          "attnlab.paths.data.episodes:sample_episodes": lambda f: lambda *a, **k: (
              lambda X, y: (X, y.abs()))(*f(*a, **k))}))


def _d1_match(ctx: ClaimContext) -> float:
    imgs, _, _, y, m = _episodes()
    lab = imgs.labels
    c1, c2, cq = lab[m["first"]], lab[m["second"]], lab[m["query"]]
    one = (c1 != c2) & ((cq == c1) ^ (cq == c2))
    other_instance = (m["query"] != m["first"]) & (m["query"] != m["second"])
    target = torch.where((cq == c1) == m["first_is_plus"], 1.0, -1.0)
    return float((one & other_instance & (target == y)).double().mean())


claim("paths.episode_query_matches_one", "Sec. 4.2 (check D1)",
      "the query is a new instance of exactly one support class and y says which label it carries",
      "fraction of 2000 episodes where all three hold", _d1_match, 1.0, "ge",
      falsify=World("every target flipped: y names the label of the class the query does not belong to", patch={
          "attnlab.paths.data.episodes:sample_episodes": lambda f: lambda *a, **k: (
              lambda X, y: (X, -y))(*f(*a, **k))}))
