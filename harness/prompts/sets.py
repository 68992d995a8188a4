"""Prompt sets: a multi-agent system's role prompts in the versions a run picks with ``-T prompts=<set>``.

One file scheme for every system, under ``harness/prompts/<system>/``:

* ``<set>/<role>.system.txt``: the role's system prompt (no file: the role sends no system message);
* ``<set>/<role>.user.txt``: the role's user-message template (no file: the role's user message is not a template
  of ours, e.g. MARS System 2 gets the question as it is);
* ``<set>/<piece>.txt``: a named piece the system fills into its prompts (M-ASK's answer examples, MATPO's
  summary requests);
* a file directly in ``<system>/`` is shared by all of the system's sets (a set's own file of that name wins).

A system's sets are its sub-folders; its ``run`` signature names the default. Each file's ``# Source:`` line says
whether it is verbatim (the paper's or its code's, with repository and commit) or ours (``compact``, for tiny
offline models).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

from mara_bench.core.typed_config import ConfigError, did_you_mean
from mara_bench.harness.prompts import HEADER_PREFIX, PROMPT_DIR, fill, load_prompt

PROMPTS_OPTION = "prompts"
"""The option of every system with prompt sets that picks one (``-T prompts=compact``)."""
OURS = f"{HEADER_PREFIX} ours"
"""How the source line of a prompt of ours (not the paper's) starts."""


@dataclass(frozen=True)
class RolePrompt:
    """One role's prompt files (names for ``load_prompt``)."""

    system: str | None
    """The system prompt (``None``: no system message)."""
    user: str | None
    """The user-message template (``None``: the role's user message is not a template)."""


@dataclass(frozen=True)
class PromptSet:
    """One version of a system's prompts: each role's files and the named pieces."""

    system: str
    name: str
    roles: Mapping[str, RolePrompt]
    pieces: Mapping[str, str]
    """Piece name -> prompt name."""

    def system_prompt(self, role: str) -> str | None:
        """``role``'s system prompt, ``None`` when the set gives it none."""
        name = self._role(role).system
        return None if name is None else load_prompt(name)

    def user_template(self, role: str) -> str:
        """``role``'s user-message template."""
        name = self._role(role).user
        if name is None:
            raise ValueError(f"prompt set {self.system}/{self.name}: role {role!r} has no user template")
        return load_prompt(name)

    def messages(self, role: str, values: dict[str, str]) -> list[dict[str, str]]:
        """``role``'s system message (when the set has one) and its user template filled with ``values``."""
        system = self.system_prompt(role)
        head = [] if system is None else [{"role": "system", "content": system}]
        return [*head, {"role": "user", "content": fill(self.user_template(role), values)}]

    def piece(self, name: str) -> str:
        """The text of the named piece (``<set>/<name>.txt``, or the system's shared one)."""
        if name not in self.pieces:
            raise ValueError(f"prompt set {self.system}/{self.name} has no piece {name!r}")
        return load_prompt(self.pieces[name])

    def ours(self) -> bool:
        """Whether every file in the set's own folder is ours (its source line says so), none the paper's."""
        own = f"{self.system}/{self.name}/"
        files = [name for role in self.roles.values() for name in (role.system, role.user) if name]
        return all(
            _source_line(name).startswith(OURS)
            for name in [*files, *self.pieces.values()]
            if name.startswith(own)
        )

    def _role(self, role: str) -> RolePrompt:
        if role not in self.roles:
            raise ValueError(
                f"prompt set {self.system}/{self.name} has no role {role!r}; roles: {', '.join(self.roles)}"
            )
        return self.roles[role]


@cache
def prompt_sets(system: str) -> dict[str, PromptSet]:
    """Set name -> set for ``system`` (empty when it has none), read from ``harness/prompts/<system>/``."""
    folder = PROMPT_DIR / system
    if not folder.is_dir():
        return {}
    shared = _stems(system, "")
    return {
        sub.name: _prompt_set(system, sub.name, {**shared, **_stems(system, sub.name)})
        for sub in sorted(folder.iterdir())
        if sub.is_dir() and not sub.name.startswith("_")
    }


def prompt_set(system: str, name: str) -> PromptSet:
    """``system``'s set ``name``; an unknown name raises one line listing the system's sets."""
    sets = prompt_sets(system)
    if name not in sets:
        raise ConfigError(
            f"system {system!r}: no prompt set {name!r}; {did_you_mean(name, sets)}"
            f"choose -T {PROMPTS_OPTION}= one of {', '.join(sets) or '(none)'}"
        )
    return sets[name]


def prompt_choice(system: str, default: str) -> Any:
    """The type of ``system``'s ``prompts`` option: a ``Literal`` of its set names, ``default`` first, so an
    unknown name is refused with the choices when the options are checked, before any sample runs."""
    names = list(prompt_sets(system))
    if default not in names:
        raise ValueError(f"{system}: default prompt set {default!r} is not one of {', '.join(names)}")
    return Literal[tuple([default, *(name for name in names if name != default)])]


def _stems(system: str, folder: str) -> dict[str, str]:
    """File stem -> prompt name of the ``.txt`` files in ``<system>/<folder>``."""
    relative = f"{system}/{folder}/" if folder else f"{system}/"
    return {path.stem: relative + path.stem for path in sorted((PROMPT_DIR / relative).glob("*.txt"))}


def _prompt_set(system: str, name: str, stems: dict[str, str]) -> PromptSet:
    roles: dict[str, dict[str, str]] = {}
    pieces = {}
    for stem, prompt in stems.items():
        role, dot, kind = stem.partition(".")
        if not dot:
            pieces[stem] = prompt
        elif kind in ("system", "user"):
            roles.setdefault(role, {})[kind] = prompt
        else:
            raise ValueError(
                f"{PROMPT_DIR}/{prompt}.txt: name it <role>.system.txt, <role>.user.txt or <piece>.txt"
            )
    return PromptSet(
        system,
        name,
        {role: RolePrompt(files.get("system"), files.get("user")) for role, files in roles.items()},
        pieces,
    )


def _source_line(name: str) -> str:
    with (PROMPT_DIR / f"{name}.txt").open(encoding="utf-8") as file:
        return file.readline()
