"""MarsRL: agent-specific rewards on a real V-C run, per-(question, agent) groups, Corrector trained on its own
reply only, and one smoke training step on the tiny model."""

from __future__ import annotations

import math

import pytest
import torch
from _method_helpers import run, smoke_config, two_steps

from mara_bench.trainer.algorithms.advantages import grpo
from mara_bench.trainer.config import TaskConfig
from mara_bench.trainer.methods import get_method
from mara_bench.trainer.methods.marsrl import agent, agent_rewards, rewarded_samples
from mara_bench.trainer.run.engine import Trainer

WRONG = "I think it is \\boxed{5}."
RIGHT = "So the sum is \\boxed{7}."
SAYS_WRONG = "The step 2 addition is off.\n\n**Correctness**: Wrong"
SAYS_CORRECT = "Every step checks out.\n\n**Correctness**: Correct"
ITEM = {"id": "q", "question": "What is 3 + 4?", "answer": "7"}


def vc_episode(solver: str, verifier: list[str], corrector: list[str]):
    return run(
        "vc",
        ITEM["question"],
        {"solver": [solver], "verifier": verifier, "corrector": corrector},
        accept_after=1,
        max_iterations=2,
    )


@pytest.fixture
def chain():
    """Solver wrong -> V1 rightly says Wrong -> C1 right -> V2 wrongly says Wrong -> C2 right -> V2 says Correct."""
    return vc_episode(WRONG, [SAYS_WRONG, SAYS_WRONG, SAYS_CORRECT], [RIGHT, RIGHT])


def test_agent_specific_rewards_follow_section_3_2(chain):
    roles = [(call.role, agent(call, chain)) for call in chain.calls]
    assert roles == [
        ("solver", "solver"),
        ("verifier", "verifier1"),
        ("corrector", "corrector1"),
        ("verifier", "verifier2"),
        ("corrector", "corrector2"),
        ("verifier", "verifier2"),
    ]
    # solver wrong: -1; V1 flags a wrong solution: +1; C1 right: +1; V2 flags a RIGHT solution: -1; C2 right: +1;
    # V2 passes a right solution: +1 -- the Verifier never inherits the trajectory's outcome
    assert [agent_rewards(chain, "7")[call.id] for call in chain.calls] == [-1, 1, 1, -1, 1, 1]


def test_unparsable_verdict_is_a_wrong_verification():
    episode = vc_episode(RIGHT, ["I am not sure.", SAYS_CORRECT], [RIGHT])
    assert episode.calls[1].meta["verdict"] is None
    assert agent_rewards(episode, "7")[1] == -1.0
    assert (
        agent_rewards(episode, "7")[0] == 1.0
    )  # the solver's own answer is right, whatever the verifier said


def test_samples_group_per_question_and_agent_and_correctors_train_only_their_reply(chain, tiny_tokenizer):
    samples = rewarded_samples(ITEM, [chain], task=None, tokenizer=tiny_tokenizer)
    assert [s.group_key for s in samples] == [
        "q/solver",
        "q/verifier1",
        "q/corrector1",
        "q/verifier2",
        "q/corrector2",
        "q/verifier2",
    ]
    assert [s.reward for s in samples] == [-1, 1, 1, -1, 1, 1]
    assert [s.parent for s in samples] == [
        None,
        0,
        1,
        2,
        3,
        4,
    ]  # verifier -> judged solution -> corrector ...
    corrector = samples[2]
    trained = [t for t, m in zip(corrector.response_ids, corrector.loss_mask, strict=True) if m]
    reply = tiny_tokenizer(RIGHT, add_special_tokens=False)["input_ids"] + [tiny_tokenizer.eos_token_id]
    assert trained == reply  # the replayed Solver solution (an assistant turn of its prompt) is not trained
    assert tiny_tokenizer.decode(corrector.response_ids).count("boxed{5}") == 1  # ...though it is in the row
    # per-agent GRPO: within verifier2 (rewards -1, +1) the advantages are -+1/sqrt(2); the others are singletons
    advantages = grpo([s.reward for s in samples], [s.group_key for s in samples])
    assert advantages[3].item() == pytest.approx(-1 / math.sqrt(2), abs=1e-5)
    assert advantages[5].item() == pytest.approx(1 / math.sqrt(2), abs=1e-5)
    assert torch.count_nonzero(advantages[[0, 1, 2, 4]]) == 0


def test_marsrl_needs_grpo_and_the_registry_names_what_exists(tiny_model_dir, tmp_path):
    assert get_method("marsrl").estimator == "grpo"
    with pytest.raises(
        ValueError,
        match=r"unknown algorithm.method 'marsrl2'; valid: grpo, mars, marsrl.*did you mean 'marsrl'\?",
    ):
        get_method("marsrl2")
    config = smoke_config(tiny_model_dir, TaskConfig(system="vc"), method="marsrl", advantage="gae")
    with pytest.raises(
        ValueError, match=r"algorithm.method 'marsrl' needs algorithm.advantage 'grpo', got 'gae'"
    ):
        Trainer(config, tmp_path)


def test_one_training_step_on_the_tiny_model(tiny_model_dir, tmp_path, chain):
    task = TaskConfig(
        args={"n_prompts": 4, "total": 7},
        system="vc",
        system_options={"accept_after": 1, "max_iterations": 1, "solver_attempts": 1},
    )
    trainer = Trainer(smoke_config(tiny_model_dir, task, method="marsrl"), tmp_path)
    solved = vc_episode(RIGHT, [SAYS_CORRECT], [])
    real, scripted, moved = two_steps(trainer, [chain, solved])
    assert real["skipped"] == 0.0 and -1.0 <= real["reward_mean"] <= 1.0
    assert all(math.isfinite(real[key]) for key in ("loss", "grad_norm", "entropy"))
    # 8 rows: rewards -1 1 1 -1 1 1 (chain) and 1 1 (solved)
    assert scripted["reward_mean"] == pytest.approx(4 / 8)
    assert scripted["skipped"] == 0.0 and scripted["grad_norm"] > 0.0 and moved


def test_verifier_precision_recall_and_corrector_fix_rate(chain):
    from mara_bench.trainer.methods.marsrl import step_metrics

    # verifiers: V1 flags the wrong solver (caught), V2 flags C1's right answer (false alarm), V2 passes C2;
    # correctors: C1 fixes the wrong solver answer; C2 revised a right answer (not a fix attempt); the one Solver
    # call is wrong
    metrics = step_metrics([ITEM], [[chain]])
    assert metrics == {
        "marsrl/verifier_precision": (1.0, 2.0),
        "marsrl/verifier_recall": (1.0, 1.0),
        "marsrl/verifier_false_alarm_rate": (1.0, 2.0),
        "marsrl/corrector_fix_rate": (1.0, 1.0),
        "marsrl/solver_accuracy": (0.0, 1.0),
    }
