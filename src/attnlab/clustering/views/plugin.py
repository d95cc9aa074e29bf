"""The clustering study in the sandbox (paper 4 Sec. 4.1): every panel of the offline renderer, live while a run trains.

Frames are the run's parameter snapshots (time = epoch), variants its seeds. Panel data comes from
``attnlab.clustering.render.panels`` (the offline renderer's own functions, with coarser level-line grids for
the screen) and is drawn by ``figures``; exports go through the offline renderer itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from attnlab.clustering.render import panels as P
from attnlab.clustering.train.history import History, histories
from attnlab.clustering.views import figures as F
from attnlab.core.config import ConfigError
from attnlab.sandbox.plugin import Figure, PanelSpec, StudyPlugin, View, register

#: level-line and region grids of the screen (the offline renderer uses 200 and 80): ~5× less data per frame
SCREEN_OPTS = {"grid": 60, "region_grid": 40}
TITLES = {"tokens": "token embeddings", "positions": "position embeddings", "embeddings": "embeddings E(x)+P(t)",
          "normalized": "normalised Z and query", "attention": "attention map", "value": "value transform",
          "xi": "sentence embeddings ξ", "psi": "sentence transforms ψ", "levels": "level lines p̂(·|ξ)",
          "mlp": "MLP receptors/assemblers", "output": "output p̂", "sparsity": "activation sparsity",
          "loss": "loss and accuracy", "grads": "gradient norms", "min_norm": "min-norm monitor"}
DEFAULT = ("tokens", "positions", "normalized", "attention", "value", "xi", "psi", "levels", "mlp", "loss")


@dataclass
class ClusteringView(View):
    history: History | None = None
    skipped: dict[str, str] = field(default_factory=dict)

    @cached_property
    def _probe(self) -> tuple[Any, list[str]]:
        """The probe sentences of the ξ/ψ/level panels (same defaults as ``panels.xi``) and their hover words."""
        task = self.history.task
        x, _ = P.probe_sentences(task)
        toks = x.numpy()
        words = ["".join(map(str, r[list(task.idx)])) + " | " + "".join(map(str, r[list(task.spurious)]))
                 for r in toks]
        return x, words

    def frame(self, index: int, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        h = self.history
        params = h.params_at(index, variant)
        out: dict[str, Figure] = {}
        ctx: dict[str, Any] = {}
        for name in names:
            data = P.PANELS[name].compute(params, h.spec, h.task, history=h, seed=variant,
                                          epoch=float(h.snapshot_epochs[index]), **SCREEN_OPTS)
            if "classes" in data and not ctx:  # hover of sentence panels: tokens, class, p̂(y|x)
                raw = data["raw"] if name == "xi" else P.xi(params, h.spec, h.task)["raw"]
                ctx = {"sentences": self._probe[1], "probs": P.head_probs(P.as_params(params), h.spec, raw)}
            out[name] = F.FRAME_FIGURES[name](data, ctx)
        return out

    def series(self, variant: int, names: Sequence[str]) -> dict[str, Figure]:
        h = self.history
        return {n: F.SERIES_FIGURES[n](P.PANELS[n].compute(None, h.spec, h.task, history=h, seed=variant))
                for n in names}

    def render(self, out: Path, indices: Sequence[int], variant: int, names: Sequence[str], fps: float) -> Path:
        from attnlab.clustering.render.animate import render_animation, render_frames

        if out.suffix in (".gif", ".mp4"):
            return render_animation(self.history, list(names), indices=indices, seed=variant, out=out, fps=fps)
        [frame] = render_frames(self.history, list(names), indices=indices[:1], seed=variant, out_dir=out.parent,
                                fmt=out.suffix[1:])
        return frame.rename(out)


def open_train(experiment: str, arrays: Mapping[str, np.ndarray], summary: Mapping[str, Any],
               config: Mapping[str, Any]) -> View:
    """The view of a run holding a training history (``clustering.train.history``): its snapshots, seeds, panels."""
    found = histories(dict(arrays))
    if not found:
        raise ConfigError(f"this {experiment} run stores no training history with snapshots")
    prefix = "run/" if "run/" in found else sorted(found)[0]
    h = found[prefix]
    if len(h.snapshot_epochs) == 0:
        raise ConfigError("the run has no snapshot yet")
    frame_names = [n for n in P.PANELS if n in F.FRAME_FIGURES]
    _, skipped = P.compute_panels(frame_names, h.params_at(0, 0), h.spec, h.task, history=h, **SCREEN_OPTS)
    panels = [PanelSpec(n, TITLES[n], "series" if n in F.SERIES_FIGURES else "frame", n in DEFAULT)
              for n in P.PANELS if n not in skipped]
    notes = [f"{n}: {why}" for n, why in skipped.items()]
    if len(found) > 1:
        notes.append(f"showing the history '{prefix}' (the run also stores {', '.join(set(found) - {prefix})})")
    if h.spec.d > 3:
        notes.append(f"d = {h.spec.d}: geometry panels are PCA projections (labelled)")
    notes.append(f"{len(h.snapshot_epochs)} snapshots to epoch {h.snapshot_epochs[-1]:g}")
    return ClusteringView(times=np.asarray(h.snapshot_epochs, dtype=float), time_label="epoch",
                          variants=[f"seed {s}" for s in h.seeds], panels=panels, notes=notes, history=h,
                          skipped=skipped)


class ClusteringPlugin(StudyPlugin):
    study = "clustering"
    openers = dict.fromkeys(("train", "fig8", "circuits", "fig5", "stationarity", "fig11", "fig12",
                             "transfer_circuit"), open_train)
    forms = {"clustering.train": ("p", "k", "N", "d", "h", "norm", "lr", "batch_size", "n_train", "epochs", "seed",
                                  "n_seeds", "snapshot_every")}
    when_live = "note"

    def live_note(self, view: View) -> str:
        return f"live: training, last snapshot at epoch {view.times[-1]:g}"

    def render_run(self, run_dir: Path, out: Path, **options: Any) -> Path:
        """The visual sandbox of paper 4 Sec. 4.1 drawn offline (:func:`attnlab.clustering.render.render_run`)."""
        from attnlab.clustering.render import render_run

        return render_run(run_dir, out, **options)


PLUGIN = register(ClusteringPlugin())
