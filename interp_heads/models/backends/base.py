"""The model backend's base class and registry (``models.backends``).

A backend is a :class:`Backend` subclass registered in :data:`BACKENDS` under its ``name``. It
owns how a model is loaded (:meth:`~Backend.load`, and the ``tiny`` test model) and every place
where the model classes behave differently; the rest of the toolkit asks
``backend_of(model)`` and never tests which backend it has.
"""

from __future__ import annotations

from typing import ClassVar

from interp_heads.registry import NoContext, Registry


class Backend:
    """A model backend. Subclasses set ``name`` and implement what their models need.

    The defaults are the hooked backend's conventions where a convention is shared; the methods
    that depend on the model class raise ``NotImplementedError``.
    """

    name: ClassVar[str] = ""
    # whether a forward that starts at a layer takes the base run's keys and values of a shared
    # prompt prefix as a frozen KV cache (exact patching then skips recomputing that prefix)
    frozen_prefix: ClassVar[bool] = False

    @classmethod
    def build(cls, options, ctx: NoContext) -> Backend:
        """The backend (``BACKENDS.build``; a backend declares no options and needs no context)."""
        return cls()

    def check_available(self) -> None:
        """Raise ``BackendError`` (one line) when this environment cannot run the backend."""

    def owns(self, model) -> bool:
        """Whether ``model`` is of this backend's model class (for models the toolkit did not
        load; loaded ones have their backend's name in ``model_info.source_of(model)``)."""
        return False

    # ----------------------------------------------------------------------------- loading
    def load(self, spec: str, device: str, dtype, *, use_cache: bool = True, n_devices: int = 1):
        """The model ``spec`` names (``models.load.load_model`` resolved device and dtype)."""
        raise NotImplementedError(f"backend {self.name!r} loads no model")

    def check_name(self, spec: str) -> None:
        """Refuse (``ModelLoadError``, one line) a model spec that is no path and no name this
        backend loads, without importing torch (``models.names.check_model_name``, before the
        command line's heavy imports); the default leaves it to :meth:`load`."""

    def tiny(self, device: str | None = None):
        """The random ``tiny`` test model on this backend (model spec ``"tiny"``)."""
        raise NotImplementedError(f"backend {self.name!r} has no tiny model")

    # ----------------------------------------------------------------------------- running
    def final_logits(self, model, resid):
        """Logits ``[batch, d_vocab]`` at the last position, from the output of a forward with
        ``stop_at_layer=n_layers``."""
        raise NotImplementedError

    def kv_cache(
        self, model, batch: int, prefix=None, capacity: int | None = None, *, shared_prefix=False
    ):
        """One batch's KV cache for greedy generation: an object whose ``step(new_tokens,
        new_mask, full_mask)`` returns the last position's logits (hooks fire on new positions),
        starting from ``prefix`` (what :meth:`prompt_prefix` returned) when given. ``capacity``:
        the positions the batch will reach (prompt and answer), for a cache that preallocates.
        ``shared_prefix``: the caller's attention can read ``prefix`` in place (a backend may
        then skip copying it). A cache that has ``keep(rows)`` can drop the rows that stopped
        (it returns True)."""
        raise NotImplementedError

    def prompt_prefix(self, model, tokens, mask):
        """The KV cache of one pass over ``tokens`` (no hooks active), for :meth:`kv_cache` to
        start generations from; None: this backend cannot (generation reads the whole prompt)."""
        made = self.prompt_pass(model, tokens, mask)
        return None if made is None else made[0]

    def prompt_pass(self, model, tokens, mask, pieces=None):
        """``(prompt_prefix, last-position logits)`` of one pass over ``tokens`` (the logits
        give the first generated token when the prefix holds the whole prompt); None: as
        :meth:`prompt_prefix`. ``pieces``: lists of the batch's rows that may be passed apart
        and stacked (a backend may ignore it)."""
        return None

    def text_tokens(self, model, text: str) -> list[int]:
        """The ids of ``text`` alone: no BOS or other special token before it."""
        raise NotImplementedError

    # ----------------------------------------------------------------------------- patching
    def prefix_cache(self, model, layer: int, acts: dict, start_pos: int, copies: int):
        """The frozen KV cache of blocks ``layer..`` over positions ``< start_pos``, from the
        base run's ``hook_k``/``hook_v`` in ``acts``, repeated ``copies`` times (only asked
        when :attr:`frozen_prefix`)."""
        raise NotImplementedError(f"backend {self.name!r} takes no frozen prefix")

    def caching_hooks(self, names: set[str], keep) -> list:
        """Forward hooks that call ``keep(x, name)`` for each activation in ``names``, ``name``
        being the name asked for."""
        return [(n, lambda x, hook, n=n: keep(x, n)) for n in sorted(names)]

    def resid_input_kwargs(self, attention_mask) -> dict:
        """Extra arguments of a forward whose input is a residual stream (``start_at_layer``)."""
        return {}


BACKENDS: Registry[type[Backend]] = Registry("backend")


def get_backend(name: str) -> Backend:
    """The registered backend ``name``; a one-line ``BackendError`` for an unknown name."""
    from interp_heads.errors import InputError
    from interp_heads.models.tl_compat import BackendError

    try:
        return BACKENDS.build(name)
    except InputError:
        raise BackendError(
            f"unknown backend {name!r}; choose one of {', '.join(BACKENDS.names())}"
        ) from None


def backend_of(model) -> Backend:
    """The backend of ``model``: the one that loaded it (its ``source_of(model)["backend"]``),
    else the first registered backend (the built-ins first) whose model class it is, else
    ``hooked``."""
    from interp_heads.model_info import source_of

    named = source_of(model).get("backend")
    if named and named in BACKENDS:
        return BACKENDS.build(named)
    for name in BACKENDS.names():
        if (backend := BACKENDS.build(name)).owns(model):
            return backend
    return BACKENDS.build("hooked")


def prefix_copies(batch: int, rows: int) -> int:
    """How many copies (copy-major) of a prompt prefix of ``rows`` rows a generation batch of
    ``batch`` rows holds; a ``ValueError`` when it is not a whole number of them."""
    copies, rest = divmod(batch, rows)
    if rest or not copies:
        raise ValueError(f"a batch of {batch} rows cannot start from a prefix of {rows}")
    return copies


def n_kv_heads(model) -> int:
    """Key/value heads per layer (``n_heads`` without grouped-query attention)."""
    return getattr(model.cfg, "n_key_value_heads", None) or model.cfg.n_heads
