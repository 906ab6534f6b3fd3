#!/usr/bin/env bash
# RLMF data and rewards on verl (Ray): GRPO with the calibration rewards of rlmf_plugin and the
# official preset's reward weights (strict and soft format 3, correctness and factual 1,
# faithfulness 12). Written for verl 0.9.1 (keys under `reward.`; its reward managers are
# naive, dapo, gdpo, rate_limited and remote: `naive` calls compute_score once per response).
# verl scores one response at a time, so the faithfulness target is the label's item-level g
# (docs/rlmf.md); RLMF's advantage rescaling is TRL-only.
#   metacog rlmf build runs/ -o rlmf-data --models my-org/my-model --probe numeric --chat
#   metacog rlmf select rlmf-data -o rlmf-selected --strategy metacognitive --n 2000 \
#       --model vllm/my-org/my-model --samples 20 --aggregate mean
#   metacog rlmf export rlmf-selected -o rlmf-export --formats verl --val 0.05
set -euo pipefail
REWARD_FILE=$(python -c 'import rlmf_plugin.verl_reward as m; print(m.__file__)')
MODEL=${MODEL:-Qwen/Qwen2.5-7B-Instruct}

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    algorithm.norm_adv_by_std_in_grpo=False \
    data.train_files=rlmf-export/verl/train.parquet \
    data.val_files=rlmf-export/verl/val.parquet \
    data.prompt_key=prompt \
    data.train_batch_size=64 \
    data.max_prompt_length=1024 \
    data.max_response_length=1024 \
    data.filter_overlong_prompts=True \
    actor_rollout_ref.model.path="$MODEL" \
    actor_rollout_ref.actor.optim.lr=1e-6 \
    actor_rollout_ref.actor.ppo_mini_batch_size=32 \
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \
    actor_rollout_ref.actor.use_kl_loss=False \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=8 \
    actor_rollout_ref.rollout.tensor_model_parallel_size=2 \
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \
    reward.reward_manager.name=naive \
    reward.custom_reward_function.path="$REWARD_FILE" \
    reward.custom_reward_function.name=compute_score \
    +reward.custom_reward_function.reward_kwargs.weights.strict_format=3.0 \
    +reward.custom_reward_function.reward_kwargs.weights.soft_format=3.0 \
    +reward.custom_reward_function.reward_kwargs.weights.correctness=1.0 \
    +reward.custom_reward_function.reward_kwargs.weights.brier=1.0 \
    +reward.custom_reward_function.reward_kwargs.weights.faithful=12.0 \
    trainer.n_gpus_per_node=8 \
    trainer.nnodes=1 \
    trainer.total_epochs=3 \
    trainer.logger='["console"]' \
    "$@"
