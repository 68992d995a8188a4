"""A training run: the loop (``Trainer``), the cold start, held-out evaluation, metrics, checkpoints and
``mara train``."""
