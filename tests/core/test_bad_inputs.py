"""Every bad input of the battery (``bad_inputs.py``, issue 23 item 4) is one line naming the file, key or
argument and the fix, with a nonzero exit, before any work: nothing started, nothing left behind."""

from __future__ import annotations

import pytest
from bad_inputs import CASES, OPTION_CASES, BadInput, build_tiny_model, run_case


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("bad-inputs") / "tiny-model")


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_a_bad_input_is_one_line_before_any_work(case: BadInput, tiny_model, tmp_path):
    outcome = run_case(case, tmp_path, tiny_model)
    assert outcome.held, f"exit {outcome.exit_code}, left {outcome.leftovers}:\n{outcome.output[-3000:]}"


@pytest.mark.slow
@pytest.mark.parametrize("case", OPTION_CASES, ids=[case.name for case in OPTION_CASES])
def test_an_option_mistake_under_inspect_eval_is_one_line_before_the_model_loads(
    case: BadInput, tiny_model, tmp_path
):
    outcome = run_case(case, tmp_path, tiny_model)
    assert outcome.held, f"exit {outcome.exit_code}:\n{outcome.output[-3000:]}"
