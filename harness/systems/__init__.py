"""Agent systems, by name: each is plain async code over ``Chat``/``Toolbox`` (see ``types``), usable by the
harness (as an Inspect solver, ``system_solver``) and by the trainer (calling ``run`` with a policy-backed Chat).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from inspect_ai.solver import Generate, Solver, TaskState, solver

from mara_bench.core.episodes import Chat, Episode, Toolbox
from mara_bench.core.inspect_compat import active_generate_config
from mara_bench.core.named import lookup
from mara_bench.core.typed_config import ConfigError, did_you_mean
from mara_bench.harness.accounting import record_account
from mara_bench.harness.datasets.specs import INSTRUCTION_KEY, QUESTION_TEMPLATE_KEY
from mara_bench.harness.prompts import fill
from mara_bench.harness.systems import direct, mars, mask, matpo, react, vc
from mara_bench.harness.systems.inspect_adapter import InspectChat, record_generation, store_episode
from mara_bench.harness.systems.options import check_options, option_names
from mara_bench.harness.toolbase.settings import ToolSettings
from mara_bench.harness.toolcache.counts import counting

logger = logging.getLogger(__name__)

SystemRun = Callable[..., Awaitable[Episode]]
"""``async def run(question, chat, toolbox, **options) -> Episode``."""


@dataclass(frozen=True)
class SystemSpec:
    """A registered system: its run function, the agent roles it calls and the tools it needs."""

    name: str
    run: SystemRun
    roles: tuple[str, ...]
    tools: tuple[str, ...] = ()
    tool_settings: tuple[str, ...] = field(default=())
    """Option names that configure tools (passed to ``build_toolbox``) rather than the system."""
    answers: tuple[str, ...] = ()
    """Named answers the system stores besides the final one (each gets its own score column)."""
    helper_tools: tuple[str, ...] = ()
    """Tools the system calls itself, never offered to its agents (MARS reads result pages with ``browse``)."""
    sampling_options: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    """Options that set one role's generation setting: option -> (role, ``GenerateConfig`` field)."""

    def options(self) -> list[str]:
        """Option names the system's ``run`` accepts, plus its tool settings (and ``tools`` when it has any)."""
        choice = [TOOLS_OPTION] if self.tools else []
        return sorted([*option_names(self.run), *self.tool_settings, *choice])

    def choose_tools(self, value: str | list[str] | tuple[str, ...] | None) -> tuple[str, ...]:
        """``-T tools=search,python``: a subset of the system's tools (all of them when ``None``)."""
        if value is None:
            return self.tools
        names = [part.strip() for part in value.split(",")] if isinstance(value, str) else list(value)
        names = [str(name) for name in names if name]
        unknown = [name for name in names if name not in self.tools]
        if unknown or not names:
            problem = f"unknown tool(s) {', '.join(unknown)}" if unknown else "no tool"
            raise ConfigError(
                f"system {self.name!r}: -T tools={','.join(names)} names {problem}; "
                f"valid tools: {', '.join(self.tools)} (comma-separated, any subset)"
            )
        return tuple(dict.fromkeys(names))

    def check_names(self, names: Iterable[str], task_parameters: Sequence[str] = ()) -> None:
        """The one check of option names: a name that is neither an option of the system nor one of
        ``task_parameters`` (a task's ``-T`` parameters, which go to the task) raises ``ConfigError`` listing
        both and suggesting the closest."""
        valid = self.options()
        unknown = sorted(set(names) - set(valid) - set(task_parameters))
        if not unknown:
            return
        given = "task parameters: " + ", ".join(task_parameters) + "; " if task_parameters else ""
        raise ConfigError(
            f"unknown {'-T ' if task_parameters else ''}option(s) {', '.join(unknown)}; "
            f"{did_you_mean(unknown[0], [*task_parameters, *valid])}{given}"
            f"system {self.name!r} options: {', '.join(valid) or 'none'} (mara tasks lists them)"
        )

    def setup(self, options: Mapping[str, Any], task_parameters: Sequence[str] = ()) -> SystemSetup:
        """The system set up with ``options``, checked once: their names (``check_names``, ``task_parameters`` as
        there), then the system's own values against ``run``'s types; split into the system's options and its
        tools' settings. A problem raises ``ConfigError``."""
        self.check_names(options, task_parameters)
        tools = {k: v for k, v in options.items() if k in self.tool_settings or k == TOOLS_OPTION}
        own = {k: v for k, v in options.items() if k not in tools}
        return SystemSetup(self, check_options(self.name, self.run, own), tools)


