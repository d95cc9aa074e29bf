"""``attnlab run``, ``sweep``, ``report``, ``reproduce``, ``render`` and ``sandbox``: the commands that make runs
and show them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from attnlab import STUDIES
from attnlab.cli_check import print_claims
from attnlab.cli_common import (
    DeviceOpt,
    JsonOpt,
    QuietOpt,
    ScaleOpt,
    SetOpt,
    checked_device,
    err_console,
    guard,
    out_console,
)
from attnlab.cli_flags import OldStoreOpt, StoreOpt
from attnlab.cli_flags import html_file as _html_file
from attnlab.cli_flags import store as _store
from attnlab.core import progress
from attnlab.core.config import SCALES, ConfigError, load_yaml, parse_sets, resolve


def _overrides(sets: list[str] | None, config_file: Path | None) -> dict[str, Any]:
    values = load_yaml(config_file) if config_file else {}
    values.update(parse_sets(sets or []))
    return values


@guard
def run(
    experiment: Annotated[str, typer.Argument(help="STUDY.EXPERIMENT, e.g. specialization.fig1")],
    scale: ScaleOpt = "quick",
    set_: SetOpt = None,
    config_file: Annotated[Path | None, typer.Option("--config", help="YAML file of KEY: VALUE overrides")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="base seed of the run's named streams")] = None,
    device: DeviceOpt = None,
    store: StoreOpt = None,
    old_out: OldStoreOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute even if a finished run exists")] = False,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run one experiment (or reuse the finished run with the same config)."""
    from attnlab.core.device import parse
    from attnlab.core.registry import get

    progress.set_quiet(quiet or json_)
    exp = get(experiment)
    config = resolve(exp.config, scale, _overrides(set_, config_file), seed=seed, device=device)
    parse(config.device)  # the --device given or the config file's: CUDA there, the index in range
    record = _store(store, old_out).run(exp, config, force=force)
    if json_:
        print(json.dumps(record.to_json(), default=str))
        return
    verb = "reused" if record.reused else "finished"
    out_console.print(f"{verb} {record.experiment} [bold]{record.run_id}[/bold] → {record.run_dir}")
    for k, v in record.summary.items():
        out_console.print(f"  {k} = {v:.6g}" if isinstance(v, float) else f"  {k} = {v}")


def _configs_file(experiment: str, configs: Path) -> Path:
    """``--configs``: a file, or the bare NAME of one shipped with the study (``attnlab/<study>/grids/NAME.jsonl``,
    e.g. clustering's ``pal_ffn_dim``: the public code's ablation grids)."""
    grids = Path(__file__).parent / experiment.partition(".")[0] / "grids"
    if configs.exists() or len(configs.parts) > 1 or configs.suffix or not grids.is_dir():
        return configs
    if not (grids / f"{configs}.jsonl").exists():
        names = ", ".join(sorted(f.stem for f in grids.glob("*.jsonl")))
        raise ConfigError(f"--configs {configs}: no such file, nor a grid of this study (its grids: {names})")
    return grids / f"{configs}.jsonl"


