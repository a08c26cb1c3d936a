"""The one error type of bad input: its message is one line naming the problem (CLI: exit 2)."""


class PipelineError(ValueError):
    """A bad input (config, task, model, folder); the message is one line naming the problem."""


InputError = PipelineError  # the name library modules raise bad input under (a ValueError too)


class ModelLoadError(RuntimeError):
    """Raised when a model spec cannot be resolved or loaded; the message is one line. Defined
    here, not beside the loaders, so the command line can catch it without importing torch."""


def one_line(exc: BaseException | str) -> str:
    """First line of an exception message, with its type when the message is empty."""
    text = str(exc).strip().splitlines()
    if isinstance(exc, BaseException):
        return text[0] if text else type(exc).__name__
    return text[0] if text else ""
