"""The Inspect log reader: records, bad samples, superseded runs, epochs, foreign logs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match

from metacog_tasks.benchmarks import get_benchmark
from metacog_tasks.collect import COLLECT_COLUMNS
from metacog_tasks.collect.inspect_logs import read_inspect_logs
from metacog_tasks.inspect_tasks import mmlu_pro

# Inspect's own retry set-up warns on every model call (tenacity API change).
pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)

BENCH = get_benchmark("mmlu_pro")
ITEMS = BENCH.load("bundled")


def _respond(fail_item: int | None = None, unparseable: int | None = None):
    """Item i: probe says Yes for even i; solve right for i % 3 != 0."""
    lookup = {}
    for i, item in enumerate(ITEMS):
        lookup[BENCH.solve_prompt(item)] = ("solve", i)
        lookup[BENCH.probe_prompt(item, "prospective")] = ("probe", i)

    def respond(input, tools, tool_choice, config):
        kind, i = lookup[input[0].text]
        if kind == "solve":
            if i == fail_item:
                raise RuntimeError(f"backend failure on item {i}")
            item = ITEMS[i]
            text = (
                BENCH.reference_response(item)
                if i % 3
                else BENCH.wrong_response(item, np.random.default_rng(i))
            )
        elif i == unparseable:
            text = "Hard to say."
        else:
            text = f"Rationale.\nAnswer: {'Yes' if i % 2 == 0 else 'No'}"
        out = ModelOutput.from_content("mockllm", text)
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return respond


def _scripted(fail_item: int | None = None, unparseable: int | None = None):
    return get_model("mockllm/model", custom_outputs=_respond(fail_item, unparseable))


def _run(tmp_path, task=None, **kwargs):
    logs = inspect_eval(
        task or mmlu_pro(data="bundled"),
        model=kwargs.pop("model", None) or _scripted(),
        display="none",
        log_dir=str(tmp_path),
        **kwargs,
    )
    return logs[0]


def test_records_follow_the_scores(tmp_path) -> None:
    log = _run(tmp_path, model=_scripted(unparseable=4), limit=8)
    result = read_inspect_logs([log.location])
    df = result.records
    assert list(df.columns) == list(COLLECT_COLUMNS)
    assert len(df) == 8 and result.n_bad == 0 and not result.warnings
    assert list(df["item_id"]) == [it.item_id for it in ITEMS[:8]]
    assert set(df["model"]) == {"mockllm/model"} and set(df["harness"]) == {"inspect"}
    assert set(df["benchmark"]) == {"mmlu_pro"} and set(df["probe"]) == {"prospective"}
    assert set(df["confidence_kind"]) == {"verbal_binary"}
    for i, row in enumerate(df.itertuples()):
        assert row.correct == (1.0 if i % 3 else 0.0)
        if i == 4:
            assert math.isnan(row.confidence) and row.probe_status == "unparseable"
        else:
            assert row.confidence == (1.0 if i % 2 == 0 else 0.0) and row.probe_status == "ok"
        assert row.question == ITEMS[i].question
        assert row.solve_text.endswith(f"({row.answer}).")
        assert row.source == log.location
        assert math.isnan(row.n_samples)


def test_errored_samples_are_counted_not_dropped_silently(tmp_path) -> None:
    log = _run(tmp_path, model=_scripted(fail_item=2), limit=5, fail_on_error=False)
    assert log.status == "success"
    result = read_inspect_logs([log.location])
    (report,) = result.files
    assert report.n_lines == 5 and report.n_bad == 1 and report.n_records == 4
    assert "sample '90003'" in report.errors[0] and "backend failure on item 2" in report.errors[0]
    assert "90003" not in set(result.records["item_id"])


def test_latest_run_supersedes_earlier_ones(tmp_path) -> None:
    first = _run(tmp_path, limit=3)
    second = _run(tmp_path, limit=3)
    result = read_inspect_logs([first.location, second.location])
    used = [f for f in result.files if f.skipped is None]
    skipped = [f for f in result.files if f.skipped is not None]
    assert [f.path for f in used] == [second.location]
    assert skipped[0].path == first.location and "superseded" in skipped[0].skipped
    assert len(result.records) == 3
    both = read_inspect_logs([first.location, second.location], latest_only=False)
    assert len(both.records) == 6


def test_epochs_keep_one_attempt_per_item(tmp_path) -> None:
    log = _run(tmp_path, limit=3, epochs=2)
    first = read_inspect_logs([log.location])
    assert len(first.records) == 3 and first.files[0].n_lines == 3
    assert any("3 sample(s) of other epochs not read" in w for w in first.warnings)
    second = read_inspect_logs([log.location], epoch=2)
    assert list(second.records["item_id"]) == list(first.records["item_id"])


def test_json_logs_read_like_eval_logs(tmp_path) -> None:
    eval_log = _run(tmp_path / "a", limit=4)
    json_log = _run(tmp_path / "b", limit=4, log_format="json")
    assert json_log.location.endswith(".json")
    a = read_inspect_logs([eval_log.location]).records.drop(columns="source")
    b = read_inspect_logs([json_log.location]).records.drop(columns="source")
    assert a.equals(b)


def test_foreign_and_corrupt_logs_are_skipped_with_a_reason(tmp_path) -> None:
    plain = Task(dataset=[Sample(input="Say 4", target="4", id="q1")], scorer=match())
    other = _run(tmp_path, task=plain, model=get_model("mockllm/model", custom_outputs=_four()))
    corrupt = tmp_path / "broken.eval"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    result = read_inspect_logs([other.location, corrupt])
    reasons = {f.path: f.skipped for f in result.files}
    assert reasons[other.location] == "not a metacog task"
    assert reasons[str(corrupt)].startswith("unreadable Inspect log")
    assert result.records.empty


def _four():
    def respond(input, tools, tool_choice, config):
        out = ModelOutput.from_content("mockllm", "4")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    return respond


@pytest.mark.parametrize("bad_value", [{"confidence": 1.5, "correct": 1.0}, {"correct": 1.0}])
def test_malformed_scores_are_bad_samples(tmp_path, bad_value) -> None:
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(_run(tmp_path, limit=2).location)
    log.samples[0].scores["prospective_verbal"].value = bad_value
    path = tmp_path / "edited.eval"
    write_eval_log(log, str(path))
    result = read_inspect_logs([path])
    assert result.files[0].n_bad == 1 and len(result.records) == 1
    assert "prospective_verbal" in result.files[0].errors[0]


def test_eval_set_of_scripted_models_reads_one_table(tmp_path) -> None:
    """inspect_ai.eval_set over two scripted mockllm models, then collect: two models' records."""
    from inspect_ai import eval_set

    from metacog_tasks.collect import collect

    models = [
        get_model("mockllm/a", custom_outputs=_respond()),
        get_model("mockllm/b", custom_outputs=_respond(unparseable=0)),
    ]
    ok, logs = eval_set(
        [mmlu_pro(data="bundled")], model=models, log_dir=str(tmp_path), limit=4, display="none"
    )
    assert ok and len(logs) == 2
    result = collect([tmp_path])
    df = result.records
    assert sorted(df["model"].unique()) == ["mockllm/a", "mockllm/b"]
    a = df[df["model"] == "mockllm/a"].set_index("item_id")
    b = df[df["model"] == "mockllm/b"].set_index("item_id")
    assert list(a["correct"]) == list(b["correct"]) == [0.0, 1.0, 1.0, 0.0]
    assert list(a["confidence"]) == [1.0, 0.0, 1.0, 0.0]
    assert math.isnan(b["confidence"].iloc[0]) and b["probe_status"].iloc[0] == "unparseable"


