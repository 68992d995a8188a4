"""Train on what we score: a benchmark's training split through the harness loader, its prompts as the evaluation
task builds them, and rewards from the judge's own code -- rule judges' pure cores (the very functions the Inspect
scorers call) and LLM judges over an OpenAI-compatible grader with timeout, retries, cache and unscored drops."""

from __future__ import annotations

import asyncio
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fake_grader import FakeGrader
from _method_helpers import run

import mara_bench.harness.systems as systems
import mara_bench.judges.cores as cores
import mara_bench.judges.scorers as scorers
import mara_bench.trainer.tasks.benchmark as benchmark_module
from mara_bench.aime import DAPO_WRAPPER
from mara_bench.core.episodes import Episode
from mara_bench.harness.datasets import load_benchmark
from mara_bench.harness.datasets.specs import get_benchmark
from mara_bench.trainer.algorithms.rewards import gold_text
from mara_bench.trainer.config import ConfigError, GraderConfig, TaskConfig, load_config
from mara_bench.trainer.methods.marsrl import agent_rewards, step_metrics
from mara_bench.trainer.tasks.benchmark import benchmark_task


@pytest.fixture
def musique_train(tmp_path):
    """Generated rows in FlashRAG's format (id, question, golden_answers), as its musique/train.jsonl has them."""
    rows = [
        {
            "id": f"train_{i}",
            "question": f"Who founded company {i}?",
            "golden_answers": [f"Founder {i}", f"F{i}"],
        }
        for i in range(5)
    ]
    path = tmp_path / "musique_train.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def answered(question: str, answer: str) -> Episode:
    return Episode(system="direct", question=question, final_answer=answer)


def test_training_split_loads_through_the_harness_loader(musique_train, monkeypatch):
    monkeypatch.chdir(musique_train.parent)
    loaded = load_benchmark("musique", data=musique_train.name, split="train")  # relative to the cwd
    assert loaded.provenance["row_count"] == 5 and loaded.provenance["source"] == "local"
    with pytest.raises(ValueError, match="has no split 'dev2'; its splits: dev, train"):
        load_benchmark("musique", data=str(musique_train), split="dev2")
    with pytest.raises(ValueError, match="benchmark 'popqa' has no split 'train'"):
        load_benchmark("popqa", split="train")


def test_prompts_are_built_by_the_evaluation_tasks_own_function(musique_train):
    assert benchmark_module.sample_options is systems.sample_options
    task = benchmark_task("musique", data=str(musique_train), judge="lexical")
    item = task.items[0]
    assert item["question"] == "Who founded company 0?" and item["answer"] == ["Founder 0", "F0"]
    question, options = task.run_input(item, "direct", {})
    assert options["system_prompt"].startswith("Answer the question based on your own knowledge")
    # FlashRAG's user template, as the evaluation task sends it
    assert question == "Question: Who founded company 0?"
    # a system without a system_prompt option gets neither
    assert task.run_input(item, "vc", {}) == ("Who founded company 0?", {})
    # the recipe's own instruction wins, and the question stays bare
    own_prompt = {"system_prompt": "Be brief."}
    assert task.run_input(item, "direct", own_prompt) == ("Who founded company 0?", own_prompt)


def test_rule_rewards_call_the_same_core_as_the_scorers(musique_train, monkeypatch):
    task = benchmark_task("musique", data=str(musique_train), judge="lexical", judge_options={"metric": "f1"})
    assert task.rewarder.score is cores.lexical_reward and scorers.cores is cores
    item = task.items[0]
    assert task.reward(item, answered(item["question"], "It was Founder 0.")) == pytest.approx(2 / 3)
    assert task.reward(item, answered(item["question"], "Founder 7")) == pytest.approx(0.5)
    calls = []
    real = cores.lexical_values
    monkeypatch.setattr(cores, "lexical_values", lambda *a: calls.append(a) or real(*a))
    task.reward(item, answered(item["question"], "F0"))
    assert calls == [("F0", ["Founder 0", "F0"], "flashrag")]


