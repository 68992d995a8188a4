"""Tools that record and replay their responses (``-T tool_cache=off|record|replay|replay-or-record``).

``ToolCache.wrap(name, tool, variant)`` puts one tool behind the store: a call's request -- the tool, its
arguments normalised (``keys``) and the settings that shape its answer (``variant``: backend, k, blocklist, sandbox,
...; never endpoints or keys) -- is hashed into the entry key of the run's snapshot. A snapshot is checked when the
cache opens (``ResponseStore.verify``), and a recorded response answers only the very request it was recorded for,
only within what the recording settings let the tool return.

- ``record``: every call runs the tool and stores its response (text, documents and sources, or its tool error);
  a failure that may not repeat (``TransientToolError``: timeout, connection error, HTTP 429/5xx, garbled answer;
  or a search whose queries partly failed so) is never stored, only counted as ``error``.
- ``replay``: every call is answered from the snapshot; the tool is never run (no network, no API key needed) and a
  request the snapshot lacks is a ``ToolError`` the agent sees (``tool cache miss: ...``), counted as a miss.
- ``replay-or-record``: answered from the snapshot when recorded, else run and recorded (fills gaps; a transient
  failure is tried live again next time).

A snapshot frozen while a run records into it (``mara tools freeze`` from another shell) stays as frozen: the run
records the rest into ``NAME.after-<id>``, warns once, and keeps replaying the frozen entries -- never a stream of
tool errors.

Counts (hit, miss, record, live = calls that ran the real tool, error = transient failures not recorded) are kept
per toolbox and, inside ``counting()``, per sample: the system solver puts them on the sample's ``accounting``
score.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any, Literal

from mara_bench.core.episodes import ToolError, ToolFunction, TransientToolError
from mara_bench.harness.toolbase.output import ToolText
from mara_bench.harness.toolcache.counts import SAMPLE_COUNTS, CacheCounts
from mara_bench.harness.toolcache.keys import canonical_json, request_key, request_of
from mara_bench.harness.toolcache.locations import open_store
from mara_bench.harness.toolcache.store import ResponseStore, SnapshotFrozen, StoreError
from mara_bench.harness.toolcache.variants import response_limit

Mode = Literal["off", "record", "replay", "replay-or-record"]
logger = logging.getLogger(__name__)


def encode_response(output: str | None, error: str | None) -> bytes:
    """A response as stored: the text with its documents and sources, or the tool error's message."""
    documents = list(getattr(output, "documents", ()))
    sources = list(getattr(output, "sources", ()))
    is_tool_text = isinstance(output, ToolText)
    body = {
        "text": output,
        "tool_text": is_tool_text,
        "documents": documents,
        "sources": sources,
        "error": error,
    }
    return canonical_json(body).encode()


def decode_response(data: bytes) -> str:
    """The stored response as the tool returned it (``ToolText`` kept), or its ``ToolError`` raised."""
    body = json.loads(data)
    if body["error"] is not None:
        raise ToolError(body["error"])
    if body["tool_text"]:
        return ToolText(body["text"], body["documents"], body["sources"])
    return body["text"]


