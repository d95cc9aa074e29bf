"""What a training run of the clustering study records: snapshots of every parameter and metric curves.

One ``History`` holds S seeds trained together. Arrays keep the seed axis second: epoch metrics are (E, S),
step metrics (T, S), snapshots (T_snap, S, ...). ``to_arrays``/``from_arrays`` round-trip through a run's
``arrays.npz`` with flat names (``snap/E``, ``epoch/train_loss``, ``step/loss``, ...), so the sandbox and the
figures read a stored run without re-training.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from attnlab.clustering.data import Task
from attnlab.clustering.model import ModelSpec, Params
from attnlab.core.trajectory import Trajectory


@dataclass
class History:
    spec: ModelSpec
    task: Task
    seeds: list[int]
    snapshot_epochs: np.ndarray                     # (T_snap,) epoch of each snapshot (0 = initialisation)
    snapshots: dict[str, np.ndarray]                # name -> (T_snap, S, *shape)
    epochs: np.ndarray                              # (E,) logged epochs (0 = before training)
    epoch_metrics: dict[str, np.ndarray]            # name -> (E, S)
    steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # (T,) logged step indices
    step_metrics: dict[str, np.ndarray] = field(default_factory=dict)               # name -> (T, S)
    steps_per_epoch: int = 1

    @property
    def n_seeds(self) -> int:
        return len(self.seeds)

    def params_at(self, index: int, seed: int | None = None, dtype: torch.dtype = torch.float64) -> Params:
        """Parameters of snapshot ``index`` (all seeds, or the seed *index* ``seed`` with S = 1)."""
        sl = slice(None) if seed is None else slice(seed, seed + 1)
        return {k: torch.as_tensor(v[index, sl]).to(dtype) for k, v in self.snapshots.items()}

    def snapshot_index(self, epoch: float) -> int:
        """Index of the snapshot closest to ``epoch``."""
        return int(np.abs(self.snapshot_epochs - epoch).argmin())

    def final(self, dtype: torch.dtype = torch.float64) -> Params:
        return self.params_at(len(self.snapshot_epochs) - 1, dtype=dtype)

    def metric(self, name: str) -> np.ndarray:
        """An epoch metric (E, S)."""
        return self.epoch_metrics[name]

    def trajectory(self, kind: str = "epoch") -> Trajectory:
        """The paired view (``core.trajectory``): the epoch metrics (E, S) over ``epochs`` ("epoch"), or the step
        metrics (T, S) over ``steps`` ("step"), so ``compare()`` pairs two runs of this study as any other."""
        if kind not in ("epoch", "step"):
            raise ValueError(f"kind {kind!r}: use 'epoch' or 'step'")
        time, obs = (self.epochs, self.epoch_metrics) if kind == "epoch" else (self.steps, self.step_metrics)
        return Trajectory(time, obs, time_name=kind, source="training", meta={"n_seeds": self.n_seeds})

    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        out = {f"{prefix}snap_epochs": self.snapshot_epochs, f"{prefix}epochs": self.epochs,
               f"{prefix}steps": self.steps,
               f"{prefix}meta": np.array(json.dumps({"spec": asdict(self.spec), "seeds": list(self.seeds),
                                                       "steps_per_epoch": self.steps_per_epoch,
                                                       "task": {"p": self.task.p, "N": self.task.N, "k": self.task.k,
                                                                "informative": list(self.task.idx)}}))}
        out.update({f"{prefix}snap/{k}": v for k, v in self.snapshots.items()})
        out.update({f"{prefix}epoch/{k}": v for k, v in self.epoch_metrics.items()})
        out.update({f"{prefix}step/{k}": v for k, v in self.step_metrics.items()})
        return out

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], prefix: str = "") -> History:
        meta = json.loads(str(arrays[f"{prefix}meta"]))

        def group(kind: str) -> dict[str, np.ndarray]:
            head = f"{prefix}{kind}/"
            return {k[len(head):]: np.asarray(v) for k, v in arrays.items() if k.startswith(head)}

        t = meta["task"]
        return cls(spec=ModelSpec(**meta["spec"]), task=Task(t["p"], t["N"], t["k"], tuple(t["informative"])),
                   seeds=list(meta["seeds"]), snapshot_epochs=np.asarray(arrays[f"{prefix}snap_epochs"]),
                   snapshots=group("snap"), epochs=np.asarray(arrays[f"{prefix}epochs"]), epoch_metrics=group("epoch"),
                   steps=np.asarray(arrays[f"{prefix}steps"]), step_metrics=group("step"),
                   steps_per_epoch=int(meta["steps_per_epoch"]))


def histories(arrays: dict[str, np.ndarray]) -> dict[str, History]:
    """Every History stored in a run's arrays, by prefix ('' for an unprefixed one): ``{"mini/": History}``."""
    prefixes = sorted(k[: -len("meta")] for k in arrays if k.endswith("meta") and k[: -len("meta")] + "snap_epochs"
                      in arrays)
    return {p: History.from_arrays(arrays, p) for p in prefixes}
