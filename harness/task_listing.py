"""``mara tasks [NAME]``: what can be evaluated and how, read from the code itself.

Without a name: every registered task (``BENCHMARKS``; the ``mara`` command imports every task file first,
``mara_bench.catalog``), one line each. With a name: the task's title and declaration (dataset, row formats,
prompt, judge, default protocol), its parameters (from ``mara_bench.harness.task_arguments.TaskArguments``) with
types and defaults, every system with its options (from each system's ``run`` signature and the tool settings, and
its prompt sets from ``mara_bench.harness.prompts.sets``), the protocols and the judges."""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator
from typing import Any

from mara_bench.harness.datasets.specs import BENCHMARKS
from mara_bench.harness.task_arguments import TASK_PARAMETERS
from mara_bench.harness.task_builder import declaration_lines, type_name

TASK_PACKAGE = "mara_bench"


def _default(value: Any) -> str:
    """``repr(value)``, a long tuple shown by its length (the tool blocklist)."""
    shown = repr(value)
    return f"({len(value)} items)" if isinstance(value, tuple) and len(shown) > 60 else shown


def _table(rows: list[tuple[str, str, str, str]], indent: str = "  ") -> Iterator[str]:
    """Aligned ``name  type = default  help`` lines."""
    width_name = max((len(row[0]) for row in rows), default=0)
    width_type = max((len(row[1]) for row in rows), default=0)
    for name, type_, default, help_ in rows:
        line = f"{indent}{name.ljust(width_name)}  {type_.ljust(width_type)} = {default}"
        yield f"{line}  {help_}".rstrip()


def _task_parameter_rows() -> list[tuple[str, str, str, str]]:
    return [(p.name, type_name(p.type), _default(p.default), p.metadata["help"]) for p in TASK_PARAMETERS]


def _option_rows(system: str, run: Callable[..., Any]) -> list[tuple[str, str, str, str]]:
    """One row per option of ``system``'s ``run``; the ``prompts`` option's help lists its prompt sets."""
    from mara_bench.harness.prompts.sets import PROMPTS_OPTION
    from mara_bench.harness.systems.options import option_names

    hints = typing.get_type_hints(run)
    parameters = inspect.signature(run).parameters

    def help_(name: str) -> str:
        return _prompt_sets_help(system) if name == PROMPTS_OPTION else ""

    return [
        (name, type_name(hints[name]), _default(parameters[name].default), help_(name))
        for name in option_names(run)
    ]


def _tool_setting_rows() -> list[tuple[str, str, str, str]]:
    from mara_bench.harness.toolbase.settings import ToolSettings

    hints = typing.get_type_hints(ToolSettings)
    rows = []
    for field in dataclasses.fields(ToolSettings):
        if field.name == "environ":
            continue
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()  # type: ignore[misc]
        rows.append((field.name, type_name(hints[field.name]), _default(default), ""))
    return rows


def _prompt_sets_help(system: str) -> str:
    """``system``'s prompt sets from the registry (``mara_bench.harness.prompts.sets``): where they lie, which are ours."""
    from mara_bench.harness.prompts.sets import prompt_sets

    ours = [name for name, chosen in prompt_sets(system).items() if chosen.ours()]
    return f"sets in harness/prompts/{system}/; ours, not the paper's: {', '.join(ours) or 'none'}"


def describe_task(name: str) -> list[str]:
    """The lines ``mara tasks NAME`` prints."""
    from mara_bench.harness.protocols import PROTOCOLS
    from mara_bench.harness.systems import SYSTEMS, TOOLS_OPTION
    from mara_bench.judges.registry import JUDGES

    if name not in BENCHMARKS:
        from mara_bench.core.typed_config import did_you_mean

        raise SystemExit(
            f"mara tasks: no task {name!r}; {did_you_mean(name, BENCHMARKS)}run `mara tasks` to list them"
        )
    spec = BENCHMARKS[name]
    lines = [
        f"{name}: {spec.title}.",
        *(f"  {line}" for line in declaration_lines(spec)),
        f"  run: inspect eval {TASK_PACKAGE}/{name} --model <model>",
        "",
    ]
    lines += ["task parameters (-T name=value):", *_table(_task_parameter_rows()), ""]
    lines.append("systems (-T system=NAME); any -T option that is not a task parameter goes to the system:")
    for system in SYSTEMS.values():
        tools = (
            f"; tools: {', '.join(system.tools)} (-T {TOOLS_OPTION}= picks a subset)" if system.tools else ""
        )
        lines.append(f"  {system.name}  roles: {', '.join(system.roles)}{tools}")
        lines += _table(_option_rows(system.name, system.run), indent="    ") or ["    (no options)"]
        if system.tool_settings:
            lines.append("    + the tool settings below")
    lines += ["", "tool settings (systems with tools):", *_table(_tool_setting_rows()), ""]
    lines.append("protocols (-T protocol=NAME):")
    width = max(len(key) for key in PROTOCOLS)
    lines += [f"  {key.ljust(width)}  {protocol.description}" for key, protocol in PROTOCOLS.items()]
    lines += ["", f"judges (-T judge=NAME): {', '.join(JUDGES)}"]
    return lines


def list_tasks() -> list[str]:
    """The lines ``mara tasks`` prints: each task and its one-line description."""
    width = max(len(name) for name in BENCHMARKS)
    lines = [f"{name.ljust(width)}  {BENCHMARKS[name].title}." for name in sorted(BENCHMARKS)]
    return [
        *lines,
        "",
        "mara tasks NAME: a task's parameters, the systems and their options, protocols, judges",
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="mara tasks", description=__doc__.splitlines()[0])
    parser.add_argument("name", nargs="?", help="a task, e.g. aime2025")
    args = parser.parse_args(argv)
    print("\n".join(describe_task(args.name) if args.name else list_tasks()))
    return 0
