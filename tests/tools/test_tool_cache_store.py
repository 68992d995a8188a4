"""The tool-response store and the cache modes: round trips (text, documents, sources and tool errors), replay never
running a tool, misses as tool errors, keys, eviction, frozen snapshots, bad stores, export/import, an fsspec
store, and two processes recording into one store at once."""

from __future__ import annotations

import asyncio
import io
import multiprocessing
import sqlite3
import tarfile
import zlib

import pytest

from mara_bench.core.episodes import ToolError
from mara_bench.harness.cli import main as mara
from mara_bench.harness.toolbase.output import ToolText
from mara_bench.harness.toolbase.settings import ToolConfigError
from mara_bench.harness.toolcache import open_cache, open_store
from mara_bench.harness.toolcache.archive import export_snapshot, import_snapshot, read_archive
from mara_bench.harness.toolcache.store import StoreError
from mara_bench.harness.tools import build_toolbox


def run(coroutine):
    return asyncio.run(coroutine)


def recording_tool(calls: list, output=None, error: str | None = None):
    async def tool(**arguments):
        calls.append(arguments)
        if error:
            raise ToolError(error)
        return output if output is not None else f"live answer to {arguments}"

    return tool


def test_record_then_replay_returns_the_same_text_documents_sources_and_errors(tmp_path):
    calls: list = []
    page = ToolText("[1] A\nURL: http://a", ["page A"], ["http://a"])
    record = open_cache("record", "n1", str(tmp_path), None)
    search = record.wrap("search", recording_tool(calls, page), {"k": 10})
    browse = record.wrap("browse", recording_tool(calls, error="browse: HTTP 404"), {})
    assert run(search(query="zorvan river")) == page
    with pytest.raises(ToolError, match="HTTP 404"):
        run(browse(url="http://x/missing"))
    assert (record.counts.record, record.counts.live) == (2, 2)

    replay = open_cache("replay", "n1", str(tmp_path), None)
    replayed = run(replay.wrap("search", None, {"k": 10})(query="  zorvan   river "))  # normalised: same key
    assert isinstance(replayed, ToolText) and replayed == page
    assert (replayed.documents, replayed.sources) == (("page A",), ("http://a",))
    with pytest.raises(ToolError, match="HTTP 404"):
        run(
            replay.wrap("browse", None, {})(url="http://x/missing#section")
        )  # the fragment is not part of the key
    assert (replay.counts.hit, replay.counts.miss, replay.counts.live) == (2, 0, 0)
    assert len(calls) == 2


def test_replay_never_runs_the_tool_and_a_miss_is_a_counted_tool_error(tmp_path):
    open_cache("record", "n1", str(tmp_path), None)
    replay = open_cache("replay", "n1", str(tmp_path), None)

    async def must_not_run(**_):
        raise AssertionError("replay ran the live tool")

    search = replay.wrap("search", must_not_run, {"k": 10})
    with pytest.raises(ToolError, match="tool cache miss: snapshot 'n1' has no recorded search response"):
        run(search(query="never recorded"))
    assert (replay.counts.miss, replay.counts.live) == (1, 0)


def test_a_setting_that_shapes_the_answer_is_part_of_the_key(tmp_path):
    record = open_cache("record", "n1", str(tmp_path), None)
    run(record.wrap("search", recording_tool([]), {"k": 10})(query="q"))
    replay = open_cache("replay", "n1", str(tmp_path), None)
    with pytest.raises(ToolError, match="tool cache miss"):
        run(replay.wrap("search", None, {"k": 5})(query="q"))


def test_replay_or_record_fills_gaps_and_replays_the_rest(tmp_path):
    calls: list = []
    first = open_cache("replay-or-record", "n1", str(tmp_path), None)
    tool = first.wrap("search", recording_tool(calls), {})
    run(tool(query="a"))
    run(tool(query="a"))
    run(tool(query="b"))
    assert [call["query"] for call in calls] == ["a", "b"]
    assert (first.counts.hit, first.counts.record, first.counts.live) == (1, 2, 2)


def test_python_calls_are_recorded_and_replayed_with_their_code_exact(tmp_path):
    options = {"tool_store": str(tmp_path), "tool_snapshot": "py", "python_sandbox": "unisolated"}
    recorded = build_toolbox(["python"], tool_cache="record", **options)
    assert run(recorded.call("python", code="print(6 * 7)")).strip() == "42"
    replayed = build_toolbox(["python"], tool_cache="replay", **options)
    assert run(replayed.call("python", code="print(6 * 7)")).strip() == "42"
    with pytest.raises(ToolError, match="tool cache miss"):
        run(replayed.call("python", code="print(6*7)"))  # other source code, other call
    assert (replayed.cache.counts.hit, replayed.cache.counts.miss) == (1, 1)


