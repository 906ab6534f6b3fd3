"""RLMF: GRPO reward data and reward functions from metacog records (TRL)."""
