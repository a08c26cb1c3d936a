"""From parsed flags to a ``RunConfig``: the commands hand over, they do not build experiments."""

from __future__ import annotations

from interp_heads.config.run_config import RunConfig


def config_from_args(args, **fixed) -> RunConfig:
    """The ``RunConfig`` of a command's flags: every flag named after a config field (flags made
    by ``config.flags.cli_flag`` are), plus ``fixed``; a flag left unset (None) keeps the field's
    default."""
    values = {
        name: getattr(args, name)
        for name in RunConfig.keys()
        if hasattr(args, name) and getattr(args, name) is not None
    }
    return RunConfig(**{**values, **fixed})
