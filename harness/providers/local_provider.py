"""The `local/` Inspect model provider (filled in by the provider work)."""
