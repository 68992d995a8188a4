"""LLM answer-equivalence judge: does a response state the same answer as one of the gold answers? (yes/no)

The prompt (``judges/prompts/equivalence_judge.txt``) is ours: the MARS paper judges its QA sets with
Qwen2.5-72B-Instruct but publishes no prompt. The reply must be exactly "yes" or "no" (see ``mara_bench.judges.verdicts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from mara_bench.judges.templates import load_prompt
from mara_bench.judges.verdicts import parse_yes_no

PROMPT_NAME = "equivalence_judge"


def judge_prompt(question: str, golds: str | Sequence[str], response: str) -> str:
    """The equivalence judge's prompt for one response."""
    gold_list = [golds] if isinstance(golds, str) else list(golds)
    listed = "\n".join(f"- {gold}" for gold in gold_list)
    return load_prompt(PROMPT_NAME).format(question=question, gold_answers=listed, response=response)


def parse_verdict(reply: str) -> bool | None:
    """True for "yes", False for "no", None (unparsable) for anything else."""
    return parse_yes_no(reply)
