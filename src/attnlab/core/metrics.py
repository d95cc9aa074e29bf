"""The one schema of a run's ``metrics.parquet`` (``docs/data.md``): tidy rows, the same core columns everywhere.

Every row is one number: ``source`` (simulation, theory, training, … or ""), ``observable`` (what is measured),
``time_name`` and ``time`` (the axis it evolves along: τ, epoch, layer, width N, α …; "" and NaN when the row has
none), ``value`` (float). Integer index columns (nullable ``Int64``: ``seed``, ``head``, ``layer``, …) say
which element of an array-valued observable a row holds, named by the experiment's declared ``index``
(``<study>/outputs.py``, :mod:`attnlab.core.outputs`); ``i``, ``j``, … only for an axis nobody named; any other
column is a label of the row (activation, panel, variant, the coordinates of a grid point).

:func:`tidy` brings what an experiment returns into this schema when the run is stored: a frame already in it
(``Trajectory.to_frame``) is kept; the older long form (``name``, ``component`` "0,1") is renamed and split into
index columns; a ``compare()`` table gets one row per source column; a wide table (one column per measured
quantity) is melted: its float columns whose values mostly differ from row to row become observables, the
others (text, integers, booleans, grid coordinates that repeat) stay as labels of each row (one named like a
core column gets a trailing "_"), and ``row`` numbers the wide row each tidy row comes from; :func:`wide` turns
it back.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

import numpy as np
import pandas as pd

from attnlab.core.trajectory import AXES, CORE


def tidy(frame: pd.DataFrame, axes: Mapping[str, tuple[str, ...]] | None = None) -> pd.DataFrame:
    """``frame`` in the tidy schema (a new frame; ``frame`` is not changed); ``axes`` (observable or ``fnmatch``
    pattern → the names of its index axes, as an experiment declares them in ``<study>/outputs.py``) names the
    unnamed index columns ``i``, ``j``, … of those observables' rows (:func:`name_axes`)."""
    df = frame.reset_index(drop=True).copy()
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c in ("time", "value") else object) for c in CORE})
    if "name" in df.columns and "value" in df.columns:  # the older long form, alone or next to tidy rows
        name = df.pop("name")
        df["observable"] = df["observable"].fillna(name) if "observable" in df.columns else name
    if "component" in df.columns:
        df = _split_component(df)
    if "observable" in df.columns and "value" not in df.columns:  # a compare() table: a value column per source
        sources = [c for c in df.columns if df[c].dtype.kind == "f" and c != "time"]
        df = df.melt(id_vars=[c for c in df.columns if c not in sources], value_vars=sources, var_name="source")
    if "observable" not in df.columns:
        df = _melt(df)
    df["source"] = df["source"].fillna("").astype(str) if "source" in df.columns else ""
    if "time" not in df.columns:
        df["time"] = np.nan
    df["time_name"] = df["time_name"].fillna("").astype(str) if "time_name" in df.columns else ""
    df["time"] = pd.to_numeric(df["time"], errors="coerce").astype(float)
    df["value"] = pd.to_numeric(df["value"], errors="coerce").astype(float)
    df["observable"] = df["observable"].astype(str)
    if axes:
        df = name_axes(df, axes)
    return df[[*CORE, *[c for c in df.columns if c not in CORE]]]


def name_axes(frame: pd.DataFrame, axes: Mapping[str, tuple[str, ...]]) -> pd.DataFrame:
    """The rows of each observable matched by a key of ``axes`` (a name or an ``fnmatch`` pattern; the first key
    that matches wins) get their unnamed index columns ``i``, ``j``, … moved, in order, to the names it gives; an
    unnamed column left empty is dropped. A frame without unnamed index columns is returned as it is."""
    unnamed = [c for c in AXES if c in frame.columns]
    if not unnamed:
        return frame
    df = frame.copy()
    observables = df["observable"].astype(str)
    names = {obs: next((v for k, v in axes.items() if fnmatch.fnmatchcase(obs, k)), None)
             for obs in observables.unique()}
    for obs, given in names.items():
        rows = (observables == obs).to_numpy()
        for generic, name in zip(unnamed, given or (), strict=False):
            column = df[name].astype("Int64") if name in df.columns else pd.Series(pd.NA, df.index, dtype="Int64")
            column[rows] = df.loc[rows, generic].astype("Int64")
            df[name] = column
            df.loc[rows, generic] = pd.NA
    return df.drop(columns=[c for c in unnamed if df[c].isna().all()])


