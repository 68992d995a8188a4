"""The judges' Inspect scorers end to end on scripted models (the evaluated model and the grader role)."""

from __future__ import annotations

import json
import math

import pytest
from inspect_ai import Task, eval, task
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver

from mara_bench.harness.testing import scripted_model
from mara_bench.judges.grader import GraderMissingError, ask_grader
from mara_bench.judges.registry import JUDGES, get_judge, is_llm_judge, require_grader
from mara_bench.judges.verdicts import parse_yes_no


def _answers(by_question: dict[str, str | list[str]]):
    """Evaluated model: replies by question (a list gives one reply per epoch, in order)."""
    served: dict[str, int] = {}

    def respond(messages, config):
        question = messages[-1].text
        replies = by_question[question]
        if isinstance(replies, str):
            return replies
        served[question] = served.get(question, 0) + 1
        return replies[served[question] - 1]

    return respond


class Grader:
    """Scripted grader: replies chosen by the first matching key found in the prompt; records every call."""

    def __init__(self, replies: dict[str, str], name: str = "mockllm/grader"):
        self.replies, self.calls, self.name = replies, [], name

    def __call__(self, messages, config):
        prompt = messages[-1].text
        self.calls.append((prompt, config))
        for key, reply in self.replies.items():
            if key in prompt:
                if isinstance(reply, Exception):
                    raise reply
                return reply
        raise AssertionError(f"grader script has no reply for prompt: {prompt[:200]}")

    def model(self):
        return scripted_model(self, name=self.name)


def _run(scorer, samples, answers, tmp_path, grader: Grader | None = None, epochs: int = 1, solver_=None):
    the_task = Task(dataset=samples, solver=solver_ or generate(), scorer=scorer, epochs=epochs)
    roles = {"grader": grader.model()} if grader else None
    return eval(
        the_task,
        model=scripted_model(_answers(answers)),
        model_roles=roles,
        log_dir=str(tmp_path),
        display="none",
    )[0]


def _metrics(log) -> dict[str, float]:
    """All metric values of the log's scorer results (reduced and unreduced views merged)."""
    return {name: m.value for s in log.results.scores for name, m in s.metrics.items()}


def _scores(log, judge: str):
    return {sample.id: sample.scores[judge] for sample in log.samples}


def _hle_reply(correct: str, confidence: int, extracted: str = "x") -> str:
    return json.dumps(
        {"extracted_final_answer": extracted, "reasoning": "r", "correct": correct, "confidence": confidence}
    )


def test_math_scorer(tmp_path):
    samples = [
        Sample(id="a", input="q1", target="25"),
        Sample(id="b", input="q2", target="336^\\circ"),
        Sample(id="c", input="q3", target="7"),
    ]
    answers = {"q1": "so \\boxed{025}", "q2": "ANSWER: 336", "q3": "I don't know"}
    log = _run(get_judge("math"), samples, answers, tmp_path)
    metrics = _metrics(log)
    assert metrics["accuracy"] == pytest.approx(2 / 3)
    assert metrics["accuracy_judged"] == pytest.approx(2 / 3)
    assert metrics["unscored"] == 0
    scores = _scores(log, "math")
    assert scores["a"].answer == "025"
    assert scores["c"].answer is None
    assert scores["c"].value == {"correct": 0.0, "judged_correct": 0.0}


@pytest.mark.parametrize(
    ("variant", "f1", "acc", "excluded"),
    [("flashrag", 1 / 3, 2 / 3, 0), ("mask", (1 + 0.5) / 2, 2 / 3, 1)],
)
def test_lexical_scorer_variants(tmp_path, variant, f1, acc, excluded):
    samples = [
        Sample(id="a", input="q1", target=["Paris"]),
        Sample(id="b", input="q2", target=["no"]),
        Sample(id="c", input="q3", target=["yes"]),
    ]
    answers = {"q1": "<answer>Paris</answer>", "q2": "yes", "q3": "yes it is"}
    metrics = _metrics(_run(get_judge("lexical", variant=variant), samples, answers, tmp_path))
    assert metrics["em"] == pytest.approx(1 / 3)
    assert metrics["acc"] == pytest.approx(acc)
    assert metrics["f1"] == pytest.approx(f1)
    assert metrics["f1_excluded"] == excluded


def test_lexical_scorer_rejects_unknown_variant():
    with pytest.raises(ValueError, match="valid variants: flashrag, mask"):
        get_judge("lexical", variant="squad")


