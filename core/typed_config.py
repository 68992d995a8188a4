"""One way to check configuration: pydantic dataclasses, and their errors as one line a user can act on.

Recipes, leaderboard suites, system options, tool settings and ``-M`` provider options are pydantic dataclasses
built with ``MODEL_CONFIG`` (unknown keys forbidden, assignments checked, field docstrings kept as
descriptions). ``validate(cls, data, source)`` builds one from plain data; a problem raises ``ConfigError``
worded ``<source>: <dotted.key>: <problem>; <fix>`` -- the closest valid name is suggested for an unknown key or
choice. ``load_yaml`` reads a YAML file and names the file and line of a syntax error.
"""

from __future__ import annotations

import difflib
import functools
import types
import typing
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ConfigDict, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass

T = TypeVar("T")

MODEL_CONFIG = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)
"""The pydantic settings every configuration dataclass uses."""


class ConfigError(ValueError):
    """Configuration that cannot be used; the message names the source, the key and the fix."""


class ConfigProblem(ValueError):
    """Raised by a validator about the value at ``key`` (relative to the value it checks; "" for that value)."""

    def __init__(self, key: str, problem: str, fix: str = ""):
        super().__init__(f"{problem}; {fix}" if fix else problem)
        self.key = key

    @classmethod
    def check(cls, model: type, data: Any) -> Any:
        """``model`` built from ``data``, its first problem raised as a ``ConfigProblem`` (for nested checks)."""
        try:
            return TypeAdapter(model).validate_python(data)
        except ValidationError as err:
            loc, text = _describe_one(err.errors()[0], model)
            raise cls(_dotted(loc), text) from None


def config_dataclass(
    cls: type[T] | None = None, *, frozen: bool = False, error: type[ConfigError] = ConfigError
) -> Any:
    """``cls`` as a checked pydantic dataclass: building or assigning it in code raises ``error`` too.

    Use as ``@config_dataclass`` or ``@config_dataclass(frozen=True, error=MyError)``.
    """
    if cls is None:
        return lambda later: config_dataclass(later, frozen=frozen, error=error)
    checked = dataclass(config=MODEL_CONFIG, frozen=frozen)(cls)
    build, assign = checked.__init__, checked.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            build(self, *args, **kwargs)
        except ValidationError as err:
            raise error(describe(err, checked, checked.__name__)) from None

    def __setattr__(self: Any, name: str, value: Any) -> None:
        try:
            assign(self, name, value)
        except ValidationError as err:
            raise error(describe(err, checked, checked.__name__)) from None

    checked.__init__, checked.__setattr__ = __init__, __setattr__
    return checked


def did_you_mean(name: str, options: Iterable[str]) -> str:
    """``"did you mean 'x'? "`` for the option closest to ``name``, or an empty string when none is close."""
    close = difflib.get_close_matches(str(name), list(options), n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def validate(cls: type[T], data: Any, source: str, error: type[ConfigError] = ConfigError) -> T:
    """``cls`` built from ``data``; any problem raises ``error`` naming ``source`` and the dotted key."""
    try:
        return _adapter(cls).validate_python(data)
    except ValidationError as err:
        raise error(describe(err, cls, source)) from None


@functools.cache
def _adapter(cls: type[T]) -> TypeAdapter[T]:
    """One adapter per type: building one costs far more than validating a value (a file of many rows)."""
    return TypeAdapter(cls)


def describe(err: ValidationError, root: type, source: str) -> str:
    """The first problem of ``err`` (raised validating ``root``) as ``<source>: <key>: <problem>; <fix>``."""
    problems = _root_causes(err.errors())
    loc, text = _describe_one(problems[0], root)
    line = f"{source}: {_dotted(loc)}: {text}"
    if len(problems) > 1:
        line += f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})"
    return line


