"""Errors raised by the bundled agent: one hierarchy under the package's ``CudaPerfError``.

A bad *reply* never raises (it is graded into a status); these are for the
user of the agent: a missing model, a missing optional package, a server that
keeps failing.
"""

from __future__ import annotations

from cudaperf_env.errors import CudaPerfError


class AgentError(CudaPerfError):
    """Base class of every error the agent raises."""


class ModelNotFoundError(AgentError):
    """No model at the given path (or no embedded model installed)."""


class MissingDependencyError(AgentError):
    """An optional package a policy needs is not installed; the message says what to pip install."""


class PolicyError(AgentError):
    """A policy could not produce generations (a server kept failing or answered nonsense)."""


class RecordFormatError(AgentError):
    """A trajectory file line is not a turn record; the message names the file and line."""
