"""V-C (MarsRL): accept, correct-then-accept, give-up with fallback, truncation, strict verdicts."""

import pytest

from mara_bench.core.episodes import Reply
from mara_bench.harness.systems import run_system, vc

PROBLEM = "Compute 6*7."
CORRECT = "**Final Verdict:** fine.\n\n**List of Findings:**\n\n**Correctness:** Correct"
WRONG = "**Final Verdict:** The solution is invalid.\n\n**List of Findings:**\n* bad step\n\n**Correctness:** Wrong"


async def columns(doubles, episode, gold="42"):
    """The math judge's ``correct`` for the system's final answer and the Solver's first answer (both score columns)."""
    final = await doubles.score(episode, gold, "math")
    solver = await doubles.score(episode, gold, "math", answer="solver")
    return final["correct"], solver["correct"]


@pytest.mark.parametrize(
    ("report", "verdict"),
    [
        (CORRECT, True),
        (WRONG, False),
        ("**Correctness:** Incorrect", False),
        ("**Correctness**: not correct", False),
        ("The solution is correct.", None),  # no Correctness field
        ("**Correctness:** maybe", None),
        ("Correctness was discussed. **Correctness:** Correct", True),
        ("**Correctness:** CORRECT", True),
        ("**Correctness:** Wrong\n(the incorrectness is in step 2)", False),
        ("**Correctness:** Correct.", True),
        # hedged verdicts are not exactly Correct: they never pass (the last verdict word used to win)
        ("**Correctness:** Partially correct", None),
        ("**Correctness:** Mostly correct", None),
        ("**Correctness:** Wrong, but the final answer is correct", None),
        ("**Correctness:** Correct in part; the proof is incomplete", None),
        ("**Correctness:** Correct or wrong", None),
        ("**Correctness:** Right, mostly", None),
        ("**Correctness:** Not wrong", None),
        # the labelled line wins over a later prose mention of correctness (issue #35: that mention used to win)
        ("**Correctness:** Correct\nI checked the correctness of every step twice.", True),
        ("**Correctness:** Wrong\n\nOverall correctness hinges on step 2, which is fine otherwise.", False),
        ("Correctness:\n**Correct**\nThe correctness argument is sound.", True),
    ],
)
def test_parse_verdict_is_strict(report, verdict):
    assert vc.parse_verdict(report) is verdict


@pytest.mark.parametrize(
    "verdict",
    [
        "Right",
        "True",
        "Yes",
        "correct (with gaps)",
        "Correct -- no errors",
        "Correct — no errors",
        "Correctly solved",
    ],
)
def test_the_listed_synonyms_read_as_correct(verdict):
    # issue #35: seven intended passes were unparsable; each is a synonym of the verdict the prompt asks for
    assert vc.parse_verdict(f"**List of Findings:**\n* none\n\n**Correctness:** {verdict}") is True


def test_bug_report_stops_at_the_labelled_verdict_line():
    report = WRONG + "\nThe correctness of step 1 is not in doubt."
    assert vc.bug_report(report) == vc.bug_report(WRONG)


def test_bug_report_drops_the_verdict_field():
    assert (
        vc.bug_report(WRONG)
        == "**Final Verdict:** The solution is invalid.\n\n**List of Findings:**\n* bad step"
    )


def test_released_bug_report_cut_is_empty_when_the_report_follows_its_own_format():
    # the released code cuts at the literal "**Correctness**"; its own format writes "**Correctness:** Wrong"
    assert vc.bug_report(WRONG, cut="released") == ""
    other_format = "**List of Findings:**\n* bad step\n\n**Correctness**: Wrong"
    assert vc.bug_report(other_format, cut="released") == "**List of Findings:**\n* bad step"


async def test_released_cut_switch_sends_the_corrector_the_released_bug_report(doubles):
    def corrector_request(**options):
        scripts = {"solver": ["\\boxed{41}"], "verifier": [WRONG, CORRECT], "corrector": ["\\boxed{42}"]}
        episode = run_system("vc", PROBLEM, doubles.Chat(scripts), None, accept_after=1, **options)
        return episode

    released = (await corrector_request(bug_report="released")).calls_by_role("corrector")[0].messages[-1]
    findings = (await corrector_request()).calls_by_role("corrector")[0].messages[-1]
    assert released["content"].endswith("in the system prompt.\n\n")
    assert findings["content"].endswith("* bad step")


