"""Judge prompt templates kept as data files under ``judges/prompts/``.

Each file starts with one header line ``# source: ...`` naming where the prompt comes from; the rest of the file is
the prompt, verbatim (``str.format`` placeholders in braces), followed by one newline.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent / "prompts"
HEADER_PREFIX = "# source:"


@cache
def load_prompt(name: str) -> str:
    """The prompt template ``judges/prompts/<name>.txt`` without its source header and final newline."""
    path = PROMPTS_DIR / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in PROMPTS_DIR.glob("*.txt"))
        raise ValueError(
            f"No judge prompt named {name!r} in {PROMPTS_DIR}; known prompts: {', '.join(known)}"
        )
    header, _, body = path.read_text(encoding="utf-8").partition("\n")
    if not header.startswith(HEADER_PREFIX):
        raise ValueError(
            f"{path}: the first line must be a '{HEADER_PREFIX} ...' header naming the prompt's source"
        )
    return body.removesuffix("\n")
