"""Progress bars with an ETA for the phases of ``mara train`` that run before or between RL steps: the cold
start's demonstrations and fine-tuning (``mara_bench.trainer.run.warmup``) and the held-out evaluations
(``mara_bench.trainer.run.heldout``). Shown on the main rank only; they leave no line behind when done."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")


def bar(total: int, desc: str, *, show: bool = True, unit: str = "it") -> Any:
    """A ``tqdm`` bar of ``total`` units (elapsed, rate and ETA), cleared when closed."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not show, leave=False, dynamic_ncols=True)


def counted(items: Iterable[T], total: int, desc: str, *, show: bool = True, unit: str = "it") -> Iterator[T]:
    """``items``, one bar step each."""
    with bar(total, desc, show=show, unit=unit) as progress:
        for item in items:
            yield item
            progress.update()


async def gathered(awaitables: list[Awaitable[T]], desc: str, *, show: bool = True) -> list[T]:
    """``asyncio.gather`` of ``awaitables`` (results in order), the bar counting each as it finishes."""
    with bar(len(awaitables), desc, show=show, unit="run") as progress:

        async def ticked(awaitable: Awaitable[T]) -> T:
            result = await awaitable
            progress.update()
            return result

        return list(await asyncio.gather(*(ticked(a) for a in awaitables)))
