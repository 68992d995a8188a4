"""M-ASK's released format checks (``mara_bench.harness.systems.mask_format``): each role's strict format holds, and each rule
of the released ``parse_response`` methods, broken alone, makes the reply illegal."""

import pytest

from mara_bench.harness.systems.mask_format import legal_format

LEGAL = {
    "plan": "<q1>Who?</q1>\n<a1>unkown</a1>\n<q2>Where?</q2> <a2>Lomir</a2>\n<final_answer>Lomir</final_answer>",
    "search": "<search>capital of Arvena</search>",
    "summary": "<evidence>The capital of Arvena is Lomir.</evidence>",
    "update": "<Update>t2</Update>",
    "answer": " <final_answer>Lomir</final_answer>\n",
}

ILLEGAL = [
    ("plan", "", "an empty reply"),
    ("plan", "<final_answer>Lomir</final_answer>", "no sub-question tag"),
    ("plan", "<q1>Who?</q1><a1>x</a1> so Lomir <final_answer>Lomir</final_answer>", "text outside the tags"),
    ("plan", "<a1>x</a1><q1>Who?</q1>", "a1 opened before q1"),
    ("plan", "<q1>Who?</q1><a1>x</a1><q3>Where?</q3><a3>y</a3>", "q3 after a1"),
    ("plan", "".join(f"<q{n}>Q{n}?</q{n}><a{n}>a</a{n}>" for n in range(1, 7)), "six sub-questions"),
    ("plan", "<q1>Who?</q1><a1>x</a1><q2>Who?</q2><a2>y</a2>", "a repeated sub-question"),
    ("plan", "<Q1>Who?</Q1><a1>x</a1>", "an upper-case Q (the order check compares 'Q' with 'q')"),
    ("search", "", "an empty reply"),
    ("search", "<search>a</search><search>b</search>", "two queries"),
    ("search", "Let me search. <search>a</search>", "text outside the tag"),
    ("search", "capital of Arvena", "neither tag"),
    ("search", "<end> no more", "text beside <end>"),
    ("summary", "Lomir", "no evidence tag"),
    ("summary", "<evidence>a</evidence><evidence>b</evidence>", "two evidence blocks"),
    ("summary", "<evidence>a</evidence> done", "text outside the tag"),
    ("summary", f"<evidence>{' '.join(['word'] * 76)}</evidence>", "76 words of evidence"),
    ("update", "", "an empty reply"),
    ("update", "<Update>t3</Update>", "a step the trajectory lacks"),
    ("update", "<Update>2</Update>", "a step named without its t"),
    ("update", "<Add>t4</Add>", "an add that skips a number"),
    ("update", "<Add>t03</Add>", "a leading zero"),
    ("update", "<Update>t1</Update><Update>t2</Update>", "two updates"),
    ("update", "I add it. <Add>t3</Add>", "text outside the tag"),
    ("answer", "Lomir", "no answer tag"),
    ("answer", "<final_answer> </final_answer>", "an empty answer"),
    ("answer", "<final_answer>a</final_answer><final_answer>b</final_answer>", "two answers"),
    ("answer", "The answer: <final_answer>Lomir</final_answer>", "text outside the tag"),
]


def check(role: str, reply: str) -> bool:
    return legal_format(role, reply, answer_tag="final_answer", steps=2)


@pytest.mark.parametrize("role", list(LEGAL))
def test_each_roles_strict_format_is_legal(role):
    assert check(role, LEGAL[role])


@pytest.mark.parametrize(("role", "reply", "why"), ILLEGAL, ids=[why for _, _, why in ILLEGAL])
def test_each_broken_rule_alone_makes_the_reply_illegal(role, reply, why):
    assert not check(role, reply)


def test_the_other_legal_forms_and_what_is_checked_after_thinking():
    assert check("search", "<end>") and check("update", "<Add>t3</Add>") and check("update", "<add>t3</add>")
    assert check("summary", f"<evidence>{' '.join(['word'] * 75)}</evidence>")
    assert check("plan", "<q1>Who?</q1><a1>x</a1>")  # the answer tag is not required
    assert check("answer", "<think>It is Lomir, surely.</think><final_answer>Lomir</final_answer>")
    # the update's step is checked against the trajectory it saw; the appendix prompts' answer tag is read
    assert legal_format("update", "<Update>t3</Update>", answer_tag="final_answer", steps=3)
    appendix = "<predicted_answer>Lomir</predicted_answer>"
    assert legal_format("answer", appendix, answer_tag="predicted_answer", steps=0)
    assert not legal_format("answer", appendix, answer_tag="final_answer", steps=0)
