"""Record and replay every tool response, shared by evaluation and training (``-T tool_cache=``).

``store`` keeps responses content-addressed in named snapshots (``local_store``: a folder with a SQLite index and
compressed blobs; ``remote_store``: any fsspec URL; ``locations`` opens the one a location names); ``cached`` puts tools behind it in one of the modes ``off|record|replay|replay-or-record``;
``keys`` normalises a request and hashes it into its key; ``variants`` says which settings key a response and how
large one may be; ``blobs`` compresses and (under a cap, hash checked) inflates them; ``archive`` moves a snapshot
as one tar file, trusting nothing in it; ``cli`` is ``mara tools``. See docs/tool-cache.md.
"""

from mara_bench.harness.toolcache.cached import ToolCache, open_cache
from mara_bench.harness.toolcache.counts import COUNT_KEYS, CacheCounts, counting
from mara_bench.harness.toolcache.locations import open_store
from mara_bench.harness.toolcache.store import ResponseStore, Snapshot, StoreError
from mara_bench.harness.toolcache.variants import tool_variant

__all__ = [
    "COUNT_KEYS",
    "CacheCounts",
    "ResponseStore",
    "Snapshot",
    "StoreError",
    "ToolCache",
    "counting",
    "open_cache",
    "open_store",
    "tool_variant",
]