def test_replay_builds_no_live_tool_so_needs_no_api_key(tmp_path):
    open_cache("record", "web", str(tmp_path), None)
    box = build_toolbox(
        ["search"],
        search_backend="serper",
        tool_cache="replay",
        tool_snapshot="web",
        tool_store=str(tmp_path),
        environ={},
    )
    assert box.names() == ["search"]
    with pytest.raises(ToolConfigError, match="SERPER_API_KEY"):
        build_toolbox(
            ["search"], search_backend="serper", tool_cache="record", tool_store=str(tmp_path), environ={}
        )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"tool_cache": "replay", "tool_store": "{tmp}/absent"},
            r"tool store .*/absent: not found \(no index.sqlite\)",
        ),
        ({"tool_cache": "replay", "tool_snapshot": "nope"}, r"no snapshot 'nope' \(snapshots: frozen, n1\)"),
        (
            {"tool_cache": "sometimes"},
            r"tool settings: tool_cache: 'sometimes' is not a valid choice; choose one of off",
        ),
        ({"tool_cache": "replay", "tool_snapshot": "../x"}, r"tool settings: tool_snapshot:"),
        (
            {"tool_cache": "record", "tool_snapshot": "frozen"},
            r"snapshot 'frozen' is frozen, so -T tool_cache=record",
        ),
    ],
)
def test_bad_cache_settings_are_one_line_before_anything_runs(tmp_path, options, message):
    store = open_store(str(tmp_path), create=True)
    store.ensure_snapshot("n1")
    store.ensure_snapshot("frozen")
    store.freeze("frozen")
    options = {key: value.replace("{tmp}", str(tmp_path)) for key, value in options.items()}
    with pytest.raises(ToolConfigError, match=message) as caught:
        build_toolbox(["python"], **{"tool_store": str(tmp_path), **options, "python_sandbox": "unisolated"})
    assert "\n" not in str(caught.value)


def test_a_corrupt_index_is_one_line_naming_the_store(tmp_path):
    (tmp_path / "index.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(
        StoreError, match=r"index.sqlite is not a tool-store index .*move the folder away"
    ) as caught:
        open_store(str(tmp_path), create=False)
    assert "\n" not in str(caught.value)


def test_a_corrupt_blob_reads_as_a_miss_not_as_wrong_content(tmp_path):
    record = open_cache("record", "n1", str(tmp_path), None)
    run(record.wrap("search", recording_tool([]), {})(query="q"))
    (blob,) = (tmp_path / "blobs").rglob("*.z")
    blob.write_bytes(b"garbage")
    replay = open_cache("replay", "n1", str(tmp_path), None)
    with pytest.raises(ToolError, match="tool cache miss"):
        run(replay.wrap("search", None, {})(query="q"))


def test_eviction_drops_the_least_recently_used_open_entries_and_never_a_frozen_snapshot(tmp_path):
    kept = open_cache("record", "kept", str(tmp_path), None)
    run(kept.wrap("search", recording_tool([], "K" * 1000), {})(query="kept"))
    kept.store.freeze("kept")
    store = open_store(str(tmp_path), create=False, max_bytes=3000)
    for index in range(6):
        store.record("open", f"key{index}", "search", {"i": index}, f"{index}".encode() * 700, "ok")
        if index >= 1:
            assert store.entry("open", "key1") is not None  # used again: the most recent use
    assert store.total_bytes() <= 3000
    assert store.get_blob(store.entries("kept")[0].blob) is not None
    left = {entry.key for entry in store.entries("open")}
    assert "key1" in left and "key0" not in left and "key5" in left
    blob_files = {path.stem for path in (tmp_path / "blobs").rglob("*.z")}
    assert len(blob_files) == len(left) + 1  # evicted blobs are deleted, the frozen one stays


def test_export_then_import_reproduces_the_snapshot_and_a_damaged_file_is_refused(tmp_path):
    record = open_cache("record", "paper", str(tmp_path / "a"), None)
    run(record.wrap("search", recording_tool([], ToolText("t", ["d"], ["s"])), {})(query="q"))
    exported = export_snapshot(record.store, "paper", tmp_path / "paper.tar")
    other = open_store(str(tmp_path / "b"), create=True)
    imported = import_snapshot(other, read_archive(tmp_path / "paper.tar"))
    assert imported.digest == exported.digest and imported.frozen
    replay = open_cache("replay", "paper", str(tmp_path / "b"), None)
    assert run(replay.wrap("search", None, {})(query="q")).sources == ("s",)

    with tarfile.open(tmp_path / "paper.tar") as tar:
        members = [(info, tar.extractfile(info).read()) for info in tar.getmembers()]
    with tarfile.open(tmp_path / "damaged.tar", "w") as tar:
        for info, data in members:
            if info.name.startswith("blobs/"):
                data = zlib.compress(b'{"changed": true}')
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(StoreError, match="does not match its content hash"):
        read_archive(tmp_path / "damaged.tar")


def test_an_fsspec_url_store_records_replays_and_freezes():
    url = "memory://mara-tool-store-test"
    record = open_cache("record", "n1", url, None)
    run(record.wrap("search", recording_tool([], "remote answer"), {})(query="q"))
    frozen = record.store.freeze("n1")
    assert frozen.frozen and frozen.entries == 1
    replay = open_cache("replay", "n1", url, None)
    assert run(replay.wrap("search", None, {})(query="q")) == "remote answer"
    with pytest.raises(StoreError, match="is frozen"):
        open_cache("record", "n1", url, None)


