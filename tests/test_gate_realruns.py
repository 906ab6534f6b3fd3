"""The gate on real model runs (Cacioli's 33-model MMLU atlas, ../shared/data/realruns): the
regressions of docs/gate.md fail, close versions and a better checkpoint pass, at the defaults.

The metric values are checked against the atlas's published per-model accuracy and AUROC
(``published_atlas_summary_matrix.csv``), which the gate's code did not produce."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from metacog_metrics import GateConfig, gate_records, validate_records
from tests.gate_generator import plant_auroc_drop

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
    for side, name in (("baseline", "Gemma 3 27B"), ("candidate", "Gemma 4 31B")):
        assert getattr(tests["auroc"], side) == pytest.approx(published.loc[name, "aggregate"])
        assert getattr(tests["accuracy"], side) == pytest.approx(published.loc[name, "acc"])
    assert tests["auroc"].change == pytest.approx(0.202, abs=5e-4)  # the atlas README's "+.202"
    down = gate_records(gemma4, gemma3)
    assert down.exit_code == 1
    assert {"auroc", "accuracy", "brier", "ece"} <= {t.metric for t in down.failed}


def test_the_sonnet_ece_rise_fails(atlas) -> None:
    df, _ = atlas
    old = _model(df, "anthropic/claude-sonnet-4-5@20250929")
    new = _model(df, "anthropic/claude-sonnet-4-6@default")
    v = gate_records(old, new)
    assert v.exit_code == 1 and [t.metric for t in v.failed] == ["ece"]
    (ece,) = v.failed
    assert (round(ece.baseline, 3), round(ece.candidate, 3)) == (0.019, 0.047)
    assert ece.change > ece.margin == 0.02 and ece.p_holm < 1e-4
    # the old default let it through, inconclusive
    old_rule = gate_records(
        old, new, GateConfig(rule="noninferiority", alpha=0.05, margins={"ece": 0.03})
    )
    assert old_rule.exit_code == 0 and old_rule.status == "inconclusive"


@pytest.mark.parametrize(
    "name",
    ["openai/gpt-5.4-2026-03-05", "qwen/qwen3-235b-a22b-instruct-2507", "google/gemma-4-31b"],
)
def test_a_planted_auroc_drop_of_0062_fails(atlas, name) -> None:
    df, _ = atlas
    base = _model(df, name)
    cand = validate_records(plant_auroc_drop(base, 0.062), source="planted")
    v = gate_records(base, cand)
    (auroc,) = [t for t in v.tests if t.metric == "auroc"]
    assert -0.07 < auroc.change <= -0.062 and auroc.n_items == 1500
    assert v.exit_code == 1 and auroc.verdict == "fail"
    old = gate_records(base, cand, GateConfig(rule="noninferiority", alpha=0.05))
    assert old.exit_code == 0  # the old default: inconclusive, passing


def test_a_planted_drop_the_run_cannot_resolve_passes_as_underpowered(atlas) -> None:
    # Opus 4.6's confidence is noisier per item (se of the change 0.028): the same planted drop
    # is not significant at Holm's level, and the pass says what the run could have caught
    df, _ = atlas
    base = _model(df, "anthropic/claude-opus-4-6@default")
    cand = validate_records(plant_auroc_drop(base, 0.062), source="planted")
    v = gate_records(base, cand)
    (auroc,) = [t for t in v.tests if t.metric == "auroc"]
    assert v.exit_code == 0 and auroc.verdict == "pass" and auroc.underpowered
    assert auroc.change < -0.062 and auroc.detectable > 0.09
    assert auroc in v.underpowered


def test_gating_auroc_alone_catches_the_drop_in_a_noisier_run(atlas) -> None:
    # Sonnet 4.5 (se of the change 0.025): under the default family of 6 tests Holm's first
    # step asks one-sided p < 0.01 / 6, and the planted drop passes underpowered; gated alone
    # (primary: auroc) the same drop is tested at 0.01 and fails, the others reported as info
    df, _ = atlas
    base = _model(df, "anthropic/claude-sonnet-4-5@20250929")
    cand = validate_records(plant_auroc_drop(base, 0.062), source="planted")
    default = gate_records(base, cand)
    (auroc,) = [t for t in default.tests if t.metric == "auroc"]
    assert default.exit_code == 0 and auroc.underpowered and auroc.change <= -0.062
    primary = gate_records(base, cand, GateConfig(primary="auroc"))
    assert primary.exit_code == 1 and [t.metric for t in primary.failed] == ["auroc"]
    assert {t.verdict for t in primary.tests if t.metric != "auroc"} == {"info"}
    (alone,) = [t for t in primary.tests if t.metric == "auroc"]
    assert alone.change == auroc.change and alone.p_holm < 0.01 < auroc.p_holm


def test_close_versions_pass_with_one_missing_item_tolerated(atlas) -> None:
    df, _ = atlas
    old = _model(df, "anthropic/claude-opus-4-6@default")
    new = _model(df, "anthropic/claude-opus-4-7@default")
    v = gate_records(old, new)
    assert v.exit_code == 0 and not v.failed
    assert {t.n_items for t in v.tests} == {1499}
    assert any("1 item(s) only in the baseline" in w for w in v.warnings)
    strict = gate_records(old, new, GateConfig(max_missing_items=0))
    assert strict.exit_code == 2
