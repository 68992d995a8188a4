"""MATPO's tool-format reward ``fmt`` as MATPO's code computes it (``check_mcp_format`` in
mzf666/MATPO@3c41d62 ``verl/workers/reward_manager/tool.py``; the same at e97244b), reimplemented from its
algorithm:

* the tools an agent may call are read from its system prompt's MCP listing (``## Server name: s`` /
  ``### Tool name: t`` / ``Input JSON schema: {...}``, a Python-literal dict): each tool's server, required
  arguments and argument types;
* every ``<use_mcp_tool>`` block of the agent's turns counts -- thinking included;
* a block is well-formed when its server name, tool name and JSON arguments parse, the tool is listed, the server
  is the tool's, every required argument is present, and every argument is a listed one of the listed JSON type
  (``boolean`` counts as ``integer``/``number`` too, as Python's ``isinstance`` does there);
* ``fmt`` is the share of well-formed blocks, and 1.0 when there is no block at all.

Test vectors computed by running MATPO's function: ``tests/trainer/vectors/matpo_mcp_format.json``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass

_SERVER = re.compile(r"## Server name: (.+?)\n((?:.|\n)*?)(?=## Server name:|\Z)")
_TOOL = re.compile(
    r"### Tool name: (.*?)\n.*?Input JSON schema: (.*?)(?=\n### Tool name:|\n## Server name:|\Z)", re.DOTALL
)
_REQUIRED = re.compile(r"'required'\s*:\s*\[(.*?)\]")
_PROPERTIES = re.compile(r"'properties'\s*:\s*{(.*?)}\s*,?\s*'required'", re.DOTALL)
_PROPERTY_TYPE = re.compile(r"'(\w+)'\s*:\s*{[^}]*?'type'\s*:\s*'(\w+)'")
_UNREADABLE_REQUIRED = "FAILED TO PARSE: fallback failed"
_ASSISTANT_TURN = re.compile(r"\nassistant\n.*?(?=\nuser\n|$)", re.DOTALL)
_BLOCK = re.compile(r"<use_mcp_tool>.*?</use_mcp_tool>", re.DOTALL)
_SERVER_NAME = re.compile(r"<server_name>(.*?)</server_name>")
_TOOL_NAME = re.compile(r"<tool_name>(.*?)</tool_name>")
_ARGUMENTS = re.compile(r"<arguments>\s*(\{.*\})\s*</arguments>", re.DOTALL)
_JSON_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "number": (int, float),
    "integer": int,
    "boolean": bool,
    "object": dict,
    "array": list,
    "null": type(None),
}


@dataclass(frozen=True)
class ToolSchema:
    """One listed tool: its server, required arguments and each argument's JSON type (None: not read, so
    arguments are not checked)."""

    server: str
    required: tuple[str, ...]
    types: dict[str, str] | None


def _read_schema(raw_schema: str) -> tuple[tuple[str, ...], dict[str, str] | None]:
    """(required, types) of one ``Input JSON schema:`` text. The last tool's text runs to the end of the prompt,
    so it is rarely a literal: then, as MATPO does, the ``'required'`` list and ``'properties'`` types are read
    with patterns; a ``'required'`` list that cannot be found makes every call of the tool fail (MATPO checks
    each character of its failure message as a required argument)."""
    try:
        schema = ast.literal_eval(raw_schema)
        properties = schema.get("properties", {})
        types = {
            name: spec.get("type", "unknown") for name, spec in properties.items() if isinstance(spec, dict)
        }
        return tuple(schema.get("required", [])), types
    except Exception:  # noqa: BLE001 - MATPO falls back on any failure to read the text as a dict literal
        pass
    listed = _REQUIRED.search(raw_schema)
    required = (
        tuple(item.strip().strip("'\"") for item in listed.group(1).split(",") if item.strip())
        if listed
        else tuple(_UNREADABLE_REQUIRED)
    )
    properties = _PROPERTIES.search(raw_schema)
    types = dict(_PROPERTY_TYPE.findall(properties.group(1))) if properties else None
    return required, types


def tool_schemas(system_prompt: str) -> dict[str, ToolSchema]:
    """The tools listed in an MCP system prompt, by tool name (refused when it lists none, as MATPO does)."""
    schemas: dict[str, ToolSchema] = {}
    for server, section in _SERVER.findall(system_prompt):
        for tool, raw_schema in _TOOL.findall(section):
            required, types = _read_schema(raw_schema.strip())
            schemas[tool.strip()] = ToolSchema(server.strip(), required, types)
    if not schemas:
        raise ValueError("no MCP tool schemas ('## Server name:' / '### Tool name:') in the system prompt")
    return schemas


def block_is_well_formed(block: str, schemas: dict[str, ToolSchema]) -> bool:
    """Whether one ``<use_mcp_tool>`` block calls a listed tool as its schema asks (module docstring)."""
    server, tool, arguments = _SERVER_NAME.search(block), _TOOL_NAME.search(block), _ARGUMENTS.search(block)
    if server is None or tool is None or arguments is None:
        return False
    try:
        values = json.loads(arguments.group(1))
    except json.JSONDecodeError:
        return False
    schema = schemas.get(tool.group(1).strip())
    if schema is None or not isinstance(values, dict):
        return False
    if schema.server != server.group(1).strip() or any(name not in values for name in schema.required):
        return False
    if schema.types is None:
        return True
    return all(
        bool(schema.types.get(name)) and isinstance(value, _JSON_TYPES.get(schema.types[name], object))
        for name, value in values.items()
    )


def _assistant_text(replies: Iterable[str]) -> str:
    """The agent's turns as MATPO reads them from its decoded conversation (``R1\\nuser\\n<tool response>
    \\nassistant\\nR2``, the chat template's markers dropped): from each ``\\nassistant\\n`` up to the next
    ``\\nuser\\n``, so a reply that itself writes a line ``user`` is cut there."""
    conversation = "\nuser\n\nassistant\n".join(replies).strip()
    if not conversation.startswith("\nassistant\n"):
        conversation = "\nassistant\n" + conversation
    return "\n".join(_ASSISTANT_TURN.findall(conversation))


def format_reward(system_prompt: str, replies: Iterable[str]) -> float:
    """``fmt`` of one agent's replies under the tools its ``system_prompt`` lists (module docstring)."""
    schemas = tool_schemas(system_prompt)
    blocks = _BLOCK.findall(_assistant_text(replies).strip())
    if not blocks:
        return 1.0
    return sum(block_is_well_formed(block, schemas) for block in blocks) / len(blocks)
