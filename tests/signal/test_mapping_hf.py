"""``attnlab map`` on transformers checkpoints built locally with save_pretrained (tiny sizes; nothing downloaded)."""

import json
import math

import pytest
import torch
from typer.testing import CliRunner

from attnlab import cli
from attnlab.signal.mapping import hf, place, read
from attnlab.signal.mapping.measure import post_ln_block

transformers = pytest.importorskip("transformers")


def _tiny(kind: str):
    kw = dict(vocab_size=100, max_position_embeddings=64)
    if kind == "distilbert":
        cfg = transformers.DistilBertConfig(dim=32, n_heads=2, n_layers=2, hidden_dim=64, dropout=0.0,
                                            attention_dropout=0.0, **kw)
    else:
        cls = {"bert": transformers.BertConfig, "roberta": transformers.RobertaConfig,
               "electra": transformers.ElectraConfig}[kind]
        cfg = cls(hidden_size=32, num_attention_heads=2, num_hidden_layers=2, intermediate_size=64,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, **kw)
    torch.manual_seed(0)
    return transformers.AutoModel.from_config(cfg, attn_implementation="eager").eval()


@pytest.mark.parametrize("kind", ["bert", "roberta", "electra", "distilbert"])
def test_block_reproduces_the_hf_forward(kind):
    model = _tiny(kind)
    spec = read.read(model)
    assert spec.covered and spec.L == 2 and spec.ln == "post"
    ids = torch.randint(5, 100, (2, 16))
    with torch.no_grad():
        hs = model(input_ids=ids, output_hidden_states=True).hidden_states
    for layer, w in enumerate(spec.layers):
        got, _ = post_ln_block(hs[layer], w, spec.H, spec.activation)
        assert torch.allclose(got, hs[layer + 1], atol=1e-4), (kind, layer)


def test_checkpoint_map_apply_and_reload(tmp_path):
    """A 6-layer BERT at init std 0.2 (σ_v² = (0.04 · 32)² ≈ 1.6 against α_SA = 1) collapses in rank; `map --apply`
    writes a checkpoint whose map (read back from disk) is trainable, and the measured ρ_L drops."""
    model = hf.bert(d=32, H=2, L=6, T=64, initializer_range=0.2)
    ckpt, fixed = tmp_path / "ckpt", tmp_path / "fixed"
    model.save_pretrained(ckpt)
    res = CliRunner().invoke(cli.app, ["map", str(ckpt), "--seq", "32", "--batch", "8", "--out", str(tmp_path / "m"),
                                       "--apply", str(fixed)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "m" / "map.json").read_text())
    assert (tmp_path / "m" / "map.png").stat().st_size > 10_000
    assert doc["covered"] and "weights read" in doc["source"]
    assert doc["params"]["beta"] == pytest.approx(0.2**2 * 32 / math.sqrt(math.log(64)), rel=0.1)  # std 0.2, T_init 64
    assert doc["map"]["phase"] == "rank collapse", doc["map"]
    again = place.map_model(read.load(str(fixed)), T=32, batch=8)
    assert again["alpha_sa"] == pytest.approx(doc["map"]["fix"]["alpha_sa"])
    assert again["map"]["phase"] == "trainable"
    assert again["measured"]["rho"][-1] < doc["measured"]["rho"][-1] - 0.05


def test_unreadable_checkpoint_is_one_line_exit_2(tmp_path):
    (tmp_path / "config.json").write_text("{not json")
    res = CliRunner().invoke(cli.app, ["map", str(tmp_path)])
    assert res.exit_code == 2 and len(res.output.strip().splitlines()) == 1, res.output


def test_outside_the_theory_is_said_plainly(tmp_path):
    cfg = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0,
                                  eos_token_id=0)
    transformers.GPT2Model(cfg).save_pretrained(tmp_path / "gpt2")
    res = CliRunner().invoke(cli.app, ["map", str(tmp_path / "gpt2"), "--seq", "16", "--batch", "4", "--out",
                                       str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    assert "OUTSIDE THE THEORY" in res.output and "pre-LN decoder" in res.output
    doc = json.loads((tmp_path / "m" / "map.json").read_text())
    assert not doc["covered"] and "predicted" not in doc and len(doc["measured"]["rho"]) == 3
