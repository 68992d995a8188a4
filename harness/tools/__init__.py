"""harness/tools package."""
