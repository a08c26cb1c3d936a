"""Checks of the numbers a mask or a generation takes, shared by the Python API and the config.

``mask_heads``/``mask_hooks`` (``interventions.masks``), the ablation kinds' options (``scale``'s
factor), ``generate``'s sampling and the run config (``config.sections``, ``config.validation``:
the command line's flags and TOML keys) all check numbers and seeds here, so a value the command
line refuses is refused by the API with the same one line.
"""

from __future__ import annotations

import math
import numbers

from interp_heads.errors import InputError

SEED_RANGE = (-(2**63), 2**64 - 1)  # torch.manual_seed's range


def finite_number(value, name: str = "value") -> float:
    """``value`` as a float when it is a finite real number (not a bool, not a string)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a finite number, got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int past a float's range (10**400)
        number = math.inf
    if not math.isfinite(number):
        raise InputError(f"{name} must be a finite number, got {_short(value)}")
    return number


def _short(value) -> str:
    """``repr(value)``, cut to 60 characters (a 400-digit number in a message is noise)."""
    text = (
        repr(value)
        if not isinstance(value, int) or value.bit_length() < 200
        else f"a number of {value.bit_length()} bits"
    )
    return text if len(text) <= 60 else text[:57] + "..."


def torch_seed(value, name: str = "seed") -> int:
    """``value`` when it is an integer in torch's seed range (not a bool, not a float)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    low, high = SEED_RANGE
    if not low <= int(value) <= high:
        raise InputError(f"{name} must be in torch's seed range -2**63..2**64-1, got {value!r}")
    return int(value)
