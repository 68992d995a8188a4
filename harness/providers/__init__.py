"""Inspect model providers: `local/` serves HF-format checkpoints, trainer runs and registered names."""
