"""benchmarks/evidence_picks.py: the summary's evidence read, picked carelessly, another capital, or none."""

import json

import pytest

from benchmarks.evidence_picks import pick_kind, tally_step

PASSAGES = (
    'Doc1: "Pirok"\nPirok borders Tamel, and the capital of Tamel is Ruvo. The capital of Pirok is Kalim.\n'
    'Doc2: "Voshan"\nVoshan borders Pirok, and the capital of Pirok is Kalim. The capital of Voshan is Xem.'
)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        ("<evidence>Kalim</evidence>", "read"),
        ("<evidence>Ruvo</evidence>", "careless"),
        ("<evidence>Xem</evidence>", "other"),
        ("<evidence> </evidence>", "none"),
        ("Kalim", "none"),
    ],
)
def test_each_kind_of_evidence(reply, kind):
    assert pick_kind(PASSAGES, "Pirok", reply) == kind


def test_a_step_counts_summary_calls_only(tmp_path):
    def call(role, text):
        return {"role": role, "messages": [{"role": "user", "content": PASSAGES}], "reply": {"text": text}}

    episodes = [
        {
            "calls": [
                call("summary", "<evidence>Kalim</evidence>"),
                call("answer", "<evidence>Ruvo</evidence>"),
            ]
        },
        {"calls": [call("summary", "<evidence>Ruvo</evidence>")]},
    ]
    record = {"item": {"question": "What is the capital of Pirok?", "answer": "Kalim"}, "episodes": episodes}
    path = tmp_path / "step_0.jsonl"
    path.write_text(json.dumps(record) + "\n")
    assert tally_step(path) == {"read": 1, "careless": 1}
