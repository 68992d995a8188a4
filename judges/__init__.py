"""Judges: pure scoring cores (usable as trainer rewards) and the Inspect scorers built on them."""
