"""Reading a run's config: a TOML file's keys flattened out of their sections, one-line errors.

``RunConfig.from_toml`` reads through :func:`read_toml`; the checks here need no config class.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import ValidationError

from interp_heads.config.options import section_options
from interp_heads.config.sections import SECTIONS
from interp_heads.errors import PipelineError

MAX_CONFIG_BYTES = 2**20  # a config is a few hundred bytes; a larger file is the wrong file


def read_toml(path: Path) -> dict:
    """The keys of a TOML config (flat, sectioned or under one ``[run]`` table), refusing a file
    that is not a regular file, is too big, malformed or sets nothing."""
    from interp_heads.config.validation import check_regular_file

    check_regular_file(path, f"config file {str(path)!r}", MAX_CONFIG_BYTES)
    try:
        d = tomllib.loads(path.read_text(encoding="utf-8-sig"))  # a BOM is fine
    except FileNotFoundError:
        raise PipelineError(f"config file {str(path)!r} not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise PipelineError(f"malformed config {str(path)!r}: {_msg(exc)}") from None
    if set(d) == {"run"} and isinstance(d["run"], dict):
        d = d["run"]
    if not flatten(d, str(path)):  # the defaults alone: every built-in task, ~30 min
        raise PipelineError(
            f"config {str(path)!r} sets nothing; a config must set at least one key, e.g. "
            'its tasks (tasks = ["retrieval"]): the defaults alone run every built-in task'
        )
    return d


def check_ks(ks, n_total_heads: int | None = None) -> None:
    """Every k must be in ``1..n_total_heads``."""
    if not ks:
        raise PipelineError("ks is empty")
    for k in ks:
        if k <= 0:
            raise PipelineError(f"k={k} must be > 0")
        if n_total_heads is not None and k > n_total_heads:
            raise PipelineError(f"k={k} exceeds the number of heads ({n_total_heads})")


def flatten(d: dict, source: str) -> dict:
    """A mapping's keys out of their section tables; a key given twice or in the wrong section
    is refused."""
    flat: dict = {}
    for key, value in d.items():
        if key in SECTIONS and isinstance(value, dict):  # no field takes a table as its value
            allowed = (*SECTIONS[key].model_fields, *section_options(key))
            for sub, v in value.items():
                if sub not in allowed:
                    raise PipelineError(
                        f"{source}: [{key}] has no key {sub!r}; it holds {', '.join(allowed)}"
                    )
                if sub in flat:
                    raise PipelineError(f"{source}: {sub} given twice")
                flat[sub] = v
        elif key in flat:
            raise PipelineError(f"{source}: {key} given twice")
        else:
            flat[key] = value
    return flat


def _msg(exc: Exception) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


def one_line(exc: ValidationError) -> str:
    """pydantic's first validation error as one line: ``where = value: what is wrong``."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
    msg = err["msg"].replace("Value error, ", "").replace("Input should be", "must be")
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where} = {err.get('input')!r}: {msg}{more}"


def names_skills(specs: list[str]) -> bool:
    """Whether a spec names a whole CogQA file (one task per skill, so maybe several)."""
    from interp_heads.tasks.cogqa import is_cogqa, split_spec

    return any(is_cogqa(t) and split_spec(t)[1] is None for t in specs)
