"""verl/OpenRLHF exports (their documented schemas) and the reward entry points, called as the
engines call them (verl loads ``compute_score`` from the file by path and calls it with keywords;
OpenRLHF loads ``reward_func`` the same way, or posts JSON to the reward server)."""

from __future__ import annotations

import importlib.util
import json
import math
import threading
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from metacog_tasks.benchmarks import get_benchmark

MMLU = get_benchmark("mmlu_pro")
ITEM = MMLU.load("bundled")[0]
RIGHT = MMLU.reference_response(ITEM)
WRONG = MMLU.wrong_response(ITEM, np.random.default_rng(0))
G = 0.75  # intrinsic confidence of the test row


def _row(**extra) -> dict:
    return {
        "prompt": [{"role": "system", "content": "Be careful."},
                   {"role": "user", "content": MMLU.solve_prompt(ITEM)}],
        "benchmark": "mmlu_pro", "item_id": ITEM.item_id, "source": "bundled",
        "accuracy": 0.5, "stated_confidence": 0.6, "intrinsic_confidence": G,
        "n_samples": 4, "n_answer_classes": 2, "question": ITEM.question, **extra,
    }  # fmt: skip


def _engine_module(name: str):
    """The entry-point file loaded from its path, as verl and OpenRLHF load a reward file."""
    import rlmf_plugin.openrlhf_reward as openrlhf
    import rlmf_plugin.verl_reward as verl

    path = openrlhf.__file__ if name == "reward_func" else verl.__file__
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _by_hand(q: float, y: float) -> float:
    """Default score: 0.5 format + 1 correctness + 0.5 (1 - (q - y)^2) + 3 (1 - (q - g)^2)."""
    return 0.5 + y + 0.5 * (1 - (q - y) ** 2) + 3 * (1 - (q - G) ** 2)


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    from rlmf_plugin._io import write_rows
    from rlmf_plugin.engines import export_dataset

    root = tmp_path_factory.mktemp("export")
    other = MMLU.load("bundled")[1]
    rows = [_row(), _row(item_id=other.item_id, intrinsic_confidence=None)]
    rows += [_row(item_id=it.item_id) for it in MMLU.load("bundled")[2:8]]
    write_rows(root / "data", rows)
    export_dataset(root / "data", root / "out", val_fraction=0.25, seed=1)
    return root / "out"


def test_verl_parquet_schema(exported: Path):
    """verl's RL dataset fields (docs/preparation/prepare_data), read back as verl reads them."""
    import datasets
    import pyarrow.parquet as pq

    table = pq.read_table(exported / "verl" / "train.parquet")
    assert table.column_names == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    schema = {f.name: str(f.type) for f in table.schema}
    assert schema["prompt"] == "list<element: struct<role: string, content: string>>"
    assert schema["reward_model"] == "struct<style: string, ground_truth: string>"
    ds = datasets.load_dataset("parquet", data_files=str(exported / "verl" / "train.parquet"))
    rows = ds["train"].to_list()
    val = pq.read_table(exported / "verl" / "val.parquet").to_pylist()
    assert (len(rows), len(val)) == (6, 2)
    for split, part in (("train", rows), ("val", val)):
        for i, r in enumerate(part):
            assert r["data_source"] == "metacog/mmlu_pro" and r["ability"] == "knowledge"
            assert [m["role"] for m in r["prompt"]] in (["system", "user"], ["user"])
            assert r["reward_model"]["style"] == "rule"
            label = json.loads(r["reward_model"]["ground_truth"])
            assert (
                label["benchmark"] == "mmlu_pro" and label["item_id"] == r["extra_info"]["item_id"]
            )
            extra = r["extra_info"]
            assert (extra["split"], extra["index"]) == (split, i)
            assert set(extra) >= {
                "benchmark", "item_id", "source", "accuracy", "stated_confidence",
                "intrinsic_confidence", "n_samples",
            }  # fmt: skip
    ids = [r["extra_info"]["item_id"] for r in rows + val]
    assert len(set(ids)) == 8  # the split is by item, nothing lost or repeated


