"""Loader behaviour on generated files: every row format, folder lookup, selection, provenance and bad input."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mara_bench.harness.datasets import (
    BENCHMARKS,
    DatasetUnavailableError,
    MalformedRowError,
    MissingDataError,
    load_benchmark,
    loader,
)
from mara_bench.harness.datasets.fingerprints import ForeignDataError
from mara_bench.harness.datasets.specs import _gaia_text_ids


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def write_json(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("benchmark_name", "row", "expected_id", "expected_input", "expected_target"),
    [
        ("nq", {"id": "t1", "question": "q?", "golden_answers": ["a", "b"]}, "t1", "q?", ["a", "b"]),
        ("hotpotqa", {"idx": 7, "question": "q?", "answer": "a", "gen_text_store": ""}, "7", "q?", ["a"]),
        ("ambigqa", {"question": "q?", "answer": ["a", "b"]}, "1", "q?", ["a", "b"]),
        ("hle", {"id": 3, "Question": "Q", "answer": "x", "answer_type": "exactMatch"}, "3", "Q", ["x"]),
        ("hle", {"id": "h1", "question": "Q", "answer": "x", "image": ""}, "h1", "Q", ["x"]),
        ("aime2025", {"problem": "P", "answer": "70"}, "1", "P", ["70"]),
        ("aime2024", {"ID": "2024-I-1", "Problem": "P", "Answer": 204}, "2024-I-1", "P", ["204"]),
        ("beyond_aime", {"input": "P", "query": "P", "ans_box": 33124147, "qid": 9}, "9", "P", ["33124147"]),
        ("beyond_aime", {"problem": "P", "answer": "12345678"}, "1", "P", ["12345678"]),
        ("frames", {"id": "wiki_0", "question": "Q", "answer": "Jane"}, "wiki_0", "Q", ["Jane"]),
        ("frames", {"Unnamed: 0": 4, "Prompt": "Q", "Answer": "Jane"}, "4", "Q", ["Jane"]),
        ("webwalkerqa", {"Question": "Q", "answer": "long answer", "lang": "en"}, "1", "Q", ["long answer"]),
        (
            "gaia",
            {"task_id": "g1", "Question": "Q", "Final answer": "6", "Level": 1, "file_name": ""},
            "g1",
            "Q",
            ["6"],
        ),
        ("gaia", {"task_id": "g2", "Question": "Q", "answer": "6", "Level": 2}, "g2", "Q", ["6"]),
    ],
)
def test_every_row_format_becomes_the_expected_sample(
    tmp_path, benchmark_name, row, expected_id, expected_input, expected_target
):
    path = write_jsonl(tmp_path / "rows.jsonl", [row])
    sample = load_benchmark(benchmark_name, data=str(path)).dataset[0]
    assert (sample.id, sample.input, sample.target) == (expected_id, expected_input, expected_target)
    assert sample.metadata["benchmark"] == benchmark_name


def test_verl_parquet_keeps_only_the_benchmarks_rows_and_splits_answers(tmp_path):
    def row(source: str, index: str, question: str, truth: str) -> dict:
        return {
            "data_source": source,
            "prompt": [{"role": "user", "content": question}],
            "ability": "qa",
            "reward_model": {"ground_truth": truth, "style": "rule"},
            "extra_info": {"index": index, "split": "test"},
        }

    rows = [
        row("tq", "tq_1", "Who wrote it?", "twain<|answer_split|>mark twain"),
        row("nq", "nq_1", "Where?", "paris"),
        row("tq", "tq_2", "When?", "1999"),
    ]
    path = tmp_path / "mix.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    loaded = load_benchmark("triviaqa", data=str(path))
    assert [s.id for s in loaded.dataset] == ["tq_1", "tq_2"]
    assert loaded.dataset[0].target == ["twain", "mark twain"]
    assert loaded.dataset[0].input == "Who wrote it?"
    assert (loaded.provenance["rows_read"], loaded.provenance["row_count"]) == (3, 2)
    with pytest.raises(MalformedRowError, match=r"names no musique rows .*found nq, tq"):
        load_benchmark("musique", data=str(path))


def test_a_folder_is_searched_for_the_benchmarks_preferred_file(tmp_path):
    write_jsonl(
        tmp_path / "nq" / "nq_test_1k_subsample.jsonl",
        [{"id": "s", "question": "q", "golden_answers": ["a"]}],
    )
    write_json(tmp_path / "nq" / "nq_open_test_full_3610.json", [{"question": "q1", "answer": ["a"]}] * 2)
    from_root = load_benchmark("nq", data=str(tmp_path))
    assert from_root.provenance["path"].endswith("nq_open_test_full_3610.json")
    assert from_root.provenance["row_count"] == 2
    from_own_folder = load_benchmark("nq", data=str(tmp_path / "nq"))
    assert from_own_folder.provenance["path"] == from_root.provenance["path"]


def test_mara_data_dir_is_used_when_no_data_is_given(tmp_path, monkeypatch):
    write_jsonl(tmp_path / "aime2025" / "aime2025_test.jsonl", [{"problem": "P", "answer": "1"}])
    monkeypatch.setenv("MARA_DATA_DIR", str(tmp_path))
    assert load_benchmark("aime2025").provenance["source"] == "local"


def test_provenance_records_file_hash_counts_and_id_list_hash(tmp_path):
    rows = [{"id": f"r{i}", "question": f"q{i}", "golden_answers": ["a"]} for i in range(5)]
    path = write_jsonl(tmp_path / "f.jsonl", rows)
    loaded = load_benchmark("bamboogle", data=str(path), ids="r3,r1", limit=1)
    provenance = loaded.provenance
    assert provenance["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (provenance["rows_read"], provenance["rows_in_benchmark"], provenance["row_count"]) == (5, 5, 1)
    assert provenance["ids_requested"] == ["r3", "r1"] and provenance["limit"] == 1
    assert provenance["ids_sha256"] == hashlib.sha256(b"r3").hexdigest()
    assert [s.id for s in loaded.dataset] == ["r3"]


def test_ids_can_come_from_a_file(tmp_path):
    path = write_jsonl(tmp_path / "f.jsonl", [{"problem": f"p{i}", "answer": str(i)} for i in range(4)])
    id_file = tmp_path / "ids.txt"
    id_file.write_text("# my subset\n4\n\n2\n", encoding="utf-8")
    loaded = load_benchmark("aime2025", data=str(path), ids=str(id_file))
    assert [s.target for s in loaded.dataset] == [["3"], ["1"]]


def test_text_only_rules_drop_attachment_rows(tmp_path):
    rows = [
        {"task_id": "a", "Question": "Q", "Final answer": "1", "Level": 1, "file_name": ""},
        {"task_id": "b", "Question": "Q", "Final answer": "1", "Level": 1, "file_name": "sheet.xlsx"},
    ]
    loaded = load_benchmark("gaia", data=str(write_jsonl(tmp_path / "g.jsonl", rows)))
    assert [s.id for s in loaded.dataset] == ["a"]
    hle_rows = [
        {"id": "x", "question": "Q", "answer": "1", "image": "data:image/png;base64,AAA"},
        {"id": "y", "question": "Q", "answer": "1", "image": ""},
    ]
    assert [
        s.id for s in load_benchmark("hle", data=str(write_jsonl(tmp_path / "h.jsonl", hle_rows))).dataset
    ] == ["y"]


def test_bundled_samples_are_small_and_gaia_samples_are_synthetic():
    for name in BENCHMARKS:
        loaded = load_benchmark(name, data="samples")
        # a benchmark's samples are a taste of it; a set that ships whole (the sanity set) is its own size
        assert 1 <= loaded.provenance["rows_read"] <= (24 if BENCHMARKS[name].bundled else 10), name
        assert loaded.provenance["source"] == "samples"
    gaia = load_benchmark("gaia", data="samples").dataset
    assert all("synthetic" in str(sample.id) for sample in gaia)


def test_a_local_copy_of_the_full_gaia_split_is_cut_to_the_text_103(tmp_path):
    """The official metadata file (all 165 validation rows) gives the 103 GAIA-text questions, not every text row."""
    in_103, other = sorted(_gaia_text_ids())[:2], "0000-text-only-but-not-in-the-103"
    rows = [
        {"task_id": task_id, "Question": "Q", "Final answer": "1", "Level": 1, "file_name": ""}
        for task_id in (in_103[0], other, in_103[1])
    ]
    loaded = load_benchmark(
        "gaia", data=str(write_jsonl(tmp_path / "2023" / "validation" / "metadata.jsonl", rows))
    )
    assert [s.id for s in loaded.dataset] == in_103
    assert (loaded.provenance["subset"], loaded.provenance["rows_read"]) == ("in_gaia_text_103", 3)


def test_hub_rows_are_filtered_to_the_published_subset_and_record_the_pinned_revision(monkeypatch):
    """GAIA from the hub: only the 103 GAIA-text ids, text-only; provenance names the pinned commit."""
    text_103 = sorted(_gaia_text_ids())
    rows = [
        {"task_id": text_103[0], "Question": "Q1", "Final answer": "1", "Level": 1, "file_name": ""},
        {"task_id": "not-in-the-103", "Question": "Q2", "Final answer": "2", "Level": 1, "file_name": ""},
        {"task_id": text_103[1], "Question": "Q3", "Final answer": "3", "Level": 2, "file_name": ""},
    ]
    monkeypatch.delenv("MARA_DATA_DIR", raising=False)
    monkeypatch.setattr(loader, "hub_rows", lambda spec: rows)
    loaded = load_benchmark("gaia")
    assert [s.id for s in loaded.dataset] == [text_103[0], text_103[1]]
    assert loaded.provenance | {"ids_sha256": None} == {
        "benchmark": "gaia",
        "source": "huggingface",
        "hf_path": "gaia-benchmark/GAIA",
        "hf_config": "2023_all",
        "split": "validation",
        "revision": BENCHMARKS["gaia"].revision,
        "rows_read": 3,
        "subset": "in_gaia_text_103",
        "rows_in_benchmark": 2,
        "row_count": 2,
        "ids_requested": None,
        "limit": None,
        "ids_sha256": None,
    }
    assert len(text_103) == 103 and BENCHMARKS["gaia"].revision


# --- bad input: each error names what to fix -------------------------------------------------------------


def test_malformed_row_names_file_row_and_field(tmp_path):
    rows = [{"id": "1", "question": "q", "golden_answers": ["a"]}, {"id": "2", "question": "q"}]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(
        MalformedRowError, match=r"bad\.jsonl, row 2: field 'golden_answers' is missing"
    ) as info:
        load_benchmark("nq", data=str(path))
    assert (info.value.row_number, info.value.field) == (2, "golden_answers")


def test_empty_answer_and_broken_json_are_malformed(tmp_path):
    path = write_jsonl(
        tmp_path / "e.jsonl", [{"problem": "p", "answer": "1"}, {"problem": "p", "answer": ""}]
    )
    with pytest.raises(MalformedRowError, match=r"row 2: field 'answer' must be a non-empty"):
        load_benchmark("aime2025", data=str(path))
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"problem": "p", "answer": "1"}\n{"problem": \n', encoding="utf-8")
    with pytest.raises(MalformedRowError, match=r"broken\.jsonl, row 2: field '\(line\)' is not valid JSON"):
        load_benchmark("aime2025", data=str(broken))


def test_duplicate_ids_are_malformed(tmp_path):
    rows = [{"id": "x", "question": "q", "answer": "a"}, {"id": "x", "question": "q2", "answer": "b"}]
    with pytest.raises(MalformedRowError, match=r"row 2: field 'id' repeats id 'x' of row 1"):
        load_benchmark("frames", data=str(write_jsonl(tmp_path / "d.jsonl", rows)))


def test_unknown_format_lists_the_known_ones(tmp_path):
    with pytest.raises(MalformedRowError, match=r"row 1: field 'question/answer' not found.*known formats"):
        load_benchmark("frames", data=str(write_jsonl(tmp_path / "u.jsonl", [{"q": "x", "a": "y"}])))


def test_a_file_in_another_benchmarks_format_is_refused_naming_the_declared_ones(tmp_path):
    flashrag_rows = [{"id": "1", "question": "What is 2+2?", "golden_answers": ["4"]}]
    with pytest.raises(MalformedRowError, match=r"aime2025's known formats are problem_answer: 'problem'"):
        load_benchmark("aime2025", data=str(write_jsonl(tmp_path / "qa.jsonl", flashrag_rows)))


def test_hub_rows_are_read_in_the_declared_format_not_guessed(monkeypatch):
    webthinker_shaped = [{"Question": "q", "answer": "a", "id": "1"}]  # cais/hle's rows have "question"
    monkeypatch.delenv("MARA_DATA_DIR", raising=False)
    monkeypatch.setattr(loader, "hub_rows", lambda spec: webthinker_shaped)
    monkeypatch.setattr(loader, "resolved_revision", lambda spec: "sha")
    with pytest.raises(
        MalformedRowError, match=r"cais/hle \(default/test\), row 1: field 'question' is missing"
    ):
        load_benchmark("hle")


def test_missing_local_path_is_a_clear_error(tmp_path):
    with pytest.raises(MissingDataError, match=r"does not exist; pass -T data="):
        load_benchmark("frames", data=str(tmp_path / "nowhere.jsonl"))
    with pytest.raises(
        MissingDataError, match=r"holds no frames file; expected one of frames/frames_824.jsonl"
    ):
        load_benchmark("frames", data=str(tmp_path))


def test_ids_not_found_are_listed(tmp_path):
    path = write_jsonl(tmp_path / "f.jsonl", [{"id": "a", "question": "q", "answer": "x"}])
    with pytest.raises(ValueError, match=r"ids not found in .*f\.jsonl: zz, yy; ids there look like: a"):
        load_benchmark("frames", data=str(path), ids="zz,yy")


@pytest.mark.parametrize("limit", [0, -3, "ten"])
def test_bad_limit_is_rejected(tmp_path, limit):
    path = write_jsonl(tmp_path / "f.jsonl", [{"id": "a", "question": "q", "answer": "x"}])
    with pytest.raises(ValueError, match="must be a positive integer"):
        load_benchmark("frames", data=str(path), limit=limit)


def test_gated_dataset_without_token_says_to_set_hf_token(monkeypatch, tmp_path):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("MARA_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # no stored token either
    with pytest.raises(DatasetUnavailableError, match=r"gated dataset .*set HF_TOKEN.*-T data="):
        load_benchmark("gaia")


def test_offline_hub_miss_suggests_a_local_copy(monkeypatch, tmp_path):
    monkeypatch.delenv("MARA_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(
        DatasetUnavailableError, match=r"could not load math-ai/aime25.*HF_HUB_OFFLINE.*-T data="
    ):
        load_benchmark("aime2025")


def test_unknown_benchmark_lists_known_ones():
    with pytest.raises(
        ValueError,
        match=r"unknown benchmark 'aime2026'; valid: aime2024, aime2025.*did you mean 'aime2025'\?",
    ):
        load_benchmark("aime2026")


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_a_binary_data_file_is_named_not_a_decode_error(tmp_path, suffix):
    path = tmp_path / f"frames{suffix}"
    path.write_bytes(b'{"id": "1", "question": "q", "answer": "a"}\n' + bytes(range(128, 256)) * 8)
    with pytest.raises(MalformedRowError) as caught:
        load_benchmark("frames", data=str(path))
    assert str(caught.value).startswith(f"{path}, row ")
    expected = (
        "is not a readable parquet file" if suffix == ".parquet" else "is not UTF-8 text (a binary file?)"
    )
    assert expected in str(caught.value)
    if suffix == ".jsonl":
        assert caught.value.row_number == 2  # the line holding the first bad byte


def test_a_line_separator_inside_a_jsonl_string_is_not_a_line_break(tmp_path):
    path = write_jsonl(tmp_path / "s.jsonl", [{"id": "1", "question": "a\u2028b", "answer": "c"}])
    path.write_text(path.read_text(encoding="utf-8").replace("\\u2028", "\u2028"), encoding="utf-8")
    assert load_benchmark("frames", data=str(path)).dataset[0].input == "a\u2028b"


def test_another_benchmarks_file_is_refused_in_one_line_unless_forced():
    frames = loader.bundled_samples_path("frames")
    with pytest.raises(
        ForeignDataError, match=r"holds frames rows, not hle ones \(its sha256 matches frames's "
    ):
        load_benchmark("hle", data=str(frames))
    forced = load_benchmark("hle", data=str(frames), force_data=True)
    assert forced.provenance["forced"] is True and forced.provenance["row_count"] > 0


def test_an_edited_copy_of_another_benchmarks_file_is_refused_by_its_rows_and_shape(tmp_path):
    # FRAMES' shared file has 824 {id, question, answer} rows (harness/datasets/known_files.json)
    rows = [{"id": f"wiki____{i}", "question": f"q{i}?", "answer": "a"} for i in range(824)]
    copy = write_jsonl(tmp_path / "mine.jsonl", rows)
    with pytest.raises(
        ForeignDataError, match=r"its 824 rows and row shape matches frames's frames_824.jsonl"
    ):
        load_benchmark("hle", data=str(copy))
    assert (
        load_benchmark("hle", data=str(write_jsonl(tmp_path / "few.jsonl", rows[:9]))).provenance["row_count"]
        == 9
    )


def _two_hotpotqa_files(folder: Path) -> None:
    write_json(folder / "hotpotqa" / "hotpotqa_dev_full_7405.json", [{"question": "q1?", "answer": "a"}] * 3)
    write_jsonl(folder / "hotpotqa" / "hotpotqa_500.jsonl", [{"idx": 1, "question": "q2?", "answer": "b"}])


def test_a_folder_with_several_candidate_files_says_which_it_read_and_a_user_picks_by_name(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger=loader.__name__)
    _two_hotpotqa_files(tmp_path)
    preferred = load_benchmark("hotpotqa", data=str(tmp_path))
    assert preferred.provenance["path"].endswith("hotpotqa_dev_full_7405.json")
    assert preferred.provenance["other_candidates"] == [str(tmp_path / "hotpotqa" / "hotpotqa_500.jsonl")]
    assert "hotpotqa: reading" in caplog.text and "pick one with -T data_file=hotpotqa_500" in caplog.text
    picked = load_benchmark("hotpotqa", data=str(tmp_path), data_file="hotpotqa_500")
    assert picked.provenance["path"].endswith("hotpotqa_500.jsonl") and picked.provenance["row_count"] == 1
    with pytest.raises(
        MissingDataError, match=r"-T data_file=nope: .* choose one of hotpotqa_dev_full_7405, "
    ):
        load_benchmark("hotpotqa", data=str(tmp_path), data_file="nope")


def test_the_data_folder_from_the_environment_also_says_which_file_it_read(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger=loader.__name__)
    _two_hotpotqa_files(tmp_path)
    monkeypatch.setenv("MARA_DATA_DIR", str(tmp_path))
    assert load_benchmark("hotpotqa").provenance["path"].endswith("hotpotqa_dev_full_7405.json")
    assert "pick one with -T data_file=hotpotqa_500" in caplog.text
    assert load_benchmark("hotpotqa", data_file="hotpotqa_500").provenance["row_count"] == 1
