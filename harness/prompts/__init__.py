"""Prompts as data files: ``load_prompt(name)`` reads ``<name>.txt`` and ``fill`` substitutes placeholders.

The benchmarks' instructions lie here (``direct_math``); each system's role prompts lie in ``<system>/``, in the
scheme and prompt sets of ``mara_bench.harness.prompts.sets`` (``load_prompt("vc/paper/verifier.system")``). Each file starts
with one header line ``# Source: ...`` naming where the text comes from (paper appendix or official repository,
kept verbatim) or saying it is ours; the prompt is everything after that line. Files are read by
``mara_bench.judges.templates.read_prompt_file``, the reader the judge prompts use too (judges are the lower layer).
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from mara_bench.judges.templates import read_prompt_file

PROMPT_DIR = Path(__file__).parent
HEADER_PREFIX = "# Source:"


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
