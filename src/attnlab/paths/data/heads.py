"""The fixed heads of paper 3's Markov network (App. G.2, and the public code's head styles): what one head is
(:class:`HeadSpec`) and how a config's ``heads`` list is read (:func:`head_specs`). The heads themselves are drawn
in :mod:`attnlab.paths.data.markov`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer

HEAD_ALIASES = {"good": "same_token", "same": "same_token", "different": "different_token"}
HEAD_KINDS = ("same_token", "different_token", "uniform", "random")


class HeadSpec(BaseModel):
    """One fixed head of the Markov network (App. G.2; the public code's head styles): ``same_token`` (the
    paper's good head, alias ``good``), ``different_token``, ``uniform``, ``random`` (App. G.2.2 Gaussian);
    ``shift``: the key the token heads look at relative to the query (−1: the previous token); ``beta``: its
    softmax hardness (None: the config's β); ``perturbation``: strength of a Gaussian head added on top (for
    ``random`` the head's strength, None: the config's ``random_strength``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["same_token", "different_token", "uniform", "random"]
    shift: int = -1
    beta: float | None = Field(None, gt=0, description="softmax hardness β of this head (None: the config's β)")
    perturbation: float | None = Field(None, ge=0, description="strength of a Gaussian head added on top; for a "
                                       "random head its strength (None: the config's random_strength)")
    # the public code's per-head options; None keeps today's draws (and the run ids: left out of the dump)
    seed: int | None = Field(None, ge=0, description="the head's own seed (public code's --*_seed*): its draws "
                             "come from it in the public code's order (None: the config's teacher stream)")
    features_perturbation: float | None = Field(None, ge=0, description="strength on the features block "
                                                "(None: perturbation)")
    positions_perturbation: float | None = Field(None, ge=0, description="strength on the positions block "
                                                 "(None: perturbation)")
    cross_perturbation: float | None = Field(None, ge=0, description="strength on the features-positions "
                                             "blocks (None: perturbation)")

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """Fields added after runs were stored stay out of the dump (and the run id) while None."""
        out = handler(self)
        return {k: v for k, v in out.items() if not (k in _ADDED_HEAD_KEYS and v is None)}


_ADDED_HEAD_KEYS = ("seed", "features_perturbation", "positions_perturbation", "cross_perturbation")


def head_specs(v):
    """``[[good, random], [uniform, random]]`` or mappings ``{kind: ..., shift: ...}`` per head → HeadSpec."""
    bad = f"key 'heads' = {v!r}: a list per layer of head names ({', '.join(HEAD_KINDS)}, good) or mappings " \
          "{kind, shift, beta, perturbation, seed, features_perturbation, positions_perturbation, " \
          "cross_perturbation}, at least one head per layer"
    if v is None:
        return None
    if not isinstance(v, list | tuple) or not v or any(not isinstance(lay, list | tuple) or not lay for lay in v):
        raise ValueError(bad)
    out = []
    for lay in v:
        row = []
        for h in lay:
            if isinstance(h, HeadSpec):
                row.append(h)
                continue
            d = {"kind": h} if isinstance(h, str) else h
            if not isinstance(d, dict) or "kind" not in d:
                raise ValueError(bad)
            d = {**d, "kind": HEAD_ALIASES.get(d["kind"], d["kind"])}
            if d["kind"] not in HEAD_KINDS:
                raise ValueError(f"key 'heads' = {v!r}: head kind {h!r} is not allowed; allowed: "
                                 f"{', '.join(HEAD_KINDS)}, good")
            extra = set(d) - set(HeadSpec.model_fields)
            if extra:
                raise ValueError(f"key 'heads' = {v!r}: unknown head option {sorted(extra)[0]!r}; allowed: "
                                 f"{', '.join(HeadSpec.model_fields)}")
            row.append(HeadSpec(**d))
        out.append(tuple(row))
    return tuple(out)
