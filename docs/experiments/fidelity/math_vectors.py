"""Writes tests/judges/vectors/math_answers.json: responses whose right verdict is known by construction, with the
verdicts of math-verify and of inspect_evals' AIME scorer, both run on each response.

Needs, in a scratch folder outside the repository (argument 1), ``aime_common.py`` = inspect_evals 0.28.0 (PyPI)
src/inspect_evals/utils/aime_common.py. math-verify is the installed package (a dependency).
Usage: python docs/experiments/fidelity/math_vectors.py /tmp/ref/aime tests/judges/vectors/math_answers.json
"""

import asyncio
import json
import sys
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace

from inspect_ai.scorer import Target
from math_verify import parse, verify

sys.path.insert(0, sys.argv[1])
from aime_common import aime_scorer  # noqa: E402

WORK = "We count the cases carefully.\n\nFirst, 3 * 4 = 12 ways; then 7 more.\n\n"
# (response, gold, right verdict): the six kinds the issue names, each with near misses that must stay wrong
CASES = [
    (WORK + "Therefore the number of such paths is 460.", "460", True),
    (WORK + "Therefore the number of such paths is 461.", "460", False),
    (WORK + "So the total comes to 1024.", "1024", True),
    (WORK + "Hence the largest possible value of $n$ is $97$.", "97", True),
    (WORK + "In total there are 12345679 arrangements.", "12345678", False),
    (WORK + "$\\boxed{238}$\n\nWait, that is wrong. The correct answer is 233.", "233", True),
    (WORK + "$\\boxed{238}$\n\nWait, that is wrong. The correct answer is 233.", "238", False),
    (WORK + "\\boxed{50}\n\nHmm, let me re-check: I miscounted. The answer is 52.", "52", True),
    (WORK + "The answer is \\boxed{70}.", "70", True),
    (WORK + "So the answer is twenty-three.", "23", True),
    (WORK + "So the answer is twenty-four.", "23", False),
    (WORK + "The final answer is one hundred five.", "105", True),
    (WORK + "The answer is: **Three hundred and six**", "306", True),
    (WORK + "The answer is 13 751 157.", "13751157", True),
    (WORK + "The answer is 13 751 158.", "13751157", False),
    (WORK + "ANSWER: 7 0", "70", False),
    (WORK + "The answer is: **991**", "991", True),
    (WORK + "**Answer:** **992**", "991", False),
    (WORK + "The answer is $\\fbox{204}$.", "204", True),
    (WORK + "$$\\fbox{205}$$", "204", False),
    (WORK + "ANSWER: 12345678", "12345678", True),
    (WORK + "ANSWER: 12345679", "12345678", False),
    (WORK + "\\boxed{025}", "25", True),
    (WORK + "No final answer is given here.", "12", False),
    # round three (issue #35): hedges between two different values are wrong whichever value is the gold, with
    # their unhedged controls; money and a "Result:" label; a box only in thinking cut off before </think>
    *[
        (WORK + template.format(a=a, b=b), gold, False)
        for template in (
            "The answer is \\boxed{{{a}}} or possibly \\boxed{{{b}}}.",
            "So it is either $\\boxed{{{a}}}$ or $\\boxed{{{b}}}$.",
            "\\boxed{{{a}}}, or perhaps \\boxed{{{b}}} if order matters.",
            "ANSWER: {a}, maybe \\boxed{{{b}}}",
        )
        for a, b in (("32", "64"), ("7", "12"))
        for gold in (a, b)
    ],
    (WORK + "The answer is \\boxed{32} or, equivalently, \\boxed{32.0}.", "32", True),
    (WORK + "First guess \\boxed{32}. Rechecking the count, the answer is \\boxed{64}.", "64", True),
    (WORK + "First guess \\boxed{32}. Rechecking the count, the answer is \\boxed{64}.", "32", False),
    (WORK + "So the cost is \\boxed{\\$1,250.00}.", "1250", True),
    (WORK + "So the cost is \\boxed{\\$1,250.50}.", "1250", False),
    (WORK + "Total: $\\boxed{\\$12,000.0}$", "12000", True),
    (WORK + "\\boxed{\\$3.75}", "3", False),
    (WORK + "Result:\n\n**445**", "445", True),
    (WORK + "Result:\n\n**446**", "445", False),
    (WORK + "Final result: 88", "88", True),
    (WORK + "\\boxed{17}\n\nResult: verified above.", "17", True),
    (WORK + "<think>Let me try: maybe \\boxed{91}", "91", False),
    ("<think>Counting gives \\boxed{91}.</think>\nThe answer is \\boxed{91}.", "91", True),
    ("The answer is \\boxed{91}.\n<think>Double-checking: \\boxed{90}", "91", True),
]


def math_verify_verdict(response: str, gold: str) -> bool:
    return bool(verify(parse(gold), parse(response)))


def aime_verdict(response: str, gold: str) -> bool:
    state = SimpleNamespace(output=SimpleNamespace(completion=response))
    score = asyncio.run(aime_scorer()(state, Target(gold)))
    return score.value == "C"


cases = [
    {
        "response": response,
        "gold": gold,
        "right": right,
        "math_verify": math_verify_verdict(response, gold),
        "inspect_evals_aime": aime_verdict(response, gold),
    }
    for response, gold, right in CASES
]
source = (
    f"'right' by construction; 'math_verify': math-verify {version('math-verify')} verify(parse(gold), "
    "parse(response)); 'inspect_evals_aime': inspect_evals 0.28.0 (PyPI) utils/aime_common.py aime_scorer() on "
    "the response; written by docs/experiments/fidelity/math_vectors.py"
)
Path(sys.argv[2]).write_text(json.dumps({"source": source, "cases": cases}, indent=1))
