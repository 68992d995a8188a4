"""Inspect AI entry point (``mara_bench``): registers the tasks (``mara_bench/<task>``), the ``local/`` model
provider, the judges' scorers, the ``accounting`` scorer and the maj@k reducer.

Inspect imports every installed entry point when any ``inspect`` command starts, whatever the task, so this import
must stay cheap: it loads no library Inspect has not loaded by then (numpy, torch, transformers, faiss ...) and none
of the harness's machinery (systems, tools, tool cache, retrieval); those load when a task is created, a model is
opened or a judge runs (``tests/core/test_import_cost.py`` checks the whole chain).
``mara_bench.harness.invocation`` comes first: it records the directory the command ran in before Inspect changes into a
task file's folder.
"""

from mara_bench.harness import invocation  # noqa: F401  (first: captures the directory the command ran in)

# isort: split
from mara_bench import catalog  # noqa: F401  (imports every task file: registers mara_bench/<task>)
from mara_bench.harness import (
    accounting_scorer,  # noqa: F401  (registers the metrics of the systems' `accounting` score)
    protocols,  # noqa: F401  (registers the maj@k epoch reducer, so `inspect score` finds it)
)
from mara_bench.harness.prerequisites import install_one_line_hook
from mara_bench.harness.providers import adder, local_provider  # noqa: F401  (the `local/` and `adder/` providers)
from mara_bench.judges import scorers  # noqa: F401  (registers the judges' @scorer functions)

install_one_line_hook()  # a configuration error ends a command as one line, whatever --display says
