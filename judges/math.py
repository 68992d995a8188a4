"""Math answers: extract the final answer from a response and compare it with the gold answer.

Extraction takes the *last declared* answer: of every non-empty ``\\boxed{...}`` (nested braces allowed, also
``\\boxed 5``), ``<answer>...</answer>`` tag and ``ANSWER:`` / ``FINAL ANSWER:`` / ``Result:`` line (the value on the
line, or a lone value on the next non-blank line: ``Result:\\n\\n**445**``; a ``Result:`` value must hold a digit),
the one that comes last in the text (a ``FINAL ANSWER: 9`` line after an earlier box wins; an empty ``\\boxed{}`` is
skipped). Without any of those, the last "the answer is X" phrase counts ("Therefore the answer is 70."); a
response that is nothing but one bare answer (``42``, ``$\\frac{1}{2}$``: no white space, e.g. what an agent system
stored from its own ``<answer>`` tag) is its own answer. Text after an unterminated ``<think>`` is thinking cut off,
never an answer. A hedge is no answer: when the last declared answer and the one before it sit in one sentence
joined by "or", "either", "possibly", "perhaps", "maybe", "alternatively" or "otherwise" and differ
(``\\boxed{32} or possibly \\boxed{64}``), the response states no single answer, whichever of the two is the gold.
Comparison uses math-verify, except that integer gold answers (AIME, BeyondAIME up to 8 digits) are compared exactly:
``025`` = 25, ``336^\\circ`` = 336, ``1,000`` and ``999\\,499`` (comma or thin-space digit groups) are integers,
``\\$70`` = 70, ``\\$1,250.00`` = 1250 (decimals read exactly), ``2.729 \\times 10^{4}`` = 27290 and
``5.88 \\times 10^{2}`` = 588 (decimal scientific notation read exactly, never through a binary float, so
``5.881 \\times 10^{2}`` is not 588 and the verdict never depends on float rounding); ``7 0`` is not an integer
answer, and no float tolerance can equate 12345678 with 12345679.

math-verify and sympy load on the first comparison that needs them, not on import: the judges are imported by the
Inspect entry point, which every ``inspect`` command loads. math-verify bounds its parsing and comparison by
``signal.alarm``, which only the main thread may set: on any other thread (the trainer's pipelined rollout thread,
which judges MarsRL's grouped rollouts as they grow) it runs without that time bound.
"""

from __future__ import annotations

import re
import threading
from decimal import Decimal
from fractions import Fraction
from typing import TYPE_CHECKING

from mara_bench.judges.number_words import words_to_int

if TYPE_CHECKING:
    import sympy

_BOXES = re.compile(r"\\(?:boxed|fbox)")
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(
    r"^[ \t*#]*(?:final[ \t]+)?(answer|result)[ \t*]*:[ \t*]*(?:(\S.*?)|\n\s*(\S+))[ \t*]*$",
    re.IGNORECASE | re.MULTILINE,
)
"""An answer line: its label, then the value on the line or a lone value on the next non-blank line."""
_HEDGE = re.compile(r"\b(?:or|either|possibly|perhaps|maybe|alternatively|otherwise)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n")
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_ANSWER_IS = re.compile(r"\banswer\s+is\s*:?\s*(.+?)(?:\.\s|\.?\s*$)", re.IGNORECASE | re.MULTILINE)
_DEGREES = re.compile(r"\^\s*\{?\s*\\circ\s*\}?|°")
_GROUPED = re.compile(r"^[+-]?\d{1,3}(?:(?:,|\\,|\\ |\\;|\{,\}| )\d{3})+(?:\.\d+)?$")
"""Digit groups of three separated by a comma, a thin space ``\\,``, ``\\ ``, ``\\;``, ``{,}`` or a space (then
any decimals)."""
_DECIMAL = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_SCIENTIFIC = re.compile(
    r"^([+-]?\d+(?:\.\d+)?)\s*(?:\\times|\\cdot|×|\*)\s*10\s*\^\s*\{?\s*([+-]?\d+)\s*\}?$"
)
_CLOSING_NUMBER = re.compile(
    r"(?:^|[.!?:]\s|\n)[^.!?\n]*\b(?:is|are|equals|was|comes\s+to|gives|=)\s*\$?([+-]?\d[\d,]*(?:\.\d+)?)\$?\.?\s*\Z"
)
"""A closing sentence stating a number last, without any marker ("Therefore the number of such paths is 460.")."""
_BARE_ANSWER = re.compile(r"^\$?[^\s$]+\$?\.?$")


