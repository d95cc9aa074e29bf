"""Timed runs for the time models (`attnlab store calibrate`): each experiment at its quick config (the fit) and at
its tiny config (``outputs(..., tiny=…)``, 10-1000× less work: held out), fresh, one thread, each run's CPU time kept
in its manifest. Then ``attnlab store calibrate --store DIR/quick --held-out DIR/tiny --out results/timing``.

    OMP_NUM_THREADS=1 python -m benchmarks.timing DIR [--study S ...] [--scale quick|tiny] [--skip KEY ...]
                                                      [--device cuda]  (then: store calibrate --kind cuda)

Never run by the tests. Runs already in DIR are reused (their CPU time was kept when they were made).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from attnlab.core.config import resolve
from attnlab.core.registry import experiments
from attnlab.core.runs import RunStore

STUDIES = ("specialization", "signal", "potts", "paths", "clustering")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--study", action="append", choices=STUDIES)
    ap.add_argument("--scale", action="append", choices=("quick", "tiny"))
    ap.add_argument("--skip", action="append", default=[], help="an experiment key to leave out")
    ap.add_argument("--only", action="append", default=[], help="only these experiment keys")
    ap.add_argument("--device", default="cpu", help="cpu (one thread: CPU time is kept) or cuda (wall time)")
    args = ap.parse_args(argv)
    for scale in args.scale or ("tiny", "quick"):
        store = RunStore(args.root / scale)
        for study in args.study or STUDIES:
            for exp in experiments(study):
                if exp.key in args.skip or (args.only and exp.key not in args.only):
                    continue
                tiny = dict(exp.outputs.tiny) if exp.outputs is not None else {}
                config = resolve(exp.config, "quick", tiny if scale == "tiny" else {}, device=args.device)
                t0 = time.perf_counter()
                try:
                    rec = store.run(exp, config)
                except Exception as exc:  # a run that fails is reported and left out of the fit
                    print(f"{scale} {exp.key}: failed: {exc}", flush=True)
                    continue
                print(f"{scale} {exp.key}: {'reused' if rec.reused else f'{time.perf_counter() - t0:.1f} s'}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