def _root_causes(problems: list[Any]) -> list[Any]:
    """``problems`` without those about a container whose item is itself a problem (e.g. a list emptied by it)."""
    locs = [tuple(problem["loc"]) for problem in problems]
    return [
        problem
        for problem, loc in zip(problems, locs, strict=True)
        if not any(len(other) > len(loc) and other[: len(loc)] == loc for other in locs)
    ]


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, refusing a mapping that names a key twice (plain YAML keeps the last one silently)."""
    import yaml

    class DuplicateKeyError(yaml.YAMLError):
        def __init__(self, key: Any, first_line: int, mark: Any):
            super().__init__(f"key {key!r} given twice (first on line {first_line})")
            self.problem, self.problem_mark = str(self), mark
            self.fix = "keep one of them"

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            first_line: dict[Hashable, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # ``<<: *defaults``: its keys may be overridden
                    continue
                key = self.construct_object(key_node, deep=True)
                if not isinstance(key, Hashable):  # left to PyYAML, which refuses it
                    continue
                if key in first_line:
                    raise DuplicateKeyError(key, first_line[key], key_node.start_mark)
                first_line[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def load_yaml(path: str | Path, error: type[ConfigError] = ConfigError) -> Any:
    """The YAML document in ``path``; a missing file, a syntax error or a key given twice in one mapping raises
    ``error`` naming file and line."""
    import yaml

    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise error(f"{path}: no such file; check the path") from None
    except UnicodeDecodeError:
        raise error(f"{path}: not a text file; give a YAML file") from None
    try:
        return yaml.load(text, Loader=_unique_key_loader())  # noqa: S506  (a SafeLoader subclass)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        fix = getattr(err, "fix", None)
        if fix is not None:
            raise error(f"{where}: {problem}; {fix}") from None
        raise error(f"{where}: YAML syntax error: {problem}; fix the YAML syntax on that line") from None


def _describe_one(problem: dict[str, Any], root: type) -> tuple[list[str | int], str]:
    """The location of ``problem`` and its text ``<problem>; <fix>``."""
    loc: list[str | int] = list(problem["loc"])
    kind, value = problem["type"], problem.get("input")
    context = problem.get("ctx") or {}
    cause = context.get("error")
    if isinstance(cause, ConfigProblem):
        return ([*loc, cause.key] if cause.key else loc), str(cause)
    if isinstance(cause, ValueError):  # a validator's own words
        return loc, str(cause)
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        names = _field_names(_walk(root, loc[:-1]))
        return loc, (
            f"unknown key; {did_you_mean(str(loc[-1]), names)}"
            f"valid keys{f' under {_dotted(loc[:-1])}' if loc[:-1] else ''}: {', '.join(names)}"
        )
    if kind == "literal_error":
        choices = _choices(_walk(root, loc))
        return loc, (
            f"{value!r} is not a valid choice; {did_you_mean(str(value), choices)}"
            f"choose one of {', '.join(choices)}"
        )
    if kind in _BOUNDS:
        bound = f"{_BOUNDS[kind]} {_number(next(iter(context.values())))}"
        return loc, f"must be {bound}, got {value!r}; use a value {bound}"
    if loc and isinstance(loc[-1], int) and kind == "missing":  # a fixed-length list one item short
        loc, kind = loc[:-1], "too_short"
    if kind in ("too_short", "too_long"):
        return loc, _length(_walk(root, loc), context, _example(root, loc))
    if kind == "missing":
        return loc, "required; add it"
    if kind == "string_pattern_mismatch":
        return loc, f"must not be blank, got {value!r}; give a name"
    for prefix, wanted in _TYPES.items():
        if kind.startswith(prefix):
            return loc, f"must be {wanted}, got {value!r}; {_example(root, loc)}"
    return loc, f"{problem['msg']}; fix this value"


_BOUNDS = {
    "greater_than_equal": ">=",
    "greater_than": ">",
    "less_than_equal": "<=",
    "less_than": "<",
}
_TYPES = {
    "int": "an integer",
    "float": "a number",
    "string": "a string",
    "bool": "true or false",
    "dict": "a mapping",
    "dataclass": "a mapping of keys",
    "tuple": "a list",
    "list": "a list",
}


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _dotted(loc: list[str | int]) -> str:
    """``checkpoints[0].model`` for the location ``["checkpoints", 0, "model"]``."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
    return text or "(top level)"


def _length(annotation: Any, context: dict[str, Any], example: str) -> str:
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is tuple and args and args[-1] is not Ellipsis:
        return f"must be a list of {len(args)} values; {example}"
    if "min_length" in context:
        least = context["min_length"]
        return (
            f"needs at least {least} item{'s' if least != 1 else ''}; add {'one' if least == 1 else 'more'}"
        )
    return f"takes at most {context.get('max_length')} items; remove the rest"


def _unwrap(annotation: Any) -> Any:
    """The non-None member of an optional annotation (``Annotated`` metadata dropped)."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _fields(annotation: Any) -> dict[str, Any]:
    return getattr(annotation, "__pydantic_fields__", {}) if isinstance(annotation, type) else {}


def _field_names(annotation: Any) -> list[str]:
    """The keys a file may give for ``annotation`` (fields set only in code, ``init=False``, left out)."""
    return sorted(name for name, info in _fields(annotation).items() if info.init is not False)


def _walk(root: type, loc: list[str | int]) -> Any:
    """The annotation of the value at ``loc`` under ``root`` (None where ``loc`` leaves the known types)."""
    annotation: Any = root
    for part in loc:
        if isinstance(part, int):
            args = typing.get_args(annotation)
            if typing.get_origin(annotation) not in (tuple, list) or not args:
                return None
            annotation = args[0] if len(args) == 1 or args[-1] is Ellipsis else args[part]
        else:
            info = _fields(annotation).get(part)
            if info is None:
                return None
            annotation = info.annotation
        annotation = _unwrap(annotation)
    return annotation


def _field(root: type, loc: list[str | int]) -> Any:
    """The pydantic ``FieldInfo`` of the key at ``loc``, or None when ``loc`` does not end in a key."""
    if not loc or isinstance(loc[-1], int):
        return None
    return _fields(_walk(root, loc[:-1])).get(loc[-1])


def _choices(annotation: Any) -> list[str]:
    if typing.get_origin(annotation) is typing.Literal:
        return [str(choice) for choice in typing.get_args(annotation)]
    return []


def _example(root: type, loc: list[str | int]) -> str:
    """How to write the value at ``loc``: its keys for a section, else the default as an example."""
    section = _walk(root, loc)
    if _fields(section):
        return f"give a mapping of its keys ({', '.join(_field_names(section))})"
    info = _field(root, loc)
    if info is None or info.is_required():
        return "fix this value"
    default = info.get_default(call_default_factory=True)
    if default is None or default == ():
        return "fix this value"
    return f"for example {list(default) if isinstance(default, tuple) else default!r} (the default)"
