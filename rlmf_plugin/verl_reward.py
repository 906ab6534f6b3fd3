"""verl's custom reward function file for RLMF (what ``custom_reward_function.path`` names).

verl loads this file by its path (or ``pkg://rlmf_plugin.verl_reward``) and calls
``compute_score`` (the naive, dapo and prime reward managers) or ``compute_score_batch``
(``reward_manager=batch``); see :mod:`rlmf_plugin.engines` and docs/rlmf.md.
"""

from rlmf_plugin.engines import compute_score, compute_score_batch

__all__ = ["compute_score", "compute_score_batch"]
