"""The signal plug-in on real runs: small depth, Fig. 5, Fig. 4 and Fig. 1f runs stored through the run store and
opened as the server opens them; every panel is checked against the stored arrays (theory and simulation at the
shown layer, the series over the layer / step axis, the block map through the stored iteration), the registry
and start forms, the one-line errors, and the JSON of every panel."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms, plugin, traces
from attnlab.sandbox.store import RunReader
from attnlab.signal.views import depth as SD
from attnlab.signal.views import plugin as SP

SMALL_MLM = {"steps": 10, "log_every": 5, "d": 32, "T": 16, "d_ff": 32, "batch": 8, "n_eval": 16, "n_train": 64,
             "repeat_vocab": 16}
RUNS = {
    "depth": ("signal.depth", {"L": 6, "d": 32, "T": 16, "n_inits": 2, "n_seqs": 2,
                               "pairs": ((0.1, 0.5), (0.1, 2.0), (3.0, 1.0))}),
    "fig5": ("signal.fig5", {"L": 8, "d": 32, "T": 16, "sigma_w2s": (1.0, 16.0), "sim_sigma_w2s": (16.0,),
                             "n_inits": 1, "n_seqs": 2}),
    "fig4": ("signal.fig4", SMALL_MLM),
    "fig1f": ("signal.fig1f", {**SMALL_MLM, "rank_L": 3, "entropy_L": 2, "n_seeds": 2}),
}


class Opened:
    def __init__(self, root: Path, experiment: str, run_id: str, reader: RunReader) -> None:
        d = root / "runs" / experiment / run_id
        with np.load(d / "arrays.npz") as z:
            self.arrays = {k: z[k] for k in z.files}
        self.summary = json.loads((d / "summary.json").read_text())
        self.config = json.loads(reader.row(run_id)["config"])  # what the server hands the plug-in
        self.experiment = experiment
        self.view = reader.open(run_id).view


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Opened]:
    store = RunStore(tmp_path_factory.mktemp("signal-sandbox") / "store")
    ids = {}
    for name, (key, values) in RUNS.items():
        exp = get(key)
        ids[name] = store.run(exp, resolve(exp.config, "quick", values)).run_id
    reader = RunReader(store)
    return {name: Opened(store.root, RUNS[name][0], rid, reader) for name, rid in ids.items()}


def _named(fig, name: str) -> dict:
    hits = [t for t in fig["data"] if t.get("name") == name]
    assert len(hits) == 1, (name, [t.get("name") for t in fig["data"]])
    return hits[0]


def test_registry_finds_the_signal_experiments_and_the_forms_are_valid():
    for name in (*SP.DEPTH, *SP.MLM):
        assert plugin.plugin_for(f"signal.{name}").study == "signal", name
    assert plugin.plugin_for("signal.fig3") is None  # a (β, ρ) grid: nothing to scrub
    p = plugin.plugins()["signal"]
    assert set(p.forms) <= set(p.experiments) and set(p.forms) & {f"signal.{n}" for n in SP.MLM} == \
        {"signal.fig4", "signal.figC2"}  # the minute-long MLM runs; Fig. 1f trains 60-layer models
    for key, names in p.forms.items():
        rows = forms.fields(get(key), "quick", names)  # raises on a field the config does not have
        assert [r["name"] for r in rows] == list(names)


def test_depth_frames_show_the_stored_layer(runs):
    r = runs["depth"]
    view, a = r.view, r.arrays
    L = r.config["L"]
    assert view.time_label == "layer"
    np.testing.assert_array_equal(view.times, np.arange(L + 1))
    assert view.variants == ["β=0.1, α_SA=0.5", "β=0.1, α_SA=2", "β=3, α_SA=1"]
    assert view.panel_names("frame") == ["cobweb", "observables", "configs"]
    assert view.panel_names("series") == ["rho", "entropy", "ipr", "rho_mid", "norms", "deviation"]
    layer, v = 4, 2
    obs = view.frame(layer, v, ["observables"])["observables"]
    names = list(SD.LABELS)
    assert obs["data"][0]["x"] == [SD.SHORT[n] for n in names]
    np.testing.assert_allclose(_named(obs, "theory")["y"], [a[f"theory_{n}"][layer, v] for n in names])
    np.testing.assert_allclose(_named(obs, "theory, finite T")["y"], [a[f"finite_{n}"][layer, v] for n in names])
    sim = _named(obs, "simulation")
    np.testing.assert_allclose(sim["y"], [a[f"sim_{n}"][layer, v] for n in names])
    np.testing.assert_allclose(sim["error_y"]["array"], [a[f"sim_{n}_std"][layer, v] for n in names])
    configs = view.frame(layer, 0, ["configs"])["configs"]
    np.testing.assert_allclose(_named(configs, "theory")["y"], a["theory_rho"][layer])
    np.testing.assert_allclose(_named(configs, "simulation")["y"], a["sim_rho"][layer])


def test_cobweb_is_the_block_map_through_the_stored_iteration(runs):
    a, view = runs["depth"].arrays, runs["depth"].view
    layer, v = 5, 1
    fig = view.frame(layer, v, ["cobweb"])["cobweb"]
    rho, sim = a["theory_rho"][:, v], a["sim_rho"][:, v]
    fmap = _named(fig, "block map F (Eq. 19)")
    np.testing.assert_allclose(np.interp(rho[:-1], fmap["x"], fmap["y"]), rho[1:], atol=2e-3)  # grid of 201
    stairs = _named(fig, "theory")
    assert len(stairs["x"]) == 2 * layer + 1
    np.testing.assert_allclose([stairs["x"][-2], stairs["y"][-2]], [rho[layer - 1], rho[layer]])
    np.testing.assert_allclose([stairs["x"][-1], stairs["y"][-1]], [rho[layer], rho[layer]])
    dots = _named(fig, "simulation")
    np.testing.assert_allclose(dots["x"], sim[:layer])
    np.testing.assert_allclose(dots["y"], sim[1 : layer + 1])
    assert "layer 5" in fig["layout"]["title"]["text"]
    # the map is drawn only when it reproduces the stored iteration: a wrong σ_w² in the config hides it
    wrong = {**runs["depth"].config, "sigma_w2": 2.0}
    other = plugin.plugin_for("signal.depth").open("signal.depth", a, runs["depth"].summary, wrong, live=False)
    assert "cobweb" not in other.panel_names("frame")
    assert any("does not reproduce the stored iteration" in n for n in other.notes)


def test_depth_series_overlay_theory_and_simulation_over_layers(runs):
    a, view = runs["depth"].arrays, runs["depth"].view
    series = view.series(1, ["rho", "entropy", "norms", "deviation"])
    rho = series["rho"]
    for i, label in enumerate(view.variants):
        th, sim = _named(rho, f"{label} theory"), _named(rho, f"{label} simulation")
        np.testing.assert_array_equal(th["x"], view.times)
        np.testing.assert_allclose(th["y"], a["theory_rho"][:, i])
        np.testing.assert_allclose(sim["y"], a["sim_rho"][:, i])
        np.testing.assert_allclose(_named(rho, f"{label} theory, finite T")["y"], a["finite_rho"][:, i])
        assert ("error_y" in sim) == (i == 1)  # error bars on the shown configuration only
    assert _named(rho, f"{view.variants[1]} theory")["line"]["width"] > _named(rho, f"{view.variants[0]} theory")[
        "line"]["width"]
    np.testing.assert_allclose(_named(series["entropy"], f"{view.variants[2]} simulation")["y"][1:],
                               a["sim_entropy"][1:, 2])
    np.testing.assert_allclose(_named(series["norms"], f"{view.variants[0]} ‖MLP out‖²/d theory")["y"][1:],
                               a["theory_q_mlp_out"][1:, 0])
    dev = _named(series["deviation"], f"{view.variants[0]} |sim − theory|")
    np.testing.assert_allclose(dev["y"], np.abs(a["sim_rho"][:, 0] - a["theory_rho"][:, 0]))


def test_fig5_uses_its_stored_map_and_marks_theory_only_settings(runs):
    a, view = runs["fig5"].arrays, runs["fig5"].view
    assert view.variants == ["σ_w²=1 (theory only)", "σ_w²=16"]
    assert view.panel_names("frame") == ["cobweb", "configs"] and view.panel_names("series") == ["rho", "deviation"]
    fig = view.frame(3, 1, ["cobweb"])["cobweb"]
    np.testing.assert_allclose(_named(fig, "block map F (Eq. 19)")["y"], a["map_16"])
    np.testing.assert_allclose(_named(fig, "simulation")["y"], a["sim_16"][1:4])
    assert not any(t["name"] == "simulation" for t in view.frame(3, 0, ["cobweb"])["cobweb"]["data"])
    rho = view.series(1, ["rho"])["rho"]
    np.testing.assert_allclose(_named(rho, "σ_w²=1 (theory only) theory")["y"], a["theory_1"])
    np.testing.assert_allclose(_named(rho, "σ_w²=16 simulation")["error_y"]["array"], a["sim_std_16"])


def test_mlm_panels_show_the_logged_steps(runs):
    a, view, summary = runs["fig4"].arrays, runs["fig4"].view, runs["fig4"].summary
    assert view.time_label == "step" and view.variants == ["seed 0", "seed 1"]
    np.testing.assert_array_equal(view.times, a["time"])
    np.testing.assert_array_equal(view.times, [0, 5, 10])
    assert view.panel_names("frame") == ["sweep"]  # one layer: no per-layer panel
    seed1 = [i for i, s in enumerate(a["slot_seeds"]) if s == 1]
    loss = view.series(1, ["loss"])["loss"]
    for i in seed1:
        tag = f"β={a['slot_betas'][i]:g}, α_SA={a['slot_alphas'][i]:g}"
        held = _named(loss, f"{tag} held-out")
        np.testing.assert_array_equal(held["x"], a["time"])
        np.testing.assert_allclose(held["y"], a["eval_loss"][:, i])
        np.testing.assert_allclose(_named(loss, f"{tag} training")["y"], a["loss"][:, i])
    assert _named(loss, "uniform guess")["y"] == [summary["uniform_loss"]] * 2
    k = 1
    sweep = view.frame(k, 1, ["sweep"])["sweep"]
    order = sorted(seed1, key=lambda i: a["slot_betas"][i])
    held = _named(sweep, "held-out loss, α_SA=1")
    np.testing.assert_allclose(held["x"], a["slot_betas"][order])
    np.testing.assert_allclose(held["y"], a["eval_loss"][k, order])
    ent = _named(sweep, "S/log T, α_SA=1")
    assert ent["yaxis"] == "y2"
    np.testing.assert_allclose(ent["y"], a["entropy"][k, order, 0])
    assert _named(sweep, "β_c = √2 (Eq. 13)")["x"] == [pytest.approx(math.sqrt(2))] * 2  # H = 1, T_init = T
    assert "step 5" in sweep["layout"]["title"]["text"]


def test_fig1f_arms_are_variants_with_their_layers(runs):
    a, view = runs["fig1f"].arrays, runs["fig1f"].view
    assert view.variants == ["rank-collapse arm (L=3), seed 0", "rank-collapse arm (L=3), seed 1",
                             "entropy-collapse arm (L=2), seed 0", "entropy-collapse arm (L=2), seed 1"]
    assert view.panel_names("frame") == ["sweep", "layers"]
    layers = view.frame(2, 3, ["layers"])["layers"]
    # the entropy arm's slots of seed 1 are 2, 3 (β × α, then seeds); fig1f quick: entropy_betas = (5, 0.5)
    for slot, beta in ((2, 5.0), (3, 0.5)):
        t = _named(layers, f"β={beta:g}, α_SA=1")
        np.testing.assert_array_equal(t["x"], [1, 2])
        np.testing.assert_allclose(t["y"], a["entropy_entropy"][2, slot])
    sweep = view.frame(1, 0, ["sweep"])["sweep"]  # the rank arm sweeps α_SA at fixed β
    assert sweep["layout"]["xaxis"]["title"]["text"] == "α_SA"
    np.testing.assert_allclose(_named(sweep, "held-out loss, β=0.1")["y"], a["rank_eval_loss"][1, :2])


def test_mlm_training_is_published_live_and_opens_as_it_grows(tmp_path, monkeypatch):
    """Figs. 4 and 1f publish every logged step under the final arrays' names: the sandbox opens each snapshot
    (Fig. 1f: the arm in training) with the steps so far, and the last one equals the stored arrays."""
    from attnlab.core.runs import RunContext

    snapshots: list[dict[str, np.ndarray]] = []
    monkeypatch.setattr(RunContext, "publish", lambda self, arrays, force=False: snapshots.append(arrays()) or True)
    store = RunStore(tmp_path / "store")
    for name in ("fig4", "fig1f"):
        key, values = RUNS[name]
        snapshots.clear()
        exp = get(key)
        run_id = store.run(exp, resolve(exp.config, "quick", values)).run_id
        config = json.loads(RunReader(store).row(run_id)["config"])
        with np.load(store.root / "runs" / key / run_id / "arrays.npz") as z:
            final = {k: z[k] for k in z.files}
        arms = [""] if name == "fig4" else ["rank_", "entropy_"]
        assert len(snapshots) == 2 * len(arms)  # steps 5 and 10 of each arm (step 0 is logged before training)
        for k, snap in enumerate(snapshots):
            arm = arms[k // 2]
            assert set(snap) == {f"{arm}{n}" for n in ("time", "loss", "eval_loss", "entropy", "ipr")}
            view = SP.PLUGIN.open(key, snap, {}, config, live=True)
            np.testing.assert_array_equal(view.times, [0, 5, 10][: k % 2 + 2])
            assert view.notes[-1] == f"live: last snapshot at step {view.times[-1]:g}"
            assert view.series(0, ["loss"])["loss"]["data"]
            if k % 2:
                for n, v in snap.items():
                    np.testing.assert_array_equal(v, final[n])


def test_every_panel_is_valid_json(runs):
    for name, r in runs.items():
        view = r.view
        for v in range(len(view.variants)):
            for i in sorted({0, 1, len(view.times) - 1}):
                json.loads(traces.to_json(view.frame(i, v, view.panel_names("frame"))))
            series = view.series(v, view.panel_names("series"))
            assert set(series) == set(view.panel_names("series")), name
            json.loads(traces.to_json(series))
        json.loads(traces.to_json(view.describe()))


def test_missing_or_malformed_arrays_give_one_line_errors(runs):
    p = plugin.plugin_for("signal.depth")
    depth = runs["depth"]
    cases = [
        ("signal.depth", {k: v for k, v in depth.arrays.items() if not k.startswith("theory_")},
         "stores no per-layer theory and simulation arrays"),
        ("signal.depth", {**depth.arrays, "sim_entropy": depth.arrays["sim_entropy"][:3]}, "array 'entropy'|shape"),
        ("signal.fig5", {k: v for k, v in runs["fig5"].arrays.items() if k != "map_16"}, "map_16"),
        ("signal.fig4", {"time": runs["fig4"].arrays["time"]}, "stores no MLM training history"),
        ("signal.fig4", {**runs["fig4"].arrays, "loss": runs["fig4"].arrays["loss"][:2]}, "training arrays"),
    ]
    no_slots = {k: v for k, v in runs["fig4"].arrays.items() if not k.startswith("slot_")}
    for experiment, arrays, match in [*cases, ("signal.fig4", no_slots, "not recorded")]:
        config = runs["fig4"].config if experiment == "signal.fig4" else depth.config
        if match == "not recorded":  # slots rebuilt from the config must match the stored models: 2 seeds, not 1
            config = {**config, "n_seeds": 1}
        with pytest.raises(ConfigError, match=match) as err:
            p.open(experiment, arrays, {}, config, live=False)
        assert "\n" not in str(err.value), str(err.value)
    rebuilt = p.open("signal.fig4", no_slots, {}, runs["fig4"].config, live=True)  # slots from the config
    assert rebuilt.variants == runs["fig4"].view.variants and "live" in rebuilt.notes[-1]
    assert rebuilt.groups[1][0].slots == runs["fig4"].view.groups[1][0].slots
