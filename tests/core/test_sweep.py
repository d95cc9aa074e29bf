import pandas as pd
import pytest

from attnlab.core.config import ConfigError
from attnlab.core.runs import RunStore
from attnlab.core.sweep import expand, parse_grid, run_sweep


def test_parse_and_expand_grid():
    grid = parse_grid(["H=1,2", "law=flip,onehot", "x=[1,2],[3]"])
    assert grid == {"H": [1, 2], "law": ["flip", "onehot"], "x": [[1, 2], [3]]}
    points = expand({"a": [1, 2], "b": [3, 4]})
    assert points == [{"a": 1, "b": 3}, {"a": 1, "b": 4}, {"a": 2, "b": 3}, {"a": 2, "b": 4}]
    for bad in (["H"], ["H="], ["H=1", "H=2"]):
        with pytest.raises(ConfigError):
            parse_grid(bad)


def test_sweep_validates_every_point_before_work(tmp_path):
    root = tmp_path / "s"
    with pytest.raises(ConfigError, match="'steps'"):
        run_sweep("knobs.walk", {"steps": [3, 0]}, store=RunStore(root))
    assert not root.exists()


def _summary(table: pd.DataFrame) -> pd.DataFrame:
    return table.drop(columns=["error"]).reset_index(drop=True)


def test_local_pool_equals_in_process_and_reruns_only_missing(tmp_path):
    grid = {"steps": [4, 6], "seed": [0, 1]}
    serial = run_sweep("knobs.walk", grid, store=RunStore(tmp_path / "a"), workers=1)
    pool = run_sweep("knobs.walk", grid, store=RunStore(tmp_path / "b"), workers=2)
    assert serial.ran == pool.ran == 4 and serial.failed == 0
    pd.testing.assert_frame_equal(_summary(serial.table), _summary(pool.table))
    assert (pool.sweep_dir / "table.parquet").exists() and (pool.sweep_dir / "figures" / "sweep.png").exists()
    assert list(pd.read_parquet(pool.sweep_dir / "table.parquet").columns[:3]) == ["steps", "seed", "run_id"]
    again = run_sweep("knobs.walk", {"steps": [4, 6, 8], "seed": [0, 1]}, store=RunStore(tmp_path / "b"), workers=1)
    assert (again.ran, again.reused) == (2, 4)


def test_failing_task_is_recorded_and_does_not_stop_the_sweep(tmp_path):
    store = RunStore(tmp_path / "s")
    res = run_sweep("knobs.walk", {"fail_at": [-1, 1, 5], "steps": [3]}, store=store, workers=2)
    assert res.failed == 1
    by = res.table.set_index("fail_at")
    assert by.loc[1, "status"] == "failed" and "asked to fail" in by.loc[1, "error"]
    assert by.loc[-1, "status"] == "done" and by.loc[5, "status"] == "done"
    assert store.status(by.loc[1, "run_id"])["status"] == "failed"


def test_task_resources_claim_a_gpu_for_cuda_and_the_experiments_own():
    from attnlab.core.config import resolve
    from attnlab.core.registry import get
    from attnlab.core.sweep import task_resources

    exp = get("knobs.walk")
    assert task_resources(exp, resolve(exp.config, "quick", {})) == {}
    assert task_resources(exp, resolve(exp.config, "quick", {"gpu": True})) == {"GPU": 1}
    assert task_resources(exp, resolve(exp.config, "quick", {}, device="cuda")) == {"GPU": 1}


def test_sweep_checks_every_points_memory_and_dask_device_before_any_work(tmp_path):
    from typer.testing import CliRunner

    from attnlab.cli import app

    store = tmp_path / "s"
    res = CliRunner().invoke(app, ["sweep", "knobs.walk", "--grid", "need_gib=0,1e6", "--store", str(store)])
    assert res.exit_code == 2 and "knobs.walk (cpu) needs 1e+06 GiB" in res.stderr, res.output
    assert not (store / "runs").exists()
    res = CliRunner().invoke(app, ["sweep", "knobs.walk", "--grid", "steps=2,3", "--executor", "dask", "--device",
                                   "cuda:1", "--scheduler", "tcp://127.0.0.1:1", "--store", str(store)])
    assert res.exit_code == 2 and "give --device cuda, not cuda:N" in res.stderr, res.output


