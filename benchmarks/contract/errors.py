"""The one kind of error a user causes: bad input (an argument, a results file, a trace, a curve) or a refusal (the
device is busy, the dtype has no rate). Its message is the one line the user sees; `python -m benchmarks` prints it
and exits with 2 wherever it was raised, so no command has to catch it to say it well."""


class UserError(Exception):
    """Bad input or a refusal: `str(error)` is the whole message, one line, naming what to change."""

    status = 2  # the exit status `run_command` returns for it


class CommandFailed(UserError):
    """A command that cannot finish what it was asked (a file it cannot write, a model that crashed): one line, and
    the exit status the command documents (1 unless said otherwise)."""

    def __init__(self, message: str, status: int = 1):
        super().__init__(message)
        self.status = status


def run_command(command, *args) -> int:
    """Run a command's code: a UserError raised anywhere in it is one line on stderr (made printable) and its status
    (2 for bad input), Ctrl-C one line and 130, running out of memory one line and 1. The one place a user's error
    is caught for the command line, for every entry point."""
    import sys

    from benchmarks.contract.text import printable

    try:
        return command(*args)
    except UserError as exc:
        print(printable(f"error: {exc}"), file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory: the command needed more memory than this process may use", file=sys.stderr)
        return 1
