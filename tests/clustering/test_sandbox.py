"""Visual sandbox (paper 4 §4.1, Figs 1, 5, 8): panel data, rendering, animation."""

from __future__ import annotations

import colorsys
import logging
import shutil
import sys
import types
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, init_params
from attnlab.clustering.render import PANELS, compute_panels, panels
from attnlab.clustering.render.animate import render_animation, render_frames
from attnlab.clustering.render.render import render_ideal, render_snapshot, render_strip
from attnlab.clustering.train.history import History
from attnlab.core.config import ConfigError

TASK = Task(2, 12, 5)
FAST = {"grid": 40, "region_grid": 30}  # coarse level-line grids keep the tests quick


def ideal_head() -> tuple[dict[str, torch.Tensor], ModelSpec]:
    """The construction's numbers for the default visual case (p=2, N=12, k=5, d=2, h=8), float64, S = 1."""
    W = np.zeros((8, 2))
    W[:6] = [[35.3553, 63.6396], [35.3553, 49.4975], [35.3553, 21.2132], [35.3553, 7.0711], [35.3553, -7.0711],
             [35.3553, -21.2132]]
    U = np.zeros((2, 8))
    U[0, :6] = [-15, 25, -20, 20, -20, 20]
    P = np.zeros((12, 2))
    P[:5, 1], P[5:, 1] = 1.0, -10.0
    raw = {"E": [[-1.0, 0.0], [1.0, 0.0]], "P": P, "q": [0.0, 20.0], "V": np.eye(2), "W": W, "U": U}
    return ({k: torch.tensor(np.asarray(v, dtype=np.float64))[None] for k, v in raw.items()},
            ModelSpec(p=2, N=12, d=2, h=8))


def synthetic_history(d: int = 2, T: int = 5, n_epochs: int = 40) -> History:
    """5 snapshots = default init + growing random perturbations; smooth two-phase-like metric curves."""
    spec = ModelSpec(p=2, N=12, d=d)
    base = init_params(spec, [0], dtype=torch.float64)
    rng = np.random.default_rng(0)
    snaps = {k: np.stack([v.numpy() + 0.1 * i * rng.standard_normal(v.shape) for i in range(T)])
             for k, v in base.items()}
    ep = np.arange(n_epochs + 1, dtype=float)
    loss = 0.69 / (1 + np.exp((ep - 15) / 2)) + 0.02
    m = {"train_loss": loss, "test_loss": loss + 0.03, "train_acc": 1 - loss / 1.38, "test_acc": 1 - loss / 1.5,
         "cluster_score": 1 / (1 + np.exp(-(ep - 12) / 2)), "min_token_norm": 0.5 + 0.01 * ep,
         "min_xi_norm": 0.2 + 0.005 * ep}
    for i, g in enumerate("EPqVWU"):
        m[f"grad_{g}"] = (0.01 + np.exp(-(((ep - 15) / 3) ** 2))) * (i + 1)
    return History(spec=spec, task=TASK, seeds=[0], snapshot_epochs=np.linspace(0, n_epochs, T), snapshots=snaps,
                   epochs=ep, epoch_metrics={k: v[:, None] for k, v in m.items()})


@pytest.fixture(scope="module")
def ideal():
    params, spec = ideal_head()
    data, skipped = compute_panels(list(PANELS), params, spec, TASK, **FAST)
    return params, spec, data, skipped


@pytest.fixture(scope="module")
def hist():
    return synthetic_history()


def _png(fig, path: Path) -> Path:
    fig.savefig(path, dpi=40, bbox_inches=None)  # low resolution: the tests check content, not pixels
    plt.close(fig)
    assert path.stat().st_size > 0
    return path


# ----------------------------------------------------------------------------------------------- E1
def test_e1_ideal_head_panel_data(ideal):
    _, _, data, skipped = ideal
    assert set(skipped) == {"loss", "grads", "min_norm"}  # metric panels need a history
    assert data["tokens"]["points"].shape == (2, 2)
    pos = data["positions"]
    assert pos["points"].shape == (12, 2)
    assert pos["markers"].count("o") == 5 and pos["markers"].count("s") == 7
    z = data["normalized"]
    assert z["points"].shape == (24, 2)
    assert np.abs(np.linalg.norm(z["points"], axis=1) - 1).max() < 1e-6
    q = z["query"]["vector"]
    assert z["query"]["norm"] == pytest.approx(20.0) and q[0] == pytest.approx(0.0) and q[1] > 0  # points at [k]
    att = data["attention"]["attn"]
    assert att.shape[1] == 12 and att.shape[0] >= 8
    assert np.allclose(att.sum(1), 1.0)
    assert att[:, :5].sum(1).min() > 0.9999
    assert data["value"]["points"].shape == (24, 2)
    xi = data["xi"]
    n_probe = 2**5 * 4
    assert xi["points"].shape == (n_probe, 2)
    assert len(panels.group_annotations(xi["raw"], [(i,) for i in range(n_probe)], tol=1e-6)["xy"]) <= 6
    probs = data["levels"]["probs"]
    assert probs.shape == (40, 40, 2) and np.allclose(probs.sum(-1), 1.0) and probs.min() >= 0
    mlp = data["mlp"]
    assert mlp["receptors"].shape == (8, 2) and mlp["assemblers"].shape == (8, 2)
    assert len(mlp["color_index"]) == 8  # one colour index per neuron, shared by w_i and u_i
    assert data["output"]["kind"] == "strip"
    sp = data["sparsity"]["sparsity"]
    assert len(sp) == 50 and np.all(np.diff(sp) >= 0) and sp[-1] == 1.0