async def test_accepts_after_four_consecutive_passes(doubles):
    chat = doubles.Chat({"solver": ["<think>hmm</think>6*7 = \\boxed{42}"], "verifier": [CORRECT] * 4})
    episode = await vc.run(PROBLEM, chat, None)
    assert [c.role for c in episode.calls] == ["solver"] + ["verifier"] * 4
    assert episode.final_answer == episode.answers["solver"] == "6*7 = \\boxed{42}"
    assert all(c.parent == 0 for c in episode.calls_by_role("verifier"))
    assert [c.turn for c in episode.calls] == [0, 0, 1, 2, 3]
    verifier_prompt = episode.calls[1].messages[-1]["content"]
    assert "6*7 = \\boxed{42}" in verifier_prompt and "hmm" not in verifier_prompt
    assert episode.meta["outcome"] == "accepted" and episode.meta["iterations"] == 3
    assert await columns(doubles, episode) == (1.0, 1.0)


async def test_corrects_then_accepts(doubles):
    chat = doubles.Chat(
        {
            "solver": ["<think>x</think>\\boxed{41}"],
            "verifier": [WRONG, CORRECT, CORRECT],
            "corrector": ["<think>fix</think>\\boxed{42}"],
        }
    )
    episode = await vc.run(PROBLEM, chat, None, accept_after=2)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("solver", None, 0),
        ("verifier", 0, 0),
        ("corrector", 1, 1),
        ("verifier", 2, 1),
        ("verifier", 2, 2),
    ]
    assert episode.answers["solver"] == "\\boxed{41}"
    assert episode.final_answer == "\\boxed{42}"
    correction = episode.calls[2].messages
    assert [m["role"] for m in correction] == ["user", "assistant", "user"]
    assert correction[1]["content"] == "\\boxed{41}"
    assert "* bad step" in correction[2]["content"] and "Correctness" not in correction[2]["content"]
    assert correction[2]["content"].startswith(
        "\nBelow is the bug report."
    )  # MarsRL keeps the leading newline
    assert [c.meta["verdict"] for c in episode.calls_by_role("verifier")] == [False, True, True]
    assert episode.meta["outcome"] == "accepted"
    assert await columns(doubles, episode) == (1.0, 0.0)


async def test_gives_up_and_falls_back_to_the_most_verified_candidate(doubles):
    # s0 passes once then fails; c1 is called "Incorrect" (must NOT count as a pass); c2's report is unparsable
    chat = doubles.Chat(
        {
            "solver": ["\\boxed{42}"],
            "verifier": [CORRECT, WRONG, "**Correctness:** Incorrect", "I am not sure."],
            "corrector": ["\\boxed{40}", "\\boxed{39}"],
        }
    )
    episode = await vc.run(PROBLEM, chat, None, max_iterations=3)
    # the pass-then-fail streak resets, so s0 is never accepted; 3 iterations follow the first verification
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("solver", None, 0),
        ("verifier", 0, 0),
        ("verifier", 0, 1),
        ("corrector", 2, 2),
        ("verifier", 3, 2),
        ("corrector", 4, 3),
        ("verifier", 5, 3),
    ]
    assert [c.meta.get("verdict") for c in episode.calls_by_role("verifier")] == [True, False, False, None]
    assert episode.meta["outcome"] == "iteration_limit"
    assert episode.meta["candidates"] == [
        {"call": 0, "passes": 1},
        {"call": 3, "passes": 0},
        {"call": 5, "passes": 0},
    ]
    assert episode.final_answer == "\\boxed{42}"
    assert episode.meta["chosen_call"] == 0 and episode.meta["iterations"] == 3
    assert await columns(doubles, episode) == (1.0, 1.0)


async def test_fallback_without_any_pass_takes_the_latest_candidate(doubles):
    chat = doubles.Chat({"solver": ["\\boxed{42}"], "verifier": [WRONG, WRONG], "corrector": ["\\boxed{40}"]})
    episode = await vc.run(PROBLEM, chat, None, max_iterations=1)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("solver", None, 0),
        ("verifier", 0, 0),
        ("corrector", 1, 1),
        ("verifier", 2, 1),
    ]
    assert episode.final_answer == "\\boxed{40}" and episode.meta["outcome"] == "iteration_limit"
    assert await columns(doubles, episode) == (0.0, 1.0)


