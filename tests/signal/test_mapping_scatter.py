"""What the measured ρ_ℓ's standard error of ``attnlab map`` does and does not contain (docs/map.md, "why the quick
check fails"): it is the sampling error over the measured sequences of ONE draw of the weights; a new draw of the
weights (a finite-width model, Eq. 19 being its d → ∞ limit) moves ρ_ℓ by far more."""

import numpy as np
import torch

from attnlab.signal.mapping import measure as mm
from attnlab.signal.mapping import read
from attnlab.signal.model import layer_norm


def _rho_L(spec, weight_seed: int, data_seed: int) -> tuple[float, float]:
    """ρ_L and its standard error: the model (word, position and token-type tables N(0, std²) as HF's
    ``_init_weights``, and the layers) drawn from ``weight_seed``, the random tokens from ``data_seed``."""
    ids = mm.token_ids(spec, 32, 32, None, data_seed)
    gen = torch.Generator().manual_seed(weight_seed)
    words, pos, typ = (torch.randn(*s, generator=gen) * spec.init_std for s in ((spec.vocab, spec.d), (32, spec.d),
                                                                                (spec.d,)))
    x = layer_norm(words[ids] + pos + typ, "layernorm")
    out, _ = mm.measure_stream(spec, x, spec.iter_layers(weight_seed))
    return out["rho"][-1], out["rho_se"][-1]


def test_rho_se_is_the_sequence_sampling_error_not_the_init_to_init_scatter():
    # the quick check's theory parameters (σ² d of d = 1024 at std 0.02) at width 128, 4 layers
    spec = read.from_family("bert", layers=4, hidden=128, heads=2, init_std=0.02 * (1024 / 128) ** 0.5,
                                    vocab=2000)
    same = [_rho_L(spec, 0, s) for s in (1, 2, 3)]
    rho_same, se = np.array([r for r, _ in same]), np.array([s for _, s in same])
    # the same weights on new sequences: ρ_L moves by a few standard errors at most
    assert rho_same.max() - rho_same.min() <= 4 * np.sqrt(2) * se.max()
    # new weights on the same sequences: the init-to-init scatter dwarfs the standard error
    rho_new = np.array([_rho_L(spec, w, 1)[0] for w in range(1, 7)])
    assert rho_new.std(ddof=1) > 5 * se.mean()
    assert rho_new.std(ddof=1) > 0.01
