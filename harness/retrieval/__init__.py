"""harness/retrieval package."""
