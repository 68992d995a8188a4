"""GAIA's official quasi-exact match (the leaderboard's ``question_scorer``), reimplemented from its algorithm.

- Gold is a number: the prediction, with ``$ % ,`` removed, must parse as a float equal to the gold's float.
- Gold contains ``,`` or ``;``: both are split on those characters; the lists must have the same length and match
  element-wise, numbers as numbers (as above) and other elements compared after removing whitespace and
  case-folding (punctuation kept, as in the official scorer).
- Otherwise strings are compared after removing whitespace and punctuation, case-folded.

One deliberate difference, documented: the official scorer turns an unparsable number into ``inf``, so a gold of
``inf`` would match any text; here an unparsable prediction never matches a number. Otherwise the default is the
official scorer's verdict (test vectors from running it: ``tests/judges/vectors/gaia_scorer.json``), so GAIA numbers
compare with the leaderboard's.

``list_final_stop=True`` is a leniency of ours, off by default: a sentence-final full stop of a list answer is
ignored on both sides (``" APPLE ,banana , cherry."`` then matches ``apple, banana, cherry``; officially it does
not).
"""

from __future__ import annotations

import re
import string

_LIST_SEPARATORS = re.compile(r"[,;]")
_NUMBER_NOISE = str.maketrans("", "", "$%,")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _normalized_number(text: str) -> float | None:
    return _as_float(text.translate(_NUMBER_NOISE))


def _normalized_text(text: str, *, drop_punctuation: bool) -> str:
    squeezed = re.sub(r"\s", "", text).lower()
    return squeezed.translate(_PUNCTUATION) if drop_punctuation else squeezed


def _element_matches(prediction: str, gold: str) -> bool:
    gold_number = _as_float(gold)
    if gold_number is not None:
        return _normalized_number(prediction) == gold_number
    return _normalized_text(prediction, drop_punctuation=False) == _normalized_text(
        gold, drop_punctuation=False
    )


def _without_final_stop(text: str) -> str:
    """``text`` without one sentence-final full stop."""
    return text.rstrip().removesuffix(".")


def quasi_exact_match(prediction: str | None, gold: str, *, list_final_stop: bool = False) -> bool:
    """Whether ``prediction`` matches ``gold`` under GAIA's quasi-exact match; ``list_final_stop`` ignores a full
    stop ending a list answer (a leniency, see the module docstring)."""
    prediction = "None" if prediction is None else prediction
    gold_number = _as_float(gold)
    if gold_number is not None:
        return _normalized_number(prediction) == gold_number
    if _LIST_SEPARATORS.search(gold):
        if list_final_stop:
            gold, prediction = _without_final_stop(gold), _without_final_stop(prediction)
        gold_items, predicted_items = _LIST_SEPARATORS.split(gold), _LIST_SEPARATORS.split(prediction)
        return len(gold_items) == len(predicted_items) and all(
            _element_matches(predicted, expected)
            for predicted, expected in zip(predicted_items, gold_items, strict=True)
        )
    return _normalized_text(prediction, drop_punctuation=True) == _normalized_text(
        gold, drop_punctuation=True
    )
