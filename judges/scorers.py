"""Inspect @scorer functions for every judge (filled in by the judges work)."""
