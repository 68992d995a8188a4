"""Inspect AI entry point: importing this registers mara-bench's model provider, scorers and reducers with Inspect."""

from harness import protocols  # noqa: F401  (registers the maj@k epoch reducer, so `inspect score` finds it)
from harness.providers import local_provider  # noqa: F401  (registers the `local/` model provider)
from judges import scorers  # noqa: F401  (registers the judges' @scorer functions)
