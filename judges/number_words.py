"""Whole numbers written in English words ("twenty-three", "one hundred five", "three hundred and six"), read
exactly; anything else -- a fraction, an ordinal, a stray word -- is not a number."""

from __future__ import annotations

import re

_UNITS = {
    word: value
    for value, word in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
            "thirteen",
            "fourteen",
            "fifteen",
            "sixteen",
            "seventeen",
            "eighteen",
            "nineteen",
        ]
    )
}
_TENS = {
    word: 10 * value
    for value, word in enumerate(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2
    )
}
_SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9}


def words_to_int(text: str) -> int | None:
    """The whole number ``text`` spells out in English words, or None when it is not exactly one."""
    words = [word for word in re.split(r"[\s-]+", text.strip().lower()) if word and word != "and"]
    if not words:
        return None
    negative = words[0] in ("minus", "negative")
    words = words[1:] if negative else words
    total, group, seen = 0, 0, False
    for word in words:
        if word in _UNITS and group % 10 == 0:
            group, seen = group + _UNITS[word], True
        elif word in _TENS and group % 100 == 0:
            group, seen = group + _TENS[word], True
        elif word == "hundred" and 0 < group < 10:
            group *= 100
        elif word in _SCALES and seen and group and total % (_SCALES[word] * 1000) == 0:
            total, group = total + group * _SCALES[word], 0
        else:
            return None
    if not seen:
        return None
    value = total + group
    return -value if negative else value
