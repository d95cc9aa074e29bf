"""``attnlab map --text stories``: the measurement on the signal study's bundled stories (issue 31: random tokens, a
user's text file, or the bundled stories)."""

import json

from typer.testing import CliRunner

from attnlab import cli
from attnlab.signal.mapping import measure as mm
from attnlab.signal.mapping import read


def test_bundled_stories_are_measured(tmp_path):
    res = CliRunner().invoke(cli.app, ["map", "--arch", "bert", "--layers", "2", "--hidden", "32", "--heads", "2",
                                       "--seq", "16", "--batch", "4", "--text", "stories", "--out", str(tmp_path),
                                       "--format", "svg"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "map.json").read_text())
    assert doc["inputs"] == "the bundled stories" and doc["batch"] == 4 and doc["T"] == 16
    assert len(doc["measured"]["rho"]) == 3


def test_stories_are_words_not_random_ids():
    spec = read.from_family("bert", layers=1, hidden=16, heads=1, vocab=30522)
    ids = mm.token_ids(spec, 8, 32, mm.STORIES, seed=0)
    assert ids.shape == (8, 32) and bool((ids == mm.token_ids(spec, 8, 32, mm.STORIES, seed=0)).all())
    # a story repeats its words (names, objects, "the"): far fewer distinct ids than 256 uniform draws from 30522
    assert len(ids.unique()) < 0.6 * ids.numel()
    assert len(mm.token_ids(spec, 8, 32, None, seed=0).unique()) > 0.95 * ids.numel()
