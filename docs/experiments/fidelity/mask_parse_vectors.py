"""Writes tests/systems/vectors/mask_parse_values.json by running M-ASK's released ``parse_response`` methods on
generated replies of each of its five agents.

Needs, in a scratch folder outside the repository (argument 1), ``released_parse.py``: the five ``parse_response``
static methods (and ``UpdateAgent.apply_update_action``) of chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b
qa_manager/base_agent.py as module-level functions ``plan_parse_response``, ``search_parse_response``,
``summary_parse_response``, ``update_parse_response``, ``apply_update_action``, ``answer_parse_response``. The replies
are random joins of pieces (tags in several cases, empty tags, prose, colon lines, punctuation-only lines, CJK text,
a 600-character line, leading line breaks), 60 per agent.
Usage: python docs/experiments/fidelity/mask_parse_vectors.py /tmp/ref/mask tests/systems/vectors/mask_parse_values.json
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
import released_parse as released  # noqa: E402

QUESTION = "What is the capital of Arvena?"
PIECES = {
    "plan": [
        "<q1>Which country?</q1>",
        "<a1>Arvena</a1>",
        "<Q2>Its capital?</Q2>",
        "<a2>Lomir</a2>",
        "<q3>Why?</q3>",
        "<A3>unkown</A3>",
        "<q2>Its capital?</q2>",
        "<final_answer>Lomir</final_answer>",
        "<FINAL_ANSWER>Paris</FINAL_ANSWER>",
        "<final_answer></final_answer>",
        "Capital: Lomir",
        "Note:",
        "Some prose.",
        "x" * 600,
        "***",
    ],
    "search": [
        "<search>Arvena capital</search>",
        "<Search>Lomir city</Search>",
        "<end>",
        "<END>",
        "<search></search>",
        "Let me search for: Arvena's capital!",
        "...",
        "搜索 北京",
        "I'd rather not.",
    ],
    "summary": [
        "<evidence>Lomir is the capital.</evidence>",
        "<EVIDENCE>Arvena</EVIDENCE>",
        "<evidence></evidence>",
        "No useful info here",
        "Unknown.",
        "The capital is Lomir.",
        "***",
        "Nonetheless, Lomir.",
    ],
    "update": [
        "<Update>t1</Update>",
        "<update>t2</update>",
        "<Add>t3</Add>",
        "<ADD>t3</ADD>",
        "<Add>t03</Add>",
        "<Update>τ1</Update>",
        "<Update>t9</Update>",
        "<Add>t4</Add>",
        "I update.",
        "<Update> t2 </Update>",
    ],
    "answer": [
        "<final_answer>Lomir</final_answer>",
        "<Final_Answer>Paris</Final_Answer>",
        "<final_answer></final_answer>",
        "Lomir",
        "because of the map",
        "***",
    ],
}
SEPARATORS = ["", "\n", " ", "\n\n"]
PASSAGES = ["Arvena is a country. Its capital is Lomir!", "Lomir city. Capital of nothing"]
TRAJECTORIES = [
    {
        "t1": {"question": "What is the population of Lomir", "answer": "1,200 people"},
        "t2": {"question": "What is the population of Arvena", "answer": "3.5 million"},
    },
    {
        "t1": {"question": "Which country?", "answer": "Arvena"},
        "t2": {"question": "Capital?", "answer": "unkown"},
    },
]
rng = random.Random(35)


def reply(role: str) -> str:
    pieces = rng.choices(PIECES[role], k=rng.randint(0, 4))
    text = ""
    for piece in pieces:
        text += rng.choice(SEPARATORS) + piece
    return text if rng.random() < 0.8 else rng.choice(["\n", " "]) + text


cases = []
for role in PIECES:
    for _ in range(60):
        text = reply(role)
        case = {"role": role, "reply": text}
        if role == "plan":
            out = released.plan_parse_response(text, QUESTION)
            case |= {
                "steps": [[v["question"], v["answer"]] for v in out["thinking_trajectory"].values()],
                "keys": list(out["thinking_trajectory"]),
                "answer": out["final_answer"],
            }
        elif role == "search":
            out = released.search_parse_response(text)
            case |= {"action": out["action"], "query": out["query"]}
        elif role == "summary":
            out = released.summary_parse_response(text, "capital of Arvena", PASSAGES)
            case |= {"evidence": out["evidence"]}
        elif role == "update":
            trajectory = TRAJECTORIES[1]
            out = released.update_parse_response(
                text, {"thinking_trajectory": trajectory}, {"query": "Q", "evidence": "E"}
            )
            case |= {
                "trajectory": [[v["question"], v["answer"]] for v in trajectory.values()],
                "updated": [
                    [v["question"], v["answer"]]
                    for v in out["updated_context"]["thinking_trajectory"].values()
                ],
            }
        else:
            trajectory = rng.choice(TRAJECTORIES)
            out = released.answer_parse_response(
                text, {"question": QUESTION, "thinking_trajectory": trajectory}
            )
            case |= {
                "trajectory": [[v["question"], v["answer"]] for v in trajectory.values()],
                "answer": out["final_answer"],
            }
        cases.append(case)
source = (
    "chenyiqun/M-ASK@2296e4caddcf6300688d914fac37c83d3cd1977b qa_manager/base_agent.py PlanningAgent, SearchAgent, "
    "SummaryAgent, UpdateAgent (with apply_update_action; new step ('Q', 'E')), AnswerAgent .parse_response on "
    "each reply (plan: question '"
    + QUESTION
    + "'; summary: query 'capital of Arvena' and the two passages); "
    "written by docs/experiments/fidelity/mask_parse_vectors.py"
)
Path(sys.argv[2]).write_text(
    json.dumps(
        {"source": source, "question": QUESTION, "passages": PASSAGES, "cases": cases},
        indent=1,
        ensure_ascii=False,
    )
)
