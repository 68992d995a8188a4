"""Strict parsing of the verdict tokens that LLM judges reply with.

A verdict is read from a whole token, never found inside a longer word ("incorrect" never reads as "correct"):
the text may carry markdown emphasis, quotes or a final full stop around the token, nothing else.
"""

from __future__ import annotations

import json
import re
from typing import Any

_DECORATION = " \t\r\n*_`'\"."
_JSON_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def bare_token(text: str) -> str:
    """``text`` lowercased without surrounding whitespace, markdown emphasis, quotes and full stops."""
    return text.strip(_DECORATION).lower()


def parse_yes_no(text: str) -> bool | None:
    """True for a bare "yes", False for a bare "no", None for anything else."""
    return {"yes": True, "no": False}.get(bare_token(text))


def json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object (a ```json fence around it is allowed), or None when it is not one."""
    stripped = text.strip()
    fenced = _JSON_FENCE.match(stripped)
    try:
        value = json.loads(fenced.group(1) if fenced else stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def labelled_values(text: str, label: str) -> list[str]:
    """The values of every ``label: value`` line in ``text`` (markdown emphasis around the label allowed)."""
    pattern = re.compile(rf"^[ \t*_#>-]*{re.escape(label)}[ \t*_]*:(.*)$", re.IGNORECASE | re.MULTILINE)
    return [match.strip() for match in pattern.findall(text)]
