"""External tokens and heads of the Markov task from files (``tokens_file``, ``heads_file``): e.g. the public
code's own tokens and heads (benchmarks/paths_anchor.py exports them), so that a run on the command line
reproduces its U on its own data.

* ``tokens_file``: a .npz with ``X_train`` (P, T+1, D) and ``y_train`` (P,) in ±1, and optionally ``X_test``
  (P*, T+1, D) and ``y_test`` (P*,); without a test set the run draws one from the config's law. The public
  code's own layout (P, D, T+1) is also accepted (transposed on reading). The bos is token 0; D = N0 + T + 1.
* ``heads_file``: a .npz with ``heads1``, ``heads2``, … (layer ℓ: (H_ℓ, D, D), key on the left, query on the
  right, β included), or a .npy of shape (L, H, D, D).

Reading checks everything before any work; a problem is one line naming the key, the file and what to fix.
"""

from __future__ import annotations

import functools
import re
import zipfile
from pathlib import Path

import numpy as np


def _fail(key: str, path: str, what: str) -> ValueError:
    return ValueError(f"key {key!r} = {path!r}: {what}")


def _load(key: str, path: str, suffixes: tuple[str, ...]):
    p = Path(path).expanduser()
    if p.suffix not in suffixes:
        raise _fail(key, path, f"expected a {' or '.join(suffixes)} file")
    if not p.is_file():
        raise _fail(key, path, "no such file")
    try:
        z = np.load(p, allow_pickle=False)
        return dict(z) if isinstance(z, np.lib.npyio.NpzFile) else z
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise _fail(key, path, f"not a readable NumPy file ({' '.join(str(exc).split())[:120]})") from None


def _tokens(key: str, path: str, X: np.ndarray, name: str) -> np.ndarray:
    if X.ndim != 3 or not np.issubdtype(X.dtype, np.number):
        raise _fail(key, path, f"{name} has shape {X.shape}; expected numbers of shape (P, T+1, N0+T+1)")
    if X.shape[1] > X.shape[2]:  # the public code's (P, D, T+1): D = N0 + T + 1 > T + 1
        X = X.transpose(0, 2, 1)
    if X.shape[2] - X.shape[1] < 2 or (X.shape[2] - X.shape[1]) % 2:
        raise _fail(key, path, f"{name} has shape {X.shape}; expected (P, T+1, N0+T+1) with N0 even and ≥ 2")
    if not np.isfinite(X).all():
        raise _fail(key, path, f"{name} holds NaN or infinite values")
    return X


def _labels(key: str, path: str, y: np.ndarray, name: str, P: int) -> np.ndarray:
    if y.shape != (P,) or not np.isin(y, (-1.0, 1.0)).all():
        raise _fail(key, path, f"{name} must be {P} labels, each +1 or -1 (shape {y.shape})")
    return y


def read_tokens(path: str, key: str = "tokens_file") -> dict[str, np.ndarray]:
    """{X_train, y_train[, X_test, y_test]} as float64 arrays in attnlab's layout (P, T+1, D), checked."""
    z = _load(key, path, (".npz",))
    if "X_train" not in z or "y_train" not in z:
        raise _fail(key, path, f"needs arrays X_train and y_train (found: {', '.join(sorted(z)) or 'none'})")
    if ("X_test" in z) != ("y_test" in z):
        raise _fail(key, path, "X_test and y_test go together: give both or neither")
    out = {}
    for split in ("train", "test"):
        if f"X_{split}" in z:
            X = _tokens(key, path, np.asarray(z[f"X_{split}"]), f"X_{split}")
            out[f"X_{split}"] = X.astype(np.float64)
            out[f"y_{split}"] = _labels(key, path, np.asarray(z[f"y_{split}"], np.float64), f"y_{split}", len(X))
    if "X_test" in out and out["X_test"].shape[1:] != out["X_train"].shape[1:]:
        raise _fail(key, path, f"X_test's tokens {out['X_test'].shape[1:]} differ from X_train's "
                    f"{out['X_train'].shape[1:]}")
    return out


