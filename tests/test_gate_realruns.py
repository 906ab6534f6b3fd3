"""The gate on real model runs (Cacioli's 33-model MMLU atlas, ../shared/data/realruns): a newer
checkpoint of a family against its predecessor, the other way round, and two close versions.

The metric values are checked against the atlas's published per-model accuracy and AUROC
(``published_atlas_summary_matrix.csv``), which the gate's code did not produce."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from metacog_metrics import GateConfig, gate_records, validate_records

ATLAS = "cacioli_atlas_mmlu"


@pytest.fixture(scope="module")
def atlas(realruns_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    folder = realruns_dir / ATLAS
    return pd.read_csv(folder / "tidy.csv"), pd.read_csv(
        folder / "published_atlas_summary_matrix.csv"
    ).set_index("model")


def _model(df: pd.DataFrame, name: str) -> pd.DataFrame:
    return validate_records(df[df["model"] == name], source=name)


def test_a_better_checkpoint_passes_and_the_old_one_fails_against_it(atlas) -> None:
    df, published = atlas
    gemma3, gemma4 = _model(df, "google/gemma-3-27b"), _model(df, "google/gemma-4-31b")
    up = gate_records(gemma3, gemma4)
    assert up.exit_code == 0 and up.status == "pass"
    tests = {t.metric: t for t in up.tests}
    # the published figures: accuracy and aggregate Type-2 AUROC of each model
    for side, name in (("baseline", "Gemma 3 27B"), ("candidate", "Gemma 4 31B")):
        assert getattr(tests["auroc"], side) == pytest.approx(published.loc[name, "aggregate"])
        assert getattr(tests["accuracy"], side) == pytest.approx(published.loc[name, "acc"])
    assert tests["auroc"].change == pytest.approx(0.202, abs=5e-4)  # the atlas README's "+.202"
    assert tests["auroc"].ci_low > 0.1

    down = gate_records(gemma4, gemma3)
    assert down.exit_code == 1
    failed = {t.metric: t for t in down.failed}
    assert {"auroc", "accuracy", "brier", "ece"} <= set(failed)
    assert failed["auroc"].reason.startswith("regression: auroc 0.771 -> 0.569 (change -0.202")
    # McNemar agrees: far more items went right -> wrong than the other way
    assert failed["accuracy"].mcnemar["worse"] > 3 * failed["accuracy"].mcnemar["better"]


def test_close_versions_need_shared_items_and_do_not_fail(atlas) -> None:
    df, _ = atlas
    old, new = (
        _model(df, "anthropic/claude-opus-4-6@default"),
        _model(df, "anthropic/claude-opus-4-7@default"),
    )
    refused = gate_records(old, new)
    assert refused.exit_code == 2
    assert "all/prospective/verbal_numeric: 1 item(s) only in the baseline" in refused.refusals[0]
    shared = gate_records(old, new, GateConfig(allow_shared_items=True))
    assert shared.exit_code == 0 and not shared.failed
    assert {t.n_items for t in shared.tests} == {1499}


@pytest.mark.parametrize(
    ("baseline", "candidate", "status", "failing"),
    [
        ("anthropic/claude-sonnet-4-5@20250929", "anthropic/claude-sonnet-4-6@default",
         "inconclusive", set()),
        ("openai/gpt-5.4-2026-03-05", "openai/gpt-5.4-nano-2026-03-17", "fail",
         {"accuracy", "brier", "ece"}),
    ],
)  # fmt: skip
def test_the_other_pairs_of_the_docs(atlas, baseline, candidate, status, failing) -> None:
    df, _ = atlas
    verdict = gate_records(_model(df, baseline), _model(df, candidate))
    assert verdict.status == status and {t.metric for t in verdict.failed} == failing
