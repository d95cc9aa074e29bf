"""The paired API's common currency: a time series of named observables.

A study's simulation (``train.simulate``) and its theory (``theory.predict``) both return a
:class:`Trajectory` with the same observable names, shapes and time axis, so that
:func:`compare` and the plotting code need no glue between them.

An observable is an array of shape ``(T, *shape)``: one row per recorded time. A leading batch
axis after time (seeds, configurations) is allowed and is simply part of ``shape``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor on any device
        x = x.detach().cpu().numpy()
    return np.asarray(x)


@dataclass(frozen=True)
class Trajectory:
    """Observables recorded at times ``time`` (e.g. τ = γt for SGD, the ODE time for theory).

    ``source`` says where it came from ("simulation", "theory", ...); ``meta`` carries free-form
    scalars (seed, D, number of MC samples) that travel with it into tables.
    """

    time: np.ndarray
    observables: Mapping[str, np.ndarray]
    time_name: str = "tau"
    source: str = "simulation"
    meta: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        time = _to_numpy(self.time).astype(float).reshape(-1)
        obs = {k: _to_numpy(v) for k, v in self.observables.items()}
        for name, arr in obs.items():
            if arr.ndim == 0 or arr.shape[0] != time.shape[0]:
                raise ValueError(
                    f"observable {name!r} has shape {arr.shape}; its first axis must be time "
                    f"of length {time.shape[0]}"
                )
        object.__setattr__(self, "time", time)
        object.__setattr__(self, "observables", obs)
        object.__setattr__(self, "meta", dict(self.meta))

    # -- access ---------------------------------------------------------------------------------
    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self.observables[name]
        except KeyError:
            raise KeyError(f"no observable {name!r}; have {sorted(self.observables)}") from None

    def __contains__(self, name: object) -> bool:
        return name in self.observables

    @property
    def names(self) -> list[str]:
        return list(self.observables)

    def final(self, name: str) -> np.ndarray:
        """Value of ``name`` at the last recorded time."""
        return self[name][-1]

    def at(self, times: Iterable[float] | np.ndarray, names: Iterable[str] | None = None) -> Trajectory:
        """Linear interpolation onto ``times`` (clipped to the recorded range)."""
        t_new = np.asarray(list(times) if not isinstance(times, np.ndarray) else times, dtype=float)
        out = {}
        for name in names if names is not None else self.names:
            arr = self[name]
            flat = arr.reshape(arr.shape[0], -1)
            cols = [np.interp(t_new, self.time, flat[:, j]) for j in range(flat.shape[1])]
            out[name] = np.stack(cols, axis=-1).reshape((t_new.shape[0], *arr.shape[1:]))
        return Trajectory(t_new, out, self.time_name, self.source, self.meta)

    def select(self, names: Iterable[str]) -> Trajectory:
        return Trajectory(self.time, {n: self[n] for n in names}, self.time_name, self.source, self.meta)

    # -- storage --------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Long format: one row per (time, observable, component).

        Columns: ``source``, the time name, ``name``, ``component`` ("" for scalars, else the
        comma-joined index, e.g. "1,0" for m[1, 0]) and ``value``; ``meta`` scalars become columns.
        """
        frames = []
        for name, arr in self.observables.items():
            flat = arr.reshape(arr.shape[0], -1)
            comps = [",".join(map(str, idx)) for idx in np.ndindex(*arr.shape[1:])] or [""]
            frames.append(
                pd.DataFrame(
                    {
                        self.time_name: np.repeat(self.time, flat.shape[1]),
                        "name": name,
                        "component": np.tile(np.asarray(comps, dtype=object), flat.shape[0]),
                        "value": flat.reshape(-1).astype(float),
                    }
                )
            )
        df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        df.insert(0, "source", self.source)
        for k, v in self.meta.items():
            if np.isscalar(v) or v is None:
                df[k] = v
        return df

    def to_arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """Flat dict for ``np.savez``: ``{prefix}time`` and ``{prefix}{name}``."""
        out = {f"{prefix}time": self.time}
        out.update({f"{prefix}{k}": v for k, v in self.observables.items()})
        return out

    @classmethod
    def from_arrays(
        cls, arrays: Mapping[str, np.ndarray], prefix: str = "", time_name: str = "tau", source: str = ""
    ) -> Trajectory:
        obs = {
            k[len(prefix) :]: np.asarray(v)
            for k, v in arrays.items()
            if k.startswith(prefix) and k != f"{prefix}time"
        }
        return cls(np.asarray(arrays[f"{prefix}time"]), obs, time_name, source or prefix.rstrip("_"))


def compare(reference: Trajectory, other: Trajectory, names: Iterable[str] | None = None) -> pd.DataFrame:
    """Side-by-side table of two trajectories on ``reference``'s time grid.

    ``other`` is interpolated onto the reference times (so the theory may be integrated on a finer
    grid than the simulation is recorded). Returns long format with columns ``name``,
    ``component``, the time name, ``<reference.source>``, ``<other.source>`` and ``abs_diff``.
    """
    names = list(names) if names is not None else [n for n in reference.names if n in other]
    if not names:
        raise ValueError(f"no common observables between {reference.names} and {other.names}")
    lo, hi = other.time.min(), other.time.max()
    t = reference.time[(reference.time >= lo - 1e-12) & (reference.time <= hi + 1e-12)]
    ref_src = reference.source or "reference"
    oth_src = other.source if other.source and other.source != ref_src else "other"
    a = reference.at(t, names).to_frame()
    b = other.at(t, names).to_frame()
    key = [reference.time_name, "name", "component"]
    out = a[[*key, "value"]].rename(columns={"value": ref_src})
    out[oth_src] = b["value"].to_numpy()
    out["abs_diff"] = (out[ref_src] - out[oth_src]).abs()
    return out


def max_deviation(reference: Trajectory, other: Trajectory, names: Iterable[str] | None = None) -> dict[str, float]:
    """Largest absolute difference per observable over the common time range."""
    table = compare(reference, other, names)
    return {str(k): float(v) for k, v in table.groupby("name")["abs_diff"].max().items()}
