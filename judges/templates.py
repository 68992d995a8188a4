"""Judge prompt templates kept as data files under ``judges/prompts/``.

Each file starts with one header line ``# source: ...`` naming where the prompt comes from; the rest of the file is
the prompt, verbatim (``str.format`` placeholders in braces), followed by one newline. ``read_prompt_file`` reads
such a file from any folder; the role prompts (``mara_bench.harness.prompts``) use it too: judges are the lowest layer, so the
reader lives here and harness imports it, never the other way round.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

PROMPTS_DIR = Path(__file__).parent / "prompts"
HEADER_PREFIX = "# source:"


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
    """The prompt template ``judges/prompts/<name>.txt`` without its source header and final newline."""
    return read_prompt_file(PROMPTS_DIR, name, HEADER_PREFIX)
