"""Every task runs end to end on its bundled samples with scripted models and yields hand-computed metrics;
avg@k / pass@k / maj@k over scripted epochs equal hand computations; bad -T values fail at task creation."""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log

from mara_bench.catalog import get_benchmark
from mara_bench.harness.datasets import (
    DatasetUnavailableError,
    MalformedRowError,
    MissingDataError,
    load_benchmark,
)
from mara_bench.harness.datasets.loader import bundled_samples_path
from mara_bench.harness.evaluation import evaluation_task
from mara_bench.harness.prompts import load_prompt
from mara_bench.harness.systems.inspect_adapter import GENERATION_KEY, stored_episode
from mara_bench.harness.testing import scripted_model
from mara_bench.judges.grader import GraderMissingError

WRONG = "zzzz-wrong"
TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"

# (task file, task name, judge family, bundled sample count)
TASKS = [
    ("aime.py", "aime2024", "math", 5),
    ("aime.py", "aime2025", "math", 5),
    ("aime.py", "beyond_aime", "math", 5),
    ("aime.py", "dapo_math", "math", 5),
    ("gaia.py", "gaia", "gaia", 4),
    ("hle.py", "hle", "hle", 5),
    ("frames.py", "frames", "yes_no", 5),
    ("webwalkerqa.py", "webwalkerqa", "yes_no", 5),
    *[
        ("qa.py", name, "lexical", 5)
        for name in (
            "nq",
            "triviaqa",
            "popqa",
            "hotpotqa",
            "twowiki",
            "musique",
            "bamboogle",
            "ambigqa",
            "pubmedqa",
        )
    ],
    ("qa.py", "cupcase", "hle", 5),
]


def _solver_replies(benchmark: str, correct: int, family: str) -> dict[str, str]:
    """The first ``correct`` samples get their gold answer, the rest a wrong one."""
    replies = {}
    for index, sample in enumerate(load_benchmark(benchmark, data="samples").dataset):
        gold = sample.target[0]
        answer = gold if index < correct else WRONG
        replies[sample.input] = f"The answer is \\boxed{{{answer}}}." if family == "math" else answer
    return replies


def _grader_reply(prompt: str, family: str) -> str:
    verdict = "no" if WRONG in prompt else "yes"
    if family == "hle":
        return json.dumps(
            {"extracted_final_answer": "x", "reasoning": "compared", "correct": verdict, "confidence": 90}
        )
    return verdict


def _metrics(log: EvalLog, reducer: str | None = None) -> dict[str, float]:
    values: dict[str, float] = {}
    for score in log.results.scores:
        if reducer is None or score.reducer in (reducer, None):
            values.update({name: metric.value for name, metric in score.metrics.items()})
    return values


@pytest.mark.parametrize(("task_file", "task_name", "family", "count"), TASKS)
def test_task_runs_end_to_end_on_bundled_samples(task_file, task_name, family, count):
    """The user's path: ``inspect eval tasks/<file>@<task> -T data=samples -T system=direct`` with a grader role."""
    replies = _solver_replies(task_name, correct=2, family=family)
    # QA sets send FlashRAG's user template "Question: {question}"; the script is keyed by the question
    solver = scripted_model(lambda messages, config: replies[messages[-1].text.removeprefix("Question: ")])
    grader = scripted_model(lambda messages, config: _grader_reply(messages[-1].text, family))
    (log,) = eval(
        str(TASKS_DIR / f"{task_file}@{task_name}"),
        task_args={"data": "samples", "system": "direct"},
        model=solver,
        model_roles={"grader": grader},
        display="none",
    )
    assert log.status == "success", log.error
    assert len(log.samples) == count
    assert log.eval.metadata["dataset"]["row_count"] == count
    metrics = _metrics(log)
    expected = 2 / count
    if family == "lexical":
        assert (metrics["em"], metrics["acc"], metrics["f1"]) == pytest.approx((expected, expected, expected))
    else:
        assert metrics["accuracy"] == pytest.approx(expected)
    if family in ("hle", "yes_no"):
        assert metrics["unscored"] == 0
        assert log.eval.metadata["judge_model"] == "mockllm/model"