class ToolCache:
    """One run's cache: a store, the snapshot read and written, and the mode."""

    def __init__(self, store: ResponseStore, snapshot: str, mode: Mode):
        self.store, self.snapshot, self.mode = store, snapshot, mode
        self.counts = CacheCounts()
        self.frozen_under_us: list[str] = []
        """Snapshots frozen while this run recorded into them, newest first (read after ``snapshot``)."""
        self._switching = threading.Lock()

    def _count(self, outcome: str) -> None:
        self.counts.add(outcome)
        if (sample := SAMPLE_COUNTS.get()) is not None:
            sample.add(outcome)

    def wrap(self, name: str, tool: ToolFunction | None, variant: dict[str, Any]) -> ToolFunction:
        """``tool`` behind the cache (``None`` in ``replay``: there is no live tool to run)."""

        async def cached(**arguments: Any) -> str:
            request = request_of(name, arguments, variant)
            key = request_key(request)
            if self.mode != "record":
                recorded = self._recorded(key, request)
                if recorded is not None:
                    self._count("hit")
                    return decode_response(recorded)
                if self.mode == "replay" or tool is None:
                    self._count("miss")
                    raise ToolError(
                        f"tool cache miss: snapshot {self.snapshot!r} has no recorded {name} response for "
                        f"{json.dumps(request['arguments'], ensure_ascii=False)[:300]} (replay never calls the tool)"
                    )
            self._count("live")
            try:
                output = await tool(**arguments)
            except TransientToolError:
                self._count("error")  # would not be the same tomorrow: never recorded
                raise
            except ToolError as err:
                self._store(name, key, request, encode_response(None, str(err)), "error")
                raise
            if getattr(output, "transient", False):
                self._count("error")
            else:
                self._store(name, key, request, encode_response(output, None), "ok")
            return output

        return cached

    def _recorded(self, key: str, request: dict[str, Any]) -> bytes | None:
        """The recorded response to ``request``: only from an entry that holds this very request, and only
        within what the recording settings let the tool return (decompression stops past that). After a
        freeze mid-run, the continuation snapshot is read first, then the frozen ones."""
        for snapshot in (self.snapshot, *self.frozen_under_us):
            entry = self.store.entry(snapshot, key)
            if entry is not None and canonical_json(entry.request) == canonical_json(request):
                return self.store.get_blob(entry.blob, response_limit(request))
        return None

    def _store(self, name: str, key: str, request: dict[str, Any], data: bytes, status: str) -> None:
        try:
            self.store.record(self.snapshot, key, name, request, data, status)
        except SnapshotFrozen:
            with self._switching:
                if self.store.require_snapshot(self.snapshot).frozen:
                    self._continue_after_freeze()
            self.store.record(self.snapshot, key, name, request, data, status)
        self._count("record")

    def _continue_after_freeze(self) -> None:
        """The snapshot was frozen while this run recorded into it: record the rest into a new snapshot named
        after it and its id (``NAME.after-<id>``), say so once, and keep reading the frozen one."""
        frozen = self.store.require_snapshot(self.snapshot)
        continuation = f"{frozen.name[:100]}.after-{frozen.digest.removeprefix('sha256:')[:12]}"
        while self.store.ensure_snapshot(continuation).frozen:
            continuation = (
                f"{continuation[:100]}.after-{self.store.require_snapshot(continuation).digest[7:19]}"
            )
        self.frozen_under_us.insert(0, self.snapshot)
        self.snapshot = continuation
        logger.warning(
            "tool cache: snapshot %r of %s was frozen while this run recorded into it (id %s); the run records "
            "the rest into snapshot %r and still replays the frozen one",
            frozen.name,
            self.store.location,
            frozen.digest,
            continuation,
        )

    def summary(self) -> dict[str, Any]:
        """What an eval log records about the cache: mode, store, snapshot and its id (frozen snapshots)."""
        snapshot = self.store.require_snapshot(self.snapshot)
        return {
            "mode": self.mode,
            "store": self.store.location,  # redacted by the store
            "snapshot": self.snapshot,
            "snapshot_id": snapshot.digest,
            "frozen": snapshot.frozen,
            "entries": snapshot.entries,
        }


def open_cache(mode: Mode, snapshot: str, store_location: str, max_bytes: int | None) -> ToolCache:
    """The cache a run uses, checked before any sample runs: ``replay`` needs the store and the snapshot;
    ``record`` and ``replay-or-record`` create them and refuse a frozen snapshot (it never changes)."""
    store = open_store(store_location, create=mode != "replay", max_bytes=max_bytes)
    if mode != "replay":
        store.ensure_snapshot(snapshot)
    if store.verify(snapshot).frozen and mode != "replay":
        raise StoreError(
            f"tool store {store.location}: snapshot {snapshot!r} is frozen, so -T tool_cache={mode} cannot add to "
            f"it; replay it with -T tool_cache=replay, or record into a new -T tool_snapshot=NAME"
        )
    return ToolCache(store, snapshot, mode)
