"""How much memory a decompression bomb costs the harness: browse fetches a 1.8 kB answer sent with
``Content-Encoding: gzip, gzip`` that decodes to 1 GB of zeros, from a server on 127.0.0.1, and the growth of the
process's peak resident memory over the call is printed (not a timing, so a plain script, not pytest-benchmark).

Run in the checkout to measure: ``PYTHONPATH=. python benchmarks/bomb_memory.py``.
"""

from __future__ import annotations

import asyncio
import gzip
import resource
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "tools"))
from conftest import FakeWeb, _serving  # noqa: E402  (the tests' scripted web server)

from mara_bench.core.episodes import ToolError  # noqa: E402
from mara_bench.harness.tools import build_toolbox  # noqa: E402

DECODED_MB = 1000


def bomb() -> bytes:
    """``DECODED_MB`` MB of zeros, gzipped twice, built without holding the decoded bytes."""
    inner = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = bytes(1 << 20)
    return gzip.compress(b"".join(inner.compress(block) for _ in range(DECODED_MB)) + inner.flush(), 9)


def main() -> None:
    body = bomb()
    with _serving(FakeWeb()) as web:
        web.route(
            "/bomb",
            web.reply(body=body, content_type="text/html", headers={"Content-Encoding": "gzip, gzip"}),
        )
        tools = build_toolbox(["browse"], browse_allow_private=True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        try:
            asyncio.run(tools.call("browse", url=f"{web.url}/bomb"))
        except ToolError as err:
            print(err)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    print(
        f"bomb of {len(body):,} bytes ({DECODED_MB} MB decoded): peak resident memory grew by {grown:.0f} MiB"
    )


if __name__ == "__main__":
    main()
