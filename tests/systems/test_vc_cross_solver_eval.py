"""Cross-solver V-C in one Inspect eval: the verifier and corrector roles are bound to models other than the
evaluated solver; the log shows every model and scores both the solver's first answer and the system's answer."""

from __future__ import annotations

from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer
from inspect_ai.solver import TaskState

from mara_bench.harness.accounting import ACCOUNTING_SCORE
from mara_bench.harness.systems import get_system, system_solver
from mara_bench.harness.systems.inspect_adapter import stored_episode
from mara_bench.harness.systems.parsing import last_boxed
from mara_bench.harness.testing import scripted_model
from mara_bench.judges.response import response_to_judge

WRONG = "**Final Verdict:** invalid.\n\n**List of Findings:**\n* 6*7 is not 41\n\n**Correctness:** Wrong"
PASS = "**Final Verdict:** fine.\n\n**List of Findings:**\n\n**Correctness:** Correct"


def boxed_match(answer: str):
    @scorer(metrics=[accuracy()], name=f"boxed_{answer}")
    def make():
        async def score(state: TaskState, target: Target) -> Score:
            response = response_to_judge(state, answer)
            found = last_boxed(response or "")
            return Score(value=CORRECT if found == target.text else INCORRECT, answer=found)

        return score

    return make()


def test_trained_verifier_and_corrector_pair_with_another_solver(tmp_path):
    verdicts = iter([WRONG, PASS])
    solver_model = scripted_model(
        lambda m, c: "<think>quick</think>6*7 = \\boxed{41}", name="mockllm/solver-model"
    )
    verifier_model = scripted_model(lambda m, c: next(verdicts), name="mockllm/verifier-model")
    corrector_model = scripted_model(
        lambda m, c: "<think>redo</think>6*7 = \\boxed{42}", name="mockllm/corrector-model"
    )
    task = Task(
        dataset=[Sample(id="q1", input="Compute 6*7.", target="42")],
        solver=system_solver(get_system("vc").setup(dict(accept_after=1))),
        scorer=[boxed_match("final"), boxed_match("solver")],
    )
    log = eval(
        task,
        model=solver_model,
        model_roles={"verifier": verifier_model, "corrector": corrector_model},
        log_dir=str(tmp_path),
        display="none",
    )[0]

    assert log.status == "success"
    scores = {score.name: score.metrics for score in log.results.scores}
    assert set(scores) == {
        "boxed_final",
        "boxed_solver",
        ACCOUNTING_SCORE,
    }  # the system solver counts the cost
    assert (scores["boxed_final"]["accuracy"].value, scores["boxed_solver"]["accuracy"].value) == (1.0, 0.0)
    assert {"verifier", "corrector"} <= set(log.stats.role_usage)
    assert {"mockllm/solver-model", "mockllm/verifier-model", "mockllm/corrector-model"} <= set(
        log.stats.model_usage
    )
    episode = stored_episode(log.samples[0].store)
    assert [c.role for c in episode.calls] == ["solver", "verifier", "corrector", "verifier"]
    assert [c.meta.get("verdict") for c in episode.calls] == [None, False, None, True]
    assert log.samples[0].store["answer.solver"] == "6*7 = \\boxed{41}"
    assert episode.final_answer == log.samples[0].output.completion == "6*7 = \\boxed{42}"
    assert "answer.final" not in log.samples[0].store  # stored once, in the Episode
