"""A system's options are the keyword-only parameters of its ``run``: their annotations (ranges included, through
the aliases below) are the contract, checked by ``check_options`` when a task or trainer is built -- before any
sample runs -- so ``-T accept_after=x`` is one clear error instead of a crash in every sample.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import ConfigDict, Field, create_model

from mara_bench.core.typed_config import validate

AtLeastOne = Annotated[int, Field(ge=1)]
"""An option counting something that must happen at least once."""
NonNegative = Annotated[int, Field(ge=0)]
"""An option counting something that may not happen at all."""


def option_names(run: Callable[..., Any]) -> list[str]:
    """The keyword-only parameters of ``run``: the system's own options."""
    return list(_keyword_only(run))


@functools.cache
def _keyword_only(run: Callable[..., Any]) -> tuple[str, ...]:
    """``option_names``, read once per function (every system run splits its options with them)."""
    parameters = inspect.signature(run).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def check_options(system: str, run: Callable[..., Any], options: dict[str, Any]) -> dict[str, Any]:
    """``options`` checked against ``run``'s annotated keyword-only parameters; a problem raises ``ConfigError``."""
    checked = validate(_options_model(run), options, f"system {system!r} options")
    return {name: getattr(checked, name) for name in options}


@functools.cache
def _options_model(run: Callable[..., Any]) -> type:
    hints = typing.get_type_hints(run, include_extras=True)
    parameters = inspect.signature(run).parameters
    fields = {name: (hints[name], parameters[name].default) for name in option_names(run)}
    return create_model(
        f"{run.__module__.rsplit('.', 1)[-1]}_options",
        __config__=ConfigDict(extra="forbid", strict=True, arbitrary_types_allowed=True),
        **fields,
    )
