"""``metacog rlmf demo``: RLMF against correctness-only and standard RL, offline on CPU.

A tiny model is taught, by SFT, a synthetic arithmetic task whose supervision is noisy on some
items (:mod:`rlmf_plugin.demo.task`), so that its own answers are consistent on some items and
split on others; GRPO then trains it in three arms that differ only in reward and advantage
(:mod:`rlmf_plugin.presets`), for several seeds; each policy's faithful and factual calibration
is measured on held-out items from its own sampled answers, and RLMF is compared with each
baseline by a paired bootstrap (:mod:`rlmf_plugin.demo.run`).
"""

from rlmf_plugin.demo.run import DemoResult, DemoSettings, run_demo

__all__ = ["DemoResult", "DemoSettings", "run_demo"]
