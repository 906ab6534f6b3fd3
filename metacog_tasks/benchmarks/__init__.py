"""Benchmarks: loading, prompts, graders, shared by every harness adapter."""