@dataclass(frozen=True)
class SystemSetup:
    """A system and its options, checked (``SystemSpec.setup``): what the Inspect solver runs, handed down from the
    task once resolved. Inspect logs a solver's argument by its ``name``: the log names the system."""

    spec: SystemSpec
    options: dict[str, Any]
    """The system's own options (its ``run``'s keyword arguments), checked against their types."""
    tool_settings: dict[str, Any]
    """The options that configure its tools (``build_toolbox``), ``tools`` included."""

    @property
    def name(self) -> str:
        return self.spec.name


TOOLS_OPTION = "tools"
"""The option choosing which of a system's tools its agents get (MARS table 4)."""

SYSTEMS: dict[str, SystemSpec] = {}


def register(spec: SystemSpec) -> SystemSpec:
    SYSTEMS[spec.name] = spec
    return spec


TOOL_SETTINGS = tuple(f.name for f in dataclasses.fields(ToolSettings) if f.name != "environ")
"""Options that configure the tools (passed to ``mara_bench.harness.tools.build_toolbox``) for systems that use tools."""

register(SystemSpec(name="direct", run=direct.run, roles=(direct.ROLE,)))
register(
    SystemSpec(
        name="react", run=react.run, roles=(react.ROLE,), tools=react.TOOLS, tool_settings=TOOL_SETTINGS
    )
)
register(
    SystemSpec(
        name="mars",
        run=mars.run,
        roles=mars.ROLES,
        tools=mars.TOOLS,
        tool_settings=TOOL_SETTINGS,
        helper_tools=mars.HELPER_TOOLS,
        sampling_options=mars.SAMPLING_OPTIONS,
    )
)
register(SystemSpec(name="vc", run=vc.run, roles=vc.ROLES, answers=("solver",)))
register(
    SystemSpec(name="matpo", run=matpo.run, roles=matpo.ROLES, tools=matpo.TOOLS, tool_settings=TOOL_SETTINGS)
)
register(
    SystemSpec(name="mask", run=mask.run, roles=mask.ROLES, tools=mask.TOOLS, tool_settings=TOOL_SETTINGS)
)


def get_system(name: str) -> SystemSpec:
    return lookup(SYSTEMS, name, "system")


def build_toolbox(spec: SystemSpec, settings: dict[str, Any]) -> Toolbox:
    """The tools ``spec`` needs (``settings["tools"]`` picks a subset), configured by the other ``settings``;
    an empty Toolbox for tool-less systems."""
    settings = dict(settings)
    chosen = spec.choose_tools(settings.pop(TOOLS_OPTION, None))
    if not spec.tools:
        return Toolbox()
    from mara_bench.harness.tools.toolbox import build_toolbox as build_tools

    return build_tools([*chosen, *spec.helper_tools], **settings)


def tool_cache_summary(spec: SystemSpec, tool_settings: dict[str, Any]) -> dict[str, Any] | None:
    """What a log records about the tool cache of ``spec`` run with ``tool_settings`` (``None`` when off or the
    system has no tools): mode, store, snapshot and its id. Call after the toolbox was built (it checked them)."""
    settings = ToolSettings.from_options({k: v for k, v in tool_settings.items() if k != TOOLS_OPTION})
    if not spec.tools or settings.tool_cache == "off":
        return None
    from mara_bench.harness.toolcache import ToolCache, open_store

    store = open_store(settings.tool_store_location(), create=False)
    return ToolCache(store, settings.tool_snapshot, settings.tool_cache).summary()


def index_record(spec: SystemSpec, settings: dict[str, Any]) -> dict[str, Any] | None:
    """The local corpus index ``spec``'s tools search under ``settings`` (``corpus_index_record``), or None."""
    settings = dict(settings)
    chosen = spec.choose_tools(settings.pop(TOOLS_OPTION, None))
    if not spec.tools:
        return None
    from mara_bench.harness.tools.toolbox import corpus_index_record

    return corpus_index_record([*chosen, *spec.helper_tools], **settings)


async def run_system(name: str, question: str, chat: Chat, toolbox: Toolbox, **options: Any) -> Episode:
    """Run system ``name`` on one question (the trainer's entry point)."""
    setup = get_system(name).setup(options)
    return await setup.spec.run(question, chat, toolbox, **setup.options)


