"""Every registry answers an unknown name the same way: ``mara_bench.core.named``'s message, valid names and closest one."""

from __future__ import annotations

import pytest

from mara_bench.core.named import lookup, unknown_name
from mara_bench.harness.datasets import get_benchmark
from mara_bench.harness.protocols import get_protocol
from mara_bench.harness.systems import get_system
from mara_bench.judges.registry import get_judge
from mara_bench.trainer.algorithms.estimators import advantage_estimator
from mara_bench.trainer.algorithms.losses import get_policy_loss
from mara_bench.trainer.demos import demo_policy
from mara_bench.trainer.methods import get_method


def test_lookup_returns_the_entry_and_names_the_closest_valid_one():
    assert lookup({"alpha": 1, "beta": 2}, "beta", "letter") == 2
    with pytest.raises(ValueError) as error:
        lookup({"alpha": 1, "beta": 2}, "alpah", "letter")
    assert str(error.value) == "unknown letter 'alpah'; valid: alpha, beta; did you mean 'alpha'?"
    assert unknown_name("letter", "zzz", ["beta", "alpha"]) == "unknown letter 'zzz'; valid: alpha, beta"


@pytest.mark.parametrize(
    ("find", "kind", "typo", "closest"),
    [
        (get_system, "system", "mask2", "mask"),
        (get_judge, "judge", "hle2", "hle"),
        (get_protocol, "protocol", "matp", "matpo"),
        (get_benchmark, "benchmark", "bamboogle2", "bamboogle"),
        (get_method, "algorithm.method", "grop", "grpo"),
        (advantage_estimator, "advantage estimator", "grpo2", "grpo"),
        (get_policy_loss, "policy loss", "ppo2", "ppo"),
        (demo_policy, "demonstration policy", "mars2", "mars"),
    ],
)
def test_every_registry_words_an_unknown_name_alike(find, kind, typo, closest):
    with pytest.raises(
        ValueError, match=rf"^unknown {kind} '{typo}'; valid: .*; did you mean '{closest}'\?$"
    ):
        find(typo)


def test_the_mara_command_words_an_unknown_sub_command_alike(capsys):
    from mara_bench.harness.cli import main

    assert main(["trian"]) == 2
    assert capsys.readouterr().err.startswith("mara: unknown command 'trian'; valid: demo, index, models, ")


def test_a_named_entry_is_imported_on_first_load_or_is_the_entry_itself():
    import json

    from mara_bench.core.named import Named

    assert Named("json:dumps").load() is json.dumps
    assert Named(len).load() is len


def test_lazy_attributes_import_each_name_from_its_home_on_first_use():
    import json

    from mara_bench.core.named import lazy_attributes

    attribute = lazy_attributes("pkg", {"dumps": "json"})
    assert attribute("dumps") is json.dumps
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'loads'"):
        attribute("loads")
