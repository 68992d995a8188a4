"""The prompt sets: one file scheme and registry for every system, one ``-T prompts=`` option, clear refusals."""

import inspect
import typing

import pytest

from mara_bench.core.typed_config import ConfigError
from mara_bench.harness.prompts import PROMPT_DIR
from mara_bench.harness.prompts.sets import PROMPTS_OPTION, prompt_set, prompt_sets
from mara_bench.harness.systems import get_system, run_system

DEFAULTS = {"mars": "paper", "matpo": "paper", "mask": "code", "vc": "paper"}
"""The sets every evaluation uses unless told otherwise: the paper's (M-ASK: its released code's)."""


def test_the_systems_with_prompt_folders_are_the_four_papers():
    folders = {path.name for path in PROMPT_DIR.iterdir() if path.is_dir() and prompt_sets(path.name)}
    assert folders == set(DEFAULTS)


@pytest.mark.parametrize("system", sorted(DEFAULTS))
def test_each_systems_prompts_option_offers_exactly_its_sets_with_the_papers_as_default(system):
    run = get_system(system).run
    option = inspect.signature(run).parameters[PROMPTS_OPTION]
    choices = typing.get_args(typing.get_type_hints(run)[PROMPTS_OPTION])
    assert option.default == DEFAULTS[system] == choices[0]
    assert sorted(choices) == sorted(prompt_sets(system)) and "compact" in choices


@pytest.mark.parametrize("system", sorted(DEFAULTS))
def test_every_set_names_roles_the_system_has_and_compact_alone_is_ours(system):
    for name, chosen in prompt_sets(system).items():
        assert chosen.roles and set(chosen.roles) <= set(get_system(system).roles), (system, name)
        assert chosen.ours() == (name == "compact"), (system, name)


def test_a_set_gives_each_role_its_system_prompt_or_none_and_its_user_template():
    paper, compact = prompt_set("vc", "paper"), prompt_set("vc", "compact")
    assert paper.system_prompt("verifier").startswith("\nYou are an expert mathematician")
    assert compact.system_prompt("verifier") is None
    assert [m["role"] for m in paper.messages("verifier", {"problem": "P", "solution": "S"})] == [
        "system",
        "user",
    ]
    [user] = compact.messages("verifier", {"problem": "P", "solution": "S"})
    assert user["content"].endswith("Solution: S")
    # vc/corrector.user.txt lies beside the sets: both share it
    assert compact.user_template("corrector") == paper.user_template("corrector")
    with pytest.raises(
        ValueError, match=r"prompt set vc/paper has no role 'solver'; roles: corrector, verifier"
    ):
        paper.user_template("solver")


def test_an_unknown_set_is_one_line_listing_the_systems_sets():
    with pytest.raises(ConfigError) as refused:
        prompt_set("mask", "apendix")
    assert str(refused.value) == (
        "system 'mask': no prompt set 'apendix'; did you mean 'appendix'? "
        "choose -T prompts= one of appendix, code, compact"
    )


@pytest.mark.parametrize("system", sorted(DEFAULTS))
async def test_a_bad_prompts_option_is_refused_before_the_run_with_the_choices(system):
    choices = ", ".join(typing.get_args(typing.get_type_hints(get_system(system).run)[PROMPTS_OPTION]))
    with pytest.raises(
        ConfigError, match=rf"prompts: 'tiny' is not a valid choice; choose one of {choices}$"
    ):
        await run_system(system, "Q?", None, None, prompts="tiny")


def test_mask_has_a_layout_for_each_of_its_sets():
    from mara_bench.harness.systems.mask import LAYOUTS

    assert set(LAYOUTS) == set(prompt_sets("mask"))