def test_the_reward_equals_the_evaluation_score_of_the_same_answer(musique_train):
    """One real Inspect eval of the musique task on scripted answers; its lexical scores are the rewards."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import ModelOutput, get_model

    from mara_bench.catalog import get_benchmark
    from mara_bench.harness.evaluation import evaluation_task

    answers = ["Founder 0", "the founder 1 of it", "nobody", "F3", "\\boxed{Founder 4}"]
    model = get_model(
        "mockllm/model", custom_outputs=[ModelOutput.from_content("mockllm/model", a) for a in answers]
    )
    eval_task = evaluation_task(get_benchmark("musique"), data=str(musique_train))
    eval_task.dataset = eval_task.dataset[:5]
    [log] = inspect_eval(
        eval_task, model=model, display="none", max_samples=1, log_dir=None, log_level="error"
    )
    scores = {str(s.id): s.scores["lexical"].value for s in log.samples}
    task = benchmark_task("musique", data=str(musique_train), split=None, judge="lexical")
    for metric in ("em", "f1"):
        task.judge_options = {"metric": metric}
        for item, answer in zip(task.items, answers, strict=True):
            assert task.reward(item, answered(item["question"], answer)) == scores[item["id"]][metric]


def test_llm_judge_rewards_from_an_openai_compatible_grader(tmp_path):
    single = (
        tmp_path / "single.jsonl"
    )  # one gold per row: LLM judges read Inspect's Target.text, as in evaluation
    single.write_text(
        json.dumps({"id": "t0", "question": "Who founded company 0?", "golden_answers": ["Founder 0"]})
    )
    with FakeGrader(slow_seconds=3.0) as server:
        grader = GraderConfig(
            model="openai-api/fake/grader",
            base_url=server.base_url,
            api_key="none",
            timeout=1.0,
            retries=2,
            attempts=2,
        )
        task = benchmark_task("musique", data=str(single), judge="simpleqa", grader=grader)
        item = task.items[0]
        episodes = [
            answered(item["question"], text) for text in ("Founder 0", "Somebody", "GARBLE", "SLOW Founder 0")
        ]

        async def judge_all():
            return await asyncio.gather(*[task.grade(item, e) for e in episodes])

        assert asyncio.run(judge_all()) == [1.0, 0.0, None, None]  # unparsable twice; timed out twice
        assert task.reward(item, episodes[0]) == 1.0 and task.reward(item, episodes[1]) == 0.0
        with pytest.raises(KeyError):
            task.reward(item, episodes[2])  # never scored: no silent 0
        asked = server.requests
        assert asyncio.run(task.grade(item, episodes[0])) == 1.0
        assert server.requests == asked  # cached


def test_bad_task_settings_fail_at_load_with_the_key(tmp_path):
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("task: {benchmark: musiqe, system: direct}\n")
    with pytest.raises(
        ConfigError, match=r"bad.yaml: task.benchmark: unknown benchmark 'musiqe'; use one of"
    ):
        load_config(recipe)
    recipe.write_text("task: {benchmark: aime2025, system: vc}\n")  # split: train by default
    with pytest.raises(
        ConfigError, match=r"task.split: benchmark 'aime2025' has no split 'train'; its splits: test"
    ):
        load_config(recipe)
    with pytest.raises(ConfigError, match="data: applies to a benchmark task only"):
        TaskConfig(data="x.jsonl")
    with pytest.raises(ValueError, match="task.judge 'simpleqa' asks an LLM grader"):
        benchmark_task("musique", judge="simpleqa")
    with pytest.raises(ValueError, match="task.judge_options.metric must be one of em, acc, f1"):
        benchmark_task("musique", judge="lexical", judge_options={"metric": "bleu"})


def test_a_mix_of_training_sets_from_one_data_folder(tmp_path):
    """M-ASK's NQ + HotpotQA train: one data folder in FlashRAG's layout, ids kept apart by benchmark."""
    for name in ("nq", "hotpotqa"):
        (tmp_path / name).mkdir()
        rows = [{"id": "train_0", "question": f"{name} question?", "golden_answers": ["yes"]}]
        (tmp_path / name / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    task = benchmark_task(["nq", "hotpotqa"], data=str(tmp_path), judge="lexical")
    assert [item["id"] for item in task.items] == ["nq/train_0", "hotpotqa/train_0"]
    assert set(task.provenance) == {"nq", "hotpotqa"}
    with pytest.raises(ValueError, match=r"are judged by \['lexical', 'math'\] by default; set task.judge"):
        benchmark_task(["nq", "aime2025"], data=str(tmp_path))


def dapo_rows(problems: list[tuple[str, str]]) -> list[dict]:
    """Generated rows in DAPO-Math-17k's verl format: the problem in DAPO's instruction as a chat prompt."""
    prefix, suffix = DAPO_WRAPPER
    return [
        {
            "data_source": "math_dapo",
            "prompt": [{"content": f"{prefix}{problem}{suffix}", "role": "user"}],
            "ability": "MATH",
            "reward_model": {"ground_truth": answer, "style": "rule-lighteval/MATH_v2"},
            "extra_info": {"index": f"uuid-{i}"},
        }
        for i, (problem, answer) in enumerate(problems)
    ]


def test_marsrl_trains_on_a_math_training_set_from_a_data_folder(tmp_path):
    """``task: {benchmark: dapo_math, split: train, judge: math, system: vc}`` over a generated parquet in the data
    folder layout: bare problems (DAPO's own instruction removed), and MarsRL's agent rewards read the benchmark's
    gold list as the math judge's scorer does."""
    (tmp_path / "dapo_math").mkdir()
    rows = dapo_rows([("What is 6 * 7?", "42"), ("How many divisors does 12 have?", "6")])
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "dapo_math" / "train.parquet")
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(
        f"task: {{benchmark: dapo_math, data: {tmp_path}, split: train, judge: math, system: vc}}\n"
        "algorithm: {method: marsrl}\n"
    )
    config = load_config(recipe).task
    task = benchmark_task(config.benchmark, data=config.data, split=config.split, judge=config.judge)
    item = task.items[0]
    assert (item["id"], item["question"], item["answer"]) == ("uuid-0", "What is 6 * 7?", ["42"])
    assert task.provenance["dapo_math"]["source"] == "local"
    question, options = task.run_input(item, "vc", {})
    assert (question, options) == ("What is 6 * 7?", {})
    assert task.reward(item, answered(item["question"], "So \\boxed{42}.")) == 1.0

    # one real V-C run: the Solver is right, Verifier1 says Wrong, Corrector1 is wrong, Verifier2 says Wrong
    episode = run(
        "vc",
        question,
        {"solver": ["\\boxed{42}"], "verifier": ["Correctness: Wrong"] * 2, "corrector": ["\\boxed{41}"]},
        accept_after=1,
        max_iterations=1,
    )
    assert list(agent_rewards(episode, gold_text(item["answer"])).values()) == [1.0, -1.0, -1.0, 1.0]
    # read against the gold list's text "42" (not "['42']"): V1 flagged a right solution, V2 caught C1's error
    assert step_metrics([item], [[episode]]) == {
        "marsrl/verifier_precision": (1.0, 2.0),
        "marsrl/verifier_recall": (1.0, 1.0),
        "marsrl/verifier_false_alarm_rate": (1.0, 1.0),
        "marsrl/corrector_fix_rate": (0.0, 0.0),
        "marsrl/solver_accuracy": (1.0, 1.0),
    }


