"""``attnlab map``: a transformer at initialisation on the trainability diagram of paper 1 (signal study): predicted
and measured signal propagation per layer, the phase, the margin and the fix (``--apply OUT`` writes it)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from attnlab.cli_common import guard, out_console
from attnlab.core.config import ConfigError


@guard
def map_(
    model: Annotated[str | None, typer.Argument(help="a transformers config.json or save_pretrained folder "
                                                "(nothing is downloaded); or use --arch with sizes")] = None,
    arch: Annotated[str | None, typer.Option("--arch", help="a family: bert, roberta, electra, distilbert (the "
                                             "theory's); gpt2, llama, vit (measured only)")] = None,
    layers: Annotated[int, typer.Option("--layers", help="depth L (with --arch)")] = 12,
    hidden: Annotated[int, typer.Option("--hidden", help="width d (with --arch)")] = 768,
    heads: Annotated[int, typer.Option("--heads", help="attention heads (with --arch)")] = 12,
    ff: Annotated[int | None, typer.Option("--ff", help="MLP width (with --arch; default 4 d)")] = None,
    init_std: Annotated[float, typer.Option("--init-std", help="initializer_range (with --arch)")] = 0.02,
    positions: Annotated[int, typer.Option("--positions", help="T_init: length the Q/K scale is set for (with "
                                           "--arch)")] = 512,
    seq: Annotated[int, typer.Option("--seq", help="T: tokens per measured sequence")] = 64,
    batch: Annotated[int, typer.Option("--batch", help="sequences measured")] = 32,
    text: Annotated[Path | None, typer.Option("--text", help="a text file to measure on, or 'stories' for the "
                                              "bundled stories (default random tokens)")] = None,
    finite_t: Annotated[bool, typer.Option("--finite-t", help="finite-T attention theory (App. B.7; a few "
                                           "seconds at --seq ≤ 64) instead of the asymptotic Eq. 13")] = False,
    no_measure: Annotated[bool, typer.Option("--no-measure", help="theory only")] = False,
    eps: Annotated[float, typer.Option("--eps", help="rank collapse: ρ_L ≥ 1 − ε")] = 1e-2,
    margin: Annotated[float, typer.Option("--margin", help="the fix lies this factor inside both "
                                          "boundaries")] = 2.0,
    apply: Annotated[Path | None, typer.Option("--apply", help="write the re-initialised (fixed) checkpoint "
                                               "here")] = None,
    out: Annotated[Path, typer.Option("--out", help="folder for map.json, the figure and map.html")] = Path(
        "attnlab-map"),
    fmt: Annotated[str, typer.Option("--format", help="figure format: png or svg")] = "png",
    page: Annotated[bool, typer.Option("--html/--no-html", help="write OUT/map.html, the interactive page "
                                       "(self-contained, ~5 MB: plotly.js inlined; needs plotly)")] = True,
    json_out: Annotated[bool, typer.Option("--json", help="print the JSON document on stdout")] = False,
    seed: Annotated[int, typer.Option("--seed", help="random tokens and drawn weights")] = 0,
) -> None:
    """Put MODEL (or --arch FAMILY with sizes) on the trainability diagram of its depth (paper 1, Fig. 1c).

    Reads the actual weights: β from Q/K (both conventions of App. B.1), σ_v² from the value and output
    projections, the MLP variances, activation, α_SA, α_MLP, LN placement. Shows the phase (trainable / rank
    collapse / entropy collapse), the margin to the nearest boundary, ρ_ℓ and the attention entropy predicted
    (Eqs. (19), (B.18)) and measured, and the fix. Writes OUT/map.json, OUT/map.png (or .svg) and OUT/map.html
    (the interactive page)."""
    from attnlab.signal.mapping import place, read, report

    if (model is None) == (arch is None):
        raise ConfigError("give MODEL (a config or checkpoint folder) or --arch FAMILY with sizes, not both")
    if fmt not in ("png", "svg"):
        raise ConfigError(f"--format {fmt!r}: allowed png, svg")
    if seq < 2 or batch < 1:
        raise ConfigError(f"--seq {seq} must be ≥ 2 and --batch {batch} ≥ 1")
    if model is not None:
        spec = read.load(model)
    else:
        spec = read.from_family(arch, layers, hidden, heads, ff, positions, init_std)
    doc = place.map_with_fix(spec, apply=apply, T=seq, batch=batch, text=text, measure=not no_measure, eps=eps,
                             margin=margin, seed=seed, finite_T=finite_t)
    out.mkdir(parents=True, exist_ok=True)
    fig = report.save_figure(doc, out / f"map.{fmt}")
    (out / "map.json").write_text(report.to_json(doc))
    written = f"figure → {fig}   JSON → {out / 'map.json'}"
    if page:
        from attnlab.signal.mapping.page import save_html

        try:
            written += f"   page → {save_html(doc, out / 'map.html')}"
        except ConfigError as exc:  # plotly missing: the page is skipped, not the map
            written += f"   (no page: {exc})"
    if json_out:
        print(report.to_json(doc))
        return
    for line in report.summary(doc):
        out_console.print(line, highlight=False, markup=False, soft_wrap=True)
    out_console.print(written, highlight=False, markup=False, soft_wrap=True)
