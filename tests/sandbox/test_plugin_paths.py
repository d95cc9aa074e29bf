"""The paths plug-in on real runs (tiny quick-scale overrides, a few seconds each) stored in a run store and opened
through the sandbox's reader: every panel shows the stored numbers, theory and samples side by side, the series
run over the time axis, each figure is valid JSON, and unshowable arrays give a one-line ConfigError."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms, plugin, traces
from attnlab.sandbox.store import RunReader

MARKOV = {"T": 8, "N0": 20, "P": 30, "P_test": 100, "widths": [10, 30, 100, 1000], "sample_widths": [10, 100],
          "chains": 2, "burn_in": 100, "samples": 50, "thin": 2, "gp_layouts": ["all", "good"]}
ONESHOT = {"dataset": "glyphs", "ood": ["glyphs_blocks"], "image_size": 8, "gd_steps": 30, "gd_batch": 32,
           "eval_every": 10, "P": 30, "P_val": 40, "P_test": 40,
           "widths": [10, 100, 1000], "taus": [0.1, 1.0], "chains": 2, "burn_in": 50, "samples": 30, "thin": 2,
           "glyph_classes": 30}
PRUNING = {**ONESHOT, "widths": [10], "sample_widths": []}


@dataclass
class Run:
    experiment: str
    run_id: str
    arrays: dict[str, np.ndarray]
    summary: dict
    config: dict


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[RunReader, dict[str, Run]]:
    store = RunStore(tmp_path_factory.mktemp("paths-sandbox") / "store")
    out = {}
    for key, values in (("paths.fig2c", MARKOV), ("paths.fig3", ONESHOT), ("paths.fig3ef", PRUNING)):
        exp = get(key)
        config = resolve(exp.config, "quick", values)
        run_id = store.run(exp, config).run_id
        d = Path(store.root) / "runs" / key / run_id
        with np.load(d / "arrays.npz") as z:
            arrays = {k: z[k] for k in z.files}
        out[key] = Run(key, run_id, arrays, json.loads((d / "summary.json").read_text()),
                       config.model_dump(mode="json"))
    return RunReader(store), out


def _every_panel_is_json(view) -> None:
    assert all(re.fullmatch(r"[a-z0-9_]+", p.name) for p in view.panels)  # the API's panel-name pattern
    for v in range(len(view.variants)):
        for i in range(len(view.times)):
            figs = view.frame(i, v, view.panel_names("frame"))
            assert set(figs) == set(view.panel_names("frame"))
            for name, fig in figs.items():
                assert fig["layout"]["title"]["text"], name
                json.loads(traces.to_json(fig))
        series = view.series(v, view.panel_names("series"))
        for name, fig in series.items():
            assert fig["data"], name
            json.loads(traces.to_json(fig))


def _series_over_N_are_log(view) -> None:
    """Every series panel has N on a log x axis (N values as x, no tick relabelling), x within the stored widths
    (the GD model's width aside)."""
    lo, hi = view.times.min(), view.times.max()
    for v in range(len(view.variants)):
        for name, fig in view.series(v, view.panel_names("series")).items():
            axis = fig["layout"]["xaxis"]
            assert axis["type"] == "log" and axis["title"]["text"] == "width N", name
            assert "tickvals" not in axis and "ticktext" not in axis, name
            for t in fig["data"]:
                if "GD model" not in t["name"]:
                    assert lo <= np.min(t["x"]) and np.max(t["x"]) <= hi, (name, t["name"])


def _named(fig, name: str) -> dict:
    hits = [t for t in fig["data"] if t.get("name") == name]
    assert len(hits) == 1, (name, [t.get("name") for t in fig["data"]])
    return hits[0]


def test_registry_finds_the_sweeps_and_the_forms_are_valid():
    for key in ("paths.fig2c", "paths.fig2e", "paths.fig5c", "paths.generic", "paths.fig3", "paths.fig6",
                "paths.fig3ef", "paths.fig7"):
        assert plugin.plugin_for(key).study == "paths", key
    assert plugin.plugin_for("paths.fig2d") is None and plugin.plugin_for("paths.fig5b") is None  # one width
    p = plugin.plugins()["paths"]
    assert set(p.forms) == {"paths.fig2c", "paths.fig2e", "paths.fig5c", "paths.generic"}
    for key, names in p.forms.items():
        rows = forms.fields(get(key), "quick", names)
        assert [r["name"] for r in rows] == list(names)


def test_markov_sweep_overlays_theory_and_samples(runs):
    reader, stored = runs
    r = stored["paths.fig2c"]
    view = reader.open(r.run_id).view
    a = r.arrays
    N = a["theory_time"]
    np.testing.assert_array_equal(view.times, N)  # the widths themselves are the times
    assert view.time_label == "N" and len(view.variants) == 1
    assert view.panel_names("frame") == ["u", "outputs"]
    assert view.panel_names("series") == ["accuracy", "gen_error", "entries", "agreement", "solver"]

    sampled, unsampled = int(np.flatnonzero(N == 100)[0]), int(np.flatnonzero(N == 30)[0])
    j = int(np.flatnonzero(a["sim_time"] == 100)[0])
    fig = view.frame(sampled, 0, ["u"])["u"]
    heat = [t for t in fig["data"] if t["type"] == "heatmap"]
    assert len(heat) == 2 and heat[1]["xaxis"] == "x2"
    np.testing.assert_array_equal(heat[0]["z"], a["theory_U"][sampled])
    np.testing.assert_array_equal(heat[1]["z"], a["sim_U"][j])
    assert heat[0]["x"] == ["good", "adv (1,2)", "denoising", "adv (2,2)"]
    lim = np.abs(np.concatenate([a["theory_U"].ravel(), a["sim_U"].ravel()])).max()
    assert fig["layout"]["coloraxis"]["cmax"] == pytest.approx(lim)  # one fixed scale over every frame
    fig = view.frame(unsampled, 0, ["u"])["u"]
    assert [t["type"] for t in fig["data"]] == ["heatmap"] and "not sampled" in fig["layout"]["title"]["text"]
    np.testing.assert_array_equal(fig["data"][0]["z"], a["theory_U"][unsampled])

    out = view.frame(sampled, 0, ["outputs"])["outputs"]
    order = view.order
    assert sorted(order) == list(range(len(a["y_test"]))) and np.all(np.diff(a["y_test"][order]) >= 0)
    np.testing.assert_allclose(_named(out, "theory f̄")["y"], a["theory_f_mean"][sampled][order])
    np.testing.assert_allclose(_named(out, "samples f̄")["y"], a["sim_f_mean"][j][order])
    out = view.frame(unsampled, 0, ["outputs"])["outputs"]
    assert not [t for t in out["data"] if t["name"] == "samples f̄"]

    series = view.series(0, ["accuracy", "gen_error", "entries"])
    acc = series["accuracy"]
    theory = _named(acc, "theory")
    np.testing.assert_array_equal(theory["x"], N)  # the time axis (N itself) on x
    np.testing.assert_allclose(theory["y"], a["theory_accuracy"])
    samples = _named(acc, "samples (Gibbs)")
    np.testing.assert_array_equal(samples["x"], a["sim_time"])
    np.testing.assert_allclose(samples["y"], a["sim_accuracy"])
    assert _named(acc, "GP, all paths")["y"] == [r.summary["acc_gp_all"]] * 2
    assert _named(acc, "GP, good path")["line"]["dash"] == "dash"
    assert _named(acc, "GP, all paths")["x"] == [N[0], N[-1]]
    _series_over_N_are_log(view)
    np.testing.assert_allclose(_named(series["gen_error"], "theory")["y"], a["theory_gen_error"])
    good = _named(series["entries"], "good")
    np.testing.assert_allclose(good["y"], a["theory_U"][:, 0, 0])
    np.testing.assert_array_equal(good["x"], N)
    np.testing.assert_allclose(_named(series["entries"], "good (samples)")["y"], a["sim_U"][:, 0, 0])
    np.testing.assert_array_equal(_named(series["entries"], "good (samples)")["x"], a["sim_time"])
    _every_panel_is_json(view)


def _network_arrays(run, network: str) -> dict[str, np.ndarray]:
    return {k[len(network) + 1:]: x for k, x in run.arrays.items() if k.startswith(f"{network}/")}


def test_oneshot_u_beside_samples_and_gd(runs):
    reader, stored = runs
    r = stored["paths.fig3"]
    view = reader.open(r.run_id).view
    v = "L2_H4-4"
    a = _network_arrays(r, v)
    assert view.variants == [v]
    np.testing.assert_array_equal(view.times, a["widths"])
    assert view.time_label == "N"
    i = 0  # N = 10: the sampled width
    fig = view.frame(i, 0, ["u"])["u"]
    z = [t["z"] for t in fig["data"]]
    assert len(z) == 3 and fig["data"][2]["coloraxis"] == "coloraxis2"
    np.testing.assert_array_equal(z[0], a["U_star"][i])
    np.testing.assert_array_equal(z[1], a["sim_U"][0])
    np.testing.assert_array_equal(z[2], a["U_gd"])
    assert len(fig["layout"]["shapes"]) == 2 * 3 * (4 - 1)  # the h₁ blocks outlined on every map
    fig = view.frame(2, 0, ["u"])["u"]
    assert len(fig["data"]) == 2 and "N = 1000" in fig["layout"]["xaxis"]["title"]["text"]
    np.testing.assert_array_equal(fig["data"][0]["z"], a["U_star"][2])

    tau = view.frame(1, 0, ["tau"])["tau"]
    np.testing.assert_allclose(_named(tau, "in-distribution, N = 100")["y"], a["acc_grid_id"][:, 1])
    np.testing.assert_allclose(_named(tau, "in-distribution, GP")["y"], a["acc_gp_grid_id"])
    assert _named(tau, f"τ*(N) = {a['tau_star'][1]:g}")["x"] == [a["tau_star"][1]] * 2

    acc = view.series(0, ["accuracy"])["accuracy"]
    theory = _named(acc, "in-distribution: theory (τ*)")
    np.testing.assert_array_equal(theory["x"], a["widths"])
    np.testing.assert_allclose(theory["y"], a["acc_fw_id"])
    assert _named(acc, "in-distribution: GP")["y"] == [float(a["acc_gp_id"])] * 2
    sample = _named(acc, "in-distribution: samples")
    assert list(sample["y"]) == [r.summary[f"{v}/acc_sample_id_N10"]] and list(sample["x"]) == [10]
    gd = _named(acc, "OOD (block glyphs): GD model")
    assert gd["x"][0] == pytest.approx(r.config["N_gd"])
    assert gd["y"][0] == pytest.approx(r.summary[f"{v}/gd_acc_glyphs_blocks"])
    static = view.frame(0, 0, ["gd", "alignment"])
    np.testing.assert_allclose(static["gd"]["data"][0]["y"], a["gd_val_curve"][1])
    np.testing.assert_allclose(_named(static["alignment"], "GP limit")["y"], a["overlap_gp"])
    _series_over_N_are_log(view)
    _every_panel_is_json(view)


def test_pruning_frames_are_heads_pruned(runs):
    reader, stored = runs
    r = stored["paths.fig3ef"]
    view = reader.open(r.run_id).view
    v = "L2_H4-4"
    a = _network_arrays(r, v)
    order = a["order"]
    assert order.shape == (6, 2) and view.time_label == "heads pruned"
    np.testing.assert_array_equal(view.times, np.arange(7))
    k = 2
    figs = view.frame(k, 0, ["scores", "u"])
    bars = figs["scores"]["data"]
    np.testing.assert_allclose(bars[0]["y"], a["scores_both"])
    np.testing.assert_allclose(bars[1]["y"], a["drop_id"])
    faded = np.flatnonzero(np.asarray(bars[0]["marker"]["opacity"]) < 1)
    assert sorted(faded) == sorted(4 * order[:k, 0] + order[:k, 1])  # flat index of (layer, head) in Hs = (4, 4)
    U = figs["u"]["data"][0]["z"]
    heads = np.stack(np.unravel_index(np.arange(16), (4, 4)), 1)
    gone = np.zeros(16, bool)
    for ell, h in order[:k]:
        gone |= heads[:, ell] == h
    assert gone.any() and np.isnan(U[gone]).all() and np.isnan(U[:, gone]).all()
    np.testing.assert_array_equal(U[~gone][:, ~gone], a["U"][~gone][:, ~gone])
    curve = view.series(0, ["curve"])["curve"]
    ident = _named(curve, "in-distribution")
    np.testing.assert_allclose(ident["x"], view.times)
    np.testing.assert_allclose(ident["y"], a["curve_id"])
    _every_panel_is_json(view)


def test_unshowable_runs_give_one_line(runs):
    _, stored = runs
    p = plugin.plugin_for("paths.fig2c")
    r = stored["paths.fig2c"]
    arrays = {k: v for k, v in r.arrays.items() if k != "theory_U"}
    with pytest.raises(ConfigError, match=r"paths.fig2c run stores no theory sweep over N \(missing theory_U\)") as e:
        p.open("paths.fig2c", arrays, r.summary, r.config, live=False)
    assert "\n" not in str(e.value)
    r = stored["paths.fig3ef"]
    arrays = {k: v for k, v in r.arrays.items() if not k.endswith("/drop_id")}
    with pytest.raises(ConfigError, match=r"network L2_H4-4 \(missing drop_id") as e:
        p.open("paths.fig3ef", arrays, r.summary, r.config, live=False)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError, match="stores no arrays of the networks"):
        p.open("paths.fig3", {}, {}, stored["paths.fig3"].config, live=False)
    with pytest.raises(ConfigError, match="no live snapshots"):
        p.open("paths.fig2c", r.arrays, {}, r.config, live=True)
