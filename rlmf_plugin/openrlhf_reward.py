"""OpenRLHF's custom reward function file for RLMF (what ``--remote_rm_url`` names).

OpenRLHF loads this file by its path and calls ``reward_func(queries, prompts, labels)``; see
:mod:`rlmf_plugin.engines` and docs/rlmf.md. ``metacog rlmf serve-reward`` serves the same
rewards over HTTP.
"""

from rlmf_plugin.engines import reward_func

__all__ = ["reward_func"]
