"""Math judge core: answer extraction and integer-exact equivalence."""

from __future__ import annotations

import pytest

from judges.math import as_integer, extract_answer, is_equivalent


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"First \boxed{3}, then the final \boxed{\frac{1}{\sqrt{2}}}.", r"\frac{1}{\sqrt{2}}"),
        (r"nested: \boxed{\{1, \{2\}\}}", r"\{1, \{2\}\}"),
        (r"so $\boxed 5$", "5"),
        ("think...\n<answer> Paris </answer>", "Paris"),
        ("<answer>wrong</answer> then <answer>right</answer>", "right"),
        ("work\nANSWER: 17", "17"),
        ("**Final Answer:** 204", "204"),
        ("FINAL ANSWER: St. Petersburg", "St. Petersburg"),
        ("Therefore the final answer is 12.", "12"),
        (r"<answer>see \boxed{7}</answer>", "7"),
        ("no answer stated here", None),
        ("  42\n", "42"),  # a bare answer, as agent systems store the content of their <answer> tag
        (r"$\frac{1}{2}$", r"\frac{1}{2}"),
        ("Paris", "Paris"),
        ("It is 42", None),  # prose without a marker states no answer
        ("", None),
        (None, None),
    ],
)
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_unbalanced_boxed_is_ignored_in_favour_of_other_markers():
    assert extract_answer("\\boxed{12 never closed\nANSWER: 9") == "9"


@pytest.mark.parametrize(
    ("text", "expected"),
    [("025", 25), ("336^\\circ", 336), ("336^{\\circ}", 336), ("336°", 336), ("1,000", 1000), ("$-7$", -7)],
)
def test_as_integer_reads_integer_notations(text, expected):
    assert as_integer(text) == expected


@pytest.mark.parametrize("text", ["2.5", "1,00", "x", "\\frac{1}{2}", "1e3"])
def test_as_integer_rejects_non_integers(text):
    assert as_integer(text) is None


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("025", "25"),
        ("336", "336^\\circ"),
        ("1,000", "1000"),
        ("12345678", "12345678"),
        ("12345678.0", "12345678"),
        ("\\frac{50}{2}", "25"),
        ("2^{10}", "1024"),
        ("0.5", "\\frac{1}{2}"),
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"),
        ("x^2+1", "1+x^2"),
    ],
)
def test_equivalent_answers(prediction, gold):
    assert is_equivalent(prediction, gold)


@pytest.mark.parametrize(
    ("prediction", "gold"),
    [
        ("12345678", "12345679"),  # BeyondAIME: 8 digits, no float tolerance
        ("99999999", "99999998"),
        ("12345678.4", "12345678"),
        ("24", "25"),
        ("\\pi", "3.14159"),
        (None, "3"),
        ("   ", "3"),
    ],
)
def test_different_answers(prediction, gold):
    assert not is_equivalent(prediction, gold)