# sample (by its question's position) → scripted replies over 4 epochs, and the gold answers of aime2025 samples
EPOCH_REPLIES = {
    0: ["70", "70", "5", "6"],  # gold 70: 2 of 4 correct, majority 70
    1: ["1", "1", "1", "588"],  # gold 588: 1 of 4 correct, majority 1
    2: ["16", "9", "16", "9"],  # gold 16: 2 of 4 correct, tie 16/9 -> "16" sorts first
}


def _epoch_script(task):
    questions = {sample.input: index for index, sample in enumerate(task.dataset)}
    calls: dict[int, int] = defaultdict(int)

    def reply(messages, config):
        index = questions[messages[-1].text]
        answer = EPOCH_REPLIES[index][calls[index]]
        calls[index] += 1
        return f"\\boxed{{{answer}}}"

    return reply


def test_avg_pass_and_maj_equal_hand_computations_on_scripted_epochs():
    task = evaluation_task(
        get_benchmark("aime2025"), data="samples", limit=3, epochs=4, reducers="avg,pass@1,pass@2,maj"
    )
    (log,) = eval(task, model=scripted_model(_epoch_script(task)), display="none")
    assert log.status == "success", log.error
    # per sample (c correct of n = 4): avg = c/4; pass@2 = 1 - C(4-c, 2)/C(4, 2); maj = value of the majority answer
    avg = Fraction(2, 4) + Fraction(1, 4) + Fraction(2, 4)
    pass_2 = (1 - Fraction(1, 6)) + (1 - Fraction(3, 6)) + (1 - Fraction(1, 6))
    maj = Fraction(1) + Fraction(0) + Fraction(1)
    assert _metrics(log, "mean")["accuracy"] == pytest.approx(float(avg / 3))
    assert _metrics(log, "pass_at_1")["accuracy"] == pytest.approx(float(avg / 3))
    assert _metrics(log, "pass_at_2")["accuracy"] == pytest.approx(float(pass_2 / 3))
    assert _metrics(log, "maj_at_k")["accuracy"] == pytest.approx(float(maj / 3))


# HLE, 3 epochs: response -> the grader's reply (None: an unparsable reply on every attempt -> unscored)
HLE_EPOCHS = {
    0: [("resp-a1", "7", "yes"), ("resp-a2", None, None), ("resp-a3", None, None)],
    1: [("resp-b1", "3", "no"), ("resp-b2", "4", "yes"), ("resp-b3", "3", "no")],
}


def test_unscored_epochs_count_wrong_over_all_never_over_judged_and_never_vote():
    """avg / pass@2 / maj over LLM-judged epochs, two of them unscored, against hand computations."""
    questions = [sample.input for sample in load_benchmark("hle", data="samples", limit=2).dataset]
    calls: dict[int, int] = defaultdict(int)
    verdicts = {
        response: (answer, correct) for rows in HLE_EPOCHS.values() for response, answer, correct in rows
    }

    def solve(messages, config):
        index = questions.index(messages[-1].text)
        calls[index] += 1
        return HLE_EPOCHS[index][calls[index] - 1][0]

    def grade(messages, config):
        response = next(r for r in verdicts if r in messages[-1].text)
        answer, correct = verdicts[response]
        if correct is None:
            return "I cannot tell."
        return json.dumps(
            {"extracted_final_answer": answer, "reasoning": "r", "correct": correct, "confidence": 50}
        )

    (log,) = eval(
        str(TASKS_DIR / "hle.py@hle"),
        task_args={"data": "samples", "limit": 2, "epochs": 3, "reducers": "avg,pass@2,maj"},
        model=scripted_model(solve),
        model_roles={"grader": scripted_model(grade)},
        display="none",
    )
    assert log.status == "success", log.error
    # sample a: correct [1, 0u, 0u] (u: unscored), judged [1]; sample b: correct = judged = [0, 1, 0]
    # avg: a 1/3 (judged 1), b 1/3 (judged 1/3); pass@2 = 1 - C(n-c, 2)/C(n, 2): a 2/3 (judged: n=1 < 2,
    # undefined), b 2/3; maj: a votes {"7": 1} (unscored epochs do not vote) -> 1, b votes {"3": 2, "4": 1} -> 0
    mean, pass_2, maj = (_metrics(log, reducer) for reducer in ("mean", "pass_at_2", "maj_at_k"))
    assert (mean["accuracy"], mean["accuracy_judged"]) == pytest.approx((1 / 3, (1 + 1 / 3) / 2))
    assert (pass_2["accuracy"], pass_2["accuracy_judged"]) == pytest.approx((2 / 3, 2 / 3))
    assert (maj["accuracy"], maj["accuracy_judged"]) == pytest.approx((0.5, 0.5))
    assert mean["unscored"] == 2


