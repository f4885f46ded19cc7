"""The verdict of one submission: one enum, used everywhere a status is written or read."""

from __future__ import annotations

from enum import Enum


class Status(str, Enum):
    """What happened to a submission (``info["status"]`` holds its value).

    A ``str`` enum: ``Status.OK == "ok"`` holds, so logs and JSON carry plain strings.
    """

    OK = "ok"
    FORMAT_ERROR = "format_error"  # no usable code in the reply
    COMPILE_ERROR = "compile_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    WRONG_ANSWER = "wrong_answer"
    REJECTED = "rejected"  # code found, refused before compiling (forbidden construct)

    def __str__(self) -> str:
        return self.value

    @property
    def has_code(self) -> bool:
        """Whether the reply carried code that got past the screen (it reached the compiler)."""
        return self not in (Status.FORMAT_ERROR, Status.REJECTED)


STATUSES: tuple[str, ...] = tuple(s.value for s in Status)
