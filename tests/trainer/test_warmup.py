"""The cold start's demonstrations: every role of every system is played through the real system code, with
outcomes that vary (so the warmed-up policy keeps group advantages non-zero), and turned into samples by the
method's own code, so only the scripted replies are trained on; bad ``warmup:`` values fail at load."""

from __future__ import annotations

import asyncio
import json
import random
import re
import statistics
from pathlib import Path

import pytest
import torch

from mara_bench.core.episodes import Episode
from mara_bench.core.samples import Sample
from mara_bench.harness.systems import get_system
from mara_bench.harness.systems.outcomes import IntermediateAnswer
from mara_bench.trainer import registry
from mara_bench.trainer.config import ConfigError, TrainConfig, from_dict, load_config
from mara_bench.trainer.demos import DemoPolicy, demo_policy
from mara_bench.trainer.demos.text import named_capital
from mara_bench.trainer.run.engine import Trainer
from mara_bench.trainer.run.warmup import (
    demo_episodes,
    demo_returns,
    demo_samples,
    judged,
    role_counts,
    value_regression,
)

RECIPES = Path(__file__).resolve().parents[2] / "trainer" / "recipes"


def _trainer(recipe: str, model_dir: Path, run_dir: Path) -> Trainer:
    config = load_config(RECIPES / recipe)
    config.model.path = str(model_dir)
    return Trainer(config, run_dir)


@pytest.mark.parametrize(
    "recipe",
    ["marsrl-tiny.yaml", "marsrl-grouped-tiny.yaml", "mars-tiny.yaml", "matpo-tiny.yaml", "mask-tiny.yaml"],
)
def test_demonstrations_play_every_role_with_varied_rewards(recipe, tiny_model_dir, tmp_path):
    trainer = _trainer(recipe, tiny_model_dir, tmp_path)
    samples = demo_samples(trainer.demos, seed=0)
    assert sorted(role_counts(samples)) == sorted(get_system(trainer.config.task.system).roles)
    for role in role_counts(samples):
        rewards = [s.reward for s in samples if s.role == role]
        assert statistics.pvariance(rewards) > 0, f"{role}: every demonstration earns {rewards[0]}"


def test_mars_demonstrations_train_the_system2_replies_and_not_the_distillates(tiny_model_dir, tmp_path):
    trainer = _trainer("mars-tiny.yaml", tiny_model_dir, tmp_path)
    system2 = next(s for s in demo_samples(trainer.demos, seed=0) if s.role == "system2")
    trained = trainer.tokenizer.decode(
        [t for t, m in zip(system2.response_ids, system2.loss_mask, strict=True) if m]
    )
    untrained = trainer.tokenizer.decode(
        [t for t, m in zip(system2.response_ids, system2.loss_mask, strict=True) if not m]
    )
    assert "<tool_call>" in trained and "<answer>" in trained
    assert "<tool_response>" in untrained and "<tool_response>" not in trained


