"""One lookup for every registry of mara-bench: systems, judges, protocols, benchmarks, training methods and the
trainer's plug-ins (advantage estimators, policy losses, aggregations, KL estimators).

``lookup(registry, name, kind)`` returns the entry or raises ``ValueError("unknown <kind> '<name>'; valid: a, b, c;
did you mean 'b'?")``, the same words everywhere, with the closest valid name when one is close. It lives in
``judges`` because judges are the lowest layer: harness, trainer and leaderboards all import judges, and judges
import none of them, so every registry can use this one helper.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from typing import TypeVar

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
