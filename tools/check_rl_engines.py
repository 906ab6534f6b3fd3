"""Check ``metacog rlmf export`` files and the reward entry points with verl's and OpenRLHF's code.

verl 0.9.1 and OpenRLHF 0.11.2 pull in GPU stacks (vLLM, DeepSpeed, flash-attn) and pin other
transformers versions; their reward paths need none of that. ``--install`` puts them into the
running environment without their dependencies (the light ones are the ``engines`` extra) and
removes the top-level ``tests`` package both wheels ship, which would shadow this project's
``tests`` folder::

    pip install -e ".[engines]" && python tools/check_rl_engines.py --install
    python tools/check_rl_engines.py EXPORT_DIR

The check reads ``EXPORT_DIR/verl/train.parquet`` with verl's ``RLHFDataset``, resolves the
reward manager from verl's own config with the overrides of ``examples/rlmf/verl-grpo.sh``
(``resolve_reward_manager_cls``: verl 0.9.1 registers naive, dapo, gdpo, rate_limited and
remote) and scores right and wrong completions through ``load_reward_manager``'s manager
(``run_single`` on a ``DataProto``); reads ``EXPORT_DIR/openrlhf/train.jsonl`` with OpenRLHF's
``PromptDataset`` and scores through its ``SingleTurnAgentExecutor``, from the reward file and
over HTTP from ``metacog rlmf serve-reward``. Every score is compared with a direct call of
:func:`rlmf_plugin.engines.compute_score`. The tokenizer is the offline character tokenizer of
:mod:`rlmf_plugin.tiny` (no download). ``tests/test_rlmf_engines_native.py`` runs the same.
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
    import shlex

    import torch
    import verl
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.trainer.ppo.reward import load_reward_manager, resolve_reward_manager_cls
    from verl.utils.dataset.rl_dataset import RLHFDataset

    import rlmf_plugin.verl_reward as entry

    script = (ROOT / "examples" / "rlmf" / "verl-grpo.sh").read_text()
    body = script.split("verl.trainer.main_ppo", 1)[1].split('"$@"', 1)[0]
    body = body.replace('"$REWARD_FILE"', entry.__file__).replace('"$MODEL"', "tiny")
    overrides = [t for t in shlex.split(body.replace("\\\n", " ")) if "=" in t]
    with initialize_config_dir(str(Path(verl.__file__).parent / "trainer" / "config"),
                               version_base=None):  # fmt: skip
        config = compose(config_name="ppo_trainer", overrides=overrides)
    print(f"verl reward manager: {resolve_reward_manager_cls(config).__module__}")
    manager = load_reward_manager(config, tok)
    weights = dict(config.reward.custom_reward_function.reward_kwargs.get("weights", {}))
    cache = tempfile.mkdtemp()
    cfg = OmegaConf.create({
        "prompt_key": "prompt", "max_prompt_length": 8192, "filter_overlong_prompts": False,
        "return_raw_chat": True, "cache_dir": cache, "truncation": "error",
    })  # fmt: skip
    ds = RLHFDataset(data_files=[str(export / "verl" / "train.parquet")], tokenizer=tok, config=cfg)
    n = len(ds)
    print(f"verl RLHFDataset: {n} rows; keys of row 0: {sorted(ds[0])}")
    from rlmf_plugin.engines import compute_score

    for i in range(n):
        it = ds[i]
        prompt = tok(tok.apply_chat_template(it["raw_prompt"], tokenize=False,
                                             add_generation_prompt=True),
                     add_special_tokens=False)["input_ids"]  # fmt: skip
        resp = tok(completions[i], add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        data = DataProto.from_dict(
            tensors={"prompts": torch.tensor([prompt]), "responses": torch.tensor([resp]),
                     "attention_mask": torch.tensor([[1] * (len(prompt) + len(resp))])},
            non_tensors={k: np.array([it[k] if k != "extra_info" else dict(it[k])], dtype=object)
                         for k in ("data_source", "reward_model", "extra_info")},
        )  # fmt: skip
        out = manager.loop.run_until_complete(manager.run_single(data))
        direct = compute_score(it["data_source"], completions[i],
                               it["reward_model"]["ground_truth"], dict(it["extra_info"]),
                               weights=weights)  # fmt: skip
        assert _same(out["reward_score"], direct["score"]), (out, direct)
    print(f"verl {type(manager).__name__}.run_single + compute_score: {n} scores equal the "
          "direct call")  # fmt: skip


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


ROOT = Path(__file__).resolve().parents[1]
ENGINES = ("verl==0.9.1", "openrlhf==0.11.2")


def install() -> int:
    """Install the pinned engines without dependencies, and remove the ``tests`` package
    their wheels put at the top of site-packages (it shadows this project's tests)."""
    import shutil
    import subprocess
    import sysconfig

    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *ENGINES],
                   check=True)  # fmt: skip
    site = Path(sysconfig.get_paths()["purelib"])
    stray = site / "tests"
    records = [site / f"{d}.dist-info" / "RECORD"
               for d in ("verl-0.9.1", "openrlhf-0.11.2")]  # fmt: skip
    owned = any(r.exists() and "\ntests/__init__.py," in "\n" + r.read_text() for r in records)
    if stray.is_dir() and owned:
        shutil.rmtree(stray)
        print(f"removed {stray} (shipped by the engines' wheels)")
    print("installed " + ", ".join(ENGINES) + " without dependencies")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("export", type=Path, nargs="?", help="a `metacog rlmf export` output folder")
    ap.add_argument("--install", action="store_true", help="install the pinned engines")
    args = ap.parse_args()
    if args.install:
        return install()
    if args.export is None:
        ap.error("give an export folder (or --install)")
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
