"""The plug-ins in process: every clustering panel drawn from the offline renderer's own panel data (hover numbers
equal to the model's output, level lines on the 0.5 level, the background image equal to the probabilities), 3-D
and PCA frames, the specialization panels, the registry, the compact JSON, the start form's validation."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
import torch
from PIL import Image

from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.history import History
from attnlab.clustering.model import forward
from attnlab.clustering.render import panels as P
from attnlab.clustering.train import train
from attnlab.core.config import ConfigError
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms, plugin, traces
from attnlab.sandbox.store import RunReader, label


@pytest.fixture(scope="module")
def small_view(stored):
    reader = RunReader(RunStore(stored.root))
    return reader.open(stored.small).view


def test_every_clustering_panel_is_drawn(small_view):
    view = small_view
    names = view.panel_names("frame")
    assert {"tokens", "positions", "embeddings", "normalized", "attention", "value", "xi", "psi", "levels", "mlp",
            "output", "sparsity"} == set(names)
    assert view.panel_names("series") == ["loss", "grads", "min_norm"]
    figs = view.frame(len(view.times) - 1, 1, names)
    for name, fig in figs.items():
        assert fig["data"] and fig["layout"]["title"]["text"], name
        assert any(len(t.get("x", [])) or t.get("z") is not None or t.get("source") for t in fig["data"]), name
    json.loads(traces.to_json(figs))  # valid JSON: no NaN, no numpy left
    series = view.series(0, ["loss", "grads", "min_norm"])
    assert {t["name"] for t in series["loss"]["data"]} == {"train loss", "test loss", "train acc", "test acc"}
    assert series["grads"]["layout"]["yaxis"]["type"] == "log"


def test_hover_shows_sentence_class_and_the_models_probability(small_view):
    h: History = small_view.history
    i, seed = len(h.snapshot_epochs) - 1, 1
    pts = small_view.frame(i, seed, ["xi"])["xi"]["data"][0]
    x, _ = P.probe_sentences(h.task)
    logits = forward(h.params_at(i, seed), x, h.spec)["logits"][0]
    prob = torch.softmax(logits, -1).numpy()
    y = h.task.labels(x).numpy()
    for j in (0, 7, len(x) - 1):
        text = pts["hovertext"][j]
        row = x[j].numpy()
        words = "".join(map(str, row[list(h.task.idx)])) + " | " + "".join(map(str, row[list(h.task.spurious)]))
        assert f"sentence {words}" in text and f"class y = {y[j]}" in text
        assert f"p̂(y|x) = {prob[j, y[j]]:.3f}" in text


def test_level_lines_and_background_match_the_probabilities(small_view):
    h = small_view.history
    i = len(h.snapshot_epochs) - 1
    params = h.params_at(i, 0)
    data = P.levels(params, h.spec, h.task, grid=60)
    fig = small_view.frame(i, 0, ["levels"])["levels"]
    img = np.asarray(Image.open(io.BytesIO(base64.b64decode(fig["data"][0]["source"].split(",", 1)[1]))))
    p1 = data["probs"][..., 1]
    assert img.shape == (60, 60, 3)
    undecided = np.unravel_index(np.argmin(np.abs(p1 - 0.5)), p1.shape)
    assert (img[59 - undecided[0], undecided[1]] > 240).all()  # white where p̂ = 1/2
    lines = [t for t in fig["data"] if t.get("mode") == "lines" and t["line"].get("dash") is None]
    if lines:  # the 0.5 line: p̂(y=1|ξ) there is 1/2
        xy = np.stack([lines[0]["x"], lines[0]["y"]], 1)
        xy = xy[np.isfinite(xy).all(1)][::5]
        got = P.head_probs(P.as_params(params), h.spec, xy)[:, 1]
        np.testing.assert_allclose(got, 0.5, atol=0.02)


def test_three_dimensional_and_projected_models():
    hist = train(TrainConfig(k=2, N=4, d=3, n_train=8, batch_size=8, epochs=1))
    view = plugin.plugin_for("clustering.train").open("clustering.train", hist.to_arrays("run/"), {}, {}, live=True)
    figs = view.frame(1, 0, ["normalized", "xi", "mlp"])
    assert {t["type"] for t in figs["xi"]["data"]} == {"scatter3d"} and "scene" in figs["xi"]["layout"]
    assert "live: training" in view.notes[-1]
    hist4 = train(TrainConfig(k=2, N=4, d=4, n_train=8, batch_size=8, epochs=1))
    view4 = plugin.plugin_for("clustering.train").open("clustering.train", hist4.to_arrays("run/"), {}, {}, False)
    fig = view4.frame(0, 0, ["value"])["value"]
    assert "PCA projection" in fig["layout"]["title"]["text"]
    assert fig["layout"]["xaxis"]["title"]["text"].startswith("PC1")
    assert any("d = 4" in n for n in view4.notes)


def test_specialization_panels(stored):
    opened = RunReader(RunStore(stored.root)).open(stored.spec)
    view = opened.view
    summary = json.loads((stored.root / "runs" / "specialization.fig1" / stored.spec / "summary.json").read_text())
    assert view.variants == ["softmax"] and view.time_label == "τ"
    np.testing.assert_allclose(view.times, np.arange(0, 4.01, 0.5))
    assert [p.name for p in view.panels] == ["plane12", "loss", "overlaps"]
    fig = view.frame(3, 0, ["plane12"])["plane12"]
    m = view.runs[0]["theory"]["m"][3, 0]  # (H, F) at τ = 1.5
    heads = [t for t in fig["data"] if "head 1 (theory)" in t.get("hovertext", [""])[0]]
    assert heads and np.allclose([heads[0]["x"][0], heads[0]["y"][0]], m[0, :2])
    loss = view.series(0, ["loss"])["loss"]
    bayes = next(t for t in loss["data"] if t["name"] == "Bayes risk")
    assert bayes["y"] == [summary["bayes_risk"]] * 2 and bayes["line"]["dash"] == "dash"
    assert {t["name"] for t in loss["data"]} == {"theory", "simulation", "Bayes risk"}


def test_registry_and_plugin_errors(monkeypatch):
    assert {"clustering", "specialization"} <= set(plugin.plugins())
    assert plugin.plugin_for("specialization.fig9").study == "specialization"
    assert plugin.plugin_for("clustering.fig7") is None  # a sweep: nothing to scrub
    monkeypatch.setattr(plugin, "_LOADED", False)
    monkeypatch.setenv("ATTNLAB_SANDBOX_PLUGINS", "no_such_sandbox_module")
    with pytest.raises(ConfigError, match="ATTNLAB_SANDBOX_PLUGINS names 'no_such_sandbox_module'"):
        plugin.plugins()
    with pytest.raises(ValueError, match="panel name 'U'"):
        plugin.PanelSpec("U", "upper case is refused by the API")
    with pytest.raises(ValueError, match="names its study"):
        plugin.register(type("Empty", (plugin.StudyPlugin,), {"open": lambda *a: None})())


def test_json_is_compact_and_valid():
    obj = {"a": np.array([1.23456789, np.nan, -np.inf, 0.0, 1e-7 * 1.234567]), "b": np.int64(3),
           "c": np.arange(3), "d": [np.float32(0.1)], "e": float("nan")}
    assert json.loads(traces.to_json(obj)) == {"a": [1.2346, None, None, 0.0, 1.2346e-7], "b": 3, "c": [0, 1, 2],
                                               "d": [0.1], "e": None}


def test_form_validation_lists_every_problem_by_field():
    exp = get("clustering.train")
    config, errors = forms.validate(exp, "quick", {"k": "-1", "lr": "0", "epochs": ""})
    assert config is None and [e.field for e in errors] == ["k", "lr"]
    config, errors = forms.validate(exp, "quick", {"k": "4", "norm": "rmsnorm", "h": ""})
    assert not errors and (config.k, config.norm, config.h, config.epochs) == (4, "rmsnorm", None, 300)
    _, errors = forms.validate(exp, "quick", {"informative": "[0, 1"})
    assert errors[0].field == "informative" and "not valid YAML" in errors[0].message
    assert label("clustering.train", {**exp.config().model_dump(mode="json"), "k": 3, "seed": 2}) == "seed=2 k=3"
    assert label("clustering.train", exp.config().model_dump(mode="json")) == "paper defaults"
    assert label("nostudy.nothing", {"k": 3}) == ""  # defaults unknown: no claim about them
