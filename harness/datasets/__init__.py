"""harness/datasets package."""
