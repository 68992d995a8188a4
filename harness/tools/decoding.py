"""Content-Encoding decoding with the decoded size bounded while it is decoded (decompression bombs).

``BoundedDecoder(encodings, limit)`` undoes the ``Content-Encoding`` layers (``gzip``, ``x-gzip``, ``deflate``,
``identity``; several layers such as ``gzip, gzip`` in order) chunk by chunk. Each layer may produce at most
``limit`` bytes in all: zlib is asked for no more than one byte past what is left, so a 2 kB answer that would
inflate to gigabytes stops after ``limit + 1`` bytes with ``DecodedTooLarge``, never holding more. Any other
encoding (``br``, ``zstd``: the web tools do not ask for them) is ``UnsupportedEncoding``.
"""

from __future__ import annotations

import zlib

ZLIB_OR_GZIP = 32 + zlib.MAX_WBITS
"""zlib ``wbits`` that accept a gzip or a zlib header (HTTP ``deflate`` is zlib-wrapped)."""
DECODED = {"gzip", "x-gzip", "deflate"}
ACCEPT_ENCODING = "gzip, deflate"
"""What the web tools ask servers for: only encodings ``BoundedDecoder`` can bound."""


class DecodedTooLarge(Exception):
    """The decoded body passed the limit."""


class UnsupportedEncoding(Exception):
    """A ``Content-Encoding`` this decoder does not undo."""


class _Layer:
    """One zlib/gzip layer whose output is capped at ``limit`` bytes in all."""

    def __init__(self, limit: int):
        self.inflater = zlib.decompressobj(ZLIB_OR_GZIP)
        self.left = limit

    def feed(self, data: bytes) -> bytes:
        out = self.inflater.decompress(data, self.left + 1)
        self.left -= len(out)
        if self.left < 0 or self.inflater.unconsumed_tail:
            raise DecodedTooLarge
        return out

    def flush(self) -> bytes:
        out = self.inflater.flush(self.left + 1)
        self.left -= len(out)
        if self.left < 0:
            raise DecodedTooLarge
        return out


class BoundedDecoder:
    """Decode a body sent with ``Content-Encoding: encodings`` (the header's value), at most ``limit`` bytes."""

    def __init__(self, encodings: str, limit: int):
        names = [name.strip().lower() for name in encodings.split(",") if name.strip()]
        unknown = [name for name in names if name not in DECODED | {"identity"}]
        if unknown:
            raise UnsupportedEncoding(", ".join(unknown))
        # The last encoding named was applied last, so it is undone first.
        self.layers = [_Layer(limit) for name in reversed(names) if name in DECODED]
        self.limit, self.size = limit, 0

    def feed(self, chunk: bytes) -> bytes:
        """The decoded bytes ``chunk`` completes; ``DecodedTooLarge`` once the total passes the limit."""
        for layer in self.layers:
            chunk = layer.feed(chunk)
        return self._counted(chunk)

    def flush(self) -> bytes:
        """What the layers still hold at the end of the body."""
        tail = b""
        for layer in self.layers:
            tail = (layer.feed(tail) if tail else b"") + layer.flush()
        return self._counted(tail)

    def _counted(self, data: bytes) -> bytes:
        self.size += len(data)
        if self.size > self.limit:
            raise DecodedTooLarge
        return data
