"""Errors raised by CudaPerf: one hierarchy, messages that say what to do.

Errors are for the *user* of the library (a bad task file, a missing
compiler). A bad *submission* never raises: it becomes a status in the
step's result.
"""


class CudaPerfError(Exception):
    """Base class of every error this package raises."""


class TaskFormatError(CudaPerfError):
    """A task file is malformed; the message names the file and the field."""

    def __init__(self, path: str, field: str, problem: str) -> None:
        self.path, self.field, self.problem = path, field, problem
        super().__init__(f"{path}: field '{field}': {problem}")


class ScaffoldError(CudaPerfError, ValueError):
    """A C function cannot become a task as written; the message says what to change."""


class TaskNotFoundError(CudaPerfError, KeyError):
    """A task id is not in the loaded task set."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class ToolchainError(CudaPerfError):
    """A compiler the backend needs is missing or unusable."""


class BackendUnavailableError(CudaPerfError):
    """The requested execution backend cannot run on this machine."""
