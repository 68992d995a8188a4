"""MarsRL grouped agentic rollouts (arXiv:2511.11373 §3.3-3.4): which outputs each strategy picks, the early stops, the
tree's sample counts, group keys and rewards on scripted chats, the config options, and one tiny-model step."""

from __future__ import annotations

import asyncio
import math
import random
from collections import Counter
from typing import Any

import pytest
from _method_helpers import smoke_config

from mara_bench.core.episodes import Message, Reply
from mara_bench.trainer.algorithms.advantages import grpo
from mara_bench.trainer.config import (
    ConfigError,
    MarsRLConfig,
    TaskConfig,
    TrainConfig,
    from_dict,
    load_config,
)
from mara_bench.trainer.methods.marsrl import agent, agent_rewards, rewarded_samples, rollout
from mara_bench.trainer.methods.marsrl_rollout import choose, grouped_rollout
from mara_bench.trainer.run.engine import Trainer

WRONG = "I think it is \\boxed{5}."
RIGHT = "So the sum is \\boxed{7}."
TRUNCATED = Reply(text="So the sum is", finish_reason="length")
SAYS_WRONG = "The step 2 addition is off.\n\n**Correctness**: Wrong"
SAYS_CORRECT = "Every step checks out.\n\n**Correctness**: Correct"
ITEM = {"id": "q", "question": "What is 3 + 4?", "answer": "7"}


def own_rollout(config: TrainConfig):
    """MarsRL's own rollout under the recipe's sections, as the engine builds it."""
    return rollout(config.algorithm, config.task, config.rollout)


class Script:
    """A ``Chat`` popping each role's replies in call order (a ``Reply`` as is, text as a finished reply)."""

    def __init__(self, **replies: list[str | Reply]):
        self.replies = {role: list(queue) for role, queue in replies.items()}

    async def __call__(self, role: str, messages: list[Message], **sampling: Any) -> Reply:
        if not self.replies.get(role):
            raise AssertionError(f"role {role!r} was called more often than scripted")
        reply = self.replies[role].pop(0)
        return reply if isinstance(reply, Reply) else Reply(text=reply)


def grouped(selection: str = "adaptive", *, agents: int = 3, group_size: int = 4, seed: int = 0, **replies):
    return asyncio.run(
        grouped_rollout(
            ITEM["question"],
            Script(**replies),
            lambda episode: agent_rewards(episode, ITEM["answer"]),
            group_size=group_size,
            selection=selection,
            agents=agents,
            rng=random.Random(seed),
        )
    )


# ---- the strategies on their own ---------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_adaptive_takes_the_preferred_kind_first_then_fills_from_the_other(seed):
    rng = random.Random(seed)
    # a Verifier prefers negative outputs (wrong solutions): both negatives, whatever the seed
    assert sorted(choose([True, False, True, False, True], "adaptive", prefer=False, rng=rng)) == [1, 3]
    # a Corrector prefers positive ones; only one is there, so one negative fills the second place
    first, second = choose([False, False, True], "adaptive", prefer=True, rng=rng)
    assert first == 2 and second in (0, 1)


@pytest.mark.parametrize("seed", range(5))
def test_balanced_takes_one_of_each_kind_where_both_exist(seed):
    rng = random.Random(seed)
    picked = choose([True, True, False, True], "balanced", prefer=False, rng=rng)
    assert len(picked) == 2 and 2 in picked and len(set(picked)) == 2
    assert sorted(choose([True, True, True], "balanced", prefer=False, rng=rng)) in ([0, 1], [0, 2], [1, 2])


def test_random_is_uniform_over_pairs_and_seeded():
    pairs = Counter(
        tuple(sorted(choose([True, False, True, False], "random", prefer=False, rng=random.Random(seed))))
        for seed in range(300)
    )
    assert set(pairs) == {(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)}  # every pair, never one twice
    assert min(pairs.values()) > 20  # 300 draws over 6 pairs: 50 expected each
    assert [choose([True] * 6, "random", prefer=False, rng=random.Random(7)) for _ in range(3)] == [
        choose([True] * 6, "random", prefer=False, rng=random.Random(7))
    ] * 3


@pytest.mark.parametrize("selection", ["random", "balanced", "adaptive"])
def test_fewer_than_two_eligible_outputs_are_all_taken(selection):
    assert choose([], selection, prefer=False, rng=random.Random(0)) == []
    assert choose([True], selection, prefer=False, rng=random.Random(0)) == [0]


