"""The potts plug-in on real small runs of every experiment it opens: frames and series show the stored numbers
(training curves, the optimum, replica curves beside the simulations), time axes are the stored ones, series x axes
are log where the paper's are (M in Fig. 3-right; raw values as x), every panel is valid JSON, and runs whose arrays
are missing stop with one line."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import numpy as np
import pytest

from attnlab.core.config import ConfigError, resolve
from attnlab.core.registry import get
from attnlab.core.runs import RunStore
from attnlab.sandbox import forms, plugin, traces
from attnlab.sandbox.store import RunReader

DATA = {"L": 8, "C": 8, "n_chains": 10, "burn_in": 200, "thin": 10, "M_train": 200, "M_test": 100}
RUNS = {
    "fig2": {**DATA, "epochs": 5, "vanilla_epochs": 3, "eval_every": 2, "n_eval": 30, "seeds": 2, "d": 8,
             "models": ["factored", "vanilla1"]},
    "fig2d": {**DATA, "epochs": 3, "a_values": [0.0, 0.3, 1.0], "seeds": 2},
    "fig3right": {**DATA, "Ms": [1, 5, 20, 80], "n_real": 3, "max_iter": 100},
    "fig3left": {"L": 30, "n_real": 4, "alphas": [0.5, 1.0, 2.0], "lams": [1e-3, 1e-2]},
    "finite_l": {"L": 30, "n_draws": 4, "alphas": [0.5, 1.0, 2.0]},
    "replica": {"n_nodes": 100, "lams": [1e-3, 1e-2], "nus": [3.0, 5.0]},
    "gibbs": {"L": 8, "C": 8, "n_chains": 5, "burn_in": 50, "thin": 5, "betas": [0.0, 0.5, 1.0], "pilot_samples": 20,
              "pilot_thin": 2, "chain_samples": 30, "chain_thin": 5},
}
LOG_X = {"fig3right": {"test", "corr"}}  # series on the paper's log x axes (Fig. 3-right: M); all others linear


@dataclass
class Run:
    view: plugin.View
    arrays: dict[str, np.ndarray]
    summary: dict
    config: dict


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Run]:
    store = RunStore(tmp_path_factory.mktemp("potts") / "store")
    reader = RunReader(store)
    out = {}
    for name, values in RUNS.items():
        exp = get(f"potts.{name}")
        fast = dataclasses.replace(exp, figure=None)  # the same run without its matplotlib figures (half the time)
        run_id = store.run(fast, resolve(exp.config, "quick", values)).run_id
        d = store.root / "runs" / exp.key / run_id
        with np.load(d / "arrays.npz") as z:
            arrays = {k: z[k] for k in z.files}
        summary = json.loads((d / "summary.json").read_text())
        config = json.loads((d / "config.json").read_text())["config"]
        out[name] = Run(reader.open(run_id).view, arrays, summary, config)
    return out


def _trace(fig: dict, name: str) -> dict:
    return next(t for t in fig["data"] if t.get("name") == name)


def test_registry_finds_the_potts_experiments():
    for name in RUNS:
        assert plugin.plugin_for(f"potts.{name}").study == "potts"
    assert plugin.plugin_for("potts.consistency").study == "potts"
    assert plugin.plugin_for("potts.equivalence") is None  # final maps only: nothing to scrub
    assert "potts" in plugin.plugins()
    p = plugin.plugin_for("potts.fig2")
    assert set(p.forms) == {"potts.fig3left", "potts.finite_l", "potts.replica", "potts.fig2d"}
    for key, names in p.forms.items():  # every form field is a parameter, and the defaults validate
        assert [row["name"] for row in forms.fields(get(key), "quick", names)] == list(names)
        config, errors = forms.validate(get(key), "quick", {n: "" for n in names})
        assert config is not None and not errors, key
    _, errors = forms.validate(get("potts.replica"), "quick", {"nus": "[1.5]"})
    assert [e.field for e in errors] == ["nus"]


def test_every_panel_is_valid_json(runs):
    for name, run in runs.items():
        view = run.view
        assert view.panels and view.times.ndim == 1 and np.all(np.diff(view.times) > 0), name
        for variant in range(len(view.variants)):
            for index in (0, len(view.times) - 1):
                figs = view.frame(index, variant, view.panel_names("frame"))
                assert set(figs) == set(view.panel_names("frame")), name
                json.loads(traces.to_json(figs))
            series = view.series(variant, view.panel_names("series"))
            for panel, fig in series.items():
                assert fig["data"] and fig["layout"]["title"]["text"], name
                if panel in LOG_X.get(name, ()):  # the paper's log axis, on the raw values (hover reads M itself)
                    assert fig["layout"]["xaxis"]["type"] == "log", (name, panel)
                    assert all(np.all(np.asarray(t["x"]) > 0) for t in fig["data"]), (name, panel)
                else:
                    assert fig["layout"]["xaxis"].get("type") in (None, "linear"), (name, panel)
            json.loads(traces.to_json(series))
        json.loads(traces.to_json(view.describe()))


def test_fig2_training_curves_plane_and_maps(runs):
    run = runs["fig2"]
    view, a, s = run.view, run.arrays, run.summary
    assert view.variants == ["factored (1 layer), seed 1", "factored (1 layer), seed 2", "vanilla, 1 layer"]
    np.testing.assert_array_equal(view.times, np.arange(6.0))  # the union of the models' epochs (0..5, 0..3)
    assert [p.name for p in view.panels] == ["plane", "maps", "scatter", "loss", "recon", "corr", "gap"]
    loss = view.series(1, ["loss"])["loss"]
    seed2 = _trace(loss, "factored (1 layer), seed 2")
    np.testing.assert_array_equal(seed2["x"], a["factored/traj_time"])
    np.testing.assert_array_equal(seed2["y"], a["factored/traj_test_loss"][:, 1])
    assert seed2["line"]["width"] > _trace(loss, "factored (1 layer), seed 1")["line"]["width"]  # the variant
    np.testing.assert_array_equal(_trace(loss, "vanilla, 1 layer")["y"], a["vanilla1/traj_test_loss"][:, 0])
    optimum = _trace(loss, "exact conditionals (optimum)")  # theory beside the training runs
    assert optimum["y"] == [a["optimum/test_loss"][0, 0]] * 2 and optimum["line"]["dash"] == "dash"
    assert optimum["y"][0] == pytest.approx(s["optimal_loss"])
    recon = view.series(0, ["recon"])["recon"]
    assert recon["layout"]["yaxis"]["type"] == "log"
    np.testing.assert_array_equal(_trace(recon, "vanilla, 1 layer")["y"], a["vanilla1/traj_recon_err"][:, 0])
    corr_opt = _trace(view.series(0, ["corr"])["corr"], "exact conditionals (optimum)")["y"]
    assert corr_opt == [a["optimum/corr"][0, 0]] * 2 and corr_opt[0] == pytest.approx(1.0)

    i = 4  # factored at epoch 4, vanilla past its last epoch: its epoch 3
    plane = view.frame(i, 1, ["plane"])["plane"]
    marks = {t["hovertext"][0].split("<br>")[0]: t for t in plane["data"] if t.get("mode") == "markers"}
    f2 = marks["factored (1 layer), seed 2, epoch 4"]
    assert [f2["x"][0], f2["y"][0]] == [a["factored/traj_corr"][4, 1], a["factored/traj_gap"][4, 1]]
    v1 = marks["vanilla, 1 layer, seed 1, epoch 3"]
    assert [v1["x"][0], v1["y"][0]] == [a["vanilla1/traj_corr"][-1, 0], a["vanilla1/traj_gap"][-1, 0]]
    assert "epoch 4" in plane["layout"]["title"]["text"]
    early = view.frame(1, 2, ["plane"])["plane"]  # vanilla evaluated at epochs 0, 2, 3: epoch 1 shows its epoch 0
    v0 = next(t for t in early["data"] if t.get("hovertext", [""])[0].startswith("vanilla, 1 layer, seed 1,"))
    assert "epoch 0<br>" in v0["hovertext"][0] and v0["x"][0] == a["vanilla1/traj_corr"][0, 0]
    assert any(t["name"] == "exact conditionals" for t in plane["data"])

    J = a["J"]
    off = ~np.eye(len(J), dtype=bool)

    def shown(index, variant):  # the map behind the maps and scatter panels, undone from κ*A
        figs = view.frame(index, variant, ["maps", "scatter"])
        return figs["maps"], figs["scatter"]

    assert a["factored/maps"].shape == (6, 2, 8, 8) and a["vanilla1/maps"].shape == (3, 1, 8, 8)
    np.testing.assert_array_equal(a["factored/maps"][-1], a["factored/map"].astype(np.float32))
    assert any("at or before the frame's" in n for n in view.notes)
    for index, variant, A in [(i, 1, a["factored/maps"][4, 1]), (1, 0, a["factored/maps"][1, 0]),
                              (1, 2, a["vanilla1/maps"][0, 0]), (i, 2, a["vanilla1/maps"][2, 0])]:
        A = np.asarray(A, float)
        maps, sc = shown(index, variant)
        kappa = (A[off] * J[off]).sum() / (A[off] ** 2).sum()
        left, right = maps["data"]
        np.testing.assert_array_equal(left["z"][off], J[off])
        assert np.isnan(np.diag(left["z"])).all() and np.isnan(np.diag(right["z"])).all()  # the sink is blanked
        np.testing.assert_allclose(right["z"][off], kappa * A[off], rtol=1e-12)
        corr = np.corrcoef(A[off], J[off])[0, 1]
        assert f"corr {corr:.3f}" in maps["layout"]["title"]["text"]
        np.testing.assert_allclose(sc["data"][1]["y"], kappa * A[off], rtol=1e-12)
    assert "(epoch 4)" in shown(i, 1)[0]["layout"]["title"]["text"]
    assert "(epoch 0)" in shown(1, 2)[0]["layout"]["title"]["text"]  # vanilla's epoch 0 at frame epoch 1
    early = np.asarray(a["factored/maps"][1, 1], float)  # an early frame is not the final map
    final = np.asarray(a["factored/map"][1], float)
    assert np.abs(early - final)[off].max() > 1e-3
    right = shown(1, 1)[0]["data"][1]["z"][off]
    assert not np.allclose(right, final[off] * (final[off] * J[off]).sum() / (final[off] ** 2).sum())

    # a run from before per-epoch maps: the final map at every frame, and a note saying so
    old = {k: v for k, v in a.items() if not k.endswith("/maps")}
    view = plugin.plugin_for("potts.fig2").open("potts.fig2", old, s, run.config, live=False)
    assert any("end of training only" in n for n in view.notes)
    A = final
    kappa = (A[off] * J[off]).sum() / (A[off] ** 2).sum()
    for index in (1, i):
        maps, sc = shown(index, 1)
        np.testing.assert_allclose(maps["data"][1]["z"][off], kappa * A[off])
        assert "(final, epoch 5)" in maps["layout"]["title"]["text"]
        np.testing.assert_allclose(sc["data"][1]["y"], kappa * A[off])


def test_fig2_training_is_published_live_model_by_model(tmp_path, monkeypatch):
    """Fig. 2 publishes after every epoch: the finished models' arrays, the model in training so far (its latest
    map as its map) and J; each snapshot opens in the plug-in with every panel, the last one holds the stored
    trajectories."""
    from attnlab.core.runs import RunContext

    snapshots: list[dict[str, np.ndarray]] = []
    monkeypatch.setattr(RunContext, "publish", lambda self, arrays, force=False: snapshots.append(arrays()) or True)
    store = RunStore(tmp_path / "store")
    exp = get("potts.fig2")
    run_id = store.run(dataclasses.replace(exp, figure=None), resolve(exp.config, "quick", RUNS["fig2"])).run_id
    d = store.root / "runs" / exp.key / run_id
    config = json.loads((d / "config.json").read_text())["config"]
    with np.load(d / "arrays.npz") as z:
        final = {k: z[k] for k in z.files}
    assert len(snapshots) == 5 + 3  # factored epochs 1-5, then vanilla epochs 1-3
    for k, snap in enumerate(snapshots):
        view = plugin.plugin_for("potts.fig2").open("potts.fig2", snap, {}, config, live=True)
        running, epoch = ("factored", k + 1) if k < 5 else ("vanilla1", k - 4)
        assert ("vanilla1/traj_time" in snap) == (running == "vanilla1")
        evaluated = [e for e in final[f"{running}/traj_time"] if e <= epoch]
        np.testing.assert_array_equal(snap[f"{running}/traj_time"], evaluated)
        np.testing.assert_array_equal(snap[f"{running}/map"], snap[f"{running}/maps"][-1])
        assert [p.name for p in view.panels][:3] == ["plane", "maps", "scatter"]
        assert view.frame(len(view.times) - 1, 0, ["plane", "maps"])
    for key in ("factored/traj_test_loss", "vanilla1/traj_corr", "factored/maps"):
        np.testing.assert_allclose(snapshots[-1][key], final[key])


def test_fig2d_loss_vs_a_per_epoch(runs):
    run = runs["fig2d"]
    view, a, s = run.view, run.arrays, run.summary
    assert view.variants == ["a = 0", "a = 0.3", "a = 1"]
    np.testing.assert_array_equal(view.times, a["traj_time"])
    last = len(view.times) - 1
    fig = view.frame(last, 1, ["loss_a"])["loss_a"]
    mean = _trace(fig, "mean ± std")
    np.testing.assert_allclose(mean["y"], [s["test_a0"], s["test_a0.3"], s["test_a1"]])  # Fig. 2d's points
    np.testing.assert_allclose(mean["error_y"]["array"], [s["test_a0_std"], s["test_a0.3_std"], s["test_a1_std"]])
    early = view.frame(1, 1, ["loss_a"])["loss_a"]
    np.testing.assert_allclose(_trace(early, "mean ± std")["y"], a["traj_test_loss"][1].reshape(3, 2).mean(1))
    assert _trace(early, "selected a")["x"][0] == 0.3
    assert _trace(fig, "optimal loss")["y"] == [s["optimal_loss"]] * 2
    series = view.series(2, ["loss"])["loss"]
    np.testing.assert_allclose(_trace(series, "a = 1")["y"], a["traj_test_loss"][:, 4:6].mean(1))


def test_fig3right_losses_vs_samples(runs):
    run = runs["fig3right"]
    view, a, s = run.view, run.arrays, run.summary
    np.testing.assert_array_equal(view.times, [1, 5, 20, 80])
    assert view.time_label == "M" and view.variants == ["λ = 0.0001"]
    test = view.series(0, ["test"])["test"]
    mean = _trace(test, "test loss (mean ± SEM)")
    np.testing.assert_array_equal(mean["x"], view.times)
    np.testing.assert_allclose(mean["y"], [s[f"test_M{M}_lam0.0001"] for M in (1, 5, 20, 80)])
    assert _trace(test, "optimal loss")["y"] == [s["optimal_loss"]] * 2
    assert _trace(test, "optimal loss")["x"] == [1.0, 80.0]  # M itself on the log axis, not log10 M
    assert test["layout"]["xaxis"]["type"] == "log"
    corr = view.series(0, ["corr"])["corr"]
    assert corr["layout"]["xaxis"]["type"] == "log"
    np.testing.assert_array_equal(corr["data"][0]["x"], [1, 5, 20, 80])
    assert corr["data"][0]["hovertext"][2].startswith("M = 20: corr ")
    fits = view.frame(2, 0, ["fits"])["fits"]
    shown = sorted(y for t in fits["data"] if t["name"].startswith("test,") for y in t["y"])
    np.testing.assert_allclose(shown, np.sort(a["M20/test"][0]))
    assert "M = 20, α = 2.5" in fits["layout"]["title"]["text"]


def test_fig3left_replica_curves_beside_the_simulations(runs):
    run = runs["fig3left"]
    view, a = run.view, run.arrays
    assert view.variants == ["λ = 0.001", "λ = 0.01"] and view.time_label == "α"
    np.testing.assert_array_equal(view.times, a["lam0.01/sim_time"])
    eps = view.series(1, ["eps_g"])["eps_g"]
    theory = _trace(eps, "replica (paper weight), λ = 0.01")
    np.testing.assert_array_equal(theory["x"], a["dense_alpha"])
    np.testing.assert_array_equal(theory["y"], a["lam0.01/theory_paper"])
    assert _trace(eps, "replica (exact weight), λ = 0.01")["line"]["dash"] == "dash"
    sim = _trace(eps, "simulation, λ = 0.01")
    np.testing.assert_array_equal(sim["x"], a["lam0.01/sim_time"])
    np.testing.assert_array_equal(sim["y"], a["lam0.01/sim_eps_g"])
    np.testing.assert_array_equal(sim["error_y"]["array"], a["lam0.01/sim_eps_g_sem"])
    assert sim["marker"]["size"] > _trace(eps, "simulation, λ = 0.001")["marker"]["size"]  # the variant stands out
    spread = view.frame(1, 1, ["spread"])["spread"]
    np.testing.assert_array_equal(_trace(spread, "test ε_g, each draw")["x"], a["lam0.01/sim_eps_g_all"][1])
    line = _trace(spread, "replica (paper weight)")
    assert line["x"][0] == pytest.approx(np.interp(a["lam0.01/sim_time"][1], a["dense_alpha"],
                                                   a["lam0.01/theory_paper"]))


def test_finite_l_replica_and_gibbs(runs):
    fl = runs["finite_l"]
    eps = fl.view.series(0, ["eps_g"])["eps_g"]
    lam = fl.config["lam"]
    np.testing.assert_array_equal(_trace(eps, f"finite-L theory, λ = {lam}")["y"], fl.arrays["finite_eps_g"])
    np.testing.assert_array_equal(_trace(eps, f"L → ∞, λ = {lam}")["y"], fl.arrays["inf_eps_g"])
    np.testing.assert_array_equal(_trace(eps, f"simulation, λ = {lam}")["y"], fl.arrays["sim_eps_g"])
    spread = fl.view.frame(2, 0, ["spread"])["spread"]
    assert _trace(spread, "finite-L theory")["x"][0] == fl.arrays["theory_eps_g"][2]  # solved at this α itself

    rep = runs["replica"]
    assert rep.view.variants == ["ν = 3, paper weight", "ν = 3, exact weight", "ν = 5, paper weight",
                                 "ν = 5, exact weight"]
    np.testing.assert_array_equal(rep.view.times, rep.arrays["alpha"])
    k = 250
    vs = rep.view.frame(k, 3, ["vs_lam"])["vs_lam"]
    np.testing.assert_array_equal(_trace(vs, "ε_g")["y"], rep.arrays["nu5_exact/eps_g"][k])
    np.testing.assert_array_equal(_trace(vs, "ε_g")["x"], rep.arrays["lams"])
    np.testing.assert_array_equal(_trace(rep.view.series(2, ["eps_g"])["eps_g"], "λ = 0.01")["y"],
                                  rep.arrays["nu5_paper/eps_g"][:, 1])

    gb = runs["gibbs"]
    samples = gb.arrays["chain/samples"]
    np.testing.assert_array_equal(gb.view.times, np.arange(len(samples)))
    z = gb.view.frame(25, 0, ["chain"])["chain"]["data"][0]["z"]
    np.testing.assert_array_equal(z, samples[6:26])  # the 20 configurations up to the shown one
    energy = gb.view.series(0, ["energy"])["energy"]["data"][0]
    np.testing.assert_array_equal(energy["y"], gb.arrays["chain/energies"])
    ham = _trace(gb.view.series(0, ["hamming"])["hamming"], "d(s_k, s_k-1)")
    np.testing.assert_allclose(ham["y"], (samples[1:] != samples[:-1]).mean(1))


def test_missing_arrays_stop_with_one_line(runs):
    p = plugin.plugin_for("potts.fig2")
    for name in (*RUNS, "consistency"):
        with pytest.raises(ConfigError) as err:
            p.open(f"potts.{name}", {}, {}, {}, live=False)
        assert "\n" not in str(err.value) and f"potts.{name}" in str(err.value), name
    broken = {k: v for k, v in runs["fig2"].arrays.items() if k != "factored/traj_corr"}
    with pytest.raises(ConfigError, match=r"^this potts.fig2 run's arrays cannot be shown: .*corr") as err:
        p.open("potts.fig2", broken, runs["fig2"].summary, runs["fig2"].config, live=False)
    assert "\n" not in str(err.value)
    partial = {k: v for k, v in runs["fig3right"].arrays.items() if k != "M5/corr"}
    with pytest.raises(ConfigError, match="lacks the arrays M5/corr"):
        p.open("potts.fig3right", partial, {}, runs["fig3right"].config, live=False)
    shuffled = {**runs["fig2d"].arrays, "a": runs["fig2d"].arrays["a"][[0, 2, 1, 3, 4, 5]]}
    with pytest.raises(ConfigError, match="not grouped by a"):
        p.open("potts.fig2d", shuffled, {}, {}, live=False)
