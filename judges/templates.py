"""Judge prompt templates kept as data files under ``judges/prompts/``.

Each file starts with one header line ``# source: ...`` naming where the prompt comes from; the rest of the file is
the prompt, verbatim (``str.format`` placeholders in braces), followed by one newline. The files are read with
``harness.prompts.read_prompt_file``, the reader the role prompts use too.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from harness.prompts import read_prompt_file

PROMPTS_DIR = Path(__file__).parent / "prompts"
HEADER_PREFIX = "# source:"


@cache
def load_prompt(name: str) -> str:
    """The prompt template ``judges/prompts/<name>.txt`` without its source header and final newline."""
    return read_prompt_file(PROMPTS_DIR, name, HEADER_PREFIX)
