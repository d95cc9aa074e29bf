import numpy as np
import pytest

from attnlab.core.trajectory import Trajectory, compare, max_deviation


def _traj(offset=0.0, source="simulation", t=None):
    t = np.linspace(0, 1, 11) if t is None else t
    m = np.stack([t + offset, 2 * t], axis=-1)[:, None, :]  # (T, 1, 2)
    return Trajectory(t, {"m": m, "loss": 1 - t / 2 + offset}, source=source, meta={"seed": 0})


def test_shapes_checked():
    with pytest.raises(ValueError, match="first axis must be time"):
        Trajectory(np.arange(3), {"x": np.zeros(4)})


def test_long_frame_and_roundtrip():
    tr = _traj()
    df = tr.to_frame()
    assert set(df.columns) == {"source", "observable", "time_name", "time", "value", "i", "j", "seed"}
    assert len(df) == 11 * (2 + 1) and set(df.time_name) == {"tau"}
    assert df[(df.observable == "m") & (df.i == 0) & (df.j == 1)]["value"].iloc[-1] == pytest.approx(2.0)
    assert df[df.observable == "loss"]["i"].isna().all() and df["i"].dtype == "Int64"
    named = Trajectory(tr.time, tr.observables, axes={"m": ("head", "feature")}).to_frame()
    assert {"head", "feature"} <= set(named.columns) and "i" not in named.columns
    with pytest.raises(ValueError, match="axes of 'm'"):
        Trajectory(tr.time, tr.observables, axes={"m": ("head",)})
    back = Trajectory.from_arrays(tr.to_arrays("sim_"), "sim_")
    assert np.array_equal(back["m"], tr["m"])


def test_compare_interpolates_onto_reference_grid():
    sim = _traj()
    theory = _traj(offset=0.1, source="theory", t=np.linspace(0, 1, 101))
    table = compare(sim, theory)
    assert {"simulation", "theory", "abs_diff"} <= set(table.columns)
    dev = max_deviation(sim, theory)
    assert dev["loss"] == pytest.approx(0.1) and dev["m"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="no common observables"):
        compare(sim, Trajectory(sim.time, {"other": sim.time}))


def test_compare_pairs_two_clustering_runs_through_their_history():
    """clustering's History offers the paired view: two trainings (seeds 0 and 1 alone, then together) compare."""
    from attnlab.clustering.configs import TrainConfig
    from attnlab.clustering.train.loop import train

    small = {"n_train": 64, "n_test": 64, "batch_size": 32, "epochs": 3}
    both = train(TrainConfig(n_seeds=2, **small)).trajectory()
    assert both.time_name == "epoch" and list(both.time) == [0, 1, 2, 3] and both["train_loss"].shape == (4, 2)
    again = train(TrainConfig(n_seeds=2, **small)).trajectory()
    same = compare(both, again, ["train_loss", "test_acc"])
    assert len(same) == 2 * 4 * 2 and same["abs_diff"].max() == 0  # deterministic: a run equals its rerun
    other = train(TrainConfig(n_seeds=2, seed=1, **small)).trajectory()
    assert compare(both, other, ["train_loss"])["abs_diff"].max() > 0  # another seed trains differently
    steps = train(TrainConfig(n_seeds=1, **small)).trajectory("step")
    assert steps.time_name == "step" and steps["loss"].shape == (3 * 2, 1)