def _open_each_when_all_are_ready(folders: list[str], ready) -> None:
    for folder in folders:
        ready.wait(timeout=30)
        open_store(folder, create=True).ensure_snapshot("night")


def test_processes_opening_a_new_store_at_the_same_moment_all_succeed(tmp_path):
    context = multiprocessing.get_context("spawn")
    ready = context.Barrier(6)
    folders = [str(tmp_path / f"store{index}") for index in range(25)]
    openers = [context.Process(target=_open_each_when_all_are_ready, args=(folders, ready)) for _ in range(6)]
    for process in openers:
        process.start()
    for process in openers:
        process.join(120)
    assert [process.exitcode for process in openers] == [0] * 6
    assert all(open_store(folder, create=False).snapshots()[0].name == "night" for folder in folders)


def _record_many(store: str, writer: int, count: int, start) -> None:
    start.wait()
    cache = open_cache("record", "shared", store, None)

    async def answer(**arguments):
        return f"answer {arguments['query']}"

    tool = cache.wrap("search", answer, {})

    async def all_calls():
        for index in range(count):
            await tool(query=f"writer{writer}-{index}")
            await tool(query=f"common-{index}")  # both writers record these too

    asyncio.run(all_calls())


def test_two_processes_recording_into_one_store_at_once_lose_nothing(tmp_path):
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(2)
    count = 150
    writers = [context.Process(target=_record_many, args=(str(tmp_path), w, count, start)) for w in (0, 1)]
    for process in writers:
        process.start()
    for process in writers:
        process.join(120)
        assert process.exitcode == 0
    store = open_store(str(tmp_path), create=False)
    assert len(store.entries("shared")) == 3 * count
    replay = open_cache("replay", "shared", str(tmp_path), None)
    tool = replay.wrap("search", None, {})
    queries = [f"writer{w}-{i}" for w in (0, 1) for i in range(count)] + [f"common-{i}" for i in range(count)]
    for query in queries:
        assert run(tool(query=query)) == f"answer {query}"
    (check,) = sqlite3.connect(tmp_path / "index.sqlite").execute("PRAGMA integrity_check").fetchone()
    assert check == "ok"


def test_mara_tools_lists_freezes_exports_and_imports_and_refuses_bad_input_in_one_line(tmp_path, capsys):
    record = open_cache("record", "n1", str(tmp_path / "a"), None)
    run(record.wrap("search", recording_tool([]), {})(query="q"))
    store = ["--store", str(tmp_path / "a")]
    assert mara(["tools", "list", *store]) == 0
    assert capsys.readouterr().out.startswith("n1  1 responses  open")
    assert mara(["tools", "export", "n1", str(tmp_path / "n1.tar"), *store]) == 0
    exported = capsys.readouterr().out.split()[-1]
    assert mara(["tools", "import", str(tmp_path / "n1.tar"), "--store", str(tmp_path / "b")]) == 0
    assert capsys.readouterr().out.split()[-1] == exported  # the same snapshot id

    (tmp_path / "junk.tar").write_bytes(b"not a tar")
    for argv in (
        ["tools", "freeze", "n9", *store],
        ["tools", "list", "--store", str(tmp_path / "absent")],
        ["tools", "import", str(tmp_path / "junk.tar"), "--store", str(tmp_path / "c")],
    ):
        assert mara(argv) == 2
        error = capsys.readouterr().err
        assert error.startswith("mara tools: ") and error.count("\n") == 1
    assert not (tmp_path / "c").exists()  # a refused import leaves no store behind


def test_a_snapshot_frozen_mid_record_sends_the_rest_to_a_continuation_with_one_warning(tmp_path, caplog):
    calls: list = []
    cache = open_cache("replay-or-record", "night", str(tmp_path), None)
    tool = cache.wrap("search", recording_tool(calls), {})
    run(tool(query="before"))
    frozen = open_store(str(tmp_path), create=False).freeze("night")  # another shell: mara tools freeze night
    with caplog.at_level("WARNING", logger="mara_bench.harness.toolcache.cached"):
        for query in ("after", "later", "before"):
            assert "live answer" in run(tool(query=query))
    continuation = f"night.after-{frozen.digest.removeprefix('sha256:')[:12]}"
    assert [record.message for record in caplog.records if "was frozen while" in record.message] == [
        f"tool cache: snapshot 'night' of {tmp_path} was frozen while this run recorded into it (id {frozen.digest});"
        f" the run records the rest into snapshot '{continuation}' and still replays the frozen one"
    ]
    store = open_store(str(tmp_path), create=False)
    assert store.verify("night").digest == frozen.digest and store.verify("night").entries == 1
    assert {entry.request["arguments"]["query"] for entry in store.entries(continuation)} == {
        "after",
        "later",
    }
    assert [call["query"] for call in calls] == [
        "before",
        "after",
        "later",
    ]  # "before" replayed from the frozen one
    assert (cache.counts.record, cache.counts.hit) == (3, 1)