def test_an_unknown_strategy_is_an_error():
    with pytest.raises(
        ValueError, match=r"selection must be one of random, balanced, adaptive; got 'greedy'"
    ):
        choose([True, False], "greedy", prefer=False, rng=random.Random(0))


# ---- whole grouped rollouts on scripted chats --------------------------------------------------------------


@pytest.fixture(params=range(3))
def adaptive_tree(request):
    """G=4, Solver, Verifier1, Corrector1: one wrong solution (call 1) among three right ones."""
    return grouped(
        seed=request.param,
        solver=[RIGHT, WRONG, RIGHT, RIGHT],  # calls 0-3
        # calls 4-7 judge the first chosen solution, 8-11 the second
        verifier=[SAYS_CORRECT, SAYS_WRONG, SAYS_CORRECT, SAYS_CORRECT]
        + [SAYS_WRONG, SAYS_WRONG, SAYS_CORRECT, "I am not sure."],
        corrector=[RIGHT, WRONG, RIGHT, RIGHT] + [WRONG, WRONG, RIGHT, TRUNCATED],  # calls 12-15, 16-19
    )


def test_adaptive_verifier_takes_wrong_solutions_and_corrector_rightly_flagged_reports(adaptive_tree):
    chosen = adaptive_tree.meta["chosen"]
    # Verifier1: the only wrong solution first, then one of the right ones (nothing else is wrong)
    assert chosen["verifier1"][0] == 1 and chosen["verifier1"][1] in (0, 2, 3)
    # Corrector1 may take only reports saying Wrong: 5 (rightly: call 1 is wrong), 8 and 9 (wrongly: the right
    # solution); adaptive takes the rightly-flagging one first. 4, 6, 7, 10 said Correct; 11 has no verdict.
    assert chosen["corrector1"][0] == 5 and chosen["corrector1"][1] in (8, 9)
    assert adaptive_tree.meta["stopped"] is None and len(adaptive_tree.calls) == 4 + 2 * 4 + 2 * 4
    # each Corrector continues the conversation of the solution its report judged
    assert [c.messages[1]["content"] for c in adaptive_tree.calls[12:20]] == [WRONG] * 4 + [RIGHT] * 4


def test_grouped_samples_are_grouped_per_question_agent_and_input(adaptive_tree, tiny_tokenizer):
    right = adaptive_tree.meta["chosen"]["verifier1"][1]
    flagged = adaptive_tree.meta["chosen"]["corrector1"][1]
    samples = rewarded_samples(ITEM, [adaptive_tree], task=None, tokenizer=tiny_tokenizer)
    assert [s.group_key for s in samples] == ["q/solver"] * 4 + [
        "q/verifier1/1",
        *["q/verifier1/1"] * 3,
        *[f"q/verifier1/{right}"] * 4,
        *["q/corrector1/5"] * 4,
        *[f"q/corrector1/{flagged}"] * 4,
    ]
    assert [s.parent for s in samples] == [None] * 4 + [1] * 4 + [right] * 4 + [5] * 4 + [flagged] * 4
    # solver: right/wrong; verifier on the wrong call 1: only "Wrong" is right; on a right solution: only
    # "Correct" is (an unparsable report is -1); correctors: own answer (the truncated one has none: -1)
    assert [s.reward for s in samples] == [1, -1, 1, 1] + [-1, 1, -1, -1] + [-1, -1, 1, -1] + [
        1,
        -1,
        1,
        1,
    ] + [
        -1,
        -1,
        1,
        -1,
    ]
    # GRPO inside q/verifier1/1: rewards -1 +1 -1 -1, mean -1/2, unbiased std 1
    advantages = grpo([s.reward for s in samples], [s.group_key for s in samples])
    assert advantages[4:8].tolist() == pytest.approx([-0.5, 1.5, -0.5, -0.5], abs=1e-5)


