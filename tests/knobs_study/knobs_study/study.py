"""The knobs study, declared in one place: the entry point ``attnlab.studies`` names this object
(``knobs = "knobs_study.study:STUDY"``)."""

from __future__ import annotations

from attnlab.core.study import Study
from knobs_study.experiments import WALK

STUDY = Study("knobs", "A random walk with the test suite's knobs (sleep, fail_at, need_gib, gpu): tests only",
              experiments=(WALK,), claims=("knobs_study.claims",), views="knobs_study.views")