HLE_SAMPLES = [
    Sample(id="a", input="qa", target="1"),
    Sample(id="b", input="qb", target="2"),
    Sample(id="c", input="qc", target="3"),
    Sample(id="d", input="qd", target="4"),
]
HLE_ANSWERS = {"qa": "resp-a", "qb": "resp-b", "qc": "resp-c", "qd": "resp-d"}


def _hle_grader() -> Grader:
    return Grader(
        {
            "resp-a": _hle_reply("yes", 90, extracted="1"),
            "resp-b": _hle_reply("no", 60),
            "resp-c": "I think it is probably right",  # garbage, every attempt → unscored
            "resp-d": "extracted_final_answer: 4\nreasoning: same\ncorrect: yes\nconfidence: 100",  # text fallback
        }
    )


def test_hle_scorer_metrics_structured_and_fallback_and_unscored(tmp_path):
    grader = _hle_grader()
    log = _run(get_judge("hle"), HLE_SAMPLES, HLE_ANSWERS, tmp_path, grader)
    assert log.status == "success"
    metrics = _metrics(log)
    assert metrics["accuracy"] == pytest.approx(0.5)  # 2 of 4, the unscored one counted wrong
    assert metrics["accuracy_judged"] == pytest.approx(2 / 3)
    assert metrics["unscored"] == 1
    assert metrics["wald_half_width"] == pytest.approx(1.96 * math.sqrt(50 * 50 / 4))
    assert math.isnan(metrics["calibration_error"])  # official: undefined below 200 judged items
    # all bins: one bin of the 3 judged items, mean confidence (.9 + .6 + 1) / 3 vs accuracy 2/3
    assert metrics["calibration_error_all_bins"] == pytest.approx((0.9 + 0.6 + 1.0) / 3 - 2 / 3)
    scores = _scores(log, "hle")
    assert scores["a"].answer == "1"
    assert scores["a"].metadata["grader"] == "mockllm/grader"
    assert scores["c"].reason == "grader_failed"
    assert math.isnan(scores["c"].value["judged_correct"])
    assert len(scores["c"].metadata["grader_replies"]) == 3
    prompts = [prompt for prompt, _ in grader.calls]
    assert sum("resp-c" in p for p in prompts) == 3
    assert all(config.response_schema is not None for _, config in grader.calls)


def test_hle_scorer_without_structured_output(tmp_path):
    grader = _hle_grader()
    _run(get_judge("hle", structured=False), HLE_SAMPLES[:1], HLE_ANSWERS, tmp_path, grader)
    assert [config.response_schema for _, config in grader.calls] == [None]


def test_hle_scorer_counts_unscored_attempts_across_epochs(tmp_path):
    grader = Grader({"try-1": _hle_reply("yes", 80), "try-2": "garbage"})
    samples = [Sample(id="a", input="qa", target="1")]
    log = _run(get_judge("hle"), samples, {"qa": ["try-1", "try-2"]}, tmp_path, grader, epochs=2)
    metrics = _metrics(log)
    assert metrics["accuracy"] == pytest.approx(0.5)  # avg@2 with the unscored attempt counted wrong
    assert metrics["accuracy_judged"] == pytest.approx(1.0)
    assert metrics["unscored"] == 1  # counted per attempt
    assert metrics["calibration_error_all_bins"] == pytest.approx(0.2)  # the one judged attempt: |0.8 - 1|


def test_grader_call_failure_is_unscored(tmp_path):
    grader = Grader({"resp-a": RuntimeError("grader is down")})
    log = _run(get_judge("hle", attempts=2), HLE_SAMPLES[:1], HLE_ANSWERS, tmp_path, grader)
    assert log.status == "success"
    score = _scores(log, "hle")["a"]
    assert score.reason == "grader_failed"
    assert "grader is down" in score.metadata["grader_failure"]
    assert len(grader.calls) == 2


def test_llm_judge_without_grader_fails_with_a_clear_error(tmp_path):
    log = _run(get_judge("hle"), HLE_SAMPLES[:1], HLE_ANSWERS, tmp_path)
    assert log.status == "error"
    assert "--model-role grader=<model>" in log.error.message


