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

from attnlab.core.display import html_block, text_block

CORE = ("source", "observable", "time_name", "time", "value")  # the columns of every tidy metrics table
AXES = tuple("ijklmn")  # index column names of unnamed axes


def _to_numpy(x: Any) -> np.ndarray:
    if hasattr(x, "detach"):  # torch tensor on any device
        x = x.detach().cpu().numpy()
    return np.asarray(x)


@dataclass(frozen=True, repr=False)
class Trajectory:
    """Observables recorded at times ``time`` (e.g. τ = γt for SGD, the ODE time for theory).

    ``source`` says where it came from ("simulation", "theory", ...); ``meta`` carries free-form
    scalars (seed, D, number of MC samples) that travel with it into tables; ``axes`` names the axes after time of
    an observable (``{"m": ("head", "feature")}``), which become its integer index columns in :meth:`to_frame`
    (unnamed axes are ``i``, ``j``, ``k``, ...).
    """

    time: np.ndarray
    observables: Mapping[str, np.ndarray]
    time_name: str = "tau"
    source: str = "simulation"
    meta: Mapping[str, Any] = field(default_factory=dict)
    axes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

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
        object.__setattr__(self, "axes", {k: tuple(v) for k, v in self.axes.items()})
        for name, names in self.axes.items():
            if name in obs and len(names) != obs[name].ndim - 1:
                raise ValueError(f"axes of {name!r} are {names}; it has {obs[name].ndim - 1} axes after time")

    # -- display --------------------------------------------------------------------------------
    def _rows(self) -> list[tuple[str, Any]]:
        return [(self.time_name, self.time), *self.observables.items(), *self.meta.items()]

    def _title(self) -> str:
        t = f"{self.time[0]:.4g} … {self.time[-1]:.4g}" if len(self.time) else "no time"
        return (f"Trajectory({self.source or 'unnamed'}: {len(self.time)} times, {self.time_name} {t}, "
                f"{len(self.observables)} observables)")

    def __repr__(self) -> str:
        return text_block(self._title(), self._rows())

    def _repr_html_(self) -> str:
        return html_block(self._title(), self._rows())

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
        return Trajectory(t_new, out, self.time_name, self.source, self.meta, self._axes(out))

    def select(self, names: Iterable[str]) -> Trajectory:
        obs = {n: self[n] for n in names}
        return Trajectory(self.time, obs, self.time_name, self.source, self.meta, self._axes(obs))

    def _axes(self, obs: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
        return {k: v for k, v in self.axes.items() if k in obs}

    def index_names(self, name: str) -> tuple[str, ...]:
        """The index column names of observable ``name``'s axes after time."""
        return self.axes.get(name) or tuple(AXES[: self[name].ndim - 1])

    # -- storage --------------------------------------------------------------------------------
    def to_frame(self) -> pd.DataFrame:
        """Tidy long format (``docs/data.md``): one row per (time, observable, index).

        Columns: ``source``, ``observable``, ``time_name``, ``time``, ``value``, one integer column per axis after
        time (named by ``axes``; ``i``, ``j``, ... otherwise; missing for observables without that axis), and the
        scalar ``meta`` as label columns.
        """
        frames = []
        for name, arr in self.observables.items():
            flat = arr.reshape(arr.shape[0], -1)
            cols: dict[str, Any] = {"source": self.source, "observable": name, "time_name": self.time_name,
                                    "time": np.repeat(self.time, flat.shape[1]),
                                    "value": flat.reshape(-1).astype(float)}
            grid = np.indices(arr.shape[1:]).reshape(arr.ndim - 1, -1) if arr.ndim > 1 else []
            for axis, index in zip(self.index_names(name), grid, strict=True):
                cols[axis] = pd.array(np.tile(index, flat.shape[0]), dtype="Int64")
            frames.append(pd.DataFrame(cols))
        df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(CORE))
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
    key = ["observable", "time", *[c for c in a.columns if c not in CORE and c not in reference.meta]]
    out = a[[*key, "value"]].rename(columns={"value": ref_src})
    out[oth_src] = b["value"].to_numpy()
    out["abs_diff"] = (out[ref_src] - out[oth_src]).abs()
    return out


def max_deviation(reference: Trajectory, other: Trajectory, names: Iterable[str] | None = None) -> dict[str, float]:
    """Largest absolute difference per observable over the common time range."""
    table = compare(reference, other, names)
    return {str(k): float(v) for k, v in table.groupby("observable")["abs_diff"].max().items()}
