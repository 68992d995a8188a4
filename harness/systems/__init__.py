"""harness/systems package."""
