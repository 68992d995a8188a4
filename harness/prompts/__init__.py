"""Role prompts as data files: ``load_prompt(name)`` reads ``<name>.txt`` and ``fill`` substitutes placeholders.

Each file starts with one header line ``# Source: ...`` naming where the text comes from (paper appendix or official
repository, kept verbatim) or saying it is ours; the prompt is everything after that line. ``read_prompt_file``
reads such a file from any folder: ``judges.templates`` uses it for the judge prompts too.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

PROMPT_DIR = Path(__file__).parent
HEADER_PREFIX = "# Source:"


def read_prompt_file(directory: Path, name: str, header_prefix: str) -> str:
    """The text of ``<directory>/<name>.txt`` after its ``header_prefix`` source line, without the final newline."""
    path = directory / f"{name}.txt"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in directory.glob("*.txt")))
        raise ValueError(f"unknown prompt {name!r} in {directory}; known prompts: {known}")
    header, _, body = path.read_text(encoding="utf-8").partition("\n")
    if not header.startswith(header_prefix):
        raise ValueError(f"prompt file {path} must start with a '{header_prefix} ...' line naming its source")
    return body.removesuffix("\n")


@cache
def load_prompt(name: str) -> str:
    """The text of role prompt ``name`` (without its source header line and the file's final newline)."""
    return read_prompt_file(PROMPT_DIR, name, HEADER_PREFIX)


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