def test_five_agents_verifier2_prefers_wrong_corrections_and_corrector2_takes_the_one_flag():
    episode = grouped(
        agents=5,
        group_size=2,
        solver=[WRONG, WRONG],  # 0, 1: both chosen
        verifier=[SAYS_WRONG, SAYS_WRONG, SAYS_WRONG, SAYS_CORRECT]  # V1: 2-5, all judging wrong solutions
        + [SAYS_WRONG, SAYS_CORRECT, SAYS_CORRECT, SAYS_CORRECT],  # V2: 10-13
        corrector=[RIGHT, WRONG, WRONG, TRUNCATED] + [RIGHT, RIGHT],  # C1: 6-9, C2: 14-15
    )
    chosen = episode.meta["chosen"]
    assert sorted(chosen["verifier1"]) == [0, 1] and set(chosen["corrector1"]) <= {2, 3, 4}
    # Verifier2 judges untruncated Corrector1 outputs, wrong ones first: 7 and 8 (6 is right, 9 truncated)
    assert sorted(chosen["verifier2"]) == [7, 8]
    assert chosen["corrector2"] == [10]  # the only report saying Wrong: one input, not two
    assert [agent(c, episode) for c in episode.calls] == ["solver"] * 2 + ["verifier1"] * 4 + [
        "corrector1"
    ] * 4 + ["verifier2"] * 4 + ["corrector2"] * 2
    assert [c.turn for c in episode.calls] == [0] * 6 + [1] * 8 + [2] * 2  # as the V-C loop counts iterations
    rewards = agent_rewards(episode, "7")
    # V2 on wrong 7/8: "Wrong" +1, "Correct" -1; C2 both right
    assert [rewards[i] for i in range(10, 16)] == [1, -1, -1, -1, 1, 1]


def test_no_report_flags_an_error_so_no_corrector_runs():
    episode = grouped(
        agents=5, group_size=2, solver=[RIGHT, WRONG], verifier=[SAYS_CORRECT] * 4
    )  # no corrector replies scripted: a Corrector call would fail the test
    assert episode.meta["stopped"] == "corrector1" and list(episode.meta["chosen"]) == ["verifier1"]
    assert Counter(c.role for c in episode.calls) == {"solver": 2, "verifier": 4}


@pytest.mark.parametrize("selection", ["random", "balanced", "adaptive"])
def test_all_solutions_right_the_verifier_still_judges_two(selection):
    episode = grouped(selection, agents=2, group_size=3, solver=[RIGHT] * 3, verifier=[SAYS_CORRECT] * 6)
    picked = episode.meta["chosen"]["verifier1"]
    assert len(set(picked)) == 2 and set(picked) <= {0, 1, 2}
    assert [c.parent for c in episode.calls[3:]] == [picked[0]] * 3 + [picked[1]] * 3


def test_every_solution_truncated_stops_before_the_verifier():
    episode = grouped(agents=3, group_size=2, solver=[TRUNCATED, TRUNCATED])
    assert episode.meta["stopped"] == "verifier1" and len(episode.calls) == 2


@pytest.mark.parametrize("seed", range(6))
def test_balanced_rollout_mixes_right_and_wrong_solutions(seed):
    episode = grouped(
        "balanced",
        agents=2,
        group_size=4,
        seed=seed,
        solver=[RIGHT, WRONG, RIGHT, RIGHT],
        verifier=[SAYS_CORRECT] * 8,
    )
    picked = episode.meta["chosen"]["verifier1"]
    assert 1 in picked and len(set(picked) & {0, 2, 3}) == 1


def test_random_rollout_never_takes_a_truncated_solution_and_repeats_under_its_seed():
    def picks(seed: int) -> list[int]:
        episode = grouped(
            "random",
            agents=2,
            group_size=5,
            seed=seed,
            solver=[RIGHT, TRUNCATED, WRONG, TRUNCATED, RIGHT],
            verifier=[SAYS_CORRECT] * 10,
        )
        return episode.meta["chosen"]["verifier1"]

    seen = {tuple(sorted(picks(seed))) for seed in range(12)}
    assert seen <= {(0, 2), (0, 4), (2, 4)} and len(seen) > 1
    assert picks(3) == picks(3)


# ---- configuration -----------------------------------------------------------------------------------------


def test_recipe_selects_grouped_adaptive_rollouts_and_chains_stay_the_default():
    recipes = "trainer/recipes"
    config = load_config(f"{recipes}/marsrl-grouped-tiny.yaml")
    assert config.algorithm.marsrl == MarsRLConfig(rollout="grouped", selection="adaptive", agents=5)
    assert load_config(f"{recipes}/marsrl-tiny.yaml").algorithm.marsrl.rollout == "chains"
    assert own_rollout(config) is not None and own_rollout(load_config(f"{recipes}/marsrl-tiny.yaml")) is None


