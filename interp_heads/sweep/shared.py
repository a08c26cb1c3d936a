"""A sweep's side of a shared generation store (``store.shared``): the key of each condition's
generations, each task's replacement values (read back, or averaged and stored), the look-ups
before the executor runs and the writes after it.

A condition found in the store is not generated: its stored answers are scored and written to the
run's own resume store exactly as freshly generated ones, so the run's tables are those of a run
without the store. Only generations are shared; scores are not (each run scores with its own
metrics and reference).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from interp_heads.store import digest
from interp_heads.store.resume import (
    generation_key,
    model_fingerprint,
    tensor_digest,
    values_key,
)
from interp_heads.store.shared import SharedGenerations


def prompts_digest(model, prompts: list[str]) -> str:
    """Digest of the prompts as generation reads them: the strings, their token ids (with the
    model's default BOS, as ``generation.decode`` tokenizes them) and the pad and end ids."""
    bos = model.cfg.default_prepend_bos
    ids = [model.to_tokens(p, prepend_bos=bos, move_to_device=False)[0].tolist() for p in prompts]
    tok = model.tokenizer
    specials = {"pad": tok.pad_token_id, "eos": tok.eos_token_id, "bos": bos}
    return digest({"prompts": list(prompts), "ids": ids, **specials}, 32)


def kind_identity(config) -> dict:
    """The sweep's ablation kind as the shared keys hold it: its name and class (a kind
    registered again under a taken name is another kind) and every option it declares."""
    kind = config.kind()
    options = {n: repr(v) for n, v in dataclasses.asdict(kind.options).items()}
    cls = f"{type(kind).__module__}.{type(kind).__qualname__}"
    return {"kind": config.ablation, "class": cls, "options": options}


@dataclass(frozen=True)
class TaskKeys:
    """What every condition of one task shares in its generation key; :meth:`key` adds the heads."""

    model_fp: dict
    prompts: str
    ablation: dict
    generation: dict
    device: str

    @classmethod
    def of(cls, model, prompts: list[str], config, batch_size: int, values=None) -> TaskKeys:
        """The keys of a task's conditions under sweep ``config`` (``values``: the ablation
        kind's replacement values for these prompts)."""
        ablation = {**kind_identity(config), "positions": config.positions}
        return cls(
            model_fingerprint(model),
            prompts_digest(model, prompts),
            {**ablation, "values": tensor_digest(values)},
            config.generation_key(batch_size),
            torch.device(model.cfg.device).type,
        )

    def with_values(self, values) -> TaskKeys:
        return dataclasses.replace(
            self, ablation={**self.ablation, "values": tensor_digest(values)}
        )

    def key(self, heads) -> str:
        return generation_key(
            self.model_fp, self.prompts, heads, self.ablation, self.generation, self.device
        )


def task_values(store: SharedGenerations, model, prompts: list[str], config, batch_size: int):
    """``(values, keys)``: the ablation kind's replacement values for ``prompts`` (read from
    ``store`` when it holds them under :func:`~interp_heads.store.resume.values_key`, else
    computed and written there) and the task's :class:`TaskKeys`."""
    keys = TaskKeys.of(model, prompts, config, batch_size)
    vkey = values_key(
        keys.model_fp,
        keys.prompts,
        kind_identity(config),
        batch_size,
        keys.device,
        config.batch_padding,
    )
    values = store.get_values(vkey)
    if values is None:
        values = kind_values(config, model, prompts, batch_size)
        if values is not None:  # a kind without values (zero, scale) stores nothing
            store.put_values(vkey, values)
    return values, keys.with_values(values)


def kind_values(config, model, prompts: list[str], batch_size: int):
    """The sweep's ablation kind's replacement values for ``prompts``, in the sweep's batches
    (``batch_padding`` is passed only when the config sets it)."""
    padding = {} if config.batch_padding is None else {"batch_padding": config.batch_padding}
    return config.kind().values(model, prompts, batch_size=batch_size, **padding)


def split_stored(store: SharedGenerations | None, units, keys: dict) -> tuple[list, list]:
    """``(found, rest)``: the units whose generations ``store`` holds, as finished units
    ``(unit, generations, 0.0)``, and the others (``keys``: unit key -> generation key)."""
    if store is None:
        return [], list(units)
    found, rest = [], []
    for unit in units:
        outs = store.get(keys[unit.key], len(unit.context.prompts))
        if outs is None:
            rest.append(unit)
        else:
            found.append((unit, outs, 0.0))
    return found, rest


def remember(store: SharedGenerations | None, group, keys: dict) -> None:
    """Write each newly generated unit of ``group`` into ``store``."""
    if store is None:
        return
    for unit, outs, _ in group:
        about = {k: unit.meta.get(k) for k in ("task", "selection", "k", "seed")}
        store.put(keys[unit.key], outs, {**about, "n_heads": len(unit.heads)})
