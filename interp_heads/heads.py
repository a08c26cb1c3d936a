"""Head labels and hook names: ``L{layer}H{head}`` and ``blocks.{l}.attn.hook_z``."""

from __future__ import annotations

import re
from collections.abc import Iterable

from interp_heads.errors import InputError

Head = tuple[int, int]
_LABEL = re.compile(r"^L(\d+)H(\d+)$")


def head_label(layer: int, head: int) -> str:
    """``L{layer}H{head}``, TransformerLens' convention."""
    return f"L{layer}H{head}"


def hook_z(layer: int) -> str:
    """Name of the per-query-head attention output hook of a layer."""
    return f"blocks.{layer}.attn.hook_z"


def parse_head(label: str | Head, n_layers: int | None = None, n_heads: int | None = None) -> Head:
    """``"L3H2"`` or ``(3, 2)`` -> ``(3, 2)``, checked against the model's shape when given.

    Raises:
        ValueError: one line naming the bad label and the valid range.
    """
    if isinstance(label, str):
        m = _LABEL.match(label.strip())
        if not m:
            raise InputError(f"bad head label {label!r}: expected L<layer>H<head>, e.g. L3H2")
        layer, head = int(m.group(1)), int(m.group(2))
    else:
        layer, head = (int(x) for x in label)
    if n_layers is not None and not 0 <= layer < n_layers:
        raise InputError(f"head {head_label(layer, head)}: layer must be in 0..{n_layers - 1}")
    if n_heads is not None and not 0 <= head < n_heads:
        raise InputError(f"head {head_label(layer, head)}: head must be in 0..{n_heads - 1}")
    return layer, head


def parse_heads(
    labels: Iterable[str | Head], n_layers: int | None = None, n_heads: int | None = None
) -> list[Head]:
    """Parse several labels (a comma-separated string is accepted too)."""
    if isinstance(labels, str):
        labels = [s for s in labels.split(",") if s.strip()]
    return [parse_head(x, n_layers, n_heads) for x in labels]


def all_heads(n_layers: int, n_heads: int) -> list[Head]:
    """Every ``(layer, head)`` in layer-major order."""
    return [(layer, head) for layer in range(n_layers) for head in range(n_heads)]


def heads_by_layer(heads: Iterable[Head]) -> dict[int, list[int]]:
    """``{layer: [head, ...]}`` in the order the heads come (layers by first appearance)."""
    out: dict[int, list[int]] = {}
    for layer, head in heads:
        out.setdefault(layer, []).append(head)
    return out
