"""Task options read from lm-eval metadata (``--metadata``)."""

from __future__ import annotations

import pytest

from metacog_tasks.lmeval.options import (
    KIND_NAMES,
    OptionsError,
    TaskOptions,
    parse_confidence_option,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ("verbal", "logprob")),
        ("both", ("verbal", "logprob")),
        ("verbal", ("verbal",)),
        ("logprob", ("logprob",)),
        ("logprob,verbal", ("verbal", "logprob")),
        ("sampled+numeric", ("sampled", "numeric")),
        ('["numeric", "verbal"]', ("verbal", "numeric")),
        (["sampled"], ("sampled",)),
        ("all", ("verbal", "logprob", "sampled", "numeric")),
        ("verbal_numeric", ("numeric",)),
    ],
)
def test_confidence_option_forms(value, expected) -> None:
    assert parse_confidence_option(value) == expected


def test_confidence_option_rejects_unknown_method() -> None:
    with pytest.raises(OptionsError, match="unknown method 'logits'"):
        parse_confidence_option("verbal,logits")


def test_every_method_has_a_record_kind() -> None:
    assert set(KIND_NAMES.values()) == {"verbal_binary", "logprob", "sampled", "verbal_numeric"}


def test_defaults_when_metadata_is_empty() -> None:
    opts = TaskOptions.from_metadata({"version": 1.0}, benchmark="squad", task="metacog_squad")
    assert opts.data is None  # the Hugging Face dataset
    assert opts.confidence == ("verbal", "logprob")
    assert opts.samples == 10 and opts.temperature == 1.0
    assert opts.benchmark_options == {}


def test_per_benchmark_mappings_and_fallback() -> None:
    meta = {
        "metacog_data": {"squad": "/data/squad.jsonl", "*": "bundled"},
        "metacog_options": {"squad": {"open_book": True}},
        "pretrained": "org/model",  # model_args land in the metadata too; ignored
    }
    squad = TaskOptions.from_metadata(meta, benchmark="squad", task="metacog_squad")
    mmlu = TaskOptions.from_metadata(meta, benchmark="mmlu_pro", task="metacog_mmlu_pro")
    assert squad.data == "/data/squad.jsonl"
    assert squad.benchmark_options == {"open_book": True}
    assert mmlu.data == "bundled"
    assert mmlu.benchmark_options == {}


def test_hf_spellings_mean_the_hub_dataset() -> None:
    for value in ("hf", "HF", "none", ""):
        opts = TaskOptions.from_metadata(
            {"metacog_data": value}, benchmark="squad", task="metacog_squad"
        )
        assert opts.data is None


def test_yaml_options_are_overridden_by_metadata() -> None:
    opts = TaskOptions.from_metadata(
        {"metacog_options": {"mathbench": {"circular": False}}},
        benchmark="mathbench",
        task="metacog_mathbench",
        yaml_options={"circular": True, "languages": ["en"]},
    )
    assert opts.benchmark_options == {"circular": False, "languages": ["en"]}


@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({"metacog_dta": "bundled"}, "unknown metadata key.*metacog_dta"),
        ({"metacog_samples": "many"}, "metacog_samples: expected an integer"),
        ({"metacog_samples": 0}, "metacog_samples: must be >= 1"),
        (
            {"metacog_confidence": "sampled", "metacog_temperature": 0},
            "temperature > 0",
        ),
        ({"metacog_options": ["squad"]}, "metacog_options: expected a mapping"),
        ({"metacog_options": {"squad": 3}}, r"metacog_options\['squad'\]"),
    ],
)
def test_bad_values_name_the_task_and_key(meta, message) -> None:
    with pytest.raises(OptionsError, match=message) as info:
        TaskOptions.from_metadata(meta, benchmark="squad", task="metacog_squad")
    assert "metacog_squad" in str(info.value)
