"""metacog-eval harness layer: benchmarks, lm-eval and Inspect adapters, simulated models."""