@pytest.mark.parametrize(
    ("marsrl", "message"),
    [
        (
            {"rollout": "tree"},
            r"algorithm.marsrl.rollout: 'tree' is not a valid choice; choose one of chains, grouped",
        ),
        (
            {"rollout": "grouped", "selection": "best"},
            r"algorithm.marsrl.selection: 'best' is not a valid choice; choose one of random, balanced, adaptive",
        ),
        ({"rollout": "grouped", "agents": 6}, r"algorithm.marsrl.agents: must be <= 5, got 6"),
        ({"selection": "random"}, r"applies to rollout 'grouped' only"),
        ({"roll": "grouped"}, r"algorithm.marsrl.roll: unknown key; did you mean 'rollout'\?"),
    ],
)
def test_bad_marsrl_options_name_what_to_fix(marsrl, message):
    with pytest.raises(ConfigError, match=message):
        from_dict(TrainConfig, {"algorithm": {"method": "marsrl", "marsrl": marsrl}})


def test_marsrl_options_under_another_method_are_an_error():
    with pytest.raises(
        ConfigError, match=r"algorithm.marsrl: applies to method 'marsrl' only, and method is 'grpo'"
    ):
        from_dict(TrainConfig, {"algorithm": {"marsrl": {"rollout": "grouped"}}})


@pytest.mark.parametrize(
    ("task", "message"),
    [
        ({"system": "react"}, r"branches the vc system; task.system is 'react'"),
        ({"system": "vc", "system_options": {"accept_after": 1}}, r"\['accept_after'\] do not apply"),
    ],
)
def test_grouped_rollouts_need_the_plain_vc_system(task, message):
    config = from_dict(
        TrainConfig, {"task": task, "algorithm": {"method": "marsrl", "marsrl": {"rollout": "grouped"}}}
    )
    with pytest.raises(ValueError, match=message):
        own_rollout(config)


# ---- the engine ----------------------------------------------------------------------------------------------


def test_one_grouped_training_step_on_the_tiny_model(tiny_model_dir, tmp_path):
    task = TaskConfig(args={"n_prompts": 4, "total": 7}, system="vc")
    options = MarsRLConfig(rollout="grouped", selection="adaptive", agents=3)
    trainer = Trainer(smoke_config(tiny_model_dir, task, method="marsrl", marsrl=options), tmp_path)
    real = trainer.train_step()  # the policy itself: 4-token replies, so most likely only Solver rows
    assert real["skipped"] == 0.0 and -1.0 <= real["reward_mean"] <= 1.0
    assert all(math.isfinite(real[key]) for key in ("loss", "grad_norm", "entropy"))
    # the engine's own rollout path on a scripted chat: G=2, adaptive
    trainer.rollout.chat = Script(
        solver=[WRONG, RIGHT],  # -1, +1; both chosen, the wrong one first
        verifier=[SAYS_WRONG, SAYS_CORRECT, SAYS_WRONG, SAYS_CORRECT],  # on 0: +1 -1; on 1: -1 +1
        corrector=[RIGHT, WRONG, RIGHT, RIGHT],  # on report 2 (rightly flagged) then 4: +1 -1 +1 +1
    )
    scripted = trainer.train_step()
    assert scripted["skipped"] == 0.0 and scripted["grad_norm"] > 0.0
    assert scripted["reward_mean"] == pytest.approx(2 / 10)  # 10 rows, rewards summing to 2


def test_grouped_rollouts_ask_the_verifier_with_the_recipes_prompt_set():
    from mara_bench.harness.systems.vc import verifier_messages

    config = from_dict(
        TrainConfig,
        {
            "task": {"system": "vc", "system_options": {"prompts": "compact"}},
            "algorithm": {"method": "marsrl", "marsrl": {"rollout": "grouped", "agents": 2}},
            "rollout": {"group_size": 2},
        },
    )
    chat = Script(solver=[RIGHT, WRONG], verifier=[SAYS_CORRECT] * 2 + [SAYS_WRONG] * 2)
    [episode] = asyncio.run(own_rollout(config)(ITEM, chat, random.Random(0)))
    verifiers = episode.calls_by_role("verifier")
    assert len(verifiers) == 4
    for call in verifiers:
        judged = episode.calls[call.parent].reply.text
        assert call.messages == verifier_messages(ITEM["question"], judged, "compact")
