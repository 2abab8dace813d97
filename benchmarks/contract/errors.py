"""The one kind of error a user causes: bad input (an argument, a results file, a trace, a curve) or a refusal (the
device is busy, the dtype has no rate). Its message is the one line the user sees; `python -m benchmarks` prints it
and exits with 2 wherever it was raised, so no command has to catch it to say it well."""


class UserError(Exception):
    """Bad input or a refusal: `str(error)` is the whole message, one line, naming what to change."""
