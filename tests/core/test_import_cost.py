"""Idle cost ≈ 0: the Inspect entry point, which every ``inspect`` command imports, loads no library Inspect has not
loaded already and none of the harness's machinery, and a system loads only the tools it uses. Each check runs in a
fresh interpreter, where ``sys.modules`` starts clean."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OURS = ("mara_bench",)
MACHINERY = (
    "mara_bench.harness.systems",
    "mara_bench.harness.tools",
    "mara_bench.harness.toolcache",
    "mara_bench.harness.retrieval",
    "mara_bench.harness.providers.local_api",
)
"""Loaded when a task is created, a model opened or a tool built; never by the entry point."""
HEAVY = ("torch", "transformers", "sympy", "math_verify", "trafilatura", "sentence_transformers", "faiss")
WEB_STACK = (
    "trafilatura",
    "pypdf",
    "lxml",
    "mara_bench.harness.tools.browse",
    "mara_bench.harness.tools.web",
    "mara_bench.harness.retrieval",
)


def _loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    """The modules of ``watched`` that are in ``sys.modules`` after ``code`` runs in a fresh interpreter."""
    script = (
        f"import json, sys\n{code}\nprint(json.dumps([m for m in {list(watched)!r} if m in sys.modules]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _imported_by_inspect_startup() -> list[str]:
    """The modules Inspect's start-up imports for the installed entry points (``ensure_entry_points``, which
    every ``inspect`` command runs) on top of what its command line has imported by then."""
    script = (
        "import json, sys\n"
        "from inspect_ai._cli.main import main\n"
        "from inspect_ai._util.entrypoints import ensure_entry_points\n"
        "before = set(sys.modules)\n"
        "ensure_entry_points()\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_inspect_startup_loads_only_our_registrations():
    loaded = _imported_by_inspect_startup()
    assert (
        "mara_bench.harness._registry" in loaded
    )  # mara-bench's entry point is installed and was the one measured
    third_party = [m for m in loaded if m.split(".")[0] not in (*sys.stdlib_module_names, *OURS)]
    assert third_party == []
    assert [m for m in loaded if m.startswith(MACHINERY)] == []


@pytest.mark.parametrize("system", ["direct", "vc"])
def test_a_tool_less_system_imports_no_web_stack(system):
    code = (
        "from mara_bench.harness.systems import build_toolbox, get_system, system_solver\n"
        f"build_toolbox(get_system({system!r}), {{}})\n"
        f"system_solver(get_system({system!r}).setup({{}}))"
    )
    assert _loaded_after(code, WEB_STACK + HEAVY) == []


def test_the_python_tool_alone_imports_no_web_page_reader():
    code = "from mara_bench.harness.tools import build_toolbox\nbuild_toolbox(['python'])"
    assert _loaded_after(code, ("trafilatura", "pypdf", "lxml", "mara_bench.harness.retrieval")) == []


def test_the_systems_import_without_lxml_html_clean():
    """An older pip may skip lxml's ``html_clean`` extra; importing the systems must not need it (a blocked
    module raises ImportError when imported, and the subprocess would fail)."""
    code = "sys.modules['lxml_html_clean'] = None\nimport mara_bench.harness.systems"
    assert _loaded_after(code, ("lxml", "trafilatura")) == []


def test_the_retrieval_package_and_the_look_up_task_load_no_index_library_until_one_is_built():
    code = "import mara_bench.harness.retrieval\nimport mara_bench.trainer.tasks.lookup\nmara_bench.harness.retrieval.RetrievalError"
    assert _loaded_after(code, ("faiss", "bm25s", "sentence_transformers", "torch")) == []
