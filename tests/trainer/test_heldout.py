"""Held-out splits and their evaluation (issue 29): the toy generators' training and held-out questions share no
country, capital or sum; every learning recipe names both and meets a fresh country at every question; the
Verifier probe's recall / false alarms / precision and the Corrector probe's fix rate are hand counts; a real ``mara train`` run logs ``heldout/...``.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from _e2e_helpers import LOOKUP_RUN
from test_train_run_metrics import mara_train

from mara_bench.core.episodes import Reply
from mara_bench.trainer.config import load_config
from mara_bench.trainer.demos.text import stated_capital
from mara_bench.trainer.rollouts.rollout import training_task
from mara_bench.trainer.rollouts.scoring import ratio_metrics
from mara_bench.trainer.run.heldout import corrector_probe, verifier_probe
from mara_bench.trainer.run.metrics import read_metrics
from mara_bench.trainer.tasks.lookup import CAPITALS, lookup_task
from mara_bench.trainer.tasks.toy import addition_task

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"
LEARNING_RECIPES = ["marsrl-verifier-compact.yaml", "mars-learn.yaml", "mask-learn.yaml", "matpo-learn.yaml"]
QUESTION = re.compile(r"What is (\d+) \+ (\d+)\?")


def country(item: dict) -> str:
    return item["question"].removeprefix("What is the capital of ").removesuffix("?")


def test_generated_lookup_splits_share_no_country_or_capital_and_are_seeded():
    task = lookup_task(n_prompts=64, heldout_prompts=16, generated=True, seed=3)
    train, held = task.items, task.heldout
    assert (len(train), len(held)) == (64, 16)
    names = [country(i) for i in train + held] + [i["answer"] for i in train + held]
    assert len(set(names)) == len(names)  # every country and capital appears once across both splits
    assert not set(names) & (set(CAPITALS) | set(CAPITALS.values()))
    assert train == lookup_task(n_prompts=64, heldout_prompts=16, generated=True, seed=3).items
    assert train != lookup_task(n_prompts=64, heldout_prompts=16, generated=True, seed=4).items


def test_a_heldout_search_finds_its_own_passage_first_and_a_heldout_neighbours_second():
    task = lookup_task(n_prompts=8, heldout_prompts=4, generated=True, tools=["search"])
    item = task.heldout[1]
    found = asyncio.run(task.toolbox.call("search", query=f"capital of {country(item)}"))
    own, other = re.findall(r"The capital of (\w+) is (\w+)\.", found)
    assert own == (country(item), item["answer"])
    assert other[0] in {country(i) for i in task.heldout} - {country(item)}  # the careless pick: held out too


def test_neighbour_capital_first_makes_the_first_capital_a_search_returns_the_wrong_one():
    task = lookup_task(
        n_prompts=8, heldout_prompts=4, generated=True, tools=["search"], neighbour_capital_first=True
    )
    for item in task.heldout:
        found = asyncio.run(task.toolbox.call("search", query=f"capital of {country(item)}"))
        stated = re.findall(r"capital of (\w+) is (\w+)\.", found)
        assert stated[0][0] != country(item) and stated[0][1] != item["answer"]  # the careless pick is wrong
        assert stated_capital(found, country(item)) == item["answer"]  # reading whose capital it is answers
        assert {name for name, _ in stated} <= {country(i) for i in task.heldout}
    with pytest.raises(ValueError, match="neighbour_capital_first needs generated: true"):
        lookup_task(neighbour_capital_first=True)


def test_the_fixed_table_has_no_heldout_split():
    with pytest.raises(ValueError, match="heldout_prompts needs generated: true"):
        lookup_task(heldout_prompts=2)


def test_addition_heldout_questions_have_sums_no_training_question_has():
    task = addition_task(
        n_prompts=64, totals=[4, 6, 7], heldout_totals=[5, 12], heldout_prompts=16, min_operand=1
    )
    assert {i["answer"] for i in task.items} == {"4", "6", "7"}
    assert {i["answer"] for i in task.heldout} == {"5", "12"}
    for item in task.items + task.heldout:
        a, b = map(int, QUESTION.match(item["question"]).groups())
        assert a + b == int(item["answer"]) and min(a, b) >= 1
    with pytest.raises(ValueError, match="no sum in common"):
        addition_task(totals=[4, 7], heldout_totals=[7, 9], heldout_prompts=4)


@pytest.mark.parametrize("recipe", LEARNING_RECIPES)
def test_every_learning_recipe_evaluates_on_a_disjoint_heldout_split(recipe):
    config = load_config(RECIPES / recipe)
    task = training_task(config.task)
    assert task.heldout and config.eval.every > 0
    assert not {i["question"] for i in task.items} & {i["question"] for i in task.heldout}
    assert not {i["answer"] for i in task.items} & {i["answer"] for i in task.heldout}
    if config.task.factory.endswith("lookup_task"):  # a fresh country at every question of the run
        assert config.steps * config.rollout.prompts_per_step <= len(task.items)


async def flags_by_sum(role: str, messages: list, **sampling) -> Reply:
    """A scripted Verifier: never flags on a sum-5 question, flags only wrong solutions on sum 9, every solution
    on sum 12, and writes no verdict on sum 23."""
    content = messages[-1]["content"]
    total = sum(map(int, QUESTION.search(content).groups()))
    judged = int(re.findall(r"\\boxed\{(-?\d+)\}", content)[-1])
    flag = {5: False, 9: judged != 9, 12: True}.get(total)
    if flag is None:
        return Reply(text="I cannot tell.")
    return Reply(text=f"The answer is {judged}.\nCorrectness: {'Wrong' if flag else 'Correct'}")


def test_the_verifier_probe_counts_what_a_hand_count_gives():
    items = [
        {
            "id": f"h{total}",
            "question": f"What is {total - 2} + 2? Answer with the number only.",
            "answer": str(total),
        }
        for total in (5, 9, 12, 23)
    ]
    trainer = SimpleNamespace(
        settings=SimpleNamespace(samples=2),
        seed=0,
        rollout=SimpleNamespace(chat=flags_by_sum, system_options={"prompts": "compact"}),
        task=SimpleNamespace(heldout=items),
    )
    single = SimpleNamespace(sum=list)
    metrics = ratio_metrics(single, asyncio.run(verifier_probe(trainer, items)))
    # per question 2 right and 2 wrong solutions judged: 8 wrong, of which caught 0 (5) + 2 (9) + 2 (12) + 0 (23);
    # 8 right, of which flagged 2 (12); 6 flags, 4 of them on wrong solutions; 4 reports (23) without a verdict
    assert metrics["heldout/verifier_recall"] == 4 / 8
    assert metrics["heldout/verifier_false_alarm_rate"] == 2 / 8
    assert metrics["heldout/verifier_precision"] == 4 / 6
    assert metrics["heldout/verifier_no_verdict"] == 4 / 16
    per_sum = {total: metrics[f"heldout/verifier_recall/sum_{total}"] for total in (5, 9, 12, 23)}
    assert per_sum == {5: 0.0, 9: 1.0, 12: 1.0, 23: 0.0}
    assert metrics["heldout/verifier_false_alarm_rate/sum_12"] == 1.0
    assert metrics["heldout/verifier_false_alarm_rate/sum_9"] == 0.0


CORRECTOR_SEEN: list[list] = []


async def fixes_by_sum(role: str, messages: list, **sampling) -> Reply:
    """A scripted Corrector: writes the sum on a sum-5 question, a wrong sum on sum 9, nothing boxed on sum 12."""
    assert role == "corrector", role  # the probe scripts the Solver and the Verifier
    CORRECTOR_SEEN.append(messages)
    total = sum(map(int, QUESTION.search(messages[0]["content"]).groups()))
    return Reply(text={5: "\\boxed{5}", 9: "\\boxed{10}"}.get(total, "I would rather not."))


@pytest.mark.parametrize("worked", [False, True])
def test_the_corrector_probe_counts_what_a_hand_count_gives(worked):
    items = [
        {"id": f"h{t}", "question": f"What is {t - 2} + 2? Answer with the number only.", "answer": str(t)}
        for t in (5, 9, 12)
    ]
    run = SimpleNamespace(
        settings=SimpleNamespace(samples=2),
        seed=0,
        rollout=SimpleNamespace(chat=fixes_by_sum, system_options={"prompts": "compact"}),
    )
    CORRECTOR_SEEN.clear()
    ratios = asyncio.run(corrector_probe(run, items, worked))
    metrics = ratio_metrics(SimpleNamespace(sum=list), ratios)
    assert metrics["heldout/corrector_fix_rate"] == 2 / 6  # sum 5, twice
    assert metrics["heldout/corrector_answer_given"] == 4 / 6  # sums 5 and 9
    assert len(CORRECTOR_SEEN) == 6
    for messages in CORRECTOR_SEEN:  # it revises the wrong solution after a report flagging it
        solution = messages[1]["content"]
        total = sum(map(int, QUESTION.search(messages[0]["content"]).groups()))
        assert messages[1]["role"] == "assistant" and solution != f"\\boxed{{{total}}}"
        assert ("ends in" in messages[-1]["content"]) is worked


VERIFIER_RUN = """\
model: {{path: {model}}}
task:
  factory: mara_bench.trainer.tasks.toy:addition_task
  args: {{n_prompts: 8, min_operand: 1, totals: [4, 6], heldout_totals: [9], heldout_prompts: 2,
          solver_skill: 0.5}}
  system: vc
  system_options: {{prompts: compact}}