def test_a_corrupt_sample_does_not_drop_the_samples_after_it(tmp_path) -> None:
    import zipfile

    log = _run(tmp_path, limit=6)
    src = tmp_path / "whole.eval"
    src.write_bytes(Path(log.location).read_bytes())
    with zipfile.ZipFile(src) as zin:
        names = zin.namelist()
        sample_names = sorted(n for n in names if n.startswith("samples/"))
        assert len(sample_names) == 6
        second = f"samples/{ITEMS[1].item_id}_epoch_1.json"
        assert second in sample_names
        broken = tmp_path / "broken.eval"
        with zipfile.ZipFile(broken, "w", zipfile.ZIP_DEFLATED) as zout:
            for name in names:
                data = b'{"id": "not json' if name == second else zin.read(name)
                zout.writestr(name, data)
    result = read_inspect_logs([broken])
    (report,) = result.files
    assert report.n_lines == 6 and report.n_records == 5 and report.n_bad == 1
    assert f"sample '{ITEMS[1].item_id}'" in report.errors[0] and "corrupt" in report.errors[0]
    kept = set(result.records["item_id"])
    assert kept == {it.item_id for it in ITEMS[:6]} - {ITEMS[1].item_id}
    assert any("1 corrupt sample(s)" in w for w in result.warnings)
