"""Registers the ``local/`` Inspect model provider: ``--model local/<dir | run dir | HF id | registered name>``.

Importing this module is cheap; torch and transformers load when a ``local/`` model is first created. See
``mara_bench.harness.providers.local_api`` for the ``-M`` options and ``mara_bench.harness.providers.resolve`` for name resolution.
"""

from inspect_ai.model import modelapi


@modelapi(name="local")
def local():
    from mara_bench.harness.providers.local_api import open_local_model

    return open_local_model