rollout: {{prompts_per_step: 2, group_size: 2, max_tokens: 12}}
algorithm:
  method: marsrl
  advantage: grpo
  marsrl: {{rollout: grouped, selection: balanced, agents: 2, train_agents: [verifier]}}
eval: {{every: 1, samples: 1}}
steps: 2
save_every: 0
"""


def test_a_real_mara_train_run_logs_heldout_metrics_and_scripts_the_solver(tiny_model_dir, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(VERIFIER_RUN.format(model=tiny_model_dir))
    run = tmp_path / "run"
    mara_train(recipe, run)
    records = {record["step"]: record for record in read_metrics(run)}
    assert sorted(records) == [-1, 0, 1]  # after the cold start, then after each step
    for record in records.values():
        for name in ("recall", "false_alarm_rate", "precision", "no_verdict"):
            assert 0.0 <= record.get(f"heldout/verifier_{name}", 0.0) <= 1.0
        assert "heldout/verifier_recall" in record and "heldout/verifier_recall/sum_9" in record
        assert 0.0 <= record["heldout/corrector_fix_rate"] <= record["heldout/corrector_answer_given"] <= 1.0
    assert "reward_mean" in records[0] and "reward_mean" not in records[-1]
    question = json.loads((run / "rollouts" / "step_0.jsonl").read_text().splitlines()[0])
    solvers = [c for c in question["episodes"][0]["calls"] if c["role"] == "solver"]
    assert solvers and {c["reply"]["model"] for c in solvers} == {"scripted-demo"}


def test_a_real_lookup_run_logs_answer_accuracy_and_each_roles_gold_naming(tiny_model_dir, tmp_path):
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(LOOKUP_RUN.format(model=tiny_model_dir))
    mara_train(recipe, tmp_path / "run")
    records = {record["step"]: record for record in read_metrics(tmp_path / "run")}
    for step in (-1, 1):  # after the cold start and after the last step; not after step 0 (every 2)
        # System 2 runs in every episode (System 1 only once a search returned pages: an untrained model's
        # episodes may have none, and a role without calls reports nothing)
        assert {
            "heldout/answer_accuracy",
            "heldout/answer_given",
            "heldout/role/system2/names_gold",
            "heldout/role/system2/reward_mean",
        } <= set(records[step])
        assert all(
            0.0 <= value <= 1.0 for name, value in records[step].items() if name.endswith("names_gold")
        )
    assert not any(name.startswith("heldout/") for name in records[0])


def test_eval_without_a_heldout_split_is_one_line(tiny_model_dir, tmp_path):
    import os
    import subprocess
    import sys

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(f"model: {{path: {tiny_model_dir}}}\neval: {{every: 1}}\nsteps: 1\n")
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mara_bench.harness.cli",
            "train",
            str(recipe),
            "--out",
            str(tmp_path / "run"),
        ],
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2
    assert (
        done.stdout.strip()
        .splitlines()[-1]
        .startswith("mara train: eval.every: the task has no held-out split")
    )


class ByQuestion:
    """The MARS demonstration policy at full skill, for whichever held-out question the messages carry."""

    def __init__(self, items: list[dict], tokenizer):
        from mara_bench.trainer.demos import ScriptedChat, demo_policy

        skills = {"system1": 1.0, "system2": 1.0}
        self.chats = {
            i["question"]: ScriptedChat(demo_policy("mars"), i, random.Random(0), tokenizer, skills)
            for i in items
        }

    async def __call__(self, role: str, messages: list, **sampling) -> Reply:
        text = json.dumps(messages)
        [chat] = [chat for question, chat in self.chats.items() if question in text]
        return await chat(role, messages, **sampling)


def test_a_policy_with_the_skill_scores_full_marks_on_the_heldout_split(tiny_tokenizer):
    from mara_bench.harness.systems import get_system
    from mara_bench.trainer.methods import get_method
    from mara_bench.trainer.run.heldout import system_ratios, system_runs

    task = lookup_task(n_prompts=4, heldout_prompts=3, generated=True, tools=["search"])
    options = {"max_turns": 2, "prompts": "compact"}
    chat = ByQuestion(task.heldout, tiny_tokenizer)
    trainer = SimpleNamespace(
        settings=SimpleNamespace(samples=2),
        seed=0,
        rollout=SimpleNamespace(
            run_input=lambda item: (item["question"], options),
            system=get_system("mars"),
            chat_for=lambda item: chat,
            toolbox=task.toolbox,
        ),
        task=task,
        method=get_method("mars"),
        roles=["system2", "system1"],
        tokenizer=tiny_tokenizer,
    )
    groups = asyncio.run(system_runs(trainer, task.heldout))
    metrics = ratio_metrics(SimpleNamespace(sum=list), system_ratios(trainer, task.heldout, groups))
    assert (
        metrics["heldout/answer_accuracy"] == 1.0
    )  # so the look-up runs' zeros are the policy's, not the probe's
    assert metrics["heldout/answer_given"] == 1.0
    assert metrics["heldout/role/system1/names_gold"] == 1.0
    assert metrics["heldout/role/system1/reward_mean"] == 1.0
