"""``attnlab map`` without transformers: the family-with-sizes path, the nn.Module paths, the block forward, JSON."""

import json
import math
import sys

import pytest
import torch
from torch import nn
from typer.testing import CliRunner

from attnlab import cli
from attnlab.signal.arch import Architecture
from attnlab.signal.mapping import place, read, report
from attnlab.signal.mapping.measure import post_ln_block
from attnlab.signal.model import Encoder


def test_family_path_needs_no_transformers(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "transformers", None)  # `import transformers` raises ImportError
    res = CliRunner().invoke(cli.app, ["map", "--arch", "bert", "--layers", "3", "--hidden", "32", "--heads", "2",
                                       "--seq", "16", "--batch", "4", "--out", str(tmp_path), "--format", "svg"])
    assert res.exit_code == 0, res.output
    assert "PHASE:" in res.output and "predicted ρ_ℓ" in res.output and "measured ρ_ℓ" in res.output
    doc = json.loads((tmp_path / "map.json").read_text())
    assert (tmp_path / "map.svg").stat().st_size > 1000
    assert doc["covered"] and doc["L"] == 3 and len(doc["layers"]) == 3
    assert len(doc["predicted"]["rho"]) == len(doc["measured"]["rho"]) == 4
    assert doc["map"]["phase"] in ("trainable", "rank collapse", "entropy collapse")
    # standard init std 0.02, d = 32: β (per-head score) = σ² d/√(log 512), App. B.1's β = that / H
    p = doc["params"]
    assert p["beta"] == pytest.approx(0.02**2 * 32 / math.sqrt(math.log(512)), rel=0.15)
    assert p["beta_paper"] == pytest.approx(p["beta"] / 2)


def test_bad_input_is_one_line_exit_2(tmp_path):
    runner = CliRunner()
    for args in (["map", str(tmp_path / "nowhere")], ["map", "--arch", "t5"], ["map"],
                 ["map", "--arch", "bert", "--hidden", "30", "--heads", "4"]):
        res = runner.invoke(cli.app, args)
        assert res.exit_code == 2, (args, res.output)
        assert len(res.output.strip().splitlines()) == 1, res.output


def test_block_matches_torch_encoder_layer():
    torch.manual_seed(0)
    lay = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, activation="gelu").eval()
    spec = read.read(nn.TransformerEncoder(lay, 2, enable_nested_tensor=False))
    assert spec.covered and spec.L == 2 and spec.activation == "gelu"
    x = torch.randn(3, 10, 32)
    with torch.no_grad():
        want = lay(x)
    got, A = post_ln_block(x, spec.layers[0], spec.H, spec.activation)
    assert torch.allclose(got, want, atol=1e-5)
    assert torch.allclose(A.sum(-1), torch.ones(3, 4, 10))


def test_pre_ln_module_is_outside_the_theory():
    lay = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
    doc = place.map_model(nn.TransformerEncoder(lay, 2, enable_nested_tensor=False), T=8, batch=2)
    assert not doc["covered"] and "pre-LN" in doc["reason"] and "predicted" not in doc
    assert "OUTSIDE THE THEORY" in "\n".join(report.summary(doc))


def test_study_encoder_prediction_matches_measurement():
    """The study's own post-LN encoder (rms norm, no W_O): ρ_ℓ measured on 16 × 32 tokens follows Eq. 19 with the
    finite-T attention of App. B.7 (at T = 32 the asymptotic q_sa = 0 misses the 1/T of uniform attention)."""
    arch = Architecture(d=64, H=2, L=4, T=32, beta=0.5, alpha_sa=0.7, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0,
                        norm="rms")
    enc = Encoder(arch, vocab=50, gen=torch.Generator().manual_seed(1))
    doc = place.map_model(enc, T=32, batch=16, finite_T=True)
    assert doc["covered"] and doc["alpha_sa"] == pytest.approx(0.7)
    assert doc["params"]["sigma_v2"] == pytest.approx(1.0, rel=0.1)
    assert doc["difference"]["max_abs_rho"] < 0.08  # d = 64: finite-width fluctuations of ρ are a few 1e-2
    assert place.map_model(enc, T=32, batch=16)["difference"]["max_abs_rho"] > doc["difference"]["max_abs_rho"]
    json.loads(report.to_json(doc))  # strict JSON: no NaN


def test_fix_moves_a_rank_collapsed_model_into_the_trainable_region():
    """A weak residual (α_SA = 0.05) at 8 layers collapses in rank; the fix (α ≥ 2 α_c) is trainable, both
    predicted and measured (ρ_L drops)."""
    arch = Architecture(d=64, H=2, L=8, T=32, beta=0.3, alpha_sa=0.05, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0,
                        norm="rms", activation="relu")
    enc = Encoder(arch, vocab=50, gen=torch.Generator().manual_seed(2))
    doc = place.map_with_fix(enc, T=32, batch=8)
    assert doc["map"]["phase"] == "rank collapse" and doc["map"]["margin"]["log10_alpha_over_alpha_c"] < 0
    fix = doc["map"]["fix"]
    assert fix["needed"] and fix["alpha_sa"] >= 2 * doc["map"]["alpha_c"] * 0.99
    fixed = doc["fixed"]
    assert fixed["map"]["phase"] == "trainable"
    assert fixed["measured"]["rho"][-1] < doc["measured"]["rho"][-1] - 0.05
    fig = report.figure(doc)
    assert len(fig.axes) >= 4
