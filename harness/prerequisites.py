"""Mistakes in what a user configured, shown by Inspect as one line instead of a traceback.

Inspect prints a ``PrerequisiteError`` that ends a command as its message alone (through its rich console, so
nothing at all under ``--display none``); any other error as a 100-300 line traceback with the useful line last.
``one_line_errors`` wraps the functions Inspect calls to build a task or a model (``evaluation_task``, the ``local/``
model factory): an error of this project's own classes (a ``ConfigError``, a malformed data row, a missing file,
...) or a plain ``ValueError`` (the registries' unknown-name errors) leaves them as the same error made a
``PrerequisiteError`` too -- its type, attributes and message kept, so code catching it by its own type still
does -- which ``_OneLineHook`` prints as one line on stderr when it ends the command. Errors of other libraries
pass unchanged, with their traceback.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from mara_bench.core.inspect_compat import PrerequisiteError

F = TypeVar("F", bound=Callable[..., Any])

OWN_PACKAGE = "mara_bench"
"""The package whose exception classes describe a user's mistake in words meant for the user."""


def one_line_errors(function: F) -> F:
    """``function``, its configuration errors raised as ``PrerequisiteError`` (see the module docstring)."""

    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except Exception as err:
            if isinstance(err, PrerequisiteError) or not _is_configuration_error(err):
                raise
            raise as_prerequisite(err) from err

    return wrapper  # type: ignore[return-value]


def as_prerequisite(err: Exception) -> Exception:
    """A copy of ``err`` whose class is ``err``'s own class and ``PrerequisiteError``; printed as its one line on
    stderr when it ends the command (``_OneLineHook``)."""
    install_one_line_hook()
    cls = _prerequisite_class(type(err))
    copy = cls.__new__(cls, *err.args)
    copy.__dict__.update(err.__dict__)
    copy.args = err.args
    copy.message = str(err)
    return copy


def _is_configuration_error(err: Exception) -> bool:
    own = type(err).__module__.split(".")[0] == OWN_PACKAGE
    return type(err) is ValueError or own


@functools.cache
def _prerequisite_class(cls: type[Exception]) -> type[Exception]:
    return type(cls.__name__, (cls, PrerequisiteError), {"__module__": cls.__module__, "one_line": True})


def install_one_line_hook() -> None:
    """Put ``_OneLineHook`` in front of the current ``sys.excepthook`` (once)."""
    if not isinstance(sys.excepthook, _OneLineHook):
        sys.excepthook = _OneLineHook(sys.excepthook)


class _OneLineHook:
    """``sys.excepthook`` printing an ``as_prerequisite`` error as its message, one line on stderr, whatever the
    display: Inspect's own hook prints through its rich console, which ``--display none`` silences and which wraps
    at the terminal's width. Inspect's own errors for a task it cannot find become the line
    ``mara_bench.harness.task_spec_errors`` writes; any other exception goes to the hook it replaced."""

    def __init__(self, previous: Callable[..., Any]):
        self.previous = previous

    def __call__(self, kind: type[BaseException], err: BaseException, traceback: Any) -> None:
        from mara_bench.harness.task_spec_errors import explain

        line = str(getattr(err, "message", err)) if getattr(err, "one_line", False) else explain(err)
        if line is None:
            self.previous(kind, err, traceback)
        else:
            print(" ".join(line.split()), file=sys.stderr)
