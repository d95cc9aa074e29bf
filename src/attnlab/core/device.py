"""The one parser of a device name (``cpu``, ``cuda``, ``cuda:N``), what the run's ``config.json`` records about
the device, thread pinning.

Every layer goes through this module: the config's ``device`` field checks its spelling with :func:`check_name`
(the run id keeps the string), the command line, the run store, sweeps, claims, benchmarks and the sandbox turn a
name into a :class:`torch.device` with :func:`parse` (spelling, CUDA present, GPU index in range) — the run store
once per run, handing the result to the run's context — and code that only needs to know CPU or GPU asks
:func:`kind`. Every refusal is one :class:`~attnlab.core.errors.ConfigError` line starting ``key 'device' = ``.

Torch is imported only where a device is built or inspected, so the config (and ``attnlab --help``) stays light.
Only APIs present in torch 2.11 are used, so the same code runs on the GPU machines' torch 2.11 and the CPU
wheel 2.13.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attnlab.core.errors import ConfigError

if TYPE_CHECKING:
    import torch

PATTERN = re.compile(r"^(cpu|cuda(:\d+)?)$")  # the one spelling of a device name
ALLOWED = "cpu, cuda, cuda:N"


def check_name(name: Any) -> str:
    """The device name if it is spelled ``cpu``, ``cuda`` or ``cuda:N``; else a one-line :class:`ConfigError`."""
    if not isinstance(name, str) or not PATTERN.match(name):
        shown = repr(name) if len(repr(name)) <= 80 else repr(name)[:79] + "…"  # a message never echoes a long value
        raise ConfigError(f"key 'device' = {shown}: allowed: {ALLOWED}")
    return name


def parse(name: str) -> torch.device:
    """``"cpu"``, ``"cuda"`` or ``"cuda:N"`` as a torch device; a bad spelling, CUDA where there is none, or a GPU
    index out of range is a one-line :class:`ConfigError` (exit 2 on the command line)."""
    import torch

    check_name(name)
    if name == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"key 'device' = {name!r}: CUDA is not available on this machine "
                          f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); use --device cpu")
    device = torch.device(name)
    count = torch.cuda.device_count()
    if device.index is not None and device.index >= count:
        raise ConfigError(f"key 'device' = {name!r}: this machine has {count} CUDA device(s): "
                          f"{', '.join(f'cuda:{i}' for i in range(count))}")
    return device


resolve_device = parse  # its former name


def kind(device: str | torch.device | None) -> str:
    """``"cuda"`` or ``"cpu"`` (``None``: cpu) of a device name, a torch device or a recorded description
    (``"cuda (NVIDIA H200)"``): what timings, records and dask resources are kept apart by."""
    return "cuda" if str(device if device is not None else "cpu").startswith("cuda") else "cpu"


def index(name: str) -> int | None:
    """The GPU index a well-spelled name gives (``cuda:2`` → 2), ``None`` for ``cpu`` and ``cuda``."""
    _, _, n = check_name(name).partition(":")
    return int(n) if n else None


def label(device: str | torch.device) -> str:
    """How a message names the device: ``cuda:N`` (the current GPU for plain ``cuda``) or ``the CPU``."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return f"cuda:{device.index if device.index is not None else torch.cuda.current_device()}"
    return "the CPU"


def describe(device: torch.device) -> str:
    import torch

    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


def details(device: torch.device) -> dict[str, Any]:
    """What a result may depend on: on CUDA the GPU's name, memory, compute capability, driver, CUDA and cuDNN;
    on the CPU its model and threads. Always torch's version."""
    import torch

    out: dict[str, Any] = {"type": device.type, "torch": torch.__version__}
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        out.update(index=index, name=props.name, total_memory_bytes=int(props.total_memory),
                   total_memory_gib=round(props.total_memory / 2**30, 2),
                   compute_capability=f"{props.major}.{props.minor}", multiprocessors=props.multi_processor_count,
                   driver=driver_version(), cuda=torch.version.cuda, cudnn=cudnn,
                   visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"))
    else:
        out.update(cpu=cpu_model(), threads=torch.get_num_threads(), cores=os.cpu_count())
    return out


@cache
def driver_version() -> str:
    """The NVIDIA driver's version from nvidia-smi, else NVML (``nvidia-ml-py``), else ``"unknown"``."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            res = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True,
                                 text=True, timeout=10)
            first = res.stdout.strip().splitlines()[:1]
            if res.returncode == 0 and first and first[0].strip():
                return first[0].strip()
        except (OSError, subprocess.SubprocessError):
            pass
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            version = pynvml.nvmlSystemGetDriverVersion()
        finally:
            pynvml.nvmlShutdown()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:  # not installed, or no driver to talk to
        return "unknown"


@cache
def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo on Linux, else the platform's)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def pin_threads(n: int | None = None) -> int:
    """Set torch's intra-op threads from ``n``, else ``$ATTNLAB_THREADS``, else leave torch's default.

    On small machines running several workers, oversubscribed BLAS threads make small steps 20-40×
    slower; sweep workers therefore pin to ``cores // workers``.
    """
    import torch

    if n is None:
        env = os.environ.get("ATTNLAB_THREADS")
        n = int(env) if env else None
    if n is not None and n > 0:
        torch.set_num_threads(n)
    return torch.get_num_threads()
