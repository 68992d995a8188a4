"""``Episode.to_dict`` is plain data equal to ``dataclasses.asdict`` and independent of the Episode, without
asdict's per-element recursion (the trainer serialises every rollout's token ids and logprobs each step)."""

from __future__ import annotations

from dataclasses import asdict

from mara_bench.core.episodes import Episode, ModelCall, Reply, ToolCall


def _episode() -> Episode:
    reply = Reply(
        text="\\boxed{7}", finish_reason="length", input_tokens=3, output_tokens=2, model="policy",
        prompt_ids=[1, 2, 3], response_ids=[4, 5], logprobs=[-0.5, -1.25],
    )  # fmt: skip
    call = ModelCall(
        id=0,
        role="solver",
        messages=[{"role": "user", "content": "3 + 4?"}],
        reply=reply,
        parent=None,
        turn=1,
        meta={"verdict": None, "found": [{"page": 1}]},
    )
    tool = ToolCall(
        id=0, name="search", arguments={"query": "q", "k": [1, 2]}, output="x", call=0, origin=None
    )
    return Episode(
        system="vc",
        question="3 + 4?",
        calls=[call, ModelCall(id=1, role="verifier", messages=[], reply=Reply(text="ok"), parent=0)],
        tool_calls=[tool],
        intermediate_answers=[{"turn": 0, "answer": "7"}],
        final_answer="7",
        answers={"solver": "7"},
        meta={"kind": "vc", "rounds": [1, 2]},
    )


def test_to_dict_equals_asdict_key_order_included_and_round_trips():
    episode = _episode()
    data = episode.to_dict()
    assert data == asdict(episode)
    assert list(data["calls"][0]) == list(asdict(episode)["calls"][0])
    assert list(data["calls"][0]["reply"]) == list(asdict(episode)["calls"][0]["reply"])
    assert Episode.from_dict(data) == episode


def test_to_dict_shares_no_mutable_part_with_the_episode():
    episode = _episode()
    data = episode.to_dict()
    data["calls"][0]["reply"]["prompt_ids"].append(99)
    data["calls"][0]["messages"][0]["content"] = "changed"
    data["calls"][0]["meta"]["found"][0]["page"] = 2
    data["tool_calls"][0]["arguments"]["k"].append(3)
    data["intermediate_answers"][0]["answer"] = "8"
    data["answers"]["solver"] = "8"
    data["meta"]["rounds"].append(3)
    assert episode == _episode()