def test_e1_ideal_head_renders_all_panels(ideal, tmp_path, caplog):
    params, spec, data, _ = ideal
    with caplog.at_level(logging.WARNING):
        fig = render_snapshot(params, spec, TASK, panels="all", **FAST)
    assert sum("skipped" in r.getMessage() for r in caplog.records) == 3
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert len(titles) == len(data)  # every available panel drawn (colour bar axes carry no title)
    _png(fig, tmp_path / "ideal_all.png")
    _png(render_ideal(head=(params, spec), **FAST), tmp_path / "fig1.png")


def test_render_ideal_uses_theory_hook(monkeypatch):
    calls = []

    def build(p, N, k, d, h):
        calls.append((p, N, k, d, h))
        return ideal_head()

    fake = types.ModuleType("attnlab.clustering.theory.construction")
    fake.build_clustering_head = build
    monkeypatch.setitem(sys.modules, "attnlab.clustering.theory.construction", fake)
    fig = render_ideal(p=2, k=5, N=12, panels=["xi"])
    plt.close(fig)
    assert calls == [(2, 12, 5, 2, 8)]


# ----------------------------------------------------------------------------------------------- E2
def test_e2_colour_and_marker_semantics(hist):
    params, spec = hist.params_at(2, 0), hist.spec
    for name in ("embeddings", "normalized", "value"):
        d = PANELS[name].compute(params, spec, TASK)
        for t in range(12):
            sel = d["t"] == t
            assert len(set(d["color_index"][sel])) == 1 and d["color_index"][sel][0] == t  # colour = position
            assert {d["markers"][i] for i in np.flatnonzero(sel)} == {"o" if t < 5 else "s"}
        assert d["labels"][13] == "(1,2)"
    d = PANELS["xi"].compute(params, spec, TASK)
    hue = {}
    for pre in np.unique(d["prefix_id"]):
        cols = d["colors"][d["prefix_id"] == pre]
        assert np.allclose(cols, cols[0])  # same prefix ⇒ same colour
        ms = d["multiset_id"][d["prefix_id"] == pre][0]
        h = colorsys.rgb_to_hls(*cols[0])[0]
        assert hue.setdefault(ms, h) == pytest.approx(h)  # permutation-equivalent prefixes ⇒ same hue
    assert len(set(hue.values())) == 6
    assert all(m == panels.CLASS_MARKERS[c] for m, c in zip(d["markers"], d["classes"], strict=True))
    assert set(d["markers"]) == {"s", "o"}
    fig = render_snapshot(hist, panels=["positions"], index=2)
    sizes = sorted(len(c.get_offsets()) for c in fig.axes[0].collections)
    plt.close(fig)
    assert sizes == [5, 7]


# ----------------------------------------------------------------------------------------------- E3
def test_e3_gif_and_frames(hist, tmp_path):
    from PIL import Image

    gif = render_animation(hist, ["xi", "levels", "loss"], out=tmp_path / "anim.gif", fps=4, dpi=50, **FAST)
    assert gif.stat().st_size > 0
    with Image.open(gif) as im:
        assert im.n_frames == 5
    assert [p.name for p in tmp_path.iterdir()] == ["anim.gif"]  # no temporary file left behind
    paths = render_frames(hist, ["attention", "loss"], indices=[0, 4], out_dir=tmp_path / "frames", fmt="pdf")
    assert [p.name for p in paths] == ["frame_0000.pdf", "frame_0001.pdf"] and all(p.stat().st_size for p in paths)


def test_e3_default_layout_frame(hist, tmp_path):
    paths = render_frames(hist, "default", indices=[3], out_dir=tmp_path, dpi=60, **FAST)
    assert len(paths) == 1 and paths[0].stat().st_size > 0


def test_e3_fig8_strip(hist, tmp_path):
    fig = render_strip(hist, epochs=[0, 10, 20, 40], **FAST)
    loss_ax = fig.axes[-1]
    dashed = [ln for ln in loss_ax.get_lines() if ln.get_linestyle() == "--"]
    assert sorted(float(ln.get_xdata()[0]) for ln in dashed) == [0, 10, 20, 40]
    assert all(matplotlib.colors.to_hex(ln.get_color()) == "#d62728" for ln in dashed)  # red
    assert len(fig.axes) == 5
    _png(fig, tmp_path / "strip.png")
    auto = render_strip(hist, **FAST)
    assert len(auto.strip_epochs) == 4
    plt.close(auto)


