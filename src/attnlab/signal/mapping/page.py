"""The interactive page of ``attnlab map``: one self-contained HTML file (``OUT/map.html``) with the model on the
trainability diagram of its depth (Fig. 1c of paper 1: the three regions over (β, α_SA), β_c of Eq. (13), the model's
point and the fixed model's), α_c(L) against depth, ρ_ℓ (Eq. (19)) and S_ℓ/log T (B.18) predicted and measured per
layer, and the phase, margins and fix as text — the same numbers as ``map.json``, with hover text on every point.

plotly.min.js is inlined from the installed ``plotly`` package (the file the sandbox serves), so the page needs no
network; the figures are plain Plotly JSON built here (no plotly Python API). The whole map document is embedded too
(``<script type="application/json" id="map-json">``).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any

from attnlab.core.plotting import plotly_js as core_plotly_js
from attnlab.signal.figures import PHASE_COLORS, PHASE_NAMES
from attnlab.signal.mapping.report import FIXED, ORIG, _clean, _f, summary

PANELS = ("map-diagram", "map-alpha-c", "map-rho", "map-entropy")  # div ids (the last two only, outside the theory)


def plotly_js() -> str:
    """plotly.min.js from the installed ``plotly`` package, as text to inline."""
    return core_plotly_js("map.html (its plotly.min.js is inlined)").read_text(encoding="utf-8")


def _layout(title: str, xtitle: str, ytitle: str, xlog: bool = False, ylog: bool = False, **kw) -> dict[str, Any]:
    return {"title": {"text": title, "font": {"size": 14}}, "margin": {"l": 60, "r": 20, "t": 40, "b": 50},
            "xaxis": {"title": {"text": xtitle}, "type": "log" if xlog else "linear"},
            "yaxis": {"title": {"text": ytitle}, "type": "log" if ylog else "linear"},
            "legend": {"font": {"size": 10}}, "hovermode": "closest", **kw}


def _point_text(doc: dict[str, Any], label: str) -> str:
    m, p = doc["map"], doc["params"]
    mg = m["margin"]
    lines = [f"<b>{label}</b>: {m['phase']}",
             f"β = {_f(m['beta'])} per-head score (App. B.1: {_f(m['beta'] / doc['H'])}; Q/K std {_f(p['qk_std'])})",
             f"α_SA = {_f(m['alpha_sa'])}, α_c(L = {doc['L']}) = {_f(m['alpha_c'])}, β_c = {_f(m['beta_c'])}",
             f"margins: log₁₀(β_c/β) = {mg['log10_beta_c_over_beta']:.3f}, "
             f"log₁₀(α/α_c) = {mg['log10_alpha_over_alpha_c']:.3f}",
             f"σ_v² = {_f(p['sigma_v2'])}, ρ_L predicted = {_f(doc['predicted']['rho'][-1])}"]
    if "measured" in doc:
        lines.append(f"ρ_L measured = {_f(doc['measured']['rho'][-1])}")
    return "<br>".join(lines)


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def _star(x: float, y: float, color: str, name: str, text: str, **kw) -> dict[str, Any]:
    return {"type": "scatter", "mode": "markers", "x": [x], "y": [y], "name": name, "text": [text],
            "hovertemplate": "%{text}<extra></extra>",
            "marker": {"symbol": "star", "size": 18, "color": color, "line": {"color": "white", "width": 1}}, **kw}


def diagram_figure(doc: dict[str, Any]) -> dict[str, Any]:
    """The (β, α_SA) diagram at the model's depth: regions (heatmap), β_c, the model's point and the fixed one's."""
    m = doc["map"]
    dg = m["diagram"]
    n = len(PHASE_COLORS)
    scale = [[v, c] for i, c in enumerate(PHASE_COLORS) for v in (i / n, (i + 1) / n)]
    names = [[PHASE_NAMES[int(z)] for z in row] for row in dg["phase"]]
    a_lo, a_hi = dg["alphas"][0], dg["alphas"][-1]
    data = [{"type": "heatmap", "x": dg["betas"], "y": dg["alphas"], "z": dg["phase"], "text": names, "zmin": -0.5,
             "zmax": n - 0.5, "colorscale": scale, "showscale": False, "name": "phase",
             "hovertemplate": "β = %{x:.3g}<br>α_SA = %{y:.3g}<br>%{text}<extra></extra>"},
            {"type": "scatter", "mode": "lines", "x": [m["beta_c"], m["beta_c"]], "y": [a_lo, a_hi],
             "name": f"β_c = {_f(m['beta_c'])}", "line": {"color": "black", "dash": "dash", "width": 1.5},
             "hovertemplate": f"β_c = {_f(m['beta_c'])} (Eq. 13): entropy collapse to the right<extra></extra>"},
            _star(m["beta"], m["alpha_sa"], ORIG, "model", _point_text(doc, "model"))]
    ann = []
    if "fixed" in doc:
        f = doc["fixed"]["map"]
        data.append(_star(f["beta"], f["alpha_sa"], FIXED, "fixed", _point_text(doc["fixed"], "fixed model")))
        ann.append({"x": math.log10(f["beta"]), "y": math.log10(f["alpha_sa"]), "ax": math.log10(m["beta"]),
                    "ay": math.log10(m["alpha_sa"]), "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                    "showarrow": True, "arrowhead": 2, "arrowwidth": 1.5, "text": ""})
    lay = _layout(f"trainability at L = {doc['L']}: {m['phase']}", "β (per-head score scale, Eq. 11)",
                  "α_SA (residual strength)", xlog=True, ylog=True, annotations=ann)
    return {"data": data, "layout": lay}


def alpha_c_figure(doc: dict[str, Any]) -> dict[str, Any]:
    """α_c(L) at the model's β against depth, with the model (and the fixed model) at its own depth."""
    m = doc["map"]
    c = m["diagram"]["alpha_c_L"]
    data = [{"type": "scatter", "mode": "lines", "x": c["L"], "y": c["alpha_c"], "name": "α_c(L) at the model's β",
             "line": {"color": "black", "width": 2}, "fill": "tozeroy", "fillcolor": _rgba(PHASE_COLORS[1], 0.5),
             "hovertemplate": "L = %{x}<br>α_c = %{y:.4g}<extra>rank collapse below</extra>"},
            _star(doc["L"], m["alpha_sa"], ORIG, "model", _point_text(doc, "model"))]
    if "fixed" in doc:
        data.append(_star(doc["L"], doc["fixed"]["map"]["alpha_sa"], FIXED, "fixed",
                          _point_text(doc["fixed"], "fixed model")))
    return {"data": data, "layout": _layout("rank collapse below α_c(L)", "depth L", "α_SA", ylog=True)}


def _curve_traces(doc: dict[str, Any], key: str, color: str, label: str) -> list[dict[str, Any]]:
    out, p, meas = [], doc.get("predicted"), doc.get("measured")
    sym = "ρ_ℓ" if key == "rho" else "S_ℓ/log T"
    if p is not None:
        out.append({"type": "scatter", "mode": "lines", "x": list(range(len(p[key]))), "y": p[key],
                    "name": f"{label} theory", "line": {"color": color, "width": 2},
                    "hovertemplate": f"{label}, ℓ = %{{x}}<br>predicted {sym} = %{{y:.4f}}<extra></extra>"})
    if meas is not None:
        tr = {"type": "scatter", "mode": "markers", "x": list(range(len(meas[key]))), "y": meas[key],
              "name": f"{label} measured", "marker": {"color": "white", "size": 7, "line": {"color": color,
                                                                                             "width": 1.5}}}
        diff = doc.get("difference", {}).get(key)
        if key == "rho":
            tr["error_y"] = {"type": "data", "array": meas["rho_se"], "color": color, "visible": True}
        if diff is not None:
            tr["customdata"] = diff
            tr["hovertemplate"] = (f"{label}, ℓ = %{{x}}<br>measured {sym} = %{{y:.4f}}<br>measured − predicted = "
                                   "%{customdata:.4f}<extra></extra>")
        else:
            tr["hovertemplate"] = f"{label}, ℓ = %{{x}}<br>measured {sym} = %{{y:.4f}}<extra></extra>"
        out.append(tr)
    return out


def curve_figure(doc: dict[str, Any], key: str) -> dict[str, Any]:
    """ρ_ℓ (``key = "rho"``) or S_ℓ/log T (``"entropy"``) per layer: lines predicted, circles measured."""
    data = _curve_traces(doc, key, ORIG, "model")
    if "fixed" in doc:
        data += _curve_traces(doc["fixed"], key, FIXED, "fixed")
    title = "token cosine ρ_ℓ" if key == "rho" else "attention entropy S_ℓ/log T"
    if not doc["covered"]:
        title += " (measured only: outside the theory)"
    lay = _layout(title, "layer ℓ", "ρ_ℓ" if key == "rho" else "S_ℓ/log T")
    lay["yaxis"]["range"] = [-0.02, 1.02]
    return {"data": data, "layout": lay}


def figures(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The page's Plotly figures by div id (:data:`PANELS`; the diagram panels only for a model the theory covers)."""
    out = {}
    if doc["covered"]:
        out["map-diagram"], out["map-alpha-c"] = diagram_figure(doc), alpha_c_figure(doc)
    out["map-rho"], out["map-entropy"] = curve_figure(doc, "rho"), curve_figure(doc, "entropy")
    return out


def _json_script(x: Any) -> str:
    """JSON safe inside a <script> element (NaN → null, ∞ → "inf", no "</")."""
    return json.dumps(_clean(x), allow_nan=False, ensure_ascii=False).replace("</", "<\\/")


def _headline(doc: dict[str, Any]) -> str:
    title = f"{doc['family']}, L = {doc['L']}, d = {doc['d']}, H = {doc['H']} — {doc['source']}"
    if not doc["covered"]:
        return f"<h1>{html.escape(title)}</h1><p class='phase'>outside the theory: {html.escape(doc['reason'])}</p>"
    m = doc["map"]
    mg = m["margin"]
    legend = " ".join(f"<span class='swatch' style='background:{c}'></span>{n}"
                      for c, n in zip(PHASE_COLORS, PHASE_NAMES, strict=True))
    return (f"<h1>{html.escape(title)}</h1><p class='phase'>phase: <b id='map-phase'>{html.escape(m['phase'])}</b>"
            f" &nbsp; margins: log₁₀(β_c/β) = {mg['log10_beta_c_over_beta']:.3f}, log₁₀(α_SA/α_c) = "
            f"{mg['log10_alpha_over_alpha_c']:.3f} (nearest: {html.escape(mg['nearest'])})</p>"
            f"<p class='legend'>{legend}</p>")


CSS = """body{font-family:system-ui,sans-serif;margin:16px;color:#222}h1{font-size:18px;margin:4px 0}
.phase{font-size:15px}.grid{display:grid;grid-template-columns:repeat(2,minmax(420px,1fr));gap:8px}
.grid>div{height:430px}.swatch{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}
pre{background:#f6f6f6;padding:8px;font-size:12px;white-space:pre-wrap}"""


def page(doc: dict[str, Any], js: str | None = None) -> str:
    """The whole HTML page (module doc); ``js``: plotly.min.js's text (default: the installed one)."""
    js = (plotly_js() if js is None else js).replace("</script", "<\\/script")
    figs = figures(doc)
    divs = "".join(f"<div id='{k}'></div>" for k in figs)
    text = html.escape("\n".join(summary(doc)))
    script = ("const FIGS = JSON.parse(document.getElementById('map-figures').textContent);\n"
              "for (const [id, f] of Object.entries(FIGS)) Plotly.newPlot(id, f.data, f.layout, "
              "{responsive: true, displaylogo: false});")
    return (f"<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>attnlab map: "
            f"{html.escape(doc['family'])} L = {doc['L']}</title><style>{CSS}</style>\n"
            f"<script>{js}</script></head>\n<body>{_headline(doc)}"
            f"<div class='grid'>{divs}</div><pre id='map-summary'>{text}</pre>\n"
            f"<script type='application/json' id='map-figures'>{_json_script(figs)}</script>\n"
            f"<script type='application/json' id='map-json'>{_json_script(doc)}</script>\n"
            f"<script>{script}</script></body></html>\n")


def _unclean(x):
    if x is None:
        return math.nan
    if x in ("inf", "-inf"):
        return float(x)
    if isinstance(x, dict):
        return {k: v if k in ("applied", "reason") else _unclean(v) for k, v in x.items()}
    return [_unclean(v) for v in x] if isinstance(x, list) else x


def read_json(path: Path) -> dict[str, Any]:
    """A ``map.json`` back as the map's document (null → NaN, "inf" → ∞), e.g. to rebuild its page."""
    return _unclean(json.loads(Path(path).read_text()))


def save_html(doc: dict[str, Any], path: Path, js: str | None = None) -> Path:
    """Write :func:`page` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page(doc, js), encoding="utf-8")
    return path