def test_mars_medicine_training_set_loads_from_pubmedqa_rows(tmp_path):
    """MARS's PubMedQA part (arXiv:2510.04935 C.7): generated rows in its ``pqa_labeled`` format, the gold decision as the
    answer, the question bare (no abstract), rewarded by the lexical judge."""
    rows = [
        {
            "pubid": 7,
            "question": "Does X help?",
            "context": {"contexts": ["..."]},
            "long_answer": "It does.",
            "final_decision": "yes",
        },
    ]
    path = tmp_path / "pqa.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    task = benchmark_task("pubmedqa", data=str(path), split="train")
    item = task.items[0]
    assert (item["id"], item["question"], item["answer"], task.judge) == (
        "7",
        "Does X help?",
        ["yes"],
        "lexical",
    )
    assert task.reward(item, answered(item["question"], "yes")) == 1.0
    assert task.reward(item, answered(item["question"], "maybe")) == 0.0


def test_mars_clinical_training_set_loads_from_cupcase_rows(tmp_path):
    """MARS's CUPCase part (arXiv:2510.04935 C.7): a generated parquet in the data folder layout of the Hugging Face copy
    (``ofir408/CupCase``, one ``test`` split); each case goes out inside CUPCase's free-text diagnosis prompt, the
    gold is the diagnosis, and the reward is HLE's LLM judge, as MARS rewards every trajectory (C.3)."""
    (tmp_path / "cupcase").mkdir()
    rows = [
        {
            "case_id": 17,
            "clean_case_presentation": "A 30-year-old man has a fever and a stiff neck.",
            "correct_diagnosis": "Bacterial meningitis",
            "distractor1": "Migraine",
            "distractor2": "Tension headache",
            "distractor3": "Sinusitis",
        },
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "cupcase" / "test-00000-of-00001.parquet")
    with pytest.raises(ValueError, match="task.judge 'hle' asks an LLM grader"):
        benchmark_task("cupcase", data=str(tmp_path), split="test")
    task = benchmark_task("cupcase", data=str(tmp_path), split="test", judge="lexical")
    item = task.items[0]
    assert (item["id"], item["answer"]) == ("17", ["Bacterial meningitis"])
    assert item["question"] == (
        "Predict the diagnosis of this case presentation of a patient. Return the final diagnosis in one concise "
        "sentence without any further elaboration.\nFor example: <diagnosis name here>\n"
        "Case presentation: A 30-year-old man has a fever and a stiff neck.\nDiagnosis:"
    )
    assert get_benchmark("cupcase").judge == "hle"


def test_each_training_set_takes_its_own_limit(tmp_path):
    """MARS's table 8 samples 400 TriviaQA and 500 HotpotQA items: ``task.limit`` as a mapping per benchmark."""
    for name in ("triviaqa", "hotpotqa"):
        (tmp_path / name).mkdir()
        rows = [{"id": f"train_{i}", "question": f"{name} {i}?", "golden_answers": ["yes"]} for i in range(4)]
        (tmp_path / name / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    task = benchmark_task(
        ["triviaqa", "hotpotqa"], data=str(tmp_path), judge="lexical", limit={"triviaqa": 1}
    )
    assert [item["id"] for item in task.items] == [
        "triviaqa/train_0",
        *(f"hotpotqa/train_{i}" for i in range(4)),
    ]
    recipe = tmp_path / "bad.yaml"
    recipe.write_text("task: {benchmark: [triviaqa, hotpotqa], limit: {nq: 3}, judge: lexical}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(recipe)
    assert str(caught.value) == (
        f"{recipe}: task.limit: names ['nq'], which task.benchmark does not list; "
        "use the listed benchmarks: triviaqa, hotpotqa"
    )