# ----------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize("kw", [{"indices": range(0, 9)}, {"epochs": [0, 100]}, {"indices": [-1]}])
def test_range_outside_run_is_a_config_error(hist, tmp_path, kw):
    with pytest.raises(ConfigError, match=r"allowed snapshot indices 0\.\.4 \(epochs 0\.\.40\)"):
        render_animation(hist, ["loss"], out=tmp_path / "a.gif", **kw)
    with pytest.raises(ConfigError, match="outside the run"):
        render_frames(hist, ["loss"], out_dir=tmp_path / "frames", **kw)
    assert list(tmp_path.iterdir()) == []


def test_mp4_without_ffmpeg_says_so(hist, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    with pytest.raises(ConfigError, match=r"ffmpeg is not installed.*GIF"):
        render_animation(hist, ["loss"], out=tmp_path / "a.mp4")
    assert list(tmp_path.iterdir()) == []


def test_unknown_panel_and_bad_suffix(hist, tmp_path):
    with pytest.raises(ConfigError, match="unknown panel"):
        render_snapshot(hist, panels=["nope"])
    with pytest.raises(ConfigError, match=r"\.gif or \.mp4"):
        render_animation(hist, ["loss"], out=tmp_path / "a.avi")


# ----------------------------------------------------------------------------------------------- E4 and d = 3
def test_e4_d8_projections_and_metric_panels(tmp_path, caplog):
    h = synthetic_history(d=8, T=2)
    with caplog.at_level(logging.INFO):
        fig = render_snapshot(h, panels="all", **FAST)
    assert any("PCA" in r.getMessage() for r in caplog.records)
    by_title = {ax.get_title().split("\n")[0]: ax for ax in fig.axes if ax.get_title()}
    for name, d in compute_panels(list(PANELS), h.params_at(1, 0), h.spec, h.task, history=h, **FAST)[0].items():
        ax = by_title[d["title"]]
        if PANELS[name].needs_planar:
            assert d["frame"]["projection"] and "[" in ax.get_title()
            assert ax.get_xlabel().startswith("PC1 (") and ax.get_ylabel().startswith("PC2 (")
    for title in ("loss and accuracy", "gradient norms per group", "min-norm monitor"):
        assert len(by_title[title].get_lines()) >= 2
    assert by_title[r"activation sparsity vs $\varepsilon$"].get_lines()
    _png(fig, tmp_path / "d8.png")


def test_d3_planar_panels_are_3d(tmp_path):
    h = synthetic_history(d=3, T=2)
    d = PANELS["normalized"].compute(h.params_at(1, 0), h.spec, h.task)
    assert d["points"].shape == (24, 3) and d["frame"]["dim"] == 3
    assert PANELS["levels"].compute(h.params_at(1, 0), h.spec, h.task, grid=20)["probs"].shape == (20, 20, 2)
    fig = render_snapshot(h, panels=["normalized", "xi", "levels"], **FAST)
    is3d = {ax.get_title().split("\n")[0]: hasattr(ax, "zaxis") for ax in fig.axes}
    assert is3d == {"normalised $Z(x,t)$ and query $q$": True, r"sentence embeddings $\xi$": True,
                    r"level lines $\hat p(\cdot|\xi)$": False}
    _png(fig, tmp_path / "d3.png")


def test_skipped_panel_logs_notice(caplog):
    params, spec = ideal_head()
    with caplog.at_level(logging.WARNING):
        fig = render_snapshot(params, spec, TASK, panels=["tokens", "loss"])
    plt.close(fig)
    assert any("'loss' skipped" in r.getMessage() for r in caplog.records)


def test_grads_panel_per_step():
    h = synthetic_history(T=2)
    h.steps, h.steps_per_epoch = np.arange(1, 81), 2
    h.step_metrics = {f"grad_{g}": np.full((80, 1), 0.5) for g in "EPqVWU"}
    d = PANELS["grads"].compute(h.params_at(0, 0), h.spec, h.task, history=h, per_step=True, epoch=3.0)
    assert d["epochs"][-1] == 40 and set(d["series"]) == set("EPqVWU") and d["cursor"] == 3.0
    assert "mini-batch" in d["title"]
    full = PANELS["grads"].compute(h.params_at(0, 0), h.spec, h.task, history=h)
    assert len(full["epochs"]) == 41  # full-batch epoch metrics by default


def test_registry_and_pure_panels_module():
    for name, (compute, draw, planar) in PANELS.items():
        assert callable(compute) and callable(draw) and isinstance(planar, bool), name
    src = Path(panels.__file__).read_text()
    assert "import matplotlib" not in src and "from matplotlib" not in src