async def test_truncated_solver_is_retried_then_gives_up(doubles):
    cut = Reply(text="<think>long", finish_reason="length")
    chat = doubles.Chat({"solver": [cut, "\\boxed{1}"], "verifier": [CORRECT]})
    episode = await vc.run(PROBLEM, chat, None, accept_after=1)
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("solver", None, 0),
        ("solver", None, 0),
        ("verifier", 1, 0),
    ]
    assert [c.meta["attempt"] for c in episode.calls_by_role("solver")] == [0, 1]
    assert episode.final_answer == episode.answers["solver"] == "\\boxed{1}"
    assert await columns(doubles, episode, gold="1") == (1.0, 1.0)

    chat = doubles.Chat({"solver": [cut, cut]})
    episode = await vc.run(PROBLEM, chat, None, solver_attempts=2)
    assert episode.final_answer is None and episode.answers == {"solver": None}
    assert episode.meta["outcome"] == "solver_truncated"
    assert [c.role for c in episode.calls] == ["solver", "solver"]
    assert await columns(doubles, episode, gold="1") == (0.0, 0.0)


async def test_truncated_corrector_ends_the_loop_and_truncated_verifier_never_passes(doubles):
    chat = doubles.Chat(
        {
            "solver": ["\\boxed{5}"],
            "verifier": [Reply(text=CORRECT, finish_reason="length")],
            "corrector": [Reply(text="\\boxed{6", finish_reason="length")],
        }
    )
    episode = await vc.run(PROBLEM, chat, None)
    assert episode.calls[1].meta == {"verdict": None, "truncated": True, "candidate": 0}
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [
        ("solver", None, 0),
        ("verifier", 0, 0),
        ("corrector", 1, 1),
    ]
    assert episode.meta["outcome"] == "corrector_truncated"
    assert episode.final_answer == "\\boxed{5}"
    assert await columns(doubles, episode, gold="5") == (1.0, 1.0)


async def test_bad_options_are_named():
    with pytest.raises(ValueError, match=r"system 'vc' options: accept_after: must be >= 1, got 0"):
        await run_system("vc", PROBLEM, None, None, accept_after=0)


def test_marsrl_prompts_keep_the_official_leading_and_trailing_newlines():
    from mara_bench.harness.prompts import fill
    from mara_bench.harness.prompts.sets import prompt_set

    # vc_reasoning_system.py: the verifier's system prompt and user f-string, and the correction message
    # (correction_prompt and the bug report joined by "\n"), as the model sees them
    paper = prompt_set("vc", "paper")
    assert paper.system_prompt("verifier").startswith("\nYou are an expert mathematician")
    assert paper.system_prompt("verifier").endswith("**Correctness:** Wrong\n")
    user = fill(paper.user_template("verifier"), {"problem": "P", "solution": "S"})
    assert user.startswith("\n======") and "\n\nS\n\n\n### Verification Task Reminder ###\n\n" in user
    assert user.endswith("as described in the system instructions.\n\n")
    assert fill(paper.user_template("corrector"), {"bug_report": "B"}).endswith("in the system prompt.\n\nB")


PAPER_VERIFIER_SHA256 = "563a43b9d7bf9d8df0fcb97b6e33b6c77ad4b2100fe53e9b96891997a9f99261"
"""sha256 of the JSON of the Verifier's messages on "What is 3 + 4?" / "So \\boxed{7}", as the code before the
``prompts`` option built them (the paper's verbatim system prompt and user message)."""


async def test_the_default_verifier_prompt_is_the_papers_byte_for_byte(doubles):
    import hashlib
    import json

    chat = doubles.Chat({"solver": ["<think>x</think>So \\boxed{7}"], "verifier": [CORRECT]})
    episode = await vc.run("What is 3 + 4?", chat, None, accept_after=1)
    messages = episode.calls[1].messages
    assert hashlib.sha256(json.dumps(messages).encode()).hexdigest() == PAPER_VERIFIER_SHA256
    assert messages == vc.verifier_messages("What is 3 + 4?", "So \\boxed{7}", "paper")


async def test_the_compact_verifier_prompt_is_ours_short_and_puts_the_judged_solution_last(doubles):
    chat = doubles.Chat({"solver": ["<think>x</think>So \\boxed{5}"], "verifier": [WRONG]})
    episode = await vc.run("What is 3 + 4?", chat, None, accept_after=1, max_iterations=0, prompts="compact")
    [message] = episode.calls[1].messages  # no system prompt
    assert message["role"] == "user" and message["content"].endswith("\nSolution: So \\boxed{5}")
    assert "What is 3 + 4?" in message["content"] and len(message["content"]) < 300
    assert "Correctness: Correct" in message["content"] and "Correctness: Wrong" in message["content"]
    assert episode.calls[1].meta["verdict"] is False


async def test_a_bad_prompt_set_is_named_with_the_choices():
    with pytest.raises(
        ValueError, match=r"prompts: 'short' is not a valid choice; choose one of paper, compact"
    ):
        await run_system("vc", PROBLEM, None, None, prompts="short")