def test_the_default_sweep_figure_puts_the_parameter_on_x_and_aggregates_seeds():
    import numpy as np
    import pandas as pd

    from attnlab.core.plotting import sweep_figure

    rows = [{"seed": s, "H": H, "loss": 1 / H + 0.01 * s, "const": 2.0, "run_id": "r", "status": "done",
             "error": None} for s in range(3) for H in (1, 2, 4)]
    fig = sweep_figure(pd.DataFrame(rows), ["seed", "H"])  # seed listed first: still H on x
    (ax,) = fig.axes  # the constant summary gets no panel
    assert ax.get_xlabel() == "H" and ax.get_title() == "loss"
    bold = [ln for ln in ax.get_lines() if ln.get_linewidth() == 2]
    assert len(bold) == 1 and np.allclose(bold[0].get_ydata(), [1 + 0.01, 0.5 + 0.01, 0.25 + 0.01])
    assert len(ax.get_lines()) == 4  # three faint seeds + the mean
    assert all(float(t).is_integer() for t in ax.get_xticks())
    only_seeds = sweep_figure(pd.DataFrame([r for r in rows if r["H"] == 1]), ["seed"])
    assert only_seeds.axes[0].get_xlabel() == "" and "mean ± sd (3 seeds)" in [
        t.get_text() for t in only_seeds.axes[0].get_legend().get_texts()]


def test_shard_takes_every_nth_point_in_a_stable_order():
    from attnlab.core.sweep import shard

    points = list(range(7))
    assert shard(points, None, None) == points
    assert [shard(points, 3, i) for i in range(3)] == [[0, 3, 6], [1, 4], [2, 5]]
    assert shard(points, 9, 8) == []
    for n, i, msg in ((2, 2, r"--task-id 2: must be in 0..1 for --num-tasks 2"), (0, 0, "--num-tasks 0: must be ≥ 1"),
                      (2, -1, "--task-id -1"), (None, 0, "go together"), (2, None, "go together")):
        with pytest.raises(ConfigError, match=msg):
            shard(points, n, i)


def test_array_tasks_run_the_grid_between_them_and_a_last_sweep_reuses_all(tmp_path):
    """Two tasks of an array (as SLURM would start them) run disjoint halves of the grid in one store; the same
    sweep without --task-id afterwards runs nothing and writes the whole table."""
    from typer.testing import CliRunner

    from attnlab.cli import app

    store, grid = tmp_path / "s", {"steps": [3, 4, 5], "seed": [0, 1]}
    halves = [run_sweep("knobs.walk", grid, store=RunStore(store), workers=1, num_tasks=2, task_id=i) for i in (0, 1)]
    assert [h.ran for h in halves] == [3, 3] and halves[0].sweep_id != halves[1].sweep_id
    ids = [set(h.table["run_id"]) for h in halves]
    assert not ids[0] & ids[1]
    assert list(halves[1].table[["steps", "seed"]].itertuples(index=False, name=None)) == [(3, 1), (4, 1), (5, 1)]
    whole = run_sweep("knobs.walk", grid, store=RunStore(store), workers=1)
    assert (whole.ran, whole.reused, len(whole.table)) == (0, 6, 6) and set(whole.table["run_id"]) == ids[0] | ids[1]
    res = CliRunner().invoke(app, ["sweep", "knobs.walk", "--grid", "steps=3,4", "--num-tasks", "3", "--task-id", "2",
                                   "--store", str(store), "-q"])
    assert res.exit_code == 0 and "no point to run" in res.output, res.output
    for args, msg in ((["--num-tasks", "2", "--task-id", "2"], "--task-id 2: must be in 0..1 for --num-tasks 2"),
                      (["--task-id", "0"], "--task-id and --num-tasks go together")):
        res = CliRunner().invoke(app, ["sweep", "knobs.walk", "--grid", "steps=3", "--store", str(tmp_path / "n"),
                                       *args])
        assert res.exit_code == 2 and msg in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output
        assert not (tmp_path / "n").exists()


def test_configs_file_gives_one_point_a_line_crossed_with_the_grid(tmp_path):
    from typer.testing import CliRunner

    from attnlab.cli import app
    from attnlab.core.sweep import parse_configs

    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"steps": 3}\n\n{"steps": 5, "fail_at": -1}\n')
    res = run_sweep("knobs.walk", {"seed": [0, 1]}, store=RunStore(tmp_path / "s"), workers=1,
                    configs=parse_configs(batch))
    assert res.ran == 4 and res.failed == 0
    assert list(res.table[["steps", "seed"]].itertuples(index=False, name=None)) == [(3, 0), (3, 1), (5, 0), (5, 1)]
    store = tmp_path / "bad"
    for text, msg in (('{"steps": 3}\n[1, 2]\n', "batch.jsonl line 2: expected a JSON object of overrides"),
                      ('{"steps": 3}\n{"steps": 3,\n', "batch.jsonl line 2: not JSON"),
                      ('{"steps": 3}\n\n{"nope": 1}\n', "batch.jsonl line 3: "),
                      ('{"steps": 0}\n', "batch.jsonl line 1: "),
                      ('{"seed": 2}\n', "batch.jsonl line 1: seed given both here and by --grid"),
                      ("\n", "no configuration in it")):
        batch.write_text(text)
        res = CliRunner().invoke(app, ["sweep", "knobs.walk", "--configs", str(batch), "--grid", "seed=0,1",
                                       "--store", str(store)])
        assert res.exit_code == 2 and msg in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.output
        assert not store.exists()