def test_require_grader_fails_before_any_sample_runs(tmp_path):
    answered: list[str] = []

    def answer(messages, config):
        answered.append(messages[-1].text)
        return "resp-a"

    @task
    def needs_grader():
        require_grader("hle")
        return Task(dataset=HLE_SAMPLES[:1], solver=generate(), scorer=get_judge("hle"))

    with pytest.raises(GraderMissingError, match="--model-role grader=<model>"):
        eval(needs_grader, model=scripted_model(answer), log_dir=str(tmp_path), display="none")
    assert answered == []
    grader = _hle_grader()
    log = eval(
        needs_grader,
        model=scripted_model(answer),
        model_roles={"grader": grader.model()},
        log_dir=str(tmp_path),
        display="none",
    )[0]
    assert log.status == "success"


def test_require_grader_accepts_task_roles_and_ignores_lexical_judges():
    require_grader("math")
    require_grader("gaia")
    require_grader("hle", task_roles={"grader": "openai/gpt-4o"})
    with pytest.raises(GraderMissingError):
        require_grader("gaia", cascade=True)


def test_judge_calls_are_cached_per_grader_model(tmp_path):
    grader = _hle_grader()
    _run(get_judge("hle"), HLE_SAMPLES[:2], HLE_ANSWERS, tmp_path, grader)
    assert len(grader.calls) == 2
    _run(get_judge("hle"), HLE_SAMPLES[:2], HLE_ANSWERS, tmp_path, grader)
    assert len(grader.calls) == 2  # re-scoring the same responses with the same grader is free
    other = Grader(grader.replies, name="mockllm/other-grader")
    _run(get_judge("hle"), HLE_SAMPLES[:2], HLE_ANSWERS, tmp_path, other)
    assert len(other.calls) == 2  # another grader model never reuses those judgements


@scorer(metrics=[])
def _asks_as(judge_name: str):
    """A judge that asks the grader the same fixed prompt under ``judge_name``."""

    async def score(state: TaskState, target: Target) -> Score:
        outcome = await ask_grader(judge_name, "Is it so? Answer yes or no.", parse_yes_no)
        return Score(value=float(outcome.verdict))

    return score


def test_judge_calls_are_cached_per_judge(tmp_path):
    grader = Grader({"Is it so?": "yes"})
    samples = [Sample(id="a", input="q", target="x")]
    for judge_name in ("first_judge", "first_judge", "second_judge"):
        _run(_asks_as(judge_name), samples, {"q": "r"}, tmp_path, grader)
    assert (
        len(grader.calls) == 2
    )  # the repeat is replayed; another judge never reuses the first one's verdict


def test_cache_can_be_turned_off(tmp_path):
    grader = _hle_grader()
    for _ in range(2):
        _run(get_judge("hle", cache=False), HLE_SAMPLES[:1], HLE_ANSWERS, tmp_path, grader)
    assert len(grader.calls) == 2


@solver
def _store_solver_answer():
    async def solve(state: TaskState, generate_: Generate) -> TaskState:
        state = await generate_(state)
        state.store.set("answer.solver", "Lyon")
        return state

    return solve


def test_equivalence_scorer_reads_the_named_answer(tmp_path):
    samples = [Sample(id="a", input="Capital of France?", target=["Paris", "Paris, France"])]
    grader = Grader({"Response to grade:\nParis is the capital": "yes", "Response to grade:\nLyon": "No."})
    final = _run(
        get_judge("equivalence"), samples, {"Capital of France?": "Paris is the capital"}, tmp_path, grader
    )
    assert _metrics(final)["accuracy"] == 1.0
    assert "- Paris\n- Paris, France" in grader.calls[0][0]
    solver_log = _run(
        get_judge("equivalence", answer="solver"),
        samples,
        {"Capital of France?": "Paris is the capital"},
        tmp_path,
        grader,
        solver_=_store_solver_answer(),
    )
    assert _metrics(solver_log)["accuracy"] == 0.0
    assert _scores(solver_log, "equivalence_solver")["a"].answer == "Lyon"


def test_missing_named_answer_scores_wrong_not_unscored(tmp_path):
    samples = [Sample(id="a", input="q", target="x")]
    grader = Grader({})
    log = _run(get_judge("equivalence", answer="solver"), samples, {"q": "x"}, tmp_path, grader)
    score = _scores(log, "equivalence_solver")["a"]
    assert score.value == {"correct": 0.0, "judged_correct": 0.0}
    assert score.reason == "no_response"
    assert grader.calls == []