def sample_options(
    spec: SystemSpec, options: dict[str, Any], metadata: dict[str, Any] | None
) -> dict[str, Any]:
    """The options one sample's run gets: ``options``, plus the sample's answer-format instruction (metadata
    ``instruction``, set by the benchmark loader) as ``system_prompt`` when the system takes one and none was
    given. Evaluation (``system_solver``) and training (``mara_bench.trainer.tasks.benchmark``) both build a run this way."""
    if _gets_instruction(spec, options, metadata):
        return {**options, "system_prompt": (metadata or {})[INSTRUCTION_KEY]}
    return dict(options)


def _gets_instruction(spec: SystemSpec, options: dict[str, Any], metadata: dict[str, Any] | None) -> bool:
    """Whether a run gets the benchmark's instruction: it has one, the system takes a ``system_prompt`` and the
    user gave none."""
    has_instruction = bool((metadata or {}).get(INSTRUCTION_KEY))
    return has_instruction and "system_prompt" in spec.options() and "system_prompt" not in options


def sample_question(
    spec: SystemSpec, options: dict[str, Any], metadata: dict[str, Any] | None, question: str
) -> str:
    """The user message of one sample's run: ``question`` in the benchmark's user template (metadata
    ``question_template``, FlashRAG's ``Question: {question}`` for the QA sets) when the run gets the benchmark's
    instruction (``sample_options``), else ``question`` as it is."""
    template = (metadata or {}).get(QUESTION_TEMPLATE_KEY)
    if template and _gets_instruction(spec, options, metadata):
        return fill(template, {"question": question})
    return question


def yielding_to_typed(
    spec: SystemSpec,
    options: dict[str, Any],
    from_protocol: tuple[str, ...],
    protocol_generate: dict[str, Any],
) -> tuple[dict[str, Any], dict[str, str]]:
    """``options`` without the protocol-set sampling options whose generation setting the user typed (e.g.
    ``--max-tokens``: the run's generate config differs from the protocol's), and a note per option dropped.

    A value the user typed always wins over a protocol's; one typed as a system option (``-T s2_max_tokens=``)
    is the user's too and stays."""
    active = active_generate_config()
    kept, notes = dict(options), {}
    for option, (role, setting) in spec.sampling_options.items():
        typed = getattr(active, setting, None)
        if (
            option in from_protocol
            and option in kept
            and typed is not None
            and typed != protocol_generate.get(setting)
        ):
            notes[option] = (
                f"{role} {setting}: {typed} as typed, not the protocol's {option}={kept.pop(option)}"
            )
    return kept, notes


@solver
def system_solver(
    system: SystemSetup,
    from_protocol: tuple[str, ...] = (),
    protocol_generate: dict[str, Any] | None = None,
) -> Solver:
    """An Inspect solver running ``system`` (set up, its options checked: ``SystemSpec.setup``) on the sample's input.

    A system taking a ``system_prompt`` gets the sample's answer-format instruction (sample metadata
    ``instruction``, set by the benchmark loader) unless the user gave one, and then the question in the
    benchmark's user template when it has one (FlashRAG's ``Question: {question}`` for the QA sets). The
    sample gets the Episode (``inspect_adapter.store_episode``), the generation settings each role's calls were
    sent with, and its ``accounting`` score (what it cost, and with ``-T tool_cache`` on, the cache's
    ``tool_cache_hit/miss/record/live`` counts). ``from_protocol`` names the options a protocol set (not the user);
    its sampling options yield to a setting the user typed (``yielding_to_typed``), said once on the console.
    """
    spec = system.spec
    toolbox = build_toolbox(spec, system.tool_settings)
    counted_tools = [*spec.tools, *spec.helper_tools]
    said: set[str] = set()

    async def solve(state: TaskState, generate: Generate) -> TaskState:  # noqa: ARG001
        chat = InspectChat(spans=len(spec.roles) > 1)
        run_options, notes = yielding_to_typed(spec, system.options, from_protocol, protocol_generate or {})
        for option, note in notes.items():
            if option not in said:
                said.add(option)
                logger.warning(f"{spec.name}: {note} (a protocol setting never overrides what you typed)")
        options = sample_options(spec, run_options, state.metadata)
        question = sample_question(spec, run_options, state.metadata, state.input_text)
        with counting() as cache_counts:
            episode = await spec.run(question, chat, toolbox, **options)
        store_episode(state, episode)
        record_generation(state, chat)
        extra = cache_counts.as_metrics() if toolbox.cache is not None else {}
        record_account(state, episode, spec.roles, counted_tools, extra)
        return state

    return solve
