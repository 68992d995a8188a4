"""Role prompts as data files: ``load_prompt(name)`` reads ``<name>.txt`` and ``fill`` substitutes placeholders.

Each file starts with one header line ``# Source: ...`` naming where the text comes from (paper appendix or official
repository, kept verbatim) or saying it is ours; the prompt is everything after that line.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).parent
HEADER_PREFIX = "# Source:"


@cache
def load_prompt(name: str) -> str:
    """The text of prompt ``name`` (without its source header line and the file's final newline)."""
    path = PROMPT_DIR / f"{name}.txt"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in PROMPT_DIR.glob("*.txt")))
        raise ValueError(f"unknown prompt {name!r}; known prompts: {known}")
    header, _, body = path.read_text(encoding="utf-8").partition("\n")
    if not header.startswith(HEADER_PREFIX):
        raise ValueError(f"prompt file {path} must start with a '{HEADER_PREFIX} ...' line naming its source")
    return body.removesuffix("\n")


def fill(template: str, values: dict[str, str]) -> str:
    """Replace each ``{key}`` of ``values`` in ``template``; other braces (JSON, ``\\boxed{}``) are left alone.

    One pass, so text inside a value (a tool output quoting ``{question}``) is never substituted again. A key
    whose placeholder is absent raises, so a renamed placeholder cannot silently drop content.
    """
    missing = [key for key in values if "{" + key + "}" not in template]
    if missing:
        raise ValueError(f"prompt template has no placeholder(s) {', '.join('{' + k + '}' for k in missing)}")
    if not values:
        return template
    pattern = re.compile("|".join(re.escape("{" + key + "}") for key in values))
    return pattern.sub(lambda match: values[match.group(0)[1:-1]], template)