def test_the_log_records_dataset_protocol_and_judge(tmp_path):
    (log,) = eval(
        str(TASKS_DIR / "aime.py@aime2025"),
        task_args={"data": "samples", "ids": "3,1", "protocol": "quick"},
        model=scripted_model(lambda messages, config: "\\boxed{0}"),
        log_dir=str(tmp_path),
        display="none",
    )
    metadata = read_eval_log(log.location, header_only=True).eval.metadata
    assert metadata["dataset"] | {"path": None} == {
        "benchmark": "aime2025",
        "source": "samples",
        "path": None,
        "sha256": hashlib.sha256(bundled_samples_path("aime2025").read_bytes()).hexdigest(),
        "rows_read": 5,
        "subset": None,
        "rows_in_benchmark": 5,
        "row_count": 2,
        "ids_requested": ["3", "1"],
        "limit": None,
        "ids_sha256": hashlib.sha256(b"3\n1").hexdigest(),
    }
    assert metadata["protocol"] == {
        "name": "quick",
        "epochs": 1,
        "reducers": ["avg"],
        "generate": {"temperature": 0.0, "max_tokens": 512},
        "system_settings": {},
    }
    assert (metadata["system"], metadata["judge"], metadata["judge_model"]) == ("direct", "math", None)


def test_protocol_sets_epochs_sampling_judge_and_records_them(load_task):
    task = load_task("aime.py", "aime2025", data="samples", protocol="marsrl", epochs=2, limit=1)
    assert task.epochs == 2
    assert (task.config.temperature, task.config.top_p, task.config.max_tokens) == (0.6, 0.95, 65536)
    metadata = task.metadata
    assert metadata["protocol"]["name"] == "marsrl" and metadata["protocol"]["reducers"] == ["avg"]
    assert (metadata["judge"], metadata["judge_model"]) == ("math", None)


