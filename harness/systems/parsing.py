"""Strict parsers for the tagged text agents write: thinking removal, ``<tag>`` blocks, ``\\boxed{}`` answers."""

from __future__ import annotations

import re

THINK_END = "</think>"


def strip_thinking(text: str) -> str:
    """The text after the last ``</think>`` (what an agent hands on); the whole text when there is none."""
    return text.rsplit(THINK_END, 1)[-1].strip()


def tag_blocks(text: str, tag: str) -> list[str]:
    """The contents of every complete ``<tag>...</tag>`` block, in order (case-sensitive, not nested)."""
    pattern = re.compile(rf"<{re.escape(tag)}>(.*?)</{re.escape(tag)}>", re.DOTALL)
    return [match.strip() for match in pattern.findall(text)]


def last_tag(text: str, tag: str) -> str | None:
    """The contents of the last ``<tag>...</tag>`` block, or ``None``."""
    blocks = tag_blocks(text, tag)
    return blocks[-1] if blocks else None


def last_boxed(text: str) -> str | None:
    """The contents of the last balanced ``\\boxed{...}`` (nested braces kept), or ``None``."""
    opener = "\\boxed{"
    start = text.rfind(opener)
    while start != -1:
        depth = 0
        for position in range(start + len(opener) - 1, len(text)):
            if text[position] == "{":
                depth += 1
            elif text[position] == "}":
                depth -= 1
                if depth == 0:
                    return text[start + len(opener) : position].strip()
        start = text.rfind(opener, 0, start)
    return None
