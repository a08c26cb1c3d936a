"""The one error type of bad input: its message is one line naming the problem (CLI: exit 2)."""


class PipelineError(ValueError):
    """A bad input (config, task, model, folder); the message is one line naming the problem."""


InputError = PipelineError  # the name library modules raise bad input under (a ValueError too)
