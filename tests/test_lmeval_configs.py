"""The lm-eval task YAMLs: generated from the benchmark records, each a few lines on one
``include:`` template, and what lm-eval 0.4.13 builds from them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lm_eval.tasks import TaskManager
from lm_eval.tasks._yaml_loader import load_yaml

from metacog_tasks.benchmarks import BENCHMARK_NAMES, benchmark_class, get_benchmark
from metacog_tasks.lmeval.configs import GROUP_FILE, README, TEMPLATE, main, render_configs
from metacog_tasks.lmeval.paths import tasks_dir

CONFIGS = tasks_dir()
TASKS = [f"metacog_{name}{suffix}" for name in BENCHMARK_NAMES for suffix in ("", "_cf")]


def test_committed_configs_are_what_the_records_generate() -> None:
    rendered = render_configs()
    assert sorted(rendered) == sorted([f"{t}.yaml" for t in TASKS] + [GROUP_FILE, README])
    for name, text in rendered.items():
        assert (CONFIGS / name).read_text(encoding="utf-8") == text, (
            f"{name} is out of date: run python -m metacog_tasks.lmeval.configs"
        )
    on_disk = {p.name for p in CONFIGS.glob("*.yaml")} | {README}
    assert on_disk == set(rendered)  # no task YAML of a benchmark that is not registered
    assert main([str(CONFIGS), "--check"]) == 0


def test_every_task_yaml_includes_the_template_and_resolves_to_its_record() -> None:
    for task in TASKS:
        path = CONFIGS / f"{task}.yaml"
        assert f"include: {TEMPLATE}\n" in path.read_text(encoding="utf-8")
        cfg = load_yaml(path, resolve_func=True, recursive=True)
        record = benchmark_class(cfg["benchmark"])
        probe = "counterfactual" if task.endswith("_cf") else "prospective"
        assert cfg["task"] == task and task.startswith(f"metacog_{record.name}")
        tags = ["metacognition_probe", f"metacognition_{probe}"]
        assert (cfg["probe"], cfg["tag"]) == (probe, tags)
        assert cfg["class"].__name__ == "MetacogTask"
        assert cfg["generation_kwargs"] == {
            "until": list(record.solve_stop),
            "max_gen_toks": record.solve_max_tokens,
            "do_sample": False,
            "temperature": 0.0,
        }
        # the split the record reads (SQuAD's and SciCode's is validation)
        assert (cfg["output_type"], cfg["test_split"], cfg["num_fewshot"]) == (
            "generate_until",
            getattr(record, "default_split", "test"),
            0,
        )
        # the prompts, readable in the YAML, are the record's own
        assert cfg["prompts"] == get_benchmark(record.name).prompts.as_dict()
    group = load_yaml(CONFIGS / GROUP_FILE, resolve_func=False, recursive=True)
    assert group["group"] == "metacog" and group["task"] == TASKS


def test_lm_eval_indexes_the_tasks_not_the_template() -> None:
    manager = TaskManager(include_path=str(CONFIGS), include_defaults=False)
    assert sorted(manager.match_tasks(["metacog_*"])) == sorted(TASKS)
    assert manager.match_tasks(["metacog"]) == ["metacog"]
    assert "metacognition_counterfactual" in manager.all_tags
    assert not any("template" in name for name in manager.all_tasks)


def test_the_generator_writes_updates_and_removes_stale_files(tmp_path: Path, capsys) -> None:
    shutil.copy(CONFIGS / TEMPLATE, tmp_path / TEMPLATE)
    (tmp_path / "metacog_gone.yaml").write_text("task: metacog_gone\n")
    assert main([str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main([str(tmp_path)]) == 0
    assert not (tmp_path / "metacog_gone.yaml").exists()
    assert {p.name for p in tmp_path.glob("*.yaml")} | {README} == set(render_configs())
    assert main([str(tmp_path), "--check"]) == 0
    (tmp_path / "metacog_squad.yaml").write_text("task: metacog_squad\n")
    assert main([str(tmp_path), "--check"]) == 1
    capsys.readouterr()
    assert main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"updated {tmp_path / 'metacog_squad.yaml'}\n"


@pytest.mark.parametrize("until", [(), ("Question:", "\n\n")])
def test_generation_kwargs_are_written_only_where_the_record_differs(
    until, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = benchmark_class("omni_math")
    monkeypatch.setattr(record, "solve_stop", until)
    text = render_configs()["metacog_omni_math.yaml"]
    if not until:
        assert "generation_kwargs" not in text
    else:
        assert '  until: ["Question:", "\\n\\n"]\n  max_gen_toks: 2048\n' in text


def test_lm_eval_averages_group_metrics_so_counts_stay_in_the_task_rows() -> None:
    """lm-eval 0.4.13's group row is a mean of the tasks' values, size-weighted or plain, and a
    custom aggregation is accepted but never called: a count listed there would come out as a
    mean (if this starts to sum, ``ungraded`` can join the group). So the group lists ``acc``
    (weighted by size: the accuracy over every item, an ungraded one counted wrong) and leaves
    ``ungraded`` and ``acc_graded`` to the task rows."""
    from types import SimpleNamespace

    from lm_eval.api.group import Group
    from lm_eval.config.group import AggMetricConfig

    metrics = {
        "a": {"sample_len": 10, "ungraded,none": 2, "acc,none": 0.5},
        "b": {"sample_len": 30, "ungraded,none": 1, "acc,none": 0.9},
    }
    for weighted, expected in ((True, (2 * 10 + 1 * 30) / 40), (False, 1.5)):
        config = AggMetricConfig("ungraded", ["none"], aggregation=sum, weight_by_size=weighted)
        group = Group("g", aggregate_metric_list=[config])
        group.get_all_tasks = lambda recursive=True: [  # type: ignore[method-assign]
            SimpleNamespace(task_name=name) for name in metrics
        ]
        assert group.aggregate(metrics)["ungraded,none"] == pytest.approx(expected)  # not 3
    group = load_yaml(CONFIGS / GROUP_FILE, resolve_func=False, recursive=True)
    listed = {m["metric"]: m["weight_by_size"] for m in group["aggregate_metric_list"]}
    assert listed["acc"] is True
    assert "ungraded" not in listed and "acc_graded" not in listed


def test_the_task_readme_has_lm_evals_sections_and_every_task() -> None:
    text = (CONFIGS / README).read_text(encoding="utf-8")
    for head in (
        "### Paper",
        "### Citation",
        "#### Groups",
        "#### Tags",
        "#### Tasks",
        "### Prompts",
        "### Checklist",
        "### Changelog",
    ):
        assert f"\n{head}\n" in text, head
    for task in TASKS:
        assert f"* `{task}`:" in text
    for name in BENCHMARK_NAMES:
        record = benchmark_class(name)
        assert record.paper and record.homepage and record.citation and record.data_license
        assert record.homepage in text and record.citation.strip() in text
    assert "arXiv:2605.24299" in text
