"""Check ``metacog rlmf export`` files and the reward entry points with verl's and OpenRLHF's code.

verl and OpenRLHF are not dependencies of this project (both pull in GPU stacks), so this is a
script, not a test: run it in an environment where they import, for example a throwaway venv
with ``pip install --no-deps verl openrlhf`` plus their light dependencies::

    python tools/check_rl_engines.py EXPORT_DIR

It reads ``EXPORT_DIR/verl/train.parquet`` with verl's ``RLHFDataset``, loads
``rlmf_plugin/verl_reward.py`` with verl's ``get_custom_reward_fn`` and scores right and wrong
completions through verl's ``NaiveRewardManager`` (``compute_score``) and
``BatchRewardManager`` (``compute_score_batch``); reads ``EXPORT_DIR/openrlhf/train.jsonl``
with OpenRLHF's ``PromptDataset`` and scores through its ``SingleTurnAgentExecutor``, both from
the reward file (``--remote_rm_url *.py``) and over HTTP from ``metacog rlmf serve-reward``.
Every score is compared with a direct call of :func:`rlmf_plugin.engines.compute_score`. The
tokenizer is the offline character tokenizer of :mod:`rlmf_plugin.tiny` (no download).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import sys
import tempfile
import threading
from pathlib import Path
from types import SimpleNamespace

import numpy as np


def _completions(rows: list[dict]) -> list[str]:
    """A right and a wrong answer per row, in the RLMF format."""
    from metacog_tasks.benchmarks import get_benchmark
    from rlmf_plugin.engines import parse_label

    rng = np.random.default_rng(0)
    out = []
    for i, row in enumerate(rows):
        item_ref = parse_label(row["label"])
        bench = get_benchmark(item_ref["benchmark"])
        item = {it.item_id: it for it in bench.load(item_ref["source"])}[item_ref["item_id"]]
        text = bench.reference_response(item) if i % 2 == 0 else bench.wrong_response(item, rng)
        out.append(f"{text}\nConfidence: {70 + i % 3 * 10}\nMeta: 80")
    return out


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) < 1e-5


def check_verl(export: Path, tok, completions: list[str], want: list[dict]) -> None:
    import torch
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.utils.dataset.rl_dataset import RLHFDataset
    from verl.workers.reward_manager.batch import BatchRewardManager
    from verl.workers.reward_manager.naive import NaiveRewardManager

    import rlmf_plugin.verl_reward as entry

    cache = tempfile.mkdtemp()
    cfg = OmegaConf.create({
        "prompt_key": "prompt", "max_prompt_length": 8192, "filter_overlong_prompts": True,
        "filter_overlong_prompts_workers": 1, "return_raw_chat": True, "cache_dir": cache,
        "truncation": "error",
    })  # fmt: skip
    ds = RLHFDataset(data_files=[str(export / "verl" / "train.parquet")], tokenizer=tok, config=cfg)
    n = len(ds)
    print(f"verl RLHFDataset: {n} rows; keys of row 0: {sorted(ds[0])}")
    items = [ds[i] for i in range(n)]
    for it in items:
        assert it["data_source"].startswith("metacog/"), it["data_source"]
        assert it["reward_model"]["style"] == "rule"
        assert "intrinsic_confidence" in it["extra_info"]
    # A batch as the trainer builds it: left-padded prompts, right-padded responses.
    prompt_ids = [tok(tok.apply_chat_template(it["raw_prompt"], tokenize=False,
                                              add_generation_prompt=True),
                      add_special_tokens=False)["input_ids"] for it in items]  # fmt: skip
    resp_ids = [tok(c, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
                for c in completions[:n]]  # fmt: skip
    P, R = max(map(len, prompt_ids)), max(map(len, resp_ids))
    pad = tok.pad_token_id
    prompts = torch.tensor([[pad] * (P - len(p)) + p for p in prompt_ids])
    responses = torch.tensor([r + [pad] * (R - len(r)) for r in resp_ids])
    mask = torch.tensor([[0] * (P - len(p)) + [1] * len(p) + [1] * len(r) + [0] * (R - len(r))
                         for p, r in zip(prompt_ids, resp_ids)])  # fmt: skip
    non_tensor = {
        "data_source": np.array([it["data_source"] for it in items], dtype=object),
        "reward_model": np.array([it["reward_model"] for it in items], dtype=object),
        "extra_info": np.array([dict(it["extra_info"]) for it in items], dtype=object),
    }
    data = DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": mask},
        non_tensors=non_tensor,
    )
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": entry.__file__, "name": "compute_score", "reward_kwargs": {}}}})  # fmt: skip
    fn = get_custom_reward_fn(config)
    out = NaiveRewardManager(tok, num_examine=0, compute_score=fn)(data, return_dict=True)
    lengths = [len(r) for r in resp_ids]
    got = [float(out["reward_tensor"][i, lengths[i] - 1]) for i in range(n)]
    assert all(_same(g, w["score"]) for g, w in zip(got, want[:n])), (got, want)
    assert set(out["reward_extra_info"]) == set(want[0]), sorted(out["reward_extra_info"])
    for key, values in out["reward_extra_info"].items():
        assert all(_same(float(v), w[key]) for v, w in zip(values, want[:n])), key
    print(f"verl NaiveRewardManager + compute_score: {n} scores equal the direct call; "
          f"extra info {sorted(out['reward_extra_info'])}")  # fmt: skip
    config.reward.custom_reward_function.name = "compute_score_batch"
    batch_fn = get_custom_reward_fn(config)
    out = BatchRewardManager(tok, num_examine=0, compute_score=batch_fn)(data, return_dict=True)
    got = [float(out["reward_tensor"][i, lengths[i] - 1]) for i in range(n)]
    assert all(_same(g, w["score"]) for g, w in zip(got, want[:n])), (got, want)
    print(f"verl BatchRewardManager + compute_score_batch: {n} scores equal the direct call")


def check_openrlhf(export: Path, tok, completions: list[str], want: list[dict]) -> None:
    import datasets
    from openrlhf.datasets.prompts_dataset import PromptDataset
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    import rlmf_plugin.openrlhf_reward as entry
    from rlmf_plugin.engines import serve

    data = datasets.load_dataset("json", data_files=str(export / "openrlhf" / "train.jsonl"))
    args = SimpleNamespace(input_key="input", label_key="label", apply_chat_template=True,
                           image_key="images")  # fmt: skip
    strategy = SimpleNamespace(args=SimpleNamespace(data=args), is_rank_0=lambda: True)
    ds = PromptDataset(data["train"], tok, strategy)
    n = len(ds)
    print(f"OpenRLHF PromptDataset: {n} rows; datasource of row 0: {ds[0][0]}")
    # The executor decodes prompt + response with special tokens: the query ends in <eos>.
    queries = [ds[i][1] + completions[i] + tok.eos_token for i in range(n)]
    executor = SingleTurnAgentExecutor(remote_rm_url=entry.__file__)
    for i in range(n):
        _, prompt, label, _ = ds[i]
        info = asyncio.run(executor._fetch_rewards_via_func([queries[i]], [prompt], [label]))[0]
        assert _same(float(info["rewards"][0]), want[i]["score"]), (info, want[i])
        assert float(info["scores"][0]) in (0.0, 1.0)
    print(f"OpenRLHF SingleTurnAgentExecutor + reward_func file: {n} rewards equal the direct call")
    server = serve("127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/get_reward"
        executor = SingleTurnAgentExecutor(remote_rm_url=url)
        prompts = [ds[i][1] for i in range(n)]
        labels = [ds[i][2] for i in range(n)]
        info = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, labels))[0]
        assert all(_same(g, w["score"]) for g, w in zip(info["rewards"], want)), info
        print(f"OpenRLHF SingleTurnAgentExecutor over HTTP (serve-reward): {n} rewards equal the "
              f"direct call; extra_logs {sorted(info['extra_logs'])}")  # fmt: skip
    finally:
        server.shutdown()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", type=Path, help="a `metacog rlmf export` output folder")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    from rlmf_plugin.engines import compute_score
    from rlmf_plugin.tiny import build_tiny_lm

    tok = AutoTokenizer.from_pretrained(build_tiny_lm(Path(tempfile.mkdtemp()) / "tiny"))
    rows = [
        json.loads(x) for x in (args.export / "openrlhf" / "train.jsonl").read_text().splitlines()
    ]
    completions = _completions(rows)
    want = [compute_score(r["datasource"], c, r["label"]) for r, c in zip(rows, completions)]
    print(f"{len(rows)} rows; direct scores {[round(w['score'], 3) for w in want]}")
    import openrlhf
    import verl

    print(f"verl {verl.__version__}, openrlhf {getattr(openrlhf, '__version__', '?')}")
    check_verl(args.export, tok, completions, want)
    check_openrlhf(args.export, tok, completions, want)
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
