"""Every private ``inspect_ai._…`` name mara-bench uses, imported here and nowhere else.

pyproject pins inspect-ai below its next minor version (``tests/core/test_inspect_compat.py`` checks the
installed one is inside the bound); when Inspect moves one of these names, this is the one file to change. The
names that pull in Inspect's provider stack (``VLLMAPI``, ``HFHandler``, about 1.5 s of imports) load on first use,
so importing this module stays cheap. It lives in ``core``, the ground floor, so that every layer may use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from inspect_ai._util.constants import DEFAULT_MAX_TOKENS
from inspect_ai._util.error import PrerequisiteError
from inspect_ai._util.registry import RegistryInfo, registry_add, registry_info, set_registry_info
from inspect_ai.model._generate_config import active_generate_config
from inspect_ai.model._model import active_model, init_model_roles
from inspect_ai.scorer._scorer import scorer_metrics
from inspect_ai.util._json import JSON_SCHEMA_EXTENDED_FIELDS, json_schema_dump

if TYPE_CHECKING:
    from inspect_ai.model._providers.util import HFHandler
    from inspect_ai.model._providers.vllm import VLLMAPI
    from inspect_ai.model._reasoning import emulate_reasoning_history

T = TypeVar("T")


def register_bare_name(registered: T) -> T:
    """``registered`` (an Inspect-registered object) registered under its bare name as well: Inspect names an
    installed package's objects ``<package>/<name>``, but finds the metrics of a score that a solver wrote by the
    score's bare name (``accounting``)."""
    info = registry_info(registered)
    registry_add(
        registered, RegistryInfo(type=info.type, name=info.name.split("/")[-1], metadata=info.metadata)
    )
    return registered


_PROVIDER_NAMES = {
    "VLLMAPI": "inspect_ai.model._providers.vllm",
    "HFHandler": "inspect_ai.model._providers.util",
    "emulate_reasoning_history": "inspect_ai.model._reasoning",
}


def __getattr__(name: str) -> Any:
    """``VLLMAPI``, ``HFHandler`` and ``emulate_reasoning_history``, imported when first asked for."""
    if name not in _PROVIDER_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_PROVIDER_NAMES[name]), name)


__all__ = [
    "DEFAULT_MAX_TOKENS",
    "JSON_SCHEMA_EXTENDED_FIELDS",
    "HFHandler",
    "PrerequisiteError",
    "RegistryInfo",
    "VLLMAPI",
    "active_generate_config",
    "active_model",
    "emulate_reasoning_history",
    "init_model_roles",
    "json_schema_dump",
    "register_bare_name",
    "registry_info",
    "scorer_metrics",
    "set_registry_info",
]
