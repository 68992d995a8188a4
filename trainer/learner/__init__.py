"""The models and their update: loading, packing, log-probabilities, the optimizer step, parallelism."""
