"""What ``attnlab map`` shows: the figure (the model on the Fig. 1c diagram of its depth, α_c(L), and ρ_ℓ and
S_ℓ/log T predicted — lines — and measured — dots —, the fixed model beside the original), the JSON document and
the one-screen terminal summary."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.signal.figures import PHASE_CMAP, _phase_legend

ORIG, FIXED = "#000000", "#2CA02C"


def _curves(ax_rho, ax_ent, doc: dict[str, Any], color: str, label: str) -> None:
    m, p = doc.get("measured"), doc.get("predicted")
    if p is not None:
        ax_rho.plot(range(len(p["rho"])), p["rho"], color=color, lw=1.6, label=f"{label} theory")
        ax_ent.plot(range(len(p["entropy"])), p["entropy"], color=color, lw=1.6)
    if m is not None:
        ax_rho.errorbar(range(len(m["rho"])), m["rho"], yerr=m["rho_se"], fmt="o", ms=3, color=color, mfc="white",
                        label=f"{label} measured")
        ax_ent.plot(range(len(m["entropy"])), m["entropy"], "o", ms=3, color=color, mfc="white")


def figure(doc: dict[str, Any]):
    """The map figure: 4 panels for a model the theory covers, the 2 measured panels otherwise."""
    from attnlab.core.plotting import figure as fig_

    covered = doc["covered"]
    fig, axes = fig_(4 if covered else 2, width=3.9, height=3.4)
    axes = list(np.atleast_1d(axes))
    ax_rho, ax_ent = axes[-2], axes[-1]
    if covered:
        _diagram(axes[0], axes[1], doc)
    _curves(ax_rho, ax_ent, doc, ORIG, "model")
    if "fixed" in doc:
        _curves(ax_rho, ax_ent, doc["fixed"], FIXED, "fixed")
    ax_rho.set_xlabel("layer ℓ")
    ax_rho.set_ylabel(r"token cosine $\rho_\ell$")
    ax_rho.set_ylim(-0.02, 1.02)
    ax_rho.legend(fontsize=7)
    ax_ent.set_xlabel("layer ℓ")
    ax_ent.set_ylabel(r"attention entropy $S_\ell/\log T$")
    ax_ent.set_ylim(-0.02, 1.02)
    title = f"{doc['family']}, L = {doc['L']}, d = {doc['d']}, H = {doc['H']}"
    ax_rho.set_title(title if covered else f"{title}: outside the theory (measured only)", fontsize=9)
    return fig


def _diagram(ax, ax_c, doc: dict[str, Any]) -> None:
    m = doc["map"]
    dg = m["diagram"]
    ax.pcolormesh(dg["betas"], dg["alphas"], np.asarray(dg["phase"]), cmap=PHASE_CMAP, vmin=0, vmax=2,
                  shading="auto", rasterized=True)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.axvline(m["beta_c"], color="k", ls="--", lw=1)
    ax.plot([m["beta"]], [m["alpha_sa"]], "*", ms=14, color=ORIG, mec="white", label="model")
    if "fixed" in doc:
        f = doc["fixed"]["map"]
        ax.plot([f["beta"]], [f["alpha_sa"]], "*", ms=14, color=FIXED, mec="white", label="fixed")
        ax.annotate("", (f["beta"], f["alpha_sa"]), (m["beta"], m["alpha_sa"]),
                    arrowprops={"arrowstyle": "->", "color": "k", "lw": 1})
    ax.set_xlabel(r"$\beta$ (per-head score scale, Eq. 11)")
    ax.set_ylabel(r"$\alpha_{SA}$ (residual strength)")
    ax.set_title(f"trainability at L = {doc['L']}: {m['phase']}", fontsize=9)
    ax.grid(False)
    _phase_legend(ax)
    c = dg["alpha_c_L"]
    ax_c.plot(c["L"], c["alpha_c"], color="k", lw=1.4, label=r"$\alpha_c(L)$ at the model's β")
    ax_c.fill_between(c["L"], [min(x, 1e6) for x in c["alpha_c"]], 1e-6, color=PHASE_CMAP.colors[1], alpha=0.5)
    ax_c.plot([doc["L"]], [m["alpha_sa"]], "*", ms=14, color=ORIG, mec="white")
    if "fixed" in doc:
        ax_c.plot([doc["L"]], [doc["fixed"]["map"]["alpha_sa"]], "*", ms=14, color=FIXED, mec="white")
    ax_c.set_yscale("log")
    finite = [x for x in c["alpha_c"] if 0 < x < math.inf]
    lo = min([*finite, m["alpha_sa"]]) / 10
    ax_c.set_ylim(lo, max([*finite, m["alpha_sa"], lo * 100]) * 10)
    ax_c.set_xlabel("depth L")
    ax_c.set_ylabel(r"$\alpha_{SA}$")
    ax_c.set_title(r"rank collapse below $\alpha_c(L)$", fontsize=9)
    ax_c.legend(fontsize=7)


def save_figure(doc: dict[str, Any], path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig = figure(doc)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _clean(x):
    if isinstance(x, float):
        return None if math.isnan(x) else ("inf" if x == math.inf else "-inf" if x == -math.inf else x)
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_clean(v) for v in x]
    return x


def to_json(doc: dict[str, Any]) -> str:
    """Strict JSON: NaN → null, ±inf → "inf"/"-inf"."""
    return json.dumps(_clean(doc), indent=1, allow_nan=False)


def _f(x: float) -> str:
    return "∞" if x == math.inf else "nan" if x != x else f"{x:.3g}"


def summary(doc: dict[str, Any]) -> list[str]:
    """The one-screen summary (plain lines)."""
    lines = [f"{doc['family']}  L = {doc['L']}  d = {doc['d']}  H = {doc['H']}  d_ff = {doc['d_ff']}  "
             f"{doc['activation']}  {doc['ln_position']}-LN   ({doc['source']})"]
    if "measured" in doc:
        lines.append(f"inputs: {doc['batch']} × {doc['T']} {doc.get('inputs', '')}")
    if not doc["covered"]:
        lines.append(f"OUTSIDE THE THEORY: {doc['reason']}.")
        if "measured" in doc:
            lines.append(_row("measured ρ_ℓ", doc["measured"]["rho"]))
            lines.append(_row("measured S_ℓ/logT", doc["measured"]["entropy"]))
        lines.append(f"({doc['t_total_s']:.1f} s)")
        return lines
    m, p = doc["map"], doc["params"]
    lines.append(f"β = {_f(m['beta'])} per-head score (App. B.1: {_f(p['beta_paper'])}; Q/K std {_f(p['qk_std'])})"
                 f"   β_c = {_f(m['beta_c'])}   α_SA = {_f(m['alpha_sa'])}   α_c(L={doc['L']}) = {_f(m['alpha_c'])}")
    lines.append(f"σ_v² = {_f(p['sigma_v2'])}  σ_w² = {_f(p['sigma_w2'])}  σ_w2,out = {_f(p['sigma_w2_out'])}  "
                 f"σ_b² = {_f(p['sigma_b2'])}  ρ_0 = {_f(doc['rho0'])}")
    mg = m["margin"]
    lines.append(f"PHASE: {m['phase'].upper()}   ρ_L = {_f(m['rho_L'])}   margin: β_c/β = "
                 f"10^{mg['log10_beta_c_over_beta']:.2f}, α/α_c = 10^{mg['log10_alpha_over_alpha_c']:.2f} "
                 f"(nearest: {mg['nearest']})")
    lines.append(_row("predicted ρ_ℓ", doc["predicted"]["rho"]))
    if "measured" in doc:
        lines.append(_row("measured ρ_ℓ", doc["measured"]["rho"]))
        lines.append(f"max |measured − predicted| ρ_ℓ = {doc['difference']['max_abs_rho']:.3g}")
        lines.append(_row("predicted S/logT", doc["predicted"]["entropy"]))
        lines.append(_row("measured S/logT", doc["measured"]["entropy"]))
    fx = m["fix"]
    if not fx["feasible"]:
        lines.append("FIX: none — no α_SA makes this depth trainable at this β (the MLP alone collapses the signal)")
    elif fx["needed"]:
        lines.append(f"FIX: β = {_f(fx['beta'])} (Q/K std {_f(fx['qk_std'])}), α_SA = {_f(fx['alpha_sa'])} "
                     f"(attention output projection × {_f(fx['output_projection_scale'])}), a factor "
                     f"{fx['margin_factor']:g} inside both boundaries")
    else:
        lines.append(f"FIX: none needed (a factor {fx['margin_factor']:g} inside both boundaries)")
    if "fixed" in doc:
        f = doc["fixed"]
        meas = f" measured ρ_L = {_f(f['measured']['rho'][-1])}," if "measured" in f else ""
        lines.append(f"fixed model: {f['map']['phase']},{meas} predicted ρ_L = {_f(f['predicted']['rho'][-1])}"
                     + (f"; written to {doc['applied']}" if doc.get("applied") else ""))
    lines += [f"note: {n}" for n in doc["notes"]]
    lines.append(f"({doc['t_total_s']:.1f} s)")
    return lines


def _row(name: str, xs: list[float], n: int = 9) -> str:
    idx = sorted({*np.linspace(0, len(xs) - 1, min(n, len(xs))).round().astype(int).tolist()})
    return f"{name:>18}: " + "  ".join(f"ℓ{i}={_f(xs[i])}" for i in idx)
