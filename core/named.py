"""The one registry style of mara-bench: a registry is a ``dict`` from name to entry, and every look-up goes through
``lookup``. An entry is registered where it is defined when that costs no import (a system, a judge, a protocol, a
benchmark's ``@benchmark`` declaration); where reading the entry would import something heavy (a training method,
an estimator or a loss: torch), the table holds a ``Named`` reference to it instead, loaded on use.

``lookup(registry, name, kind)`` returns the entry or raises ``ValueError("unknown <kind> '<name>'; valid: a, b, c;
did you mean 'b'?")``, the same words everywhere, with the closest valid name when one is close. It lives in
``core``, the floor every part of the package imports and which imports none of them.

``lazy_attributes(module, homes)`` is a package's ``__getattr__`` that imports each public name from its home
module when first asked for, so importing the package loads none of its heavy modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from typing import Any, TypeVar

Entry = TypeVar("Entry")


def unknown_name(kind: str, name: object, valid: Iterable[str]) -> str:
    """The message for an unknown ``name`` of ``kind``: the valid names, sorted, and the closest one if any."""
    names = sorted(valid)
    closest = get_close_matches(str(name), names, n=1)
    hint = f"; did you mean {closest[0]!r}?" if closest else ""
    return f"unknown {kind} {name!r}; valid: {', '.join(names) or 'none'}{hint}"


def lookup(registry: Mapping[str, Entry], name: str, kind: str) -> Entry:
    """``registry[name]``; an unknown name raises ``ValueError`` with ``unknown_name``'s message."""
    if name not in registry:
        raise ValueError(unknown_name(kind, name, registry))
    return registry[name]


@dataclass(frozen=True)
class Named:
    """A registered entry by reference: ``module:attribute``, imported on first ``load``, or the entry itself (a
    plug-in added at run time)."""

    target: str | Any

    def load(self) -> Any:
        if not isinstance(self.target, str):
            return self.target
        module, attribute = self.target.split(":")
        return getattr(importlib.import_module(module), attribute)


def lazy_attributes(module: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` (PEP 562) for ``module``: each name of ``homes`` imported from the module
    ``homes[name]`` on first use; any other name raises ``AttributeError``."""

    def attribute(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return attribute
