"""`attnlab render`: a stored run's sandbox as frames / GIF, and its errors (nothing written on bad input)."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from attnlab.cli import app
from attnlab.clustering.configs import TrainConfig
from attnlab.clustering.render.animate import frame_count
from attnlab.clustering.render.runs import parse_epochs
from attnlab.clustering.train.loop import train
from attnlab.core.config import ConfigError

runner = CliRunner()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("run")
    hist = train(TrainConfig(n_seeds=2, epochs=4, n_train=256, batch_size=64, step_log_every=0))
    np.savez(d / "arrays.npz", **hist.to_arrays("mini/"), **hist.to_arrays("full/"))
    (d / "config.json").write_text(json.dumps({"experiment": "clustering.train"}))  # as every stored run has
    return d


def test_gif_over_an_epoch_range(run_dir, tmp_path):
    out = tmp_path / "a.gif"
    res = runner.invoke(app, ["render", str(run_dir), "--history", "mini", "--epochs", "1:3", "--seed", "1",
                              "--panels", "normalized,xi,loss", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert frame_count(out) == 3


def test_single_frame_and_frame_directory(run_dir, tmp_path):
    png = tmp_path / "one.png"
    assert runner.invoke(app, ["render", str(run_dir), "--history", "full", "--epochs", "2", "--out", str(png)]
                         ).exit_code == 0
    assert png.stat().st_size > 0 and not list(tmp_path.glob(".*"))
    frames = tmp_path / "frames"
    assert runner.invoke(app, ["render", str(run_dir), "--history", "full", "--every", "2", "--panels", "xi",
                               "--out", str(frames)]).exit_code == 0
    assert len(list(frames.glob("frame_*.png"))) == 3  # snapshots at epochs 0..4, every 2nd


@pytest.mark.parametrize("args, message", [
    (["--history", "mini", "--epochs", "0:40"], "outside the run"),
    (["--history", "mini", "--seed", "5"], "seeds 0..1"),
    ([], "several histories"),
    (["--history", "nope"], "not in run"),
    (["--history", "mini", "--epochs", "a:b"], "START:STOP"),
])
def test_bad_input_is_one_line_and_writes_nothing(run_dir, tmp_path, args, message):
    out = tmp_path / "x.gif"
    res = runner.invoke(app, ["render", str(run_dir), "--out", str(out), *args])
    assert res.exit_code == 2 and message in res.output and not out.exists()


def test_parse_epochs():
    assert parse_epochs("0:10:5") == [0, 5, 10] and parse_epochs("3,7") == [3.0, 7.0] and parse_epochs(None) is None
    with pytest.raises(ConfigError):
        parse_epochs("5:1")
