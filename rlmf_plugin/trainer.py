"""RLMF's metacognitive advantage on TRL 1.16's ``GRPOTrainer``.

TRL has no hook for per-completion advantage scaling, so :class:`RLMFTrainer` keeps the
gathered rewards of each batch (``_calculate_rewards``), lets the parent compute everything
else, then overwrites ``advantages`` with :func:`rlmf_advantages` (the official code's "mf"
form, ``scale_rewards="none"``)::

    o_j = sum_{i != faith} w_i r_ij        f_j = w_faith r_faith,j      (means within the group)
    A_j = (o_j - o_bar) + (f_j - f_bar) * max(0, k + Z_j)     if f_j > f_bar
    A_j = (o_j - o_bar) + (f_j - f_bar)                        otherwise  (piecewise=False)
    A_j = (o_j - o_bar) + (f_j - f_bar) * max(0, k + 1 - Z_j)  otherwise  (piecewise=True)

``Z_j`` is the metacognitive score column (a reward trained with weight 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from trl import GRPOTrainer

__all__ = ["RLMFTrainer", "rlmf_advantages"]


def rlmf_advantages(
    rewards_per_func: torch.Tensor,
    weights: torch.Tensor | Sequence[float],
    *,
    faith_index: int,
    mc_index: int,
    num_generations: int,
    k: float = 1.0,
    piecewise: bool = False,
) -> torch.Tensor:
    """RLMF advantages of a gathered batch.

    Args:
        rewards_per_func: ``(N, F)`` rewards, NaN where a function returned None; groups of
            ``num_generations`` consecutive rows share a prompt.
        weights: The ``F`` reward weights.
        faith_index: Column of the faithfulness reward (its advantage is rescaled).
        mc_index: Column of the metacognitive score ``Z`` (not part of ``o``).
        num_generations: Group size G.
        k: The official additive offset (``advantage_k``, default 1).
        piecewise: Also scale below-mean completions by ``max(0, k + 1 - Z)``.

    Returns:
        ``(N,)`` advantages; rows where every function returned None get 0.
    """
    r = rewards_per_func.to(torch.float32)
    w = torch.as_tensor(weights, dtype=r.dtype, device=r.device)
    n, n_funcs = r.shape
    if n % num_generations:
        raise ValueError(f"{n} rows are not groups of {num_generations}")
    unscorable = torch.isnan(r).all(dim=1)
    others = torch.ones(n_funcs, dtype=torch.bool, device=r.device)
    others[faith_index] = False
    others[mc_index] = False
    o = (r[:, others] * w[others]).nansum(dim=1)
    f = r[:, faith_index] * w[faith_index]
    o = torch.where(unscorable, torch.nan, o)

    def centred(x: torch.Tensor) -> torch.Tensor:
        g = x.view(-1, num_generations)
        return (g - torch.nanmean(g, dim=1, keepdim=True)).view(-1)

    do = centred(o)
    df = torch.nan_to_num(centred(f), nan=0.0)
    z = torch.nan_to_num(r[:, mc_index], nan=-1.0)
    up = torch.clamp(k + z, min=0.0)
    down = torch.clamp(k + 1.0 - z, min=0.0) if piecewise else torch.ones_like(z)
    adv = do + torch.where(df > 0, df * up, df * down)
    return torch.nan_to_num(adv, nan=0.0)


class RLMFTrainer(GRPOTrainer):
    """``GRPOTrainer`` whose advantages are RLMF's (see the module doc).

    Args:
        faith_reward: Name (``__name__``) of the faithfulness reward function.
        mc_reward: Name of the metacognitive score function (give it weight 0).
        advantage_k: The official ``k`` (default 1).
        piecewise: The official piecewise variant.
        *args, **kwargs: As for ``GRPOTrainer``; ``args.scale_rewards`` must be ``"none"``.

    Raises:
        ValueError: ``scale_rewards`` is not ``"none"``, the aggregation is not
            ``sum_then_normalize``, or a named reward is missing.
    """

    def __init__(
        self,
        *args: Any,
        faith_reward: str = "faithful_reward",
        mc_reward: str = "metacog_score",
        advantage_k: float = 1.0,
        piecewise: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if self.scale_rewards != "none":
            raise ValueError(
                f"RLMFTrainer needs scale_rewards='none' (the official setup), got "
                f"{self.scale_rewards!r}"
            )
        if self.multi_objective_aggregation != "sum_then_normalize":
            raise ValueError("RLMFTrainer needs multi_objective_aggregation='sum_then_normalize'")
        names = list(self.reward_func_names)
        for name in (faith_reward, mc_reward):
            if name not in names:
                raise ValueError(f"RLMFTrainer: no reward named {name!r}; rewards: {names}")
        self.faith_index = names.index(faith_reward)
        self.mc_index = names.index(mc_reward)
        self.advantage_k = float(advantage_k)
        self.piecewise = bool(piecewise)
        self._rlmf_rewards: torch.Tensor | None = None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(
            inputs, prompts, completions, completion_ids_list
        )
        self._rlmf_rewards = rewards_per_func  # gathered across processes
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        rewards = self._rlmf_rewards
        if rewards is None:
            return output
        mode = "train" if self.model.training else "eval"
        groups = self.num_generations if mode == "train" else self.num_generations_eval
        adv = rlmf_advantages(
            rewards,
            self.reward_weights,
            faith_index=self.faith_index,
            mc_index=self.mc_index,
            num_generations=groups,
            k=self.advantage_k,
            piecewise=self.piecewise,
        )
        local = output["advantages"].shape[0]
        start = self.accelerator.process_index * local
        output["advantages"] = adv[start : start + local].to(output["advantages"].device)
        logged = self._logs["advantages"]
        for _ in range(min(len(adv), len(logged))):
            logged.pop()
        logged.extend(adv.tolist())
        self._metrics[mode]["rlmf/advantage_mean_abs"].append(adv.abs().mean().item())
        self._rlmf_rewards = None
        return output