@guard
def sweep(
    experiment: Annotated[str, typer.Argument(help="STUDY.EXPERIMENT")],
    grid: Annotated[list[str] | None, typer.Option("--grid", help="KEY=V1,V2,... (repeatable; cartesian product)")]
    = None,
    configs: Annotated[Path | None, typer.Option("--configs", help="FILE.jsonl: one JSON object of overrides a "
                                                 "line, each a point (crossed with --grid, if given); or NAME: a "
                                                 "grid shipped with the study, e.g. pal_ffn_dim")] = None,
    num_tasks: Annotated[int | None, typer.Option("--num-tasks", help="split the points among N tasks (an array "
                                                  "job); with --task-id")] = None,
    task_id: Annotated[int | None, typer.Option("--task-id", help="run task I (0..N-1): every N-th point from the "
                                                "I-th, e.g. --task-id $SLURM_ARRAY_TASK_ID")] = None,
    scale: ScaleOpt = "quick",
    set_: SetOpt = None,
    seed: Annotated[int | None, typer.Option("--seed")] = None,
    device: DeviceOpt = None,
    executor: Annotated[str, typer.Option("--executor", help="local (process pool) or dask")] = "local",
    scheduler: Annotated[str | None, typer.Option("--scheduler", help="dask scheduler, e.g. tcp://host:8786")] = None,
    workers: Annotated[int | None, typer.Option("--workers", help="processes (local) or LocalCluster workers")] = None,
    store: StoreOpt = None,
    old_out: OldStoreOpt = None,
    json_: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Expand a grid into runs, execute them, aggregate one Parquet table and the sweep figure."""
    from attnlab.core.sweep import parse_configs, parse_grid, run_sweep

    progress.set_quiet(quiet or json_)
    result = run_sweep(
        experiment, parse_grid(grid or []), store=_store(store, old_out), scale=scale, base=parse_sets(set_ or []),
        seed=seed, device=checked_device(device) if executor != "dask" or not scheduler else device, executor=executor,
        scheduler=scheduler, workers=workers, configs=parse_configs(_configs_file(experiment, configs)) if configs
        else None,
        num_tasks=num_tasks, task_id=task_id,
    )
    if json_:
        print(json.dumps(result.to_json()))
    elif result.table.empty:
        out_console.print(f"task {task_id} of {num_tasks}: no point to run (fewer points than tasks)")
    else:
        out_console.print(result.table.drop(columns=["error"]).to_string(index=False))
        out_console.print(f"{len(result.table)} runs ({result.ran} ran, {result.reused} reused, {result.failed} failed)"
                          f" → {result.sweep_dir}")
    if result.failed:
        for _, row in result.table[result.table["status"] != "done"].iterrows():
            err_console.print(f"[red]failed[/red] {row['run_id']}: {escape(str(row['error']))}", highlight=False)
        raise typer.Exit(1)


@guard
def report(
    targets: Annotated[list[Path] | None, typer.Argument(help="run or sweep directories")] = None,
    all_: Annotated[bool, typer.Option("--all", help="everything in the store")] = False,
    store: StoreOpt = None,
    html: Annotated[Path | None, typer.Option("--html", help="HTML file to write [attnlab-report.html]")] = None,
    old_out: Annotated[Path | None, typer.Option("--out", hidden=True, help="deprecated spelling of --html")] = None,
) -> None:
    """Write a self-contained HTML report of runs, sweeps and claims (corrupt runs are skipped and named)."""
    from attnlab.core import report as rep

    if not targets and not all_:
        raise ConfigError("give RUN_DIR or SWEEP_DIR arguments, or --all")
    for t in targets or []:
        if not t.is_dir():
            raise ConfigError(f"{str(t)!r} is not a directory")
    html = _html_file(html, old_out, "--out")
    path = rep.write(_store(store, existing=all_), html, None if all_ else list(targets or []))
    out_console.print(f"report → {path.resolve()}")


@guard
def reproduce(
    studies: Annotated[list[str] | None, typer.Argument(help="studies (default: all)")] = None,
    scale: ScaleOpt = "quick",
    quick: Annotated[bool, typer.Option("--quick", hidden=True, help="deprecated spelling of --scale quick")] = False,
    paper: Annotated[bool, typer.Option("--paper", hidden=True, help="deprecated spelling of --scale paper")] = False,
    claims_: Annotated[bool, typer.Option("--claims/--no-claims", help="also run the claims")] = True,
    device: DeviceOpt = None,
    store: StoreOpt = None,
    old_out: OldStoreOpt = None,
    html: Annotated[Path | None, typer.Option("--html", help="HTML report to write [attnlab-report.html]")] = None,
    old_report: Annotated[Path | None, typer.Option("--report", hidden=True, help="deprecated spelling of --html")]
    = None,
    quiet: QuietOpt = False,
) -> None:
    """Run every study's headline experiments, its claims, then write the HTML report."""
    from attnlab.core import report as rep
    from attnlab.core.claims import check as run_checks
    from attnlab.core.claims import failed
    from attnlab.core.registry import check_study, experiments

    if quick and paper:
        raise ConfigError("--quick and --paper are exclusive")
    if quick or paper:  # the old flags, one release more: every command takes --scale
        err_console.print(f"note: --{'paper' if paper else 'quick'} is deprecated; use --scale "
                          f"{'paper' if paper else 'quick'}", highlight=False)
        scale = "paper" if paper else "quick"
    if scale not in SCALES:
        raise ConfigError(f"scale {scale!r} is not allowed; allowed: {', '.join(SCALES)}")
    for s in studies or []:
        check_study(s)
    checked_device(device)
    progress.set_quiet(quiet)
    html = _html_file(html, old_report, "--report")
    store = _store(store, old_out)
    chosen = studies or list(STUDIES)
    targets = []
    bad = 0
    for study in chosen:
        for exp in [e for e in experiments(study) if e.headline]:
            config = resolve(exp.config, scale, {}, device=device)
            out_console.print(f"[bold]{exp.key}[/bold] ({exp.ref}, {scale}) …")
            record = store.run(exp, config)
            targets.append(record.run_dir)
        if claims_:
            results = run_checks(study, scale, store, device=device)
            print_claims(results)
            bad += len(failed(results))
    path = rep.write(store, html, None, title=f"attnlab reproduce ({scale}): {', '.join(chosen)}")
    out_console.print(f"report → [bold]{path.resolve()}[/bold]")
    if bad:
        raise typer.Exit(1)


@guard
def render(
    run_dir: Annotated[Path, typer.Argument(help="a run directory holding snapshots (of a study with an offline "
                                            "renderer: clustering)")],
    out: Annotated[Path, typer.Option("--out", help="FILE.gif | FILE.mp4 | FILE.png/.pdf (one frame) | DIR/ (frames)")]
    = Path("sandbox.gif"),
    panels: Annotated[str, typer.Option("--panels", help="'default', 'all' or comma-separated panel names")]
    = "default",
    epochs: Annotated[str | None, typer.Option("--epochs", help="START:STOP[:STEP] epochs, or a comma list")] = None,
    every: Annotated[int, typer.Option("--every", help="render every n-th snapshot of the range")] = 1,
    seed: Annotated[int, typer.Option("--seed", help="which of the run's seeds (index)")] = 0,
    history: Annotated[str | None, typer.Option("--history", help="which stored history, when a run has several")]
    = None,
    fps: Annotated[float, typer.Option("--fps")] = 5.0,
    fmt: Annotated[str, typer.Option("--fmt", help="frame format for a DIR: png or pdf")] = "png",
) -> None:
    """Draw the visual sandbox (paper 4 Sec. 4.1) of a stored run: frames, a GIF or an MP4 over a snapshot range."""
    from attnlab.sandbox.plugin import plugin_for

    meta = run_dir / "config.json"
    if not meta.is_file():
        raise ConfigError(f"{str(run_dir)!r} is not a run directory (it has no config.json)")
    experiment = json.loads(meta.read_text()).get("experiment", "")
    plugin = plugin_for(experiment)
    if plugin is None:
        raise ConfigError(f"no study's views draw {experiment or 'this'} run")
    path = plugin.render_run(run_dir, out, panels=panels, epochs=epochs, every=every, seed=seed, history=history,
                             fps=fps, fmt=fmt)
    out_console.print(f"wrote {path}")


@guard
def sandbox(
    store: StoreOpt = None,
    old_out: OldStoreOpt = None,
    host: Annotated[str, typer.Option("--host", help="address to bind: loopback unless --allow-remote")]
    = "127.0.0.1",
    allow_remote: Annotated[bool, typer.Option("--allow-remote", help="allow a --host that is not loopback "
                                               "(anyone who reaches it with the token can start runs)")] = False,
    port: Annotated[int, typer.Option("--port", help="TCP port; 0 picks a free one")] = 0,
    max_jobs: Annotated[int, typer.Option("--max-jobs", help="training runs at once")] = 1,
    max_queued: Annotated[int, typer.Option("--max-queued", help="runs waiting for a slot; more are refused (429)")]
    = 16,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="do not open the page in a browser")] = False,
) -> None:
    """The live visual sandbox: a local web app to start, watch, scrub and compare runs (needs the sandbox extra).

    Like Jupyter's server: the printed URL carries a random token (then kept in a cookie), requests must name this
    machine in their Host header, and state-changing requests must come from the page's own origin."""
    from attnlab.sandbox.server import serve

    serve(_store(store, old_out).root, host=host, port=port, max_jobs=max_jobs, max_queued=max_queued,
          open_browser=not no_browser, allow_remote=allow_remote)
