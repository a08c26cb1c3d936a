"""Device names: one known to torch and present on this machine, checked before a model loads.

``load_model``, ``load_any_model`` and the command line's ``--device`` all use
:func:`check_device`, so ``device="cuda"`` on a machine without CUDA is one clear line everywhere
(not torch's bare ``AssertionError`` from deep inside a ``.to()``).
"""

from __future__ import annotations

import re

from interp_heads.errors import PipelineError

DEVICE = re.compile(r"^(cpu|cuda|mps|xpu|meta)(:\d+)?$")


def check_device(device: str | None, allow_meta: bool = False) -> None:
    """A known device name that this machine has (``None``: the default, always fine).

    ``allow_meta``: the Python API also takes ``"meta"`` (shapes without memory, as tests use it);
    the command line does not.
    """
    if device is None:
        return
    if not DEVICE.match(device):
        raise PipelineError(f"unknown device {device!r}; use cpu, cuda, cuda:N or mps")
    import torch

    kind, _, index = device.partition(":")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise PipelineError(
                f"device {device!r} requested but CUDA is not available on this machine"
            )
        if index and int(index) >= torch.cuda.device_count():
            raise PipelineError(
                f"device {device!r}: this machine has {torch.cuda.device_count()} CUDA device(s)"
            )
    elif kind == "mps" and not (
        getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()
    ):
        raise PipelineError(f"device {device!r} requested but MPS is not available on this machine")
    elif kind == "meta" and allow_meta:
        return
    elif kind in ("xpu", "meta"):
        raise PipelineError(f"device {device!r} is not supported; use cpu, cuda or mps")


def free_bytes(device) -> int | None:
    """Memory free on ``device`` (CUDA: the driver's count; CPU: Linux's MemAvailable), or None
    where it cannot be read."""
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None