def read_heads(path: str, key: str = "heads_file") -> list[np.ndarray]:
    """Per-layer head stacks (H_ℓ, D, D) as float64, checked (square, one D for all layers, finite)."""
    z = _load(key, path, (".npz", ".npy"))
    if isinstance(z, dict):
        names = sorted((k for k in z if re.fullmatch(r"heads\d+", k)), key=lambda k: int(k[5:]))
        if not names or names != [f"heads{i}" for i in range(1, len(names) + 1)]:
            raise _fail(key, path, f"needs arrays heads1, heads2, … one per layer (found: {', '.join(sorted(z))})")
        layers = [np.asarray(z[k]) for k in names]
    else:
        if z.ndim != 4:
            raise _fail(key, path, f"a .npy of heads has shape (L, H, D, D); found {z.shape}")
        layers = list(z)
    D = layers[0].shape[-1] if layers[0].ndim == 3 else None
    for i, A in enumerate(layers, 1):
        if A.ndim != 3 or A.shape[1:] != (D, D) or A.shape[0] < 1 or not np.issubdtype(A.dtype, np.number):
            raise _fail(key, path, f"layer {i}'s heads have shape {A.shape}; expected (H_{i}, D, D) with the same "
                        "D on every layer")
        if not np.isfinite(A).all():
            raise _fail(key, path, f"layer {i}'s heads hold NaN or infinite values")
    return [A.astype(np.float64) for A in layers]


def _stamp(path: str | None):
    try:
        st = Path(path).expanduser().stat() if path else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st else None


def shapes(tokens_file: str | None, heads_file: str | None) -> dict:
    """What the files fix, for the config's checks: P, P_test, T, N0 from the tokens; Hs and D from the heads
    (read once per file version)."""
    return dict(_shapes(tokens_file, heads_file, _stamp(tokens_file), _stamp(heads_file)))


@functools.lru_cache(maxsize=16)
def _shapes(tokens_file: str | None, heads_file: str | None, *_stamps) -> dict:
    out: dict = {}
    if tokens_file:
        z = read_tokens(tokens_file)
        P, T1, D = z["X_train"].shape
        out.update(P=P, T=T1 - 1, N0=D - T1, D=D)
        if "X_test" in z:
            out["P_test"] = len(z["X_test"])
    if heads_file:
        hs = read_heads(heads_file)
        if "D" in out and hs[0].shape[-1] != out["D"]:
            raise _fail("heads_file", heads_file, f"heads of width D = {hs[0].shape[-1]} do not fit the tokens of "
                        f"tokens_file (D = {out['D']})")
        out.update(Hs=tuple(A.shape[0] for A in hs), D=hs[0].shape[-1])
    return out


def fill(data):
    """A config's raw values with P, P_test, T, N0 of ``tokens_file`` where they are not given, and
    ``files_sha256``, the digest of the files' contents: it is part of the run id, so a file rewritten under the
    same name makes a new run (not the stored one), and a stored config whose file has changed since is refused."""
    if isinstance(data, dict) and (data.get("tokens_file") or data.get("heads_file")):
        fixed = shapes(data.get("tokens_file"), data.get("heads_file"))
        data = {**{k: fixed[k] for k in ("P", "P_test", "T", "N0") if k in fixed}, **data}
        digest = contents_sha256(data.get("tokens_file"), data.get("heads_file"))
        if data.get("files_sha256") not in (None, digest):
            raise ValueError(f"key 'files_sha256' = {data['files_sha256']!r}: tokens_file / heads_file have "
                             f"changed since this config was made (now {digest}); run on the new files without "
                             "files_sha256, or restore the old ones")
        data = {**data, "files_sha256": digest}
    return data


def contents_sha256(*paths: str | None) -> str:
    """16 hex digits of the SHA-256 of the given files' bytes, in order (None: skipped)."""
    import hashlib

    h = hashlib.sha256()
    for path in paths:
        if path:
            h.update(Path(path).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def check(config) -> None:
    """A config's sizes against its files: one line naming the key to set."""
    if not (config.tokens_file or config.heads_file):
        return
    fixed = shapes(config.tokens_file, config.heads_file)
    for key in ("P", "P_test", "T", "N0"):
        if key in fixed and getattr(config, key) != fixed[key]:
            raise ValueError(f"key {key!r} = {getattr(config, key)}: the tokens of tokens_file have {key} = "
                             f"{fixed[key]}; set {key}={fixed[key]} or leave it unset")
    if "Hs" in fixed and fixed["D"] != config.N0 + config.T + 1:
        raise ValueError(f"key 'heads_file' = {config.heads_file!r}: heads of width D = {fixed['D']}, but tokens "
                         f"have D = N0 + T + 1 = {config.N0 + config.T + 1}; set N0 and T to match")
