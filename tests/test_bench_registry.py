"""The benchmark registry, prompt overrides and the offline error of every loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metacog_tasks.benchmarks import (
    BENCHMARK_NAMES,
    PROBES,
    Benchmark,
    DataUnavailableError,
    PromptError,
    UnknownBenchmarkError,
    get_benchmark,
)

#: Grows as benchmarks land.
IMPLEMENTED = BENCHMARK_NAMES


def test_names() -> None:
    assert BENCHMARK_NAMES == (
        "squad",
        "mmlu_pro",
        "legalbench",
        "mathbench",
        "omni_math",
        "scicode",
    )


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(UnknownBenchmarkError) as err:
        get_benchmark("gsm8k")
    assert isinstance(err.value, ValueError)
    for name in BENCHMARK_NAMES:
        assert name in str(err.value)


def test_dash_alias() -> None:
    assert get_benchmark("mmlu-pro").name == "mmlu_pro"


def test_prompt_override_from_mapping_and_files(tmp_path: Path) -> None:
    custom = "Q: {question}\n{options}\nReply with the letter."
    bench = get_benchmark("mmlu_pro", prompts={"solve": custom})
    item = bench.load("bundled")[0]
    assert bench.solve_prompt(item).startswith("Q: " + item.question)
    yaml_file = tmp_path / "p.yaml"
    yaml_file.write_text("prospective: 'Will you get this right? {question}'\n")
    bench = get_benchmark("mmlu_pro", prompts=yaml_file)
    assert bench.probe_prompt(item) == f"Will you get this right? {item.question}"
    json_file = tmp_path / "p.json"
    json_file.write_text(json.dumps({"numeric": "0-100? {question}"}))
    bench = get_benchmark("mmlu_pro", prompts=str(json_file))
    assert bench.probe_prompt(item, "numeric") == f"0-100? {item.question}"


def test_prompt_override_errors(tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="unknown prompt template"):
        get_benchmark("mmlu_pro", prompts={"solv": "x"})
    with pytest.raises(PromptError, match="unknown field"):
        get_benchmark("mmlu_pro", prompts={"prospective": "{question} {options}"})
    with pytest.raises(PromptError, match="cannot read"):
        get_benchmark("mmlu_pro", prompts=tmp_path / "missing.yaml")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    with pytest.raises(PromptError, match="mapping"):
        get_benchmark("mmlu_pro", prompts=bad)


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_every_benchmark_loads_its_pack_and_builds_prompts(name: str) -> None:
    bench = get_benchmark(name)
    assert isinstance(bench, Benchmark)
    items = bench.load("bundled")
    assert 8 <= len(items) <= 40
    assert len({it.item_id for it in items}) == len(items)
    for item in items:
        assert item.benchmark == name
        assert item.question.strip()
        for prompt in bench.solve_prompts(item):
            assert prompt.strip()
        for probe in PROBES:
            text = bench.probe_prompt(item, probe)
            assert item.question.strip()[:40] in text
    assert len(bench.load("bundled", limit=3)) == 3
    with pytest.raises(ValueError, match="unknown probe"):
        bench.probe_prompt(items[0], "retrospective")


@pytest.mark.parametrize("name", IMPLEMENTED)
def test_missing_local_path_is_a_clear_error(name: str, tmp_path: Path) -> None:
    with pytest.raises(DataUnavailableError, match="not found"):
        get_benchmark(name).load(tmp_path / "nowhere")


@pytest.mark.parametrize("name", [n for n in IMPLEMENTED if n != "mathbench"])
def test_offline_hub_load_says_how_to_use_local_files(
    name: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf" / "datasets"))
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True, raising=False)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf" / "datasets")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    bench = get_benchmark(name, **({"tasks": ["abercrombie"]} if name == "legalbench" else {}))
    with pytest.raises(DataUnavailableError) as err:
        bench.load(None)
    message = str(err.value)
    assert "load(PATH)" in message and "bundled" in message
