"""Coordinates of the sandbox's geometry panels (paper Sec. 4.1; off the plane when d ≠ 2): pure numpy.

d = 2: the plane itself; d = 3: the space itself (3-D coordinates); d > 3 (or a forced plane): a 2-D PCA
projection with explained-variance labels "PC1 (xx%)". Also label grouping for coincident points and the
padded square box of the level-line grids.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Data = dict[str, Any]
CLASS_MARKERS = ("s", "o", "^", "D", "v", "P", "X", "*")  # class y = 0, 1, 2 → square, circle, triangle (Sec. 4.1)


class Frame:
    """Coordinates of a geometry panel: identity (d ≤ 3) or a PCA plane (d > 3, or forced)."""

    def __init__(self, d: int, points: np.ndarray, *, center: bool, plane: bool = False):
        points = np.asarray(points, dtype=np.float64).reshape(-1, d)
        self.evr: np.ndarray | None = None
        if d <= 2 or (d == 3 and not plane):
            self.kind, self.mean = ("space" if d == 3 else "plane"), np.zeros(d)
            self.comps = np.eye(max(d, 2))[: max(d, 2), :d]
            self.labels = [f"$x_{i + 1}$" for i in range(max(d, 2))]
            if d == 1:
                self.labels[1] = ""
            return
        self.kind = "pca"
        self.mean = points.mean(0) if center else np.zeros(d)
        x = points - self.mean
        _, s, vt = np.linalg.svd(x, full_matrices=False)
        comps = np.zeros((2, d))
        comps[: min(2, len(vt))] = vt[:2]
        for i in range(2):  # deterministic signs: largest entry positive (stable across frames)
            if not comps[i].any():
                comps[i, i] = 1.0
            elif comps[i, np.abs(comps[i]).argmax()] < 0:
                comps[i] *= -1
        var = np.zeros(2)
        var[: min(2, len(s))] = (s**2)[:2]
        self.evr = var / max((s**2).sum(), 1e-300)
        self.comps = comps
        self.labels = [f"PC{i + 1} ({100 * self.evr[i]:.0f}%)" for i in range(2)]

    @property
    def dim(self) -> int:
        return self.comps.shape[0]

    def project(self, x: np.ndarray, vector: bool = False) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        return (x if vector else x - self.mean) @ self.comps.T

    def lift(self, coords: np.ndarray) -> np.ndarray:
        """Frame coordinates (…, 2) → points of ℝ^d on the frame's plane."""
        return self.mean + np.asarray(coords) @ self.comps

    def as_dict(self) -> Data:
        return {"kind": self.kind, "dim": self.dim, "labels": list(self.labels[: self.dim]),
                "evr": None if self.evr is None else self.evr.copy(), "projection": self.kind == "pca"}


def _ranges(ts: list[int]) -> str:
    """[1, 2, 3, 5] → '1–3,5'."""
    ts, out, i = sorted(set(ts)), [], 0
    while i < len(ts):
        j = i
        while j + 1 < len(ts) and ts[j + 1] == ts[j] + 1:
            j += 1
        out.append(str(ts[i]) if j == i else f"{ts[i]}–{ts[j]}")
        i = j + 1
    return ",".join(out)


def group_annotations(xy: np.ndarray, keys: list[tuple[int, ...]], tol: float | None = None) -> Data:
    """Merge labels of (nearly) coincident points: (0,1),(0,2) at one spot → '(0,1–2)'. Keys are (t,) or (x, t)."""
    xy = np.asarray(xy, dtype=np.float64)
    if tol is None:
        span = np.ptp(xy, axis=0).max() if len(xy) else 0.0
        tol = 1e-3 * max(span, 1e-12)
    groups: list[list[int]] = []
    for i in range(len(xy)):
        for g in groups:
            if np.linalg.norm(xy[g[0]] - xy[i]) <= tol:
                g.append(i)
                break
        else:
            groups.append([i])
    texts = []
    for g in groups:
        if len(keys[g[0]]) == 1:
            texts.append(_ranges([keys[i][0] for i in g]))
            continue
        by_x: dict[int, list[int]] = {}
        for i in g:
            by_x.setdefault(keys[i][0], []).append(keys[i][1])
        texts.append("; ".join(f"({x},{_ranges(ts)})" for x, ts in sorted(by_x.items())))
    return {"xy": np.array([xy[g[0]] for g in groups]).reshape(-1, xy.shape[1]), "text": texts}


def square_box(points: np.ndarray, pad: float = 0.2) -> tuple[float, float, float, float]:
    """Square box (equal-aspect panels) around the bounding box of ``points`` padded by ``pad`` of its size."""
    lo, hi = points.min(0), points.max(0)
    half = max(float((hi - lo).max()), 1e-6) * (0.5 + pad)
    mid = (lo + hi) / 2
    return mid[0] - half, mid[0] + half, mid[1] - half, mid[1] + half
