"""The driver ``benchmarks/clustering.py`` runs the public code (facebookresearch/pal) with, in the public code's own
interpreter (``$ATTNLAB_PAL_PYTHON``), through ``python -c`` (so that this folder, whose ``signal.py`` would shadow the
standard library's, is not on its path): it imports pal's modules from the checkout, points pal's save directory at a
temporary folder and its device at the CPU, trains the given seeds one after another and prints one ``PAL-RESULT``
line of JSON (wall and CPU seconds, test accuracies and train losses per epoch). Not imported by attnlab.
"""

import json
import pickle
import sys
import tempfile
import time
from pathlib import Path

args = json.loads(sys.argv[1])
root = Path(args["pal"])
sys.path[:0] = [str(root / "src"), str(root / "projects" / "visualization")]

import torch  # noqa: E402

torch.set_num_threads(args["threads"])

import train as pal_train  # noqa: E402  (pal's projects/visualization/train.py)

pal_train.SAVE_DIR = Path(tempfile.mkdtemp(prefix="pal-bench-"))
pal_train.DEVICE = torch.device("cpu")


def load(seed: int, name: str) -> list:
    """One of the per-epoch records pal's script pickled for ``seed``."""
    with open(pal_train.SAVE_DIR / f"seed{seed}" / name, "rb") as f:
        return pickle.load(f).tolist()


rows = []
for seed in args["seeds"]:
    cfg = pal_train.ExperimentConfig(**args["config"], nb_epochs=args["epochs"], seed=seed, interactive=False,
                                     id=f"seed{seed}")
    t0, c0 = time.perf_counter(), time.process_time()
    pal_train.run_from_config(cfg)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows.append({"seed": seed, "wall_s": wall, "cpu_s": cpu, "test_acc": load(seed, "test_accs.pkl"),
                 "train_loss": load(seed, "losses.pkl"), "threads": torch.get_num_threads(),
                 "torch": torch.__version__, "python": sys.version.split()[0]})
print("PAL-RESULT " + json.dumps(rows))
