"""Stored responses as zlib streams: ``deflate`` one, and ``inflate`` one under a size cap, checking its hash.

``inflate`` decompresses piece by piece (at most ``PIECE`` bytes of output per step), so a blob that claims little
and inflates to gigabytes costs at most its cap in memory before it is refused, and its sha256 is computed as it
goes.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable

PIECE = 1 << 16
LEVEL = 6


class BlobProblem(ValueError):
    """A blob that is not a complete zlib stream of the expected content within its cap (the message says which)."""


def deflate(data: bytes) -> bytes:
    return zlib.compress(data, LEVEL)


def deflated_limit(limit: int) -> int:
    """The most bytes a zlib stream of at most ``limit`` bytes of content can take (stored blocks' worst case)."""
    return limit + limit // 1000 + 64


def inflate(chunks: Iterable[bytes], limit: int, expected: str) -> bytes:
    """The content of the zlib stream ``chunks``, which must be at most ``limit`` bytes and hash (sha256) to
    ``expected``; ``BlobProblem`` otherwise, raised as soon as the cap is passed."""
    stream, digest, out = zlib.decompressobj(), hashlib.sha256(), bytearray()
    try:
        for chunk in chunks:
            pending = chunk
            while pending and not stream.eof:
                piece = stream.decompress(pending, PIECE)
                out += piece
                digest.update(piece)
                if len(out) > limit:
                    raise BlobProblem(f"it inflates past its cap of {limit:,} bytes")
                pending = stream.unconsumed_tail
            if stream.eof and (pending or stream.unused_data):
                raise BlobProblem("it has bytes after its compressed stream")
    except zlib.error as err:
        raise BlobProblem(f"it is not a zlib stream ({err})") from None
    if not stream.eof:
        raise BlobProblem("its compressed stream is cut short")
    if digest.hexdigest() != expected:
        raise BlobProblem("it does not match its content hash")
    return bytes(out)