def test_openrlhf_jsonl_schema(exported: Path):
    """OpenRLHF's prompt data: --input_key input (chat) --label_key label (a string)."""
    lines = (exported / "openrlhf" / "train.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 6
    for r in rows:
        assert set(r) == {"input", "label", "datasource"}
        assert isinstance(r["label"], str) and json.loads(r["label"])["source"] == "bundled"
        assert r["input"][-1]["role"] == "user" and r["datasource"] == "metacog/mmlu_pro"
    assert json.loads((exported / "export.json").read_text())["n_val"] == 2


def test_verl_compute_score_by_hand():
    from rlmf_plugin.engines import ABSENT, FIELDS, make_label

    verl = _engine_module("custom_module_1234")  # verl's load_module names it like this
    label = make_label(_row())
    extra = {"split": "train", "index": 0, "num_turns": None}  # verl adds num_turns
    right = verl.compute_score(data_source="metacog/mmlu_pro",
                               solution_str=f"{RIGHT}\nConfidence: 80\nMeta: 90",
                               ground_truth=label, extra_info=extra)  # fmt: skip
    assert right["score"] == pytest.approx(_by_hand(0.8, 1.0))
    assert set(right) == {"score", *FIELDS}
    assert (right["correct"], right["format"], right["confidence"], right["meta"]) == (
        1,
        1,
        0.8,
        0.9,
    )
    assert right["metacog_z"] == pytest.approx(0.99)  # |.8 - .75| <= .1: F = 1
    wrong = verl.compute_score("metacog/mmlu_pro", f"{WRONG}\nConfidence: 30", label, extra)
    assert wrong["score"] == pytest.approx(_by_hand(0.3, 0.0))
    assert wrong["metacog_z"] == -1.0 and wrong["meta"] == ABSENT  # no Meta line
    bare = verl.compute_score("metacog/mmlu_pro", WRONG, label, extra)  # no confidence
    assert bare["score"] == pytest.approx(0.5 * 0 + 0 + 0.5 * 0 + 3 * -1)
    # weights through custom_reward_function.reward_kwargs
    only = verl.compute_score("metacog/mmlu_pro", f"{RIGHT}\nConfidence: 80", label, extra,
                              weights={"correctness": 2.0})  # fmt: skip
    assert only["score"] == 2.0


def test_verl_fields_come_from_extra_info_when_the_label_lacks_them():
    from rlmf_plugin.engines import compute_score

    label = json.dumps({"benchmark": "mmlu_pro", "item_id": ITEM.item_id, "source": "bundled"})
    extra = {"intrinsic_confidence": G}
    out = compute_score("metacog/mmlu_pro", f"{RIGHT}\nConfidence: 80", label, extra)
    assert out["faithful"] == pytest.approx(1 - 0.05**2) and out["intrinsic_confidence"] == G
    nothing = compute_score("x", "Answer 3\nConfidence: 50", "not json", None)  # never raises
    # a malformed label: the floors of the rewards that read it (format 1, brier -1,
    # faithful -10), flagged
    assert nothing["score"] == 0.5 * 1 + 0.5 * -1 + 3 * -10 and nothing["correct"] == 0.0
    assert (nothing["bad_label"], nothing["graded"]) == (1.0, 0.0)


def test_verl_batch_manager_call_matches_single_calls():
    from rlmf_plugin.engines import compute_score, make_label

    verl = _engine_module("custom_module_1234")
    sols = [f"{RIGHT}\nConfidence: 80\nMeta: 90", f"{WRONG}\nConfidence: 60", "garbage"]
    labels = [make_label(_row())] * 3
    extras = np.array([{"index": i} for i in range(3)], dtype=object)  # verl's non_tensor_batch
    batch = verl.compute_score_batch(data_sources=np.array(["metacog/mmlu_pro"] * 3, dtype=object),
                                     solution_strs=sols, ground_truths=labels,
                                     extra_infos=extras)  # fmt: skip
    single = [
        compute_score("metacog/mmlu_pro", s, lab, e) for s, lab, e in zip(sols, labels, extras)
    ]
    for b, s in zip(batch, single):
        assert b.keys() == s.keys()
        assert all(b[k] == s[k] or (math.isnan(b[k]) and math.isnan(s[k])) for k in b)


def test_openrlhf_reward_func_signature():
    import torch

    from rlmf_plugin.engines import FIELDS, make_label

    openrlhf = _engine_module("reward_func")  # OpenRLHF's module name for --remote_rm_url *.py
    prompt = "<|im_start|>user\n" + MMLU.solve_prompt(ITEM) + "<|im_end|>\n<|im_start|>assistant\n"
    queries = [prompt + f"{RIGHT}\nConfidence: 80\nMeta: 90<|im_end|>",
               prompt + f"{WRONG}\nConfidence: 30<|im_end|>"]  # fmt: skip
    out = openrlhf.reward_func(queries, [prompt, prompt], [make_label(_row())] * 2)
    assert set(out) == {"rewards", "scores", "extra_logs"}
    assert isinstance(out["rewards"], torch.Tensor) and out["rewards"].shape == (2,)
    assert out["rewards"].tolist() == pytest.approx([_by_hand(0.8, 1.0), _by_hand(0.3, 0.0)])
    assert out["scores"].tolist() == [1.0, 0.0]
    assert set(out["extra_logs"]) == set(FIELDS)
    assert out["extra_logs"]["meta"][0].item() == pytest.approx(0.9)  # <|im_end|> stripped
    # One query at a time, as OpenRLHF 0.11 calls it (chunks of 1, in a thread).
    one = openrlhf.reward_func(queries[:1], [prompt], [make_label(_row())])
    assert one["rewards"].tolist() == pytest.approx([_by_hand(0.8, 1.0)])


def test_openrlhf_http_server_contract():
    from rlmf_plugin.engines import make_label, serve

    server = serve("127.0.0.1", 0, weights={"correctness": 1.0})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/get_reward"

    def post(body) -> tuple[int, dict]:
        req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=60) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    try:
        # The payload OpenRLHF's SingleTurnAgentExecutor._fetch_rewards_via_http posts.
        body = {"query": ["P" + RIGHT + "\nConfidence: 80", "P" + WRONG],
                "prompts": ["P", "P"], "labels": [make_label(_row())] * 2}  # fmt: skip
        code, out = post(body)
        assert code == 200 and out["rewards"] == [1.0, 0.0] and out["scores"] == [1.0, 0.0]
        assert out["extra_logs"]["confidence"] == [0.8, -1.0]  # undefined: ABSENT, a number
        code, out = post({"query": ["x"], "labels": []})
        assert code == 400 and "1 queries but 0 labels" in out["error"]
    finally:
        server.shutdown()
        server.server_close()


def test_weights_from_the_environment(monkeypatch):
    from rlmf_plugin import engines

    monkeypatch.setenv("METACOG_RLMF_WEIGHTS", json.dumps({"weights": {"format": 1.0},
                                                            "mc_weight": 2.0}))  # fmt: skip
    monkeypatch.setattr(engines, "_SCORERS", {})
    out = engines.compute_score(
        "m", f"{RIGHT}\nConfidence: 80\nMeta: 90", engines.make_label(_row())
    )
    assert out["score"] == pytest.approx(1.0 + 2.0 * 0.99)  # format + mc_weight * Z
    with pytest.raises(ValueError, match="unknown reward"):
        engines.RewardScorer({"accuracy": 1.0})


def test_plain_prompts_become_one_user_message():
    from rlmf_plugin.engines import openrlhf_rows, verl_rows

    row = {**_row(), "prompt": "Solve it."}
    assert verl_rows([row])[0]["prompt"] == [{"role": "user", "content": "Solve it."}]
    assert openrlhf_rows([row])[0]["input"] == [{"role": "user", "content": "Solve it."}]
