"""Where samples come from: the rollout with the live policy, MarsRL's pipelined and segmented rollouts,
the sample type and the checks on what the engine sampled."""
