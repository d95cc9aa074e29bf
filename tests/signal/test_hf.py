"""HuggingFace interop on BERT models built locally (no download)."""

import math

import pytest
import torch

from attnlab.signal import theory
from attnlab.signal.mapping import hf

pytest.importorskip("transformers")


def test_diagnose_bert_base_config():
    from transformers import BertConfig

    rep = hf.diagnose(BertConfig())  # BERT-base: d = 768, H = 12, L = 12, std 0.02, T = 512
    assert rep["beta_paper"] == pytest.approx(0.01025, abs=1e-4)
    assert rep["beta"] == pytest.approx(0.1230, abs=1e-4)
    assert rep["phase"] != "entropy collapse" and rep["beta"] < rep["beta_c"]
    assert rep["architecture"].activation == "gelu" and rep["architecture"].norm == "layernorm"


def test_reinit_sets_beta_and_alpha_exactly():
    model = hf.bert(d=64, H=2, L=2, T=32, hidden_act="relu")
    ids = torch.randint(5, 500, (2, 32))
    before = hf.propagate(model, ids)
    hf.reinit(model, beta=3.0, alpha_sa=2.0, T=32)
    rep = hf.diagnose(model)
    assert rep["beta"] == pytest.approx(3.0, rel=0.05) and rep["alpha_sa"] == 2.0
    assert rep["phase"] == "entropy collapse"
    # α is realised exactly: LN(α x + SA) == LN(x + SA/α); re-applying α = 1 restores the original scale
    out = model.encoder.layer[0].attention.output
    w = out.dense.weight.clone()
    hf.reinit(model, beta=3.0, alpha_sa=1.0, T=32)
    assert torch.allclose(model.encoder.layer[0].attention.output.dense.weight, w * 2.0)
    assert hf.propagate(model, ids).shape == before.shape == (3,)
    with pytest.raises(ValueError, match="beta"):
        hf.reinit(model, beta=0.0)


def test_hf_model_follows_theory():
    """A real HF BERT (ReLU, no dropout), re-initialised to low β and α_SA = 2: its per-layer cosine follows
    Eq. 19 with the effective variances read off the model (W_O folded into σ_v²)."""
    torch.manual_seed(0)
    model = hf.bert(d=256, H=4, L=8, ff=256, T=64, hidden_act="relu", initializer_range=0.05)
    hf.reinit(model, beta=0.1, alpha_sa=0.5, T=64)
    ids = torch.randint(5, 500, (4, 64))
    rho = hf.propagate(model, ids)
    arch = hf.architecture(model)
    th = theory.iterate(float(rho[0]), arch)["rho"]
    assert float((rho.double() - th).abs().max()) < 0.06
    assert not math.isnan(float(th[-1]))