def test_protocol_judge_model_is_the_default_grader(load_task, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    hle = load_task("hle.py", "hle", data="samples", protocol="mars")
    assert (hle.metadata["judge"], hle.metadata["judge_model"]) == ("hle", "openai/gpt-4o")
    assert str(hle.model_roles["grader"]) == "openai/gpt-4o"


def test_a_bound_grader_replaces_the_protocols_judge_model(load_task, grader_bound, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    task = load_task("frames.py", "frames", data="samples", protocol="matpo")
    assert (task.metadata["judge"], task.metadata["judge_model"]) == ("simpleqa", "mockllm/model")
    assert not task.model_roles


def test_protocol_judge_model_without_its_key_is_a_clear_error(load_task, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AZUREAI_OPENAI_API_KEY", raising=False)
    with pytest.raises(
        ValueError, match=r"'simpleqa' judge defaults to openai/gpt-4o-mini.*--model-role grader="
    ):
        load_task("frames.py", "frames", data="samples", protocol="matpo")


def test_protocol_settings_reach_only_systems_that_take_them(load_task):
    vc = load_task("aime.py", "aime2025", data="samples", protocol="marsrl", system="vc", accept_after=2)
    assert vc.metadata["system_options"] == {"max_iterations": 10, "accept_after": 2}
    direct = load_task("aime.py", "aime2025", data="samples", protocol="marsrl", system="direct")
    assert direct.metadata["system_options"] == {}


def _system_prompts(task, **eval_args) -> dict[str, str | None]:
    """Sample id → the system message the ``solver`` call received, from a real eval of ``task``."""
    (log,) = eval(
        task, model=scripted_model(lambda messages, config: "\\boxed{1}"), display="none", **eval_args
    )
    assert log.status == "success", log.error
    prompts = {}
    for sample in log.samples:
        messages = stored_episode(sample.store).calls[0].messages
        prompts[sample.id] = messages[0]["content"] if messages[0]["role"] == "system" else None
    return prompts


def test_single_agent_systems_get_each_samples_official_instruction_unless_overridden(load_task):
    hle = evaluation_task(get_benchmark("hle"), data="samples", system="direct", judge="math")
    answer_types = {sample.id: sample.metadata["answer_type"] for sample in hle.dataset}
    assert set(answer_types.values()) == {"exactMatch", "multipleChoice"}
    # the official run_model_predictions sends its one SYSTEM_PROMPT ("Answer: {your chosen answer}") to every type
    assert "\nAnswer: {your chosen answer}\n" in load_prompt("direct_hle")
    assert _system_prompts(hle) == {sid: load_prompt("direct_hle") for sid in answer_types}
    math = evaluation_task(get_benchmark("aime2025"), data="samples", limit=2, system="direct")
    assert set(_system_prompts(math).values()) == {load_prompt("direct_math")}
    own = evaluation_task(
        get_benchmark("nq"), data="samples", limit=2, system="direct", system_prompt="Be brief."
    )
    assert set(_system_prompts(own).values()) == {"Be brief."}
    frames = evaluation_task(
        get_benchmark("frames"), data="samples", limit=2, system="direct", judge="lexical"
    )
    assert set(_system_prompts(frames).values()) == {None}


def test_mask_protocol_uses_the_mask_lexical_variant(load_task):
    mask = load_task("qa.py", "nq", data="samples", protocol="mask")
    assert (mask.metadata["judge"], mask.metadata["judge_options"]) == ("lexical", {"variant": "mask"})


@pytest.mark.parametrize(
    ("task_args", "error", "message"),
    [
        ({"system": "magic"}, ValueError, r"unknown system 'magic'; valid: .*direct"),
        ({"protocol": "fast"}, ValueError, r"unknown protocol 'fast'; valid: default, mars, marsrl"),
        ({"judge": "vibes"}, ValueError, r"unknown judge 'vibes'; valid: equivalence, gaia, hle"),
        (
            {"temperature_x": 1},
            ValueError,
            r"unknown -T option\(s\) temperature_x; .*system 'direct' options: system_prompt",
        ),
        ({"epochs": 0}, ValueError, r"epochs=0 must be a positive integer"),
        ({"reducers": "best@3"}, ValueError, r"unknown reducer 'best@3'"),
        ({"limit": 0}, ValueError, r"limit=0 must be a positive integer"),
        ({"ids": "nope"}, ValueError, r"ids not found in bundled samples aime2025.jsonl: nope"),
        ({"judge": "hle"}, GraderMissingError, r"needs a grader model.*--model-role grader="),
        ({"list_final_stop": True}, ValueError, r"list_final_stop=true is an option of the 'gaia' judge"),
    ],
)
def test_bad_task_options_fail_at_task_creation(load_task, task_args, error, message):
    with pytest.raises(error, match=message):
        load_task("aime.py", "aime2025", **{"data": "samples", **task_args})


def test_the_gaia_list_final_stop_leniency_is_off_unless_asked_and_then_recorded(load_task):
    assert load_task("gaia.py", "gaia", data="samples").metadata["judge_options"] == {}
    lenient = load_task("gaia.py", "gaia", data="samples", list_final_stop=True)
    assert lenient.metadata["judge_options"] == {"list_final_stop": True}


def _bad_input_cases(tmp_path: Path) -> dict[str, tuple[str, dict, type[Exception], str]]:
    """Bad input named in the issue → (task, -T args, error, message): each must stop ``eval`` before any sample."""
    malformed = tmp_path / "aime.jsonl"
    malformed.write_text('{"problem": "P", "answer": "1"}\n{"problem": "Q"}\n', encoding="utf-8")
    return {
        "malformed row": (
            "aime.py@aime2025",
            {"data": str(malformed)},
            MalformedRowError,
            r"row 2: field 'answer'",
        ),
        "missing path": ("aime.py@aime2025", {"data": str(tmp_path / "none")}, MissingDataError, r"-T data="),
        "unknown -T value": (
            "aime.py@aime2025",
            {"data": "samples", "protocol": "x"},
            ValueError,
            r"unknown protocol 'x'; valid: ",
        ),
        "no grader": ("hle.py@hle", {"data": "samples"}, GraderMissingError, r"--model-role grader="),
        "gated, no token": (
            "hle.py@hle",
            {"judge": "math"},
            DatasetUnavailableError,
            r"set HF_TOKEN.*-T data=",
        ),
    }


@pytest.mark.parametrize(
    "case", ["malformed row", "missing path", "unknown -T value", "no grader", "gated, no token"]
)
def test_bad_input_stops_eval_before_any_sample_runs(case, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("MARA_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no stored token either
    task_name, task_args, error, message = _bad_input_cases(tmp_path)[case]
    asked: list[str] = []
    model = scripted_model(lambda messages, config: asked.append(messages[-1].text) or "\\boxed{1}")
    with pytest.raises(error, match=message):
        eval(
            str(TASKS_DIR / task_name),
            task_args=task_args,
            model=model,
            log_dir=str(tmp_path),
            display="none",
        )
    assert asked == []


def test_vc_system_scores_solver_alone_and_system_from_one_run():
    """``-T system=vc``: a wrong first solution corrected by the Corrector → math_solver 0, math 1, in one log."""
    task = evaluation_task(get_benchmark("aime2025"), data="samples", limit=1, system="vc", accept_after=1)
    gold = task.dataset[0].target

    def reply(messages, config):
        prompt = " ".join(message.text for message in messages)
        if "Correctness" in prompt and "\\boxed{" in prompt:  # a verifier reading a solution
            return "Summary: checked.\nCorrectness: " + (
                "Correct" if f"\\boxed{{{gold}}}" in prompt else "Wrong"
            )
        if "\\boxed{" in prompt:  # the corrector revising a flagged solution
            return f"Fixed: \\boxed{{{gold}}}"
        return "\\boxed{1}"  # the solver's first, wrong, solution

    (log,) = eval(task, model=scripted_model(reply), display="none")
    assert log.status == "success", log.error
    by_scorer = {score.name: score.metrics for score in log.results.scores if "accuracy" in score.metrics}
    assert by_scorer["math"]["accuracy"].value == 1.0
    assert by_scorer["math_solver"]["accuracy"].value == 0.0


def test_qa_tasks_send_flashrags_system_prompt_and_user_template(load_task):
    nq = evaluation_task(get_benchmark("nq"), data="samples", limit=2, system="direct")
    (log,) = eval(nq, model=scripted_model(lambda messages, config: "x"), display="none")
    assert log.status == "success", log.error
    for sample in log.samples:
        messages = stored_episode(sample.store).calls[0].messages
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[0]["content"] == load_prompt("direct_qa")
        assert messages[1]["content"] == f"Question: {sample.input}"  # FlashRAG's base_user_prompt
    math = evaluation_task(get_benchmark("aime2025"), data="samples", limit=1, system="direct")
    (log,) = eval(math, model=scripted_model(lambda messages, config: "\\boxed{1}"), display="none")
    assert stored_episode(log.samples[0].store).calls[0].messages[1]["content"] == log.samples[0].input


def _mars_max_tokens(monkeypatch, caplog, **eval_args) -> tuple[list[int | None], dict, str]:
    """The max_tokens each System-2 call was sent with under ``-T protocol=mars``, what the sample's log records
    per role, and the console's warnings."""
    monkeypatch.setenv("SERPER_API_KEY", "unused")  # the scripted System 2 answers at once: no search is made
    sent: list[int | None] = []

    def answer(messages, config):
        sent.append(config.max_tokens)
        return "<answer>\\boxed{1}</answer>"

    typed = eval_args.pop("task_args", {})
    task = evaluation_task(
        get_benchmark("aime2025"),
        data="samples",
        limit=1,
        system="mars",
        protocol="mars",
        judge="math",
        search_backend="serper",
        **typed,
    )
    (log,) = eval(task, model=scripted_model(answer), display="none", **eval_args)
    assert log.status == "success", log.error
    return sent, log.samples[0].store[GENERATION_KEY], caplog.text


def test_a_protocol_setting_yields_to_a_typed_max_tokens_and_the_log_records_what_was_sent(
    monkeypatch, caplog
):
    sent, recorded, console = _mars_max_tokens(monkeypatch, caplog, max_tokens=64)
    assert sent == [64] and recorded == {"system2": [{"max_tokens": 64}]}
    assert "system2 max_tokens: 64 as typed, not the protocol's s2_max_tokens=28672" in console
    sent, recorded, _ = _mars_max_tokens(monkeypatch, caplog)
    assert sent == [28672] and recorded == {
        "system2": [{"max_tokens": 28672}]
    }  # nothing typed: the protocol's
    sent, _, _ = _mars_max_tokens(monkeypatch, caplog, max_tokens=64, task_args={"s2_max_tokens": 100})
    assert sent == [100]  # typed as the system option: the user's own, more specific choice
