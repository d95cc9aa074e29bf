"""The toy study, declared in one place: its experiments, the modules of its claims, its sandbox views. The entry
point ``attnlab.studies`` names this object (``toy = "my_study.study:STUDY"``)."""

from __future__ import annotations

from attnlab.core.study import Study
from my_study.experiments import WALK

STUDY = Study("toy", "A seeded random walk against its exact diffusion law (the template of a study)",
              experiments=(WALK,), claims=("my_study.claims",), views="my_study.views.plugin")
