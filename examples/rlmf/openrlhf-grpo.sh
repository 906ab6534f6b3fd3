#!/usr/bin/env bash
# RLMF data and rewards on OpenRLHF (Ray + DeepSpeed + vLLM): GRPO (group_norm advantages).
# Written for OpenRLHF 0.11 (dotted flags); before 0.10 the same options were --pretrain,
# --prompt_data, --input_key, --label_key, --apply_chat_template, --remote_rm_url,
# --advantage_estimator and --n_samples_per_prompt.
#   metacog rlmf export rlmf-selected -o rlmf-export --formats openrlhf
# Rewards from the file (in-process), or from the HTTP server on another node:
#   metacog rlmf serve-reward --host 0.0.0.0 --port 5000   # then --reward.remote_url http://HOST:5000/get_reward
# The official preset's weights (strict and soft format 3, correctness and factual 1,
# faithfulness 12) and group-centred advantages without std scaling (scale_rewards "none").
# OpenRLHF scores one response at a time: the faithfulness target is the label's item-level g.
set -euo pipefail
export METACOG_RLMF_WEIGHTS=${METACOG_RLMF_WEIGHTS:-'{"weights": {"strict_format": 3, "soft_format": 3, "correctness": 1, "brier": 1, "faithful": 12}}'}
REWARD_FILE=$(python -c 'import rlmf_plugin.openrlhf_reward as m; print(m.__file__)')
MODEL=${MODEL:-Qwen/Qwen2.5-7B-Instruct}

ray job submit --address="http://127.0.0.1:8265" \
    --runtime-env-json='{"working_dir": "."}' \
    -- python3 -m openrlhf.cli.train_ppo_ray \
    --ref.num_nodes 1 --ref.num_gpus_per_node 8 \
    --actor.num_nodes 1 --actor.num_gpus_per_node 8 \
    --vllm.num_engines 4 --vllm.tensor_parallel_size 2 --train.colocate_all \
    --actor.model_name_or_path "$MODEL" \
    --reward.remote_url "$REWARD_FILE" \
    --data.prompt_dataset rlmf-export/openrlhf/train.jsonl \
    --data.input_key input --data.label_key label --data.apply_chat_template \
    --algo.advantage.estimator group_norm --algo.advantage.no_std_norm \
    --rollout.n_samples_per_prompt 8 \
    --rollout.batch_size 64 --rollout.micro_batch_size 8 \
    --train.batch_size 256 --train.micro_batch_size 4 \
    --data.max_len 2048 --rollout.max_new_tokens 1024 \
    --algo.kl.init_coef 0 --ds.zero_stage 3 \
    --ckpt.output_dir checkpoints/rlmf-openrlhf \
    "$@"