def test_warm_up_with_no_steps_leaves_the_policy_alone(tiny_model_dir, tmp_path):
    trainer = _trainer("marsrl-tiny.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.steps = 0
    before = [p.detach().clone() for p in trainer.policy.parameters()]
    assert trainer.warm_up() == []
    assert all((a == b).all() for a, b in zip(before, trainer.policy.parameters(), strict=True))


def test_a_few_warm_up_steps_lower_the_demonstration_loss_and_are_logged(tiny_model_dir, tmp_path):
    trainer = _trainer("marsrl-tiny.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.steps, trainer.config.warmup.batch_size = 4, 2
    records = trainer.warm_up()
    assert len(records) == 4 and records[-1].loss < records[0].loss
    assert len((tmp_path / "warmup.jsonl").read_text().splitlines()) == 4


def test_the_kl_reference_is_the_warmed_up_policy_not_the_base_weights(tiny_model_dir, tmp_path):
    config = load_config(RECIPES / "mask-tiny.yaml")
    config.model.path, config.algorithm.kl_coef = str(tiny_model_dir), 0.1
    config.warmup.steps, config.warmup.batch_size, config.warmup.critic_steps = 2, 2, 0
    trainer = Trainer(config, tmp_path)
    trainer.warm_up()
    reference = dict(trainer.reference.named_parameters())
    moved = [name for name, p in trainer.policy.named_parameters() if not torch.equal(p, reference[name])]
    assert moved == [], f"the reference still holds the base weights of {moved[:3]}"
    trainer.save()  # a run resumed after the cold start keeps that reference (it cannot warm up again)
    resumed = Trainer(config, tmp_path, resume=True)
    reference = dict(resumed.reference.named_parameters())
    moved = [name for name, p in trainer.policy.named_parameters() if not torch.equal(p, reference[name])]
    assert moved == [], f"the resumed reference holds the base weights of {moved[:3]}"


@pytest.mark.parametrize(("key", "value"), [("steps", -1), ("demos_per_item", 0), ("batch_size", 0)])
def test_bad_warmup_values_name_the_key(key, value):
    with pytest.raises(ConfigError, match=f"warmup.{key}"):
        from_dict(TrainConfig, {"warmup": {key: value}})


def test_mars_demonstrations_pack_the_search_pages_into_system1_bins(tiny_model_dir, tmp_path):
    trainer = _trainer("mars-tiny.yaml", tiny_model_dir, tmp_path)
    item = trainer.task.items[0]
    [episode, *_] = asyncio.run(demo_episodes(trainer.demos, item, random.Random(0)))
    [distil] = episode.calls_by_role("system1")
    assert sorted(distil.meta["pages"]) == [0, 1]  # both retrieved passages in one System-1 bin
    assert episode.calls_by_role("system2")[-1].messages[-1]["content"].count(distil.reply.text) == 1


def test_demonstration_returns_put_the_reward_on_trained_tokens_discounted_from_the_last():
    sample = Sample(prompt_ids=[1], response_ids=[5, 6, 7, 8, 9], loss_mask=[1, 1, 0, 1, 0], reward=2.0)
    [returns] = demo_returns([sample], gamma=0.5)
    assert returns.tolist() == [0.5, 1.0, 0.0, 2.0, 0.0]


def test_the_critic_warm_up_fits_the_demonstration_returns_and_leaves_the_policy_fit_alone(
    tiny_model_dir, tmp_path
):
    trainer = _trainer("mask-tiny.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.steps, trainer.config.warmup.batch_size = 2, 8
    trainer.config.warmup.critic_steps = 6
    samples = demo_samples(trainer.demos, seed=0)
    budget = trainer.config.optim.token_budget
    before = float(value_regression(trainer.critic, samples, budget, gamma=1.0)[0])
    trainer.critic.zero_grad(set_to_none=True)
    records = trainer.warm_up()
    after = float(value_regression(trainer.critic, samples, budget, gamma=1.0)[0])
    assert [r.model for r in records] == ["policy", "policy"]
    logged = [json.loads(line)["model"] for line in (tmp_path / "warmup.jsonl").read_text().splitlines()]
    assert logged == ["policy"] * 2 + ["critic"] * 6
    assert after < before / 2, (before, after)


def test_critic_steps_without_a_critic_fail_at_load():
    with pytest.raises(ConfigError, match="warmup.critic_steps"):
        from_dict(
            TrainConfig, {"algorithm": {"advantage": "grpo"}, "warmup": {"steps": 1, "critic_steps": 5}}
        )


def test_each_registered_demonstration_policy_plays_its_systems_roles():
    """``registry.DEMO_POLICIES``, the one registry of demonstration policies: each entry loads its system's."""
    for system, entry in registry.DEMO_POLICIES.items():
        policy = entry.load()
        assert isinstance(policy, DemoPolicy) and set(policy.skills) <= set(get_system(system).roles), system


def test_a_system_without_a_demonstration_policy_is_one_line_naming_the_closest():
    with pytest.raises(
        ValueError, match=r"^unknown demonstration policy 'vcc'; valid: .*vc; did you mean 'vc'\?$"
    ):
        demo_policy("vcc")


def test_a_warm_up_for_a_system_without_demonstrations_fails_at_load():
    with pytest.raises(ConfigError, match="warmup.steps: no demonstration policy .* 'direct'"):
        from_dict(TrainConfig, {"task": {"system": "direct"}, "warmup": {"steps": 10}})


def test_demonstrations_are_judged_by_an_asynchronous_judge_and_unscored_ones_dropped():
    class LLMJudgedTask:
        """Grades like an LLM judge: asynchronously, ``None`` for an unscored judgement."""

        def __init__(self):
            self.asked: list[str] = []

        async def grade(self, item, episode):
            self.asked.append(episode.final_answer)
            return None if episode.final_answer == "GARBLE" else float(episode.final_answer == item["answer"])

    episodes = [Episode(system="direct", question="q", final_answer=a) for a in ("Lomir", "GARBLE", "Tarsin")]
    task = LLMJudgedTask()
    kept = asyncio.run(judged(task, {"answer": "Lomir"}, episodes))
    assert [e.final_answer for e in kept] == ["Lomir", "Tarsin"]
    assert task.asked == ["Lomir", "GARBLE", "Tarsin"]
    assert (
        asyncio.run(judged(object(), {"answer": "Lomir"}, episodes)) == episodes
    )  # a rule judge: nothing to ask


def _verdicts_right(trainer: Trainer) -> list[bool]:
    """For every Verifier call of the recipe's demonstrations: whether its verdict matches the judged solution."""
    from mara_bench.trainer.methods.marsrl import agent_rewards

    right = []
    for item in trainer.task.items:
        for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
            rewards = agent_rewards(episode, item["answer"])
            right += [rewards[call.id] > 0 for call in episode.calls_by_role("verifier")]
    return right


def test_a_recipe_sets_the_demonstrations_skill_per_role(tiny_model_dir, tmp_path):
    trainer = _trainer("marsrl-tiny.yaml", tiny_model_dir, tmp_path)
    assert not all(_verdicts_right(trainer))  # the default Verifier errs part of the time
    trainer.config.warmup.demo_skills = {"verifier": 1.0}
    assert all(_verdicts_right(trainer))
    trainer.config.warmup.demo_skills = {"verifier": 0.0}
    assert not any(_verdicts_right(trainer))


@pytest.mark.parametrize(
    ("warmup", "message"),
    [
        (
            {"steps": 1, "demo_skills": {"critic": 0.5}},
            "warmup.demo_skills: the vc demonstration policy has no "
            "skill for critic; use its roles: corrector, solver, verifier",
        ),
        ({"steps": 1, "demo_skills": {"verifier": 1.5}}, "warmup.demo_skills"),
        ({"steps": 0, "demo_skills": {"verifier": 0.9}}, "warmup.demo_skills: .* warmup.steps is 0"),
    ],
)
def test_bad_demonstration_skills_fail_at_load(warmup, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(TrainConfig, {"task": {"system": "vc"}, "warmup": warmup})


MASK_RECIPES = ["mask-tiny.yaml", "mask-learn.yaml"]
"""M-ASK's code prompts, and our compact ones."""


@pytest.mark.parametrize("recipe", MASK_RECIPES)
def test_the_mask_demonstrations_play_each_role_right_as_often_as_the_recipe_says(
    recipe, tiny_model_dir, tmp_path
):
    trainer = _trainer(recipe, tiny_model_dir, tmp_path)
    trainer.config.warmup.demo_skills = {"plan": 1.0, "answer": 0.0}
    item = trainer.task.items[0]
    episodes = asyncio.run(demo_episodes(trainer.demos, item, random.Random(0)))
    plans = [IntermediateAnswer.of(episode.intermediate_answers[0]).answer for episode in episodes]
    assert plans == [item["answer"]] * len(episodes)  # every plan recalls the capital
    for episode in episodes:  # and no answer copies the capital its trajectory names
        [answer] = episode.calls_by_role("answer")
        trajectory = answer.messages[-1]["content"].split("Thinking trajectory:", 1)[-1]
        assert named_capital(trajectory) and episode.final_answer not in trajectory
        updates = [call.meta["operation"] for call in episode.calls_by_role("update")]
        assert updates == ["update"]  # the reply parsed: t1 answered


@pytest.mark.parametrize("recipe", MASK_RECIPES)
@pytest.mark.parametrize(("search", "searched"), [(0.0, False), (1.0, True)])
def test_the_mask_demonstrations_search_as_often_as_the_recipe_says(
    search, searched, recipe, tiny_model_dir, tmp_path
):
    trainer = _trainer(recipe, tiny_model_dir, tmp_path)
    trainer.config.warmup.demo_skills = {"search": search}
    episodes = asyncio.run(demo_episodes(trainer.demos, trainer.task.items[0], random.Random(0)))
    for episode in episodes:
        first = episode.calls_by_role("search")[0].reply.text
        assert first.startswith("<search>") is searched, first
        assert bool(episode.calls_by_role("summary")) is searched


@pytest.mark.parametrize(("summary", "reads"), [(1.0, True), (0.0, False)])
def test_a_careless_mask_summary_picks_the_first_capital_the_search_returns(
    summary, reads, tiny_model_dir, tmp_path
):
    """With the neighbour's capital stated first, the summary's wrong evidence is always that capital: the one
    strategy a careless reader has, not a different distractor each time."""
    config = load_config(RECIPES / "mask-learn.yaml")
    config.model.path = str(tiny_model_dir)
    config.task.args = {
        **config.task.args,
        "n_prompts": 8,
        "heldout_prompts": 4,
        "neighbour_capital_first": True,
    }
    config.warmup.demo_skills = {"summary": summary, "answer": 1.0}
    trainer = Trainer(config, tmp_path)
    evidence = []
    for item in trainer.task.items:
        for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
            for call in episode.calls_by_role("summary"):
                found = call.messages[-1]["content"]
                first = re.search(r"capital of (\w+) is (\w+)", found).group(2)
                expected = item["answer"] if reads else first
                assert first != item["answer"] and call.reply.text == f"<evidence>{expected}</evidence>"
                assert episode.final_answer == expected
                evidence.append(expected)
    assert len(evidence) >= 8 and len(set(evidence)) >= 4


def test_the_verifier_demonstrations_on_the_compact_prompt_restate_the_judged_answer_and_parse(
    tiny_model_dir, tmp_path
):
    from mara_bench.harness.systems.vc import solution_text, verifier_messages
    from mara_bench.judges.math import extract_answer

    trainer = _trainer("marsrl-verifier-compact.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.demo_skills = {"verifier": 1.0}
    item = trainer.task.items[0]
    verifiers = [
        (episode, call)
        for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0)))
        for call in episode.calls_by_role("verifier")
    ]
    assert verifiers
    for episode, call in verifiers:
        judged = solution_text(episode.calls[call.parent])
        # the system's own prompt; the restated answer is the judged one; the verdict parsed, right at skill 1
        assert call.messages == verifier_messages(item["question"], judged, "compact")
        assert call.reply.text.startswith(f"The answer is {extract_answer(judged)}.")
        assert call.meta["verdict"] is (extract_answer(judged) == item["answer"])


@pytest.mark.parametrize("skill", [1.0, 0.0])
def test_the_worked_verifier_demonstrations_check_the_last_digit_and_parse(skill, tiny_model_dir, tmp_path):
    """The last digits are always added and compared right; the verdict follows the comparison at skill 1 (every
    verdict true) and says the opposite at skill 0 (every verdict false)."""
    from mara_bench.harness.systems.vc import solution_text
    from mara_bench.judges.math import extract_answer

    trainer = _trainer("marsrl-verifier-compact.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.demo_work = ["verifier"]
    trainer.config.warmup.demo_skills = {"verifier": skill}
    verdicts_true = []
    for item in trainer.task.items[:6]:
        a, b = (int(n) % 10 for n in item["question"].split("What is ", 1)[1].split("?")[0].split(" + "))
        for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
            for call in episode.calls_by_role("verifier"):
                judged = extract_answer(solution_text(episode.calls[call.parent]))
                same = int(judged) % 10 == (a + b) % 10
                comparison = "the same" if same else "different"
                assert call.reply.text.startswith(
                    f"{a} + {b} = {a + b}, so the sum ends in {(a + b) % 10}; {judged} ends in {judged[-1]}: "
                    f"{comparison}.\n"
                )
                assert same is (judged == item["answer"])  # the check catches every scripted wrong answer
                verdicts_true.append(call.meta["verdict"] is (judged == item["answer"]))
    assert len(verdicts_true) >= 6
    assert all(verdicts_true) if skill == 1.0 else not any(verdicts_true)


def test_the_worked_corrector_demonstrations_add_column_by_column_and_parse(tiny_model_dir, tmp_path):
    """Every Corrector demonstration adds the operands column by column with their carries and boxes the sum at
    skill 1; at skill 0 it drops the first carry, so its sum misses ten exactly where a carry was due."""
    from mara_bench.judges.math import extract_answer

    trainer = _trainer("marsrl-verifier-compact.yaml", tiny_model_dir, tmp_path)
    trainer.config.warmup.demo_work = ["verifier", "corrector"]
    revisions = {}
    for skill in (1.0, 0.0):
        trainer.config.warmup.demo_skills = {"corrector": skill}
        for item in trainer.task.items[:8]:
            a, b = map(int, item["question"].split("What is ", 1)[1].split("?")[0].split(" + "))
            carry = (a % 10 + b % 10) // 10
            for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
                for call in episode.calls_by_role("corrector"):
                    text = call.reply.text
                    assert text.startswith(f"{a % 10} + {b % 10} = {a % 10 + b % 10}")
                    assert (", carry 1;" in text) is bool(carry and skill)
                    assert int(extract_answer(text)) == a + b - (10 * carry if skill == 0.0 else 0)
                    revisions[skill] = revisions.get(skill, 0) + 1
    assert revisions[1.0] >= 4 and revisions[0.0] >= 4


def test_worked_demonstrations_for_a_role_without_a_worked_form_fail_at_load():
    with pytest.raises(
        ConfigError,
        match="warmup.demo_work: the mars demonstration policy has no worked form for system2.*vc",
    ):
        from_dict(TrainConfig, {"task": {"system": "mars"}, "warmup": {"steps": 1, "demo_work": ["system2"]}})
    with pytest.raises(ConfigError, match="the vc demonstration policy has no worked form for solver"):
        from_dict(TrainConfig, {"task": {"system": "vc"}, "warmup": {"steps": 1, "demo_work": ["solver"]}})


def test_mars_demonstrations_parse_under_the_compact_prompts(tiny_model_dir, tmp_path):
    trainer = _trainer("mars-learn.yaml", tiny_model_dir, tmp_path)
    assert trainer.config.task.system_options["prompts"] == "compact"
    trainer.config.warmup.demo_skills = {"system1": 1.0, "system2": 1.0}
    for item in trainer.task.items[:8]:
        for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
            assert episode.final_answer == item["answer"]  # the tool call parsed, System 1 read its pages
            system2, *_ = episode.calls_by_role("system2")
            assert (
                len(system2.messages[0]["content"]) < 200
                and system2.messages[-1]["content"] == item["question"]
            )
            for distil in episode.calls_by_role("system1"):
                [message] = distil.messages
                assert message["content"].endswith(f"\nQuestion: {item['question']}")


def test_the_matpo_demonstrations_on_the_compact_prompts_copy_the_country_and_parse(tiny_model_dir, tmp_path):
    from mara_bench.harness.systems.matpo import WORKER_TOOLS, parse_tool_use
    from mara_bench.trainer.methods.matpo import planner_format

    trainer = _trainer("matpo-learn.yaml", tiny_model_dir, tmp_path)
    assert trainer.config.task.system_options["prompts"] == "compact"
    item = trainer.task.items[0]
    country = item["question"].removeprefix("What is the capital of ").removesuffix("?")
    for episode in asyncio.run(demo_episodes(trainer.demos, item, random.Random(0))):
        delegate, *_ = episode.calls_by_role("planner")
        search, *_ = episode.calls_by_role("worker")
        # the system's compact messages: the question last for the planner, the subtask last for the worker
        assert delegate.messages[-1]["content"] == item["question"]
        assert search.messages[-1]["content"].endswith(f"\nSubtask: {country}")
        assert planner_format(episode) == 1.0  # MATPO's check_mcp_format: the delegation is well-formed
        query = parse_tool_use(search.reply.text)
        assert query.tool in WORKER_TOOLS and country in query.arguments["q"]
