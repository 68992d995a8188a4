"""Inspect AI entry point: importing this registers mara-bench's model provider and scorers with Inspect."""

from harness.providers import local_provider  # noqa: F401  (registers the `local/` model provider)
from judges import scorers  # noqa: F401  (registers the judges' @scorer functions)
