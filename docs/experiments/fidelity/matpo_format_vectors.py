"""Writes tests/trainer/vectors/matpo_mcp_format.json by running MATPO's own ``check_mcp_format``.

Needs, in a scratch folder outside the repository (argument 1), ``check_mcp_format.py``: the method cut verbatim
from mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379 verl/workers/reward_manager/tool.py as a module-level
function (``self`` unused), with the imports it needs. MATPO scores the decoded multi-turn response of an agent;
the replies are joined as Qwen's chat template decodes them (``R1\\nuser\\n<tool response>\\nassistant\\nR2``).
Usage: python docs/experiments/fidelity/matpo_format_vectors.py /tmp/ref/matpo tests/trainer/vectors/matpo_mcp_format.json
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from check_mcp_format import check_mcp_format  # noqa: E402

PROMPTS = Path("harness/prompts/matpo/paper")
TOOL_RESPONSE = "Tool result: The capital of Arvena is Lomir."


def block(server: str, tool: str, arguments: str) -> str:
    return (
        f"<use_mcp_tool>\n<server_name>{server}</server_name>\n<tool_name>{tool}</tool_name>\n"
        f"<arguments>\n{arguments}\n</arguments>\n</use_mcp_tool>"
    )


DELEGATE = block("browsing_agent", "search_and_browse", '{"subtask": "find the capital of Arvena"}')
SEARCH = block(
    "search_and_scrape_webpage", "google_search", '{"q": "Arvena capital", "gl": "us", "hl": "en"}'
)
PLANNER = [
    [],
    ["\\boxed{Lomir}"],
    [DELEGATE, "\\boxed{Lomir}"],
    [f"<think>maybe {DELEGATE}</think>\n{DELEGATE}", "\\boxed{Lomir}"],
    [block("agent", "search_and_browse", '{"subtask": "x"}'), "\\boxed{Lomir}"],
    [block("browsing_agent", "search_and_browse", '{"subtask": 3}')],
    [block("browsing_agent", "search_and_browse", '{"subtask": "x", "depth": 2}')],
    [block("browsing_agent", "search_and_browse", "{}")],
    [block("browsing_agent", "ask_friend", '{"subtask": "x"}'), DELEGATE],
    [block("browsing_agent", "search_and_browse", "{subtask: broken}")],
    [
        "<use_mcp_tool><server_name>browsing_agent</server_name><tool_name>search_and_browse</tool_name></use_mcp_tool>"
    ],
    [DELEGATE + "\n" + DELEGATE, block("browsing_agent", "search_and_browse", '["x"]')],
    [f"I will ask.\nuser\n{DELEGATE}"],
    [f"I will ask.\nuser\n{block('agent', 'x', '{}')}", DELEGATE],
]
WORKER = [
    [SEARCH, "Found it.", "## Conclusion: **Lomir**"],
    [block("search_and_scrape_webpage", "google_search", '{"q": "Arvena capital"}')],
    [block("search_and_scrape_webpage", "scrape", '{"url": "https://a.example", "includeMarkdown": true}')],
    [block("search_and_scrape_webpage", "scrape", '{"url": "https://a.example", "includeMarkdown": 1}')],
    [block("search", "google_search", '{"q": "x", "gl": "us", "hl": "en"}'), SEARCH],
    ["Summary with a leftover call " + SEARCH],
]
cases = []
for role, replies_list in (("planner", PLANNER), ("worker", WORKER)):
    system = (PROMPTS / f"{role}.system.txt").read_text().partition("\n")[2].removesuffix("\n")
    for replies in replies_list:
        response = f"\nuser\n{TOOL_RESPONSE}\nassistant\n".join(replies)
        cases.append({"role": role, "replies": replies, "fmt": check_mcp_format(None, system, response)})
source = (
    "mzf666/MATPO@3c41d62d96963ac0512573f9d2e51596720ab379 (unchanged since e97244b) "
    "verl/workers/reward_manager/tool.py check_mcp_format(prompt_str=<the role's paper system prompt>, "
    "response_str=<replies joined by '\\nuser\\n<tool response>\\nassistant\\n'>); written by "
    "docs/experiments/fidelity/matpo_format_vectors.py"
)
Path(sys.argv[2]).write_text(
    json.dumps({"source": source, "tool_response": TOOL_RESPONSE, "cases": cases}, indent=1)
)
