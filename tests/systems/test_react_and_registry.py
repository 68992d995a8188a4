"""The react baseline, the prompt files and the systems registry's option checks."""

import json

import pytest

from mara_bench.harness.prompts import PROMPT_DIR, fill, load_prompt, read_prompt_file
from mara_bench.harness.systems import SYSTEMS, get_system, react, run_system
from mara_bench.harness.systems.toolloop import TOOL_DESCRIPTIONS, parse_tool_calls


async def test_react_hands_raw_tool_output_back_to_the_same_agent(doubles):
    toolbox, log = doubles.toolbox({"browse": lambda url: "Page text: the answer is 7."})
    call = "<tool_call>" + json.dumps({"name": "browse", "arguments": {"url": "http://x"}}) + "</tool_call>"
    chat = doubles.Chat({"agent": ["<think>look</think>" + call, "<answer>7</answer>"]})
    episode = await react.run("What is the answer?", chat, toolbox)
    assert episode.final_answer == "7"
    assert [(c.role, c.parent, c.turn) for c in episode.calls] == [("agent", None, 0), ("agent", 0, 1)]
    assert log == [("browse", {"url": "http://x"})]
    assert (
        episode.calls[1].messages[-1]["content"]
        == "<tool_response>\nPage text: the answer is 7.\n</tool_response>"
    )
    assert "- browse: fetch a web page" in episode.calls[0].messages[0]["content"]
    assert (await doubles.score(episode, ["7"], "lexical"))["em"] == 1.0


def test_every_prompt_names_its_source_and_loads():
    files = sorted(PROMPT_DIR.rglob("*.txt"))
    assert len(files) >= 20
    for path in files:
        assert path.read_text(encoding="utf-8").startswith("# Source: "), path.name
        assert load_prompt(path.relative_to(PROMPT_DIR).with_suffix("").as_posix()).strip()


def test_every_compact_prompt_says_it_is_ours_not_the_papers_and_which_option_picks_it():
    files = sorted(PROMPT_DIR.glob("*/compact/*.txt"))
    systems = {path.relative_to(PROMPT_DIR).parts[0] for path in files}
    assert systems == {"mars", "mask", "matpo", "vc"}, systems
    for path in files:
        header = path.read_text(encoding="utf-8").splitlines()[0]
        assert "ours" in header and "NOT the paper's" in header and "option prompts: compact" in header, path


def test_prompt_file_reader_strips_the_header_and_refuses_a_file_without_one(tmp_path):
    (tmp_path / "good.txt").write_text("# Source: ours\nline one\nline two\n", encoding="utf-8")
    (tmp_path / "bare.txt").write_text("no header here\n", encoding="utf-8")
    assert read_prompt_file(tmp_path, "good", "# Source:") == "line one\nline two"
    with pytest.raises(ValueError, match=r"bare.txt must start with a '# Source: ...' line"):
        read_prompt_file(tmp_path, "bare", "# Source:")
    with pytest.raises(ValueError, match="known prompts: bare, good"):
        read_prompt_file(tmp_path, "missing", "# Source:")


def test_tool_call_example_in_the_prompt_uses_the_tools_argument_names():
    # harness.tools' search/scholar/retrieve take ``query`` (a string or a list of strings)
    # the earlier blocks are empty tag mentions; the last one is the worked example
    *_, example = parse_tool_calls(load_prompt("mars/tool_description"))
    assert example.error is None and example.name == "search"
    assert list(example.arguments) == ["query"] and '{"query":' in TOOL_DESCRIPTIONS["search"]
    assert example.purpose


def test_fill_is_single_pass_and_names_missing_placeholders():
    assert fill("{a} and {b} {json: 1}", {"a": "{b}", "b": "x"}) == "{b} and x {json: 1}"
    with pytest.raises(ValueError, match="no placeholder"):
        fill("{a}", {"c": "1"})
    with pytest.raises(ValueError, match="known prompts"):
        load_prompt("no_such_prompt")


def test_registry_lists_roles_and_rejects_unknown_options():
    assert set(SYSTEMS) >= {"direct", "react", "mars", "vc", "matpo", "mask"}
    assert get_system("vc").roles == ("solver", "verifier", "corrector")
    assert get_system("mask").roles == ("plan", "search", "summary", "update", "answer")
    assert {"sys1", "max_turns", "search_backend"} <= set(get_system("mars").options())
    with pytest.raises(ValueError, match=r"system 'vc' options: .*accept_after"):
        get_system("vc").setup({"acept_after": 2})


async def test_run_system_passes_options(doubles):
    chat = doubles.Chat({"solver": ["x"], "verifier": ["**Correctness:** Correct"]})
    episode = await run_system("vc", "q", chat, None, accept_after=1)
    assert episode.meta["outcome"] == "accepted"
