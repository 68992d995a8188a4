"""Compact reference trainer for multi-agent RL: samples, advantages, losses, rollout engine, checkpoints."""