def _boxed_contents(text: str) -> list[tuple[int, int, str]]:
    """(start, end, contents) of every ``\\boxed{...}`` / ``\\fbox{...}`` (balanced braces) and ``\\boxed x`` in
    ``text``, in order."""
    found: list[tuple[int, int, str]] = []
    box = _BOXES.search(text)
    while box is not None:
        start, i = box.start(), box.end()
        if i < len(text) and text[i] == "{":
            depth, j = 0, i
            while j < len(text):
                depth += {"{": 1, "}": -1}.get(text[j], 0)
                if depth == 0:
                    found.append((start, j + 1, text[i + 1 : j]))
                    break
                j += 1
        elif i < len(text) and text[i] == " ":
            token = re.match(r" +([^\s$]+)", text[i:])
            if token:
                found.append((start, i + token.end(), token.group(1)))
        box = _BOXES.search(text, i)
    return found


def _clean(answer: str, keep_final_stop: bool = False) -> str:
    """``answer`` without surrounding white space, ``$`` delimiters and markdown emphasis (``**991**``), and
    without a closing full stop unless ``keep_final_stop``."""
    unwrapped = answer.strip().strip("$*_").strip()
    if not keep_final_stop:
        unwrapped = unwrapped.rstrip(".").strip().strip("$*_").strip()
    return unwrapped


def _answer_lines(text: str) -> list[tuple[int, int, str]]:
    """(start, end, value) of every ``ANSWER:`` / ``Result:`` line's value (module docstring)."""
    found = []
    for match in _ANSWER_LINE.finditer(text):
        group = 2 if match.group(2) else 3
        value = match.group(group)
        if match.group(1).lower() == "result" and (" " in value or not re.search(r"\d", value)):
            continue
        found.append((match.start(group), match.end(group), value))
    return found


def _declared_answers(text: str, keep_final_stop: bool) -> list[tuple[int, int, str]]:
    """(start, end, answer) of every non-empty box, ``<answer>`` tag and ``ANSWER:`` line, in text order."""
    found = _boxed_contents(text)
    found += [(m.start(), m.end(), m.group(1)) for m in _ANSWER_TAG.finditer(text)]
    found += _answer_lines(text)
    cleaned = ((start, end, _clean(answer, keep_final_stop)) for start, end, answer in found)
    return sorted((start, end, answer) for start, end, answer in cleaned if answer)


def _without_open_thinking(text: str) -> str:
    """``text`` cut at an unterminated ``<think>`` (thinking cut off before its end)."""
    opened = text.rfind(_THINK_OPEN)
    return text[:opened] if opened != -1 and text.find(_THINK_CLOSE, opened) == -1 else text


def _is_hedge(text: str, earlier: tuple[int, int, str], last: tuple[int, int, str]) -> bool:
    """Whether two declared answers are a hedge between different values (module docstring); the last may stand
    inside the earlier one's line (``ANSWER: 32, maybe \\boxed{64}``: the line's value is its text before the hedge)."""
    start, end, value = earlier
    inside = end > last[0]
    between = text[start if inside else end : last[0]]
    hedge = _HEDGE.search(between)
    if hedge is None or _SENTENCE_END.search(between):
        return False
    if inside:
        value = _clean(between[: hedge.start()].rstrip(" ,;"))
    values = exact_value(value), exact_value(last[2])
    return values[0] != values[1] if None not in values else value != last[2]


