"""The python tool in the sample's Inspect sandbox (``-T python_sandbox=inspect``): Docker or any other sandbox
the task (or ``inspect eval --sandbox``) configures, reached through ``inspect_ai.util.sandbox()``.

Each call writes the code and ``sandbox_child`` (for the same rlimits) into a fresh directory inside the sandbox,
runs them with the sandbox's ``exec`` under the wall-time limit, and removes the directory. Isolation is the
sandbox's own; the audit hook is not installed.
"""

from __future__ import annotations

import math
import uuid

from mara_bench.core.episodes import ToolError
from mara_bench.harness.tools.python_sandbox import (
    CHILD,
    SandboxLimits,
    child_arguments,
    time_limit_error,
    tool_answer,
)

DEFAULT_EXECUTABLE = "python3"
"""The interpreter inside the sandbox, unless ``python_executable`` names another."""


async def run_python_in_inspect_sandbox(
    code: str, limits: SandboxLimits, executable: str = DEFAULT_EXECUTABLE
) -> str:
    """Run ``code`` under ``limits`` in the current sample's Inspect sandbox; text for the agent or ``ToolError``."""
    from inspect_ai.util import OutputLimitExceededError, sandbox  # only this mode needs Inspect's sandboxes

    if not isinstance(code, str) or not code.strip():
        raise ToolError("python: the 'code' argument must be non-empty Python source")
    try:
        environment = sandbox()
    except ProcessLookupError:
        raise ToolError(
            "python: python_sandbox=inspect needs a sandbox for the sample; run the eval with --sandbox docker "
            "(or give the task a sandbox), or choose -T python_sandbox=bwrap"
        ) from None
    workdir = f"/tmp/mara-python-{uuid.uuid4().hex}"
    await environment.write_file(f"{workdir}/main.py", code)
    await environment.write_file(f"{workdir}/sandbox_child.py", CHILD.read_text(encoding="utf-8"))
    arguments = child_arguments(workdir, f"{workdir}/main.py", limits, guard=False)
    try:
        result = await environment.exec(
            [executable, "-I", "-B", f"{workdir}/sandbox_child.py", *arguments],
            cwd=workdir,
            env={"HOME": workdir, "TMPDIR": workdir, "MPLBACKEND": "Agg", "PYTHONIOENCODING": "utf-8"},
            timeout=math.ceil(limits.timeout),
            timeout_retry=False,
        )
    except TimeoutError:
        raise time_limit_error(limits, "") from None
    except OutputLimitExceededError as err:
        raise ToolError(f"python: the code printed too much ({err}); print less") from None
    finally:
        await environment.exec(["rm", "-rf", workdir], timeout=30)
    return tool_answer(
        result.returncode, result.stdout.encode("utf-8"), result.stderr.encode("utf-8"), limits
    )
