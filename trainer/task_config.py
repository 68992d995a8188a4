"""The recipe's ``task:`` section: which task trains (a factory, or a harness benchmark with its judge) and the LLM
grader of an LLM-judge reward. Checked as the rest of the recipe is (``mara_bench.trainer.config``): every problem is one
``ConfigError`` line naming the key, raised when the recipe is loaded.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictFloat, StrictInt, StrictStr, field_validator, model_validator

from mara_bench.core.typed_config import ConfigProblem, config_dataclass


@config_dataclass
class GraderConfig:
    """The LLM grader of an LLM-judge reward (``mara_bench.trainer.algorithms.rewards``)."""

    model: StrictStr
    """An Inspect model string (``openai/gpt-4o-mini``, ``mockllm/model``, ``vllm/...``), or
    ``openai-api/<name>/<model>`` for an OpenAI-compatible server at ``base_url``."""
    base_url: StrictStr | None = None
    """The OpenAI-compatible server's base URL (``http://127.0.0.1:8000/v1``); null = the provider's default."""
    api_key: StrictStr | None = None
    """The key for ``base_url`` (a local server takes any); null = the provider's own environment variable."""
    timeout: StrictFloat = Field(default=120.0, gt=0)
    """Seconds one grader call may take before it is retried."""
    retries: StrictInt = Field(default=3, ge=1)
    """Grader calls tried per judgement on timeouts and failed calls (tenacity, exponential back-off)."""
    attempts: StrictInt = Field(default=3, ge=1)
    """Replies asked for until the judge's strict parser reads a verdict (unparsable replies are re-asked)."""


@config_dataclass
class TaskConfig:
    factory: StrictStr = "mara_bench.trainer.tasks.toy:addition_task"
    """``module:function`` returning the task (its ``items`` and ``reward(item, episode)``)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Keyword arguments for the factory."""
    system: StrictStr = "direct"
    """The harness system that runs each rollout (``mara_bench.harness.systems``), the same code as evaluation."""
    system_options: dict[str, Any] = Field(default_factory=dict)
    """Options passed to the system's ``run``."""
    benchmark: StrictStr | list[StrictStr] | None = None
    """Train on a harness benchmark (``mara_bench.harness.datasets``: ``musique``, ``nq``, ``hotpotqa``, ``aime2025``...) or a
    list of them mixed (M-ASK trains on ``[nq, hotpotqa]``): items through the harness loader, prompts as the
    evaluation task builds them, the judge's own code as the reward (``mara_bench.trainer.tasks.benchmark``). Null = the
    ``factory`` task."""
    data: StrictStr | None = None
    """The benchmark's local file or folder (a data folder holding every listed benchmark for a list; relative to
    the working directory); null = ``MARA_DATA_DIR``, else Hugging Face at the pinned revision."""
    split: StrictStr | None = "train"
    """``train``: the source's training split (the papers' training sets); null: the evaluation split."""
    limit: Annotated[StrictInt, Field(ge=1)] | dict[StrictStr, Annotated[StrictInt, Field(ge=1)]] | None = (
        None
    )
    """Train on the first ``limit`` items of each benchmark only; a mapping gives each listed benchmark its own
    (MARS: ``{triviaqa: 400, hotpotqa: 500}``), a benchmark it leaves out keeps all its items."""
    judge: StrictStr | None = None
    """The reward's judge: ``math``, ``lexical`` (rule judges) or ``hle``, ``simpleqa`` (LLM judges, with
    ``grader``); null = the benchmark's default judge."""
    judge_options: dict[str, Any] = Field(default_factory=dict)
    """``lexical``: ``variant`` (``flashrag`` or M-ASK's ``mask``) and ``metric`` (``em``, ``acc`` or ``f1``)."""
    grader: GraderConfig | None = None
    """The grader of an LLM judge (required for ``hle`` and ``simpleqa``)."""

    @model_validator(mode="after")
    def _benchmark_or_factory(self) -> TaskConfig:
        if self.benchmark is None:
            for name in ("data", "limit", "judge", "grader"):
                if getattr(self, name) is not None:
                    raise ConfigProblem(
                        name, "applies to a benchmark task only", "set task.benchmark or remove it"
                    )
            return self
        from mara_bench.catalog import BENCHMARKS

        names = [self.benchmark] if isinstance(self.benchmark, str) else self.benchmark
        for name in names:
            if name not in BENCHMARKS:
                raise ConfigProblem(
                    "benchmark", f"unknown benchmark {name!r}", f"use one of {', '.join(sorted(BENCHMARKS))}"
                )
        if not names or len(set(names)) < len(names):
            raise ConfigProblem(
                "benchmark", f"{names} is empty or repeats a name", "list each benchmark once"
            )
        if isinstance(self.limit, dict) and not set(self.limit) <= set(names):
            raise ConfigProblem(
                "limit",
                f"names {sorted(set(self.limit) - set(names))}, which task.benchmark does not list",
                f"use the listed benchmarks: {', '.join(names)}",
            )
        for name in names:
            try:
                BENCHMARKS[name].for_split(self.split)
            except ValueError as error:
                raise ConfigProblem("split", str(error), "set split: null for the evaluation split") from None
        if self.args or self.factory != "mara_bench.trainer.tasks.toy:addition_task":
            raise ConfigProblem(
                "factory", "a task has either a benchmark or a factory", "remove factory and args"
            )
        return self

    @model_validator(mode="after")
    def _system_and_its_options_exist(self) -> TaskConfig:
        from mara_bench.harness.systems import get_system

        try:
            spec = get_system(self.system)
        except ValueError as err:  # an unknown name
            raise ConfigProblem("system", str(err)) from None
        try:
            spec.setup(self.system_options)
        except ValueError as err:
            raise ConfigProblem("system_options", str(err)) from None
        return self

    @field_validator("factory")
    @classmethod
    def _module_colon_function(cls, factory: str) -> str:
        module, colon, function = factory.partition(":")
        if not (colon and module and function.isidentifier()):
            raise ConfigProblem(
                "", f"{factory!r} is not 'module:function'", "for example trainer.tasks.toy:addition_task"
            )
        return factory