def extract_answer(text: str | None, *, keep_final_stop: bool = False) -> str | None:
    """The final answer stated in ``text``, or ``None`` when it states none (see the module docstring for the rules).

    ``keep_final_stop`` keeps a full stop ending a declared answer (GAIA's official scorer sees it)."""
    if not text:
        return None
    text = _without_open_thinking(text)
    declared = _declared_answers(text, keep_final_stop)
    phrases = [(m.start(), _clean(m.group(1))) for m in _ANSWER_IS.finditer(text) if _clean(m.group(1))]
    if declared:
        position, _, answer = declared[-1]
        retraction = [value for start, value in phrases if start > position and _is_number(value)]
        if retraction:
            return retraction[-1]
        return None if len(declared) > 1 and _is_hedge(text, declared[-2], declared[-1]) else answer
    if phrases:
        return phrases[-1][1]
    closing = _CLOSING_NUMBER.search(text)
    if closing:
        return closing.group(1)
    bare = text.strip()
    return _clean(bare) if _BARE_ANSWER.match(bare) and _clean(bare) else None


def _is_number(answer: str) -> bool:
    """Whether ``answer`` is a number (digits or words): what a retraction after a box must state to win."""
    return exact_value(answer) is not None


def exact_value(answer: str) -> Fraction | None:
    """``answer`` as an exact number when it is written as an integer or a decimal (``025``, ``336^\\circ``,
    ``1,000``, ``999\\,499``, ``\\$70``, ``$-7$``, ``\\$1,250.00``) or in decimal scientific notation
    (``2.729 \\times 10^{4}``), else None."""
    value = _DEGREES.sub("", _clean(answer)).replace("\\$", "").strip()
    if _GROUPED.match(value):
        value = re.sub(r"[^\d.+-]", "", value)
    if _DECIMAL.match(value):
        return Fraction(Decimal(value))
    spelled = words_to_int(value)
    if spelled is not None:
        return Fraction(spelled)
    scientific = _SCIENTIFIC.match(value)
    if scientific:
        return Fraction(Decimal(scientific.group(1))) * Fraction(10) ** int(scientific.group(2))
    return None


def as_integer(answer: str) -> int | None:
    """``answer`` as an integer when it is written as one, exactly (see ``exact_value``), else None."""
    value = exact_value(answer)
    return int(value) if value is not None and value.denominator == 1 else None


def _exact_number(expression: object) -> sympy.Rational | None:
    """The exact rational value of a parsed numeric expression (floats taken at face value), or None."""
    import sympy

    if not isinstance(expression, sympy.Basic) or not expression.is_number:
        return None
    value = expression if isinstance(expression, sympy.Rational) else expression.evalf(30)
    return sympy.Rational(value) if isinstance(value, sympy.Number) else None


def _as_latex(answer: str) -> str:
    """``answer`` in math delimiters, which math-verify needs to read LaTeX such as ``2^{10}`` or ``\\sqrt{2}``."""
    return answer if "$" in answer or "\\(" in answer or "\\[" in answer else f"${answer}$"


MATH_VERIFY_SECONDS = 5
"""math-verify's own default time bound for one parse or comparison (main thread only: see the module docstring)."""


def is_equivalent(prediction: str | None, gold: str) -> bool:
    """Whether ``prediction`` states the same mathematical answer as ``gold``."""
    if prediction is None or not prediction.strip():
        return False
    gold_integer = as_integer(gold)
    if gold_integer is not None:
        predicted_value = exact_value(prediction)
        if predicted_value is not None:
            return predicted_value == gold_integer
    from math_verify import parse, verify

    seconds = MATH_VERIFY_SECONDS if threading.current_thread() is threading.main_thread() else None
    parsed_gold = parse(_as_latex(gold), parsing_timeout=seconds)  # type: ignore[arg-type]
    parsed_prediction = parse(_as_latex(prediction), parsing_timeout=seconds)  # type: ignore[arg-type]
    if not parsed_gold or not parsed_prediction:
        return _clean(prediction) == _clean(gold)
    if gold_integer is not None:
        value = _exact_number(parsed_prediction[0])
        if value is not None:
            return value == gold_integer
    return bool(verify(parsed_gold, parsed_prediction, timeout_seconds=seconds))
