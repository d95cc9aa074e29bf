"""``attnlab map``'s interactive page (``OUT/map.html``): written beside map.json, self-contained (plotly.js inlined, no
network), holding the map's numbers, and drawn by a real browser (Debian's Chromium driven by Playwright, skipped as
the sandbox's browser tests skip when either is missing)."""

import json
import re

import pytest
import torch
from typer.testing import CliRunner

from attnlab import cli
from attnlab.core.config import ConfigError
from attnlab.signal.arch import Architecture
from attnlab.signal.mapping import page as html_page
from attnlab.signal.mapping import place
from attnlab.signal.model import Encoder

SMALL = ["map", "--arch", "bert", "--layers", "3", "--hidden", "32", "--heads", "2", "--seq", "16", "--batch", "4"]


def _embedded(text: str, element_id: str):
    m = re.search(f"<script type='application/json' id='{element_id}'>(.*?)</script>", text, re.S)
    assert m, element_id
    return json.loads(m.group(1))


@pytest.fixture(scope="module")
def fixed_doc():
    """A rank-collapsed model (α_SA = 0.05 at 8 layers) and its fix: the page's every panel and both points."""
    arch = Architecture(d=64, H=2, L=8, T=32, beta=0.3, alpha_sa=0.05, sigma_v2=1.0, sigma_w2=2.0, sigma_b2=0.0,
                        norm="rms", activation="relu")
    doc = place.map_with_fix(Encoder(arch, vocab=50, gen=torch.Generator().manual_seed(2)), T=32, batch=8)
    assert "fixed" in doc
    return doc


def test_cli_writes_a_self_contained_page_with_the_maps_numbers(tmp_path):
    res = CliRunner().invoke(cli.app, [*SMALL, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "page →" in res.output
    page = (tmp_path / "map.html").read_text()
    doc = json.loads((tmp_path / "map.json").read_text())
    assert len(page) > 1_000_000 and "Plotly" in page  # plotly.min.js inlined
    assert not re.search(r"<script[^>]*\bsrc=", page) and not re.search(r"<link[^>]*https?:", page)
    assert _embedded(page, "map-json") == doc
    figs = _embedded(page, "map-figures")
    assert list(figs) == list(html_page.PANELS)
    star = figs["map-diagram"]["data"][2]
    assert (star["x"], star["y"]) == ([doc["map"]["beta"]], [doc["map"]["alpha_sa"]])
    rho = figs["map-rho"]["data"]
    assert rho[0]["y"] == doc["predicted"]["rho"] and rho[1]["y"] == doc["measured"]["rho"]
    assert figs["map-entropy"]["data"][1]["y"] == doc["measured"]["entropy"]
    assert doc["map"]["phase"] in page.split("<div class='grid'>")[0]  # the phase, as text
    res = CliRunner().invoke(cli.app, [*SMALL, "--out", str(tmp_path / "no"), "--no-html"])
    assert res.exit_code == 0 and not (tmp_path / "no" / "map.html").exists()


def test_without_plotly_the_map_is_written_without_its_page(tmp_path, monkeypatch):
    def missing():
        raise ConfigError("map.html needs plotly")

    monkeypatch.setattr(html_page, "plotly_js", missing)
    res = CliRunner().invoke(cli.app, [*SMALL, "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "no page: map.html needs plotly" in res.output and (tmp_path / "map.json").exists()
    assert not (tmp_path / "map.html").exists()


def test_page_of_a_fixed_model_has_both_points_and_rebuilds_from_its_json(fixed_doc, tmp_path):
    figs = html_page.figures(fixed_doc)
    assert [len(figs[k]["data"]) for k in html_page.PANELS] == [4, 3, 4, 4]
    fixed_star = figs["map-diagram"]["data"][3]
    assert fixed_star["x"] == [fixed_doc["fixed"]["map"]["beta"]] and fixed_star["name"] == "fixed"
    assert fixed_star["y"] == [fixed_doc["map"]["fix"]["alpha_sa"]]
    assert figs["map-rho"]["data"][3]["y"] == fixed_doc["fixed"]["measured"]["rho"]
    # the error bars are the sequences' standard errors, the hover the per-layer difference
    assert figs["map-rho"]["data"][1]["error_y"]["array"] == fixed_doc["measured"]["rho_se"]
    assert figs["map-rho"]["data"][1]["customdata"] == fixed_doc["difference"]["rho"]
    path = tmp_path / "map.json"
    from attnlab.signal.mapping.report import to_json

    path.write_text(to_json(fixed_doc))
    js = "/* plotly stand-in */"
    assert html_page.page(html_page.read_json(path), js) == html_page.page(fixed_doc, js)


def test_outside_the_theory_the_page_shows_the_measured_curves_only():
    lay = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=True)
    doc = place.map_model(torch.nn.TransformerEncoder(lay, 2, enable_nested_tensor=False), T=8, batch=2)
    figs = html_page.figures(doc)
    assert list(figs) == ["map-rho", "map-entropy"]
    assert [t["name"] for t in figs["map-rho"]["data"]] == ["model measured"]
    text = html_page.page(doc, "/* plotly */")
    assert "outside the theory" in text and "pre-LN" in text


# -- the page in a real browser ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def page(playwright, chromium_options):
    """A Chromium page with no network (tests/conftest.py launches it; any uncaught page error fails the test)."""
    browser = playwright.chromium.launch(**chromium_options)
    ctx = browser.new_context(viewport={"width": 1300, "height": 1200}, offline=True)  # no network at all
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.errors = errors
    yield pg
    ctx.close()
    browser.close()
    assert not errors, errors


def test_browser_draws_every_panel_offline(fixed_doc, page, tmp_path):
    path = html_page.save_html(fixed_doc, tmp_path / "map.html")
    page.goto(path.as_uri())
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length === 4", timeout=60_000)
    traces = page.evaluate("Object.fromEntries([...document.querySelectorAll('.js-plotly-plot')]"
                           ".map(d => [d.id, d.data.length]))")
    assert traces == {"map-diagram": 4, "map-alpha-c": 3, "map-rho": 4, "map-entropy": 4}
    # drawn, not only declared: the heatmap's image and every measured point are in the SVG
    assert page.evaluate("document.querySelectorAll('#map-diagram .hm image').length") == 1
    n_points = page.evaluate("document.querySelectorAll('#map-rho .scatterlayer .trace:nth-child(2) .point').length")
    assert n_points == fixed_doc["L"] + 1
    assert page.evaluate("document.getElementById('map-diagram').data[2].x[0]") == pytest.approx(
        fixed_doc["map"]["beta"])
    assert page.inner_text("#map-phase") == fixed_doc["map"]["phase"]
    assert not page.errors