def test_simpleqa_scorer(tmp_path):
    samples = [Sample(id=name, input=f"q{name}", target="gold") for name in "abcd"]
    answers = {f"q{name}": f"resp-{name}" for name in "abcd"}
    grader = Grader({"resp-a": "A", "resp-b": "B", "resp-c": "C", "resp-d": "maybe A?"})
    metrics = _metrics(_run(get_judge("simpleqa"), samples, answers, tmp_path, grader))
    assert metrics["correct"] == pytest.approx(0.25)
    assert metrics["not_attempted"] == pytest.approx(0.25)
    assert metrics["correct_given_attempted"] == pytest.approx(0.5)
    assert metrics["f"] == pytest.approx(2 * 0.5 * 0.25 / 0.75)
    assert metrics["accuracy_judged"] == pytest.approx(1 / 3)  # a of the judged a, b, c; d is unscored
    assert metrics["unscored"] == 1


def test_gaia_scorer_cascades_only_on_a_quasi_exact_miss(tmp_path):
    samples = [
        Sample(id="a", input="qa", target="1000"),
        Sample(id="b", input="qb", target="Saint Petersburg"),
    ]
    answers = {"qa": "FINAL ANSWER: $1,000", "qb": "FINAL ANSWER: St. Petersburg"}
    plain = _run(get_judge("gaia"), samples, answers, tmp_path)
    assert _metrics(plain)["accuracy"] == pytest.approx(0.5)
    grader = Grader({"St. Petersburg": "yes"})
    cascaded = _run(get_judge("gaia", cascade=True), samples, answers, tmp_path, grader)
    assert _metrics(cascaded)["accuracy"] == 1.0
    assert len(grader.calls) == 1
    assert _scores(cascaded, "gaia")["b"].metadata["by"] == "equivalence"


def test_gaia_scorer_gives_the_official_verdict_unless_the_leniency_is_switched_on(tmp_path):
    samples = [
        Sample(id="a", input="qa", target="apple, banana, cherry"),
        Sample(id="b", input="qb", target="b.c, d."),
    ]
    answers = {"qa": "FINAL ANSWER:  APPLE ,banana , cherry.", "qb": "FINAL ANSWER: b.c, d."}
    official = _scores(_run(get_judge("gaia"), samples, answers, tmp_path), "gaia")
    assert (official["a"].value["correct"], official["b"].value["correct"]) == (0.0, 1.0)
    lenient = _scores(_run(get_judge("gaia", list_final_stop=True), samples, answers, tmp_path), "gaia")
    assert (lenient["a"].value["correct"], lenient["b"].value["correct"]) == (1.0, 1.0)


def test_registry():
    assert set(JUDGES) == {"hle", "simpleqa", "equivalence", "math", "lexical", "gaia"}
    assert [name for name in JUDGES if is_llm_judge(name)] == ["hle", "simpleqa", "equivalence"]
    assert is_llm_judge("gaia", cascade=True)
    with pytest.raises(
        ValueError, match="unknown judge 'rouge'; valid: equivalence, gaia, hle, lexical, math, simpleqa"
    ):
        get_judge("rouge")


def test_hle_scorer_keeps_verdicts_with_odd_confidences_and_counts_out_of_range(tmp_path):
    def reply(correct: str, confidence: object) -> str:
        return json.dumps(
            {"extracted_final_answer": "x", "reasoning": "r", "correct": correct, "confidence": confidence}
        )

    grader = Grader(
        {
            "resp-a": reply("yes", "85"),
            "resp-b": reply("yes", 150),
            "resp-c": reply("no", 40.0),
            "resp-d": reply("yes", "very sure"),
        }
    )
    log = _run(get_judge("hle"), HLE_SAMPLES, HLE_ANSWERS, tmp_path, grader)
    metrics = _metrics(log)
    assert (metrics["accuracy"], metrics["unscored"], metrics["confidence_out_of_range"]) == (0.75, 0, 1)
    scores = _scores(log, "hle")
    assert scores["b"].value["confidence"] == 100.0 and scores["b"].metadata["reported_confidence"] == 150.0
    assert math.isnan(scores["d"].value["confidence"]) and scores["d"].value["judged_correct"] == 1.0
    # calibration over the three known confidences (85, 100, 40), clamped: one bin, accuracy 2/3
    assert metrics["calibration_error_all_bins"] == pytest.approx((0.85 + 1.0 + 0.4) / 3 - 2 / 3)
