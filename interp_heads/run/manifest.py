"""A run folder's ``manifest.json`` as one frozen, versioned value (:class:`Manifest`).

The manifest on disk is a JSON object written by ``pipeline.state`` and the study steps. Its
known keys become typed fields (a value of the wrong type, as in a manifest edited by hand,
is kept aside in ``extra`` and its field reads as unset, as every reader treated it before);
every other key is kept in ``extra``. The keys' order on disk is kept too, so
``Manifest.from_dict(d).to_dict() == d`` key for key and in order: reading a manifest and
writing it back loses nothing.

Versions: today's manifests carry no version key and are version 1. A manifest whose
``manifest_version`` is newer than this code knows is refused (an ``InputError``), never
half-read.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any

from interp_heads.errors import InputError

MANIFEST_VERSION = 1  # the manifests written today (no ``manifest_version`` key on disk)
VERSION_KEY = "manifest_version"


@dataclass(frozen=True)
class Manifest:
    """What a run folder records of itself: its command, config, plan, steps done, timings,
    splits, model and data; ``extra`` holds every other key as read."""

    version: int = MANIFEST_VERSION
    status: str | None = None  # "running", "complete", "failed", a study's own word
    command: str | None = None  # "run", "attribute", "ablate", a study's name ...
    config: dict | None = None  # the RunConfig as written (``RunConfig.to_dict``)
    config_digest: str | None = None
    plan: list | None = None  # the steps the run was asked to take
    steps: list | None = None  # the steps done
    timings: dict | None = None  # seconds per step of the latest invocation
    earlier_timings: list | None = None  # the timings of earlier invocations (a resumed run)
    model: dict | None = None  # spec, sha256, n_layers, n_heads ...
    data: dict | None = None  # per task: source, sha256, n_examples
    splits: dict | None = None  # per task: the ranking and evaluation example ids
    ks: list | None = None
    files: dict | None = None  # the outputs and conditions the run wrote
    versions: dict | None = None
    git: str | None = None
    seeds: dict | None = None
    metrics: dict | None = None
    known_heads: Any = None
    stability: Any = None
    sufficiency: Any = None
    error: str | None = None  # the error's one line (``status = "failed"``)
    fmt: Any = None  # per task: the prompt format used
    fmt_info: dict | None = None  # per task: where the format came from
    ranking: dict | None = None  # ``ablate``: the given ranking (its file, heads, checksum)
    probe: Any = None  # the probe's fit (``attribution.probe``)
    attention: Any = None  # a skipped attention step's reason
    verification: dict | None = None  # per task: the ranking's check against exact ablation
    elbow_k: dict | None = None  # per task: the ranking's elbow
    damage_k: Any = None  # the damage-matched k of each selection
    damage_metric: str | None = None  # the metric the damage is matched on
    metric_cache: Any = None  # distinct answers, scored once
    shared_generations: Any = None  # conditions read from the shared store, and generated
    extra: Any = field(default_factory=dict)  # every other key, as read
    order: tuple = ()  # the keys in their order on disk

    def __post_init__(self):
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    @classmethod
    def from_dict(cls, d: object) -> Manifest:
        """The manifest ``d`` read from disk (``None`` or ``{}``: an empty manifest).

        Raises:
            InputError: ``d`` is not a JSON object, or its version is newer than this code's.
        """
        if d is None:
            return cls()
        if not isinstance(d, dict):
            raise InputError(f"manifest.json: expected a JSON object, found {type(d).__name__}")
        version = d.get(VERSION_KEY, MANIFEST_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise InputError(f"manifest.json: {VERSION_KEY} {version!r} is not a version")
        if version > MANIFEST_VERSION:
            raise InputError(
                f"manifest.json: version {version}, newer than this interp_heads reads "
                f"({MANIFEST_VERSION}); upgrade interp_heads to read this run folder"
            )
        typed, extra = {}, {}
        for key, value in d.items():
            kind = _TYPES.get(key)
            if kind is not None and (kind is Any or isinstance(value, kind)):
                typed[key] = value
            else:  # unknown, or of a type this field does not hold: kept as read
                extra[key] = value
        return cls(version=version, **typed, extra=extra, order=tuple(d))

    def to_dict(self) -> dict:
        """The manifest as a JSON object: the keys read, in their order, then any field set
        since (``dataclasses.replace``); an unset field that was not on disk stays absent."""
        out = {}
        for key in self.order:
            out[key] = self._value(key)
        for key in _TYPES:
            if key not in out and getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.version != MANIFEST_VERSION or VERSION_KEY in self.order:
            out[VERSION_KEY] = self.version
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def _value(self, key: str):
        if key == VERSION_KEY:
            return self.version
        if key in self.extra:
            return self.extra[key]
        return getattr(self, key)

    def __bool__(self) -> bool:
        """Whether the manifest holds any key (an absent ``manifest.json`` reads as empty)."""
        return bool(self.to_dict())

    @classmethod
    def of(cls, manifest: Manifest | dict | None) -> Manifest:
        """``manifest`` as a ``Manifest`` (a dict as read from disk, ``None`` as empty)."""
        return manifest if isinstance(manifest, Manifest) else cls.from_dict(manifest)

    def with_updates(self, **values) -> Manifest:
        """This manifest with the fields ``values`` set, as ``dict.update`` sets keys: a key
        already on disk keeps its place, a new one goes last (so the file keeps the key order
        the pipeline's writes have always given it). The one way a manifest is changed.

        Raises:
            TypeError: a name that is no field of the manifest (a study's own key:
                :meth:`with_extra`).
        """
        unknown = sorted(set(values) - set(_TYPES))
        if unknown:
            raise TypeError(f"Manifest has no field {', '.join(map(repr, unknown))}")
        return Manifest.from_dict({**self.to_dict(), **values})

    def with_extra(self, key: str, value) -> Manifest:
        """This manifest with a key of its own (a study's, named by a constant) set to
        ``value``, placed as :meth:`with_updates` places a field."""
        if key in _TYPES or key == VERSION_KEY:
            raise TypeError(f"{key!r} is a field of the manifest: set it with with_updates")
        return Manifest.from_dict({**self.to_dict(), key: value})

    def get(self, key: str, default=None):
        """The value of ``key`` as on disk (a typed field or an extra key), else ``default``."""
        if key in self.extra:
            return self.extra[key]
        if key in _TYPES and getattr(self, key) is not None:
            return getattr(self, key)
        return default

    @property
    def total_seconds(self) -> float | None:
        """Seconds the latest invocation took in all (``timings["total"]``), when recorded."""
        total = (self.timings or {}).get("total")
        return float(total) if isinstance(total, int | float) else None

    @property
    def model_spec(self) -> str | None:
        """The model the run used: the config's ``model``, else the manifest's model spec."""
        spec = (self.config or {}).get("model") or (self.model or {}).get("spec")
        return str(spec) if spec else None

    def todo(self) -> list[str] | None:
        """The planned steps not done yet (the report step aside); ``None`` when the manifest
        records no plan or no steps."""
        if self.plan is None or self.steps is None:
            return None
        return [s for s in self.plan if s != "report" and s not in self.steps]


_SKIP = {"version", "extra", "order"}
_KINDS = {"str": str, "dict": dict, "list": list, "Any": Any}
# the JSON type each typed field holds, from its annotation (``str | None`` -> str)
_TYPES = {
    f.name: _KINDS[str(f.type).split(" | ")[0]] for f in fields(Manifest) if f.name not in _SKIP
}