def unnamed_axes(frame: pd.DataFrame) -> dict[str, list[str]]:
    """Observable → the unnamed index columns (``i``, ``j``, …) its rows use."""
    out: dict[str, list[str]] = {}
    for c in (c for c in AXES if c in frame.columns):
        for obs in frame.loc[frame[c].notna(), "observable"].astype(str).unique():
            out.setdefault(obs, []).append(c)
    return out


def conforms(frame: pd.DataFrame) -> list[str]:
    """What keeps ``frame`` from the schema: one line each (empty: it conforms)."""
    problems = [f"no column {c!r}" for c in CORE if c not in frame.columns]
    if "component" in frame.columns:
        problems.append("a 'component' string column: index columns are integers")
    for c, kind in (("time", "f"), ("value", "f")):
        if c in frame.columns and frame[c].dtype.kind != kind:
            problems.append(f"column {c!r} has dtype {frame[c].dtype}, not float")
    for c in ("source", "observable", "time_name"):
        if c in frame.columns and not frame[c].map(lambda v: isinstance(v, str)).all():
            problems.append(f"column {c!r} holds something else than text")
    return problems


def _split_component(df: pd.DataFrame) -> pd.DataFrame:
    """"0,1"-style component strings → integer index columns ``i``, ``j``, … (NA where a row has fewer axes)."""
    parts = df.pop("component").fillna("").astype(str).str.split(",")
    depth = int(parts.map(lambda p: len([x for x in p if x])).max() or 0)
    for k in range(depth):
        index = pd.array([int(p[k]) if len(p) > k and p[k] not in ("", "nan") else None for p in parts],
                         dtype="Int64")
        df[AXES[k]] = df[AXES[k]].astype("Int64").fillna(pd.Series(index)) if AXES[k] in df.columns else index
    return df


def wide(frame: pd.DataFrame) -> pd.DataFrame:
    """The inverse of melting a wide table: one row per label combination, one column per observable (the core
    columns other than ``observable`` and ``value`` dropped; a label renamed on melting gets its name back)."""
    labels = [c for c in frame.columns if c not in CORE]
    out = frame.set_index([*labels, "observable"])["value"].unstack("observable").reset_index()
    out.columns.name = None
    if "row" in out.columns:
        out = out.sort_values("row").drop(columns="row").reset_index(drop=True)
    return out.rename(columns={f"{c}_": c for c in CORE if f"{c}_" in out.columns})


def _melt(df: pd.DataFrame) -> pd.DataFrame:
    df = df.rename(columns={c: f"{c}_" for c in CORE if c in df.columns})  # a label named like a core column
    floats = [c for c in df.columns if df[c].dtype.kind == "f"]
    measured = [c for c in floats if len(df) == 1 or df[c].nunique(dropna=True) > df[c].notna().sum() / 2]
    if not measured:  # no float column varies much: every float (else every number) is a measurement
        measured = floats or [c for c in df.columns if df[c].dtype.kind in "iuf"]
    df.insert(0, "row", np.arange(len(df)))  # the wide row each tidy row comes from
    labels = [c for c in df.columns if c not in measured]
    out = df.melt(id_vars=labels, value_vars=measured, var_name="observable", value_name="value")
    out = out[out["value"].notna()].reset_index(drop=True)
    for c in labels:
        if out[c].dtype.kind in "iu":
            out[c] = out[c].astype("Int64")
    return out
