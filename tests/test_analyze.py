"""analyze_records / analyze_files: every required summary key, tables, real data, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.analyze import SCHEMA_VERSION, analyze_records
from metacog_metrics.pipeline import analyze_files
from metacog_metrics.records import RecordError


def _records(n_items=60, n_models=5, *, benchmark=None, kind=None, seed=0, numeric=False):
    rng = np.random.default_rng(seed)
    diff = rng.normal(size=(n_items, 1))
    thr = rng.normal(scale=0.5, size=(1, n_models))
    correct = (diff + rng.normal(size=(n_items, n_models)) > thr).astype(float)
    latent = diff + rng.normal(size=(n_items, n_models)) - thr + 0.3
    conf = (latent > 0).astype(float)
    if numeric:
        conf = np.round(1 / (1 + np.exp(-latent)), 2)
    df = pd.DataFrame(
        {
            "model": np.repeat([f"model-{j}" for j in range(n_models)], n_items),
            "item_id": np.tile([f"q{i}" for i in range(n_items)], n_models),
            "confidence": conf.T.ravel(),
            "correct": correct.T.ravel(),
        }
    )
    if benchmark:
        df["benchmark"] = benchmark
    if kind:
        df["confidence_kind"] = kind
    return df


def _get(d, path):
    for part in path.split("."):
        assert part in d, f"missing key {part!r} of {path!r}; have {sorted(d)}"
        d = d[part]
    return d


REQUIRED = [
    "confidence.{method}.rho",
    "confidence.{method}.tau",
    "confidence.basis.n_models",
    "confidence.eigen.first_share",
    "confidence.eigen.loadings",
    "confidence.eigen.quadratic_r2",
    "correctness.tetrachoric.rho",
    "correctness.tetrachoric.tau",
    "correctness.eigen.first_share",
    "correctness.eigen.loadings",
    "correctness.eigen.quadratic_r2",
    "correctness.basis.n_items_per_pair",
    "factor_alignment.all.r",
    "factor_alignment.contentious.r",
    "factor_alignment.basis.n_items",
    "pairwise.basis.n_items_per_pair",
    "pairwise.mean_tau",
    "pairwise.nulls.base_rate.mean",
    "pairwise.nulls.base_rate.p_value",
    "pairwise.nulls.calibration_preserving.mean",
    "pairwise.nulls.calibration_preserving.p_value",
    "pairwise.fdr_significant_share",
    "pairwise.delta_curve",
]
PER_MODEL = ["auroc_internal", "auroc_pop", "brier", "ece", "accuracy", "yes_rate", "n_items"]


def test_analyze_files_end_to_end(tmp_path):
    records = pd.concat(
        [
            _records(seed=1),
            _records(seed=2, numeric=True).assign(probe="counterfactual"),
        ]
    )
    path = tmp_path / "records.csv"
    records.to_csv(path, index=False)
    models = tmp_path / "models.yaml"
    models.write_text(
        "models:\n  model-0: {reasoning: true}\n  model-1: {reasoning: true}\n"
        "  model-2: {reasoning: false}\n  model-3: {reasoning: false}\n"
        "  model-4: {reasoning: false}\n"
    )
    out = tmp_path / "out"
    res = analyze_files(
        [path],
        out_dir=out,
        permutations=199,
        joint_permutations=99,
        seed=3,
        models_file=models,
        progress=False,
        report=False,
    )
    text = (out / "summary.json").read_text()
    summary = json.loads(text)  # strict JSON: NaN written as null
    assert "NaN" not in text and "Infinity" not in text
    assert summary == res.summary
    assert summary["schema_version"] == SCHEMA_VERSION
    assert summary["inputs"] == [str(path)]
    assert summary["n_records"] == 600
    assert summary["models"] == [f"model-{j}" for j in range(5)]
    assert summary["parameters"]["permutations"] == 199
    assert summary["parameters"]["joint_permutations"] == 99
    assert summary["parameters"]["seed"] == 3
    assert isinstance(summary["warnings"], list)
    groups = summary["results"]["all"]
    assert set(groups) == {"unspecified", "counterfactual"}
    for group in groups.values():
        assert group["status"] == "ok", group["reason"]
        method = group["confidence"]["method"]
        for key in REQUIRED:
            _get(group, key.format(method=method))
        rho = np.array(_get(group, f"confidence.{method}.rho"), dtype=float)
        assert rho.shape == (5, 5) and group["models"] == summary["models"]
        assert len(_get(group, "confidence.eigen.loadings")) == 5
        for model in summary["models"]:
            for key in PER_MODEL:
                assert key in group["per_model"][model]
        curve = _get(group, "pairwise.delta_curve")
        assert len(curve["delta"]) == len(curve["mean_tau"]) == len(curve["n_pairs"])
        assert set(_get(group, "pairwise.pair_types")) == {"R-R", "R-NR", "NR-NR"}
    # numeric confidence: polychoric over its levels for the factor part, real values elsewhere
    assert groups["counterfactual"]["confidence"]["method"] == "polychoric"
    assert groups["counterfactual"]["confidence"]["binarized_at"] is None
    assert groups["counterfactual"]["pairwise"]["continuous"] is True
    assert groups["unspecified"]["confidence"]["method"] == "tetrachoric"
    assert groups["unspecified"]["confidence"]["binarized_at"] is None
    # tables
    names = {p.name for p in (out / "tables").iterdir()}
    for stem in (
        "per_model",
        "pairs",
        "delta_curve",
        "eigenvalues",
        "loadings",
        "tetrachoric_confidence",
        "tetrachoric_correctness",
        "factor_scores",
        "pair_types",
        "coverage",
    ):
        assert f"all__unspecified__{stem}.csv" in names, stem
    assert "all__counterfactual__polychoric_confidence.csv" in names
    assert "per_model.csv" in names and "coverage.csv" in names
    pairs = pd.read_csv(out / "tables" / "all__unspecified__pairs.csv")
    assert len(pairs) == 10
    for col in (
        "tau",
        "base_rate_p",
        "base_rate_q",
        "calibration_preserving_p",
        "calibration_preserving_q",
        "pair_type",
        "accuracy_gap",
        "n_items",
    ):
        assert col in pairs.columns
    assert not any(p.name.endswith(".tmp") for p in out.rglob("*"))
    # the result object keeps what the report plots
    g = res.groups[("all", "unspecified", "verbal_binary")]
    assert g.pairwise.nulls["base_rate"].draws.shape == (99,)
    assert g.confidence.eigen is not None and g.confidence.tetrachoric.rho.shape == (5, 5)


def test_same_seed_same_summary():
    df = _records(seed=4)
    a = analyze_records(df, permutations=99, joint_permutations=49, seed=1).summary
    b = analyze_records(df, permutations=99, joint_permutations=49, seed=1).summary
    c = analyze_records(df, permutations=99, joint_permutations=49, seed=2).summary
    assert a == b
    assert a["results"] != c["results"]


def test_probe_label_with_two_kinds_and_benchmarks():
    verbal = _records(seed=5, benchmark="squad")
    logprob = _records(seed=5, benchmark="squad", numeric=True, kind="logprob")
    other = _records(seed=6, benchmark="mmlu_pro")
    res = analyze_records(
        pd.concat([verbal, logprob, other]), permutations=49, joint_permutations=19
    )
    assert set(res.summary["results"]) == {"squad", "mmlu_pro"}
    assert set(res.summary["results"]["squad"]) == {
        "unspecified:verbal_binary",
        "unspecified:logprob",
    }
    assert set(res.summary["results"]["mmlu_pro"]) == {"unspecified"}


def test_small_groups_reported_not_crashing():
    df = pd.concat(
        [
            _records(n_items=40, n_models=2, benchmark="tiny_models"),
            _records(n_items=6, n_models=4, benchmark="tiny_items"),
        ]
    )
    res = analyze_records(df, permutations=9, joint_permutations=9)
    tm = res.summary["results"]["tiny_models"]["unspecified"]
    ti = res.summary["results"]["tiny_items"]["unspecified"]
    assert tm["status"] == "skipped" and "need at least 3" in tm["reason"]
    assert ti["status"] == "skipped" and "need at least 10" in ti["reason"]
    # per-model calibration is still reported for a skipped group
    assert tm["per_model"]["model-0"]["n_items"] == 40
    assert any("skipped" in w for w in res.summary["warnings"])


def test_dropped_items_and_unparseable_reported():
    df = _records(n_items=50, n_models=4, seed=7)
    df.loc[(df["model"] == "model-1") & (df["item_id"].isin(["q1", "q2"])), "confidence"] = np.nan
    df = df[~((df["model"] == "model-2") & (df["item_id"] == "q3"))]
    res = analyze_records(df, permutations=19, joint_permutations=9)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["n_items"] == 47 and g["n_items_dropped"] == 3
    assert g["dropped_by_model"]["model-1"] == 2 and g["dropped_by_model"]["model-2"] == 1
    assert g["unparseable_by_model"]["model-1"] == 2
    assert g["per_model"]["model-1"]["n_unparseable"] == 2
    assert g["per_model"]["model-1"]["n_items"] == 48  # its own graded items, not 47
    joined = " ".join(res.summary["warnings"])
    assert "use 47 of 50 items" in joined and "unparseable" in joined
    # the pairwise-complete sections keep every item: a pair lacks only its own models' gaps
    assert g["n_items_union"] == 50
    pairs = res.tables["all__unspecified__pairs"].set_index(["model_a", "model_b"])["n_items"]
    assert pairs[("model-0", "model-3")] == 50
    assert pairs[("model-1", "model-2")] == 47 and pairs[("model-0", "model-1")] == 48


def test_bad_records_raise():
    df = _records()
    df.loc[3, "confidence"] = 4.0
    with pytest.raises(RecordError, match=r"row 4"):
        analyze_records(df)


def test_report_hook(tmp_path, monkeypatch):
    calls = []

    class FakeReport:
        @staticmethod
        def write_report(result, out_dir):
            calls.append(Path(out_dir))

    monkeypatch.setitem(__import__("sys").modules, "metacog_metrics.report", FakeReport)
    path = tmp_path / "r.csv"
    _records(n_items=30, n_models=3).to_csv(path, index=False)
    analyze_files(
        path,
        out_dir=tmp_path / "o",
        permutations=9,
        joint_permutations=9,
        progress=False,
        report=True,
    )
    assert calls == [tmp_path / "o"]
    analyze_files(
        path,
        out_dir=tmp_path / "o2",
        permutations=9,
        joint_permutations=9,
        progress=False,
        report=False,
    )
    assert len(calls) == 1


def test_realruns_battery_binary(realruns_dir, tmp_path):
    """20 frontier models x 524 items, binary KEEP/WITHDRAW confidence (cacioli battery)."""
    path = realruns_dir / "cacioli_battery_binary" / "tidy.csv"
    res = analyze_files(
        path,
        out_dir=tmp_path,
        permutations=999,
        joint_permutations=199,
        seed=0,
        progress=False,
        report=False,
    )
    g = res.summary["results"]["all"]["unspecified"]
    assert g["status"] == "ok" and g["n_models"] == 20 and g["n_items"] == 524
    assert g["n_items_dropped"] == 0
    # DeepSeek-R1 mostly withdraws, and withdraws the items it gets right: AUROC far below 0.5
    r1 = g["per_model"]["DeepSeek-R1"]
    assert r1["yes_rate"] < 0.3 and r1["auroc_internal"] < 0.15
    # the shared difficulty axis: correctness is strongly one-factor
    assert g["correctness"]["eigen"]["first_share"] > 0.5
    assert 0.2 < g["confidence"]["eigen"]["first_share"] < 0.6
    # population confidence predicts a typical model's correctness better than its own
    internal = np.median([m["auroc_internal"] for m in g["per_model"].values()])
    pop = np.median([m["auroc_pop"] for m in g["per_model"].values()])
    assert pop > internal
    pw = g["pairwise"]
    assert pw["n_pairs"] == 190
    assert abs(pw["nulls"]["base_rate"]["mean"]) < 0.01  # centred at zero
    # observed mean tau below what each model's own calibration would give across models
    assert pw["nulls"]["calibration_preserving"]["mean"] > pw["mean_tau"]
    assert pw["nulls"]["calibration_preserving"]["p_less"] < 0.01
    assert 0 < pw["fdr_significant_share"] < 1
    for part in ("all", "contentious"):
        r = g["factor_alignment"][part]["r"]
        assert r is not None and math.isfinite(r)
    assert g["factor_alignment"]["contentious"]["n_items"] < 524
    # the findings: the small-gap control of the paper's pattern, the inverted model, and the
    # probe the records do not name
    gap = pw["small_gap_control"]
    assert gap["delta"] == 0.02 and gap["n_pairs"] == 54
    assert gap["mean_tau"] == pytest.approx(0.0671, abs=5e-4)
    assert (
        gap["null_low"] < 0 < gap["null_high"] < 0.03 and gap["p_value"] == 2 / 200
    )  # two-sided, the least
    assert gap["verdict"] == "does_not_shrink"
    head = res.findings.headline
    assert [f.topic for f in head.findings] == [
        "shared_difficulty", "pairwise", "small_gap", "private_signal", "alignment",
        "inverted_confidence",
    ]  # fmt: skip
    assert head.findings[2].text.startswith(
        "Small-gap control (all/unspecified; pairs whose accuracies differ by at most 0.02): "
        "54 pairs, mean tau-b 0.067"
    )
    assert list(head.inverted) == ["DeepSeek-R1"] and head.inverted["DeepSeek-R1"] < 0.1
    assert "DeepSeek-R1 0.066" in head.findings[-1].text
    assert res.findings.caveats[0].startswith("The records do not say which probe")
    assert res.summary["findings"]["headline"]["group"] == "all/unspecified"


def test_cli_analyze(tmp_path, capsys):
    from metacog_tasks.cli import main

    path = tmp_path / "r.csv"
    _records(n_items=40, n_models=4).to_csv(path, index=False)
    code = main(
        [
            "analyze",
            str(path),
            "--out",
            str(tmp_path / "o"),
            "--permutations",
            "99",
            "--joint-permutations",
            "19",
            "--quiet",
            "--no-report",
        ]
    )
    assert code == 0
    assert json.loads((tmp_path / "o" / "summary.json").read_text())["n_records"] == 160
    assert "mean tau-b" in capsys.readouterr().out
    bad = tmp_path / "bad.csv"
    _records(n_items=12, n_models=3).rename(columns={"correct": "is_correct"}).to_csv(bad)
    assert main(["analyze", str(bad), "--out", str(tmp_path / "b"), "--quiet"]) == 2
    assert "unknown column" in capsys.readouterr().err


@pytest.mark.parametrize(("preset", "detects"), [("paper", False), ("individuated", True)])
def test_private_signal_test_separates_private_signal_from_shared_difficulty(preset, detects):
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset(preset), n_models=12, items_per_benchmark=400, benchmarks=["squad"], seed=4
    )
    res = analyze_records(df, permutations=200, joint_permutations=300, seed=0)
    group = res.summary["results"]["squad"]["prospective"]
    ps = group["pairwise"]["nulls"]["private_signal"]
    assert ps["alternative"] == "greater" and ps["n_draws"] == 300 and ps["n_strata"] > 5
    assert ps["block_size"] == 2  # the default blocks (private_signal.DEFAULT_BLOCK_SIZE)
    assert ps["basis"] == {
        "models": group["models"],
        "n_models": 12,
        "items": "complete-case",
        "n_items": 400,
        "n_pairs": 66,
    }
    assert ps["design"] == "complete" and ps["n_pairs"] == 66  # fmt: skip
    assert ps["ci"][0] < ps["mean"] < ps["ci"][1]
    assert (ps["p_value"] < 0.05) is detects
    g = res.groups[("squad", "prospective", "verbal_binary")]
    assert g.private_signal.observed == pytest.approx(group["pairwise"]["mean_tau"])
    (finding,) = [f for f in res.findings.headline.findings if f.topic == "private_signal"]
    assert "12 models x 400 items, 66 pairs" in finding.text
    assert ("no evidence of private signal" in finding.text) is not detects
    assert f"detects a shift of {g.private_signal.detectable_shift:.3f}" in finding.text


def test_private_signal_test_is_reported_as_not_run_for_numeric_confidence():
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=60, benchmarks=["squad"], seed=1,
        probes=("numeric",),
    )  # fmt: skip
    res = analyze_records(df, permutations=50, joint_permutations=50, seed=0)
    (group,) = res.summary["results"]["squad"].values()
    assert "private_signal" not in group["pairwise"]["nulls"]
    assert any("private-signal test: binary confidence only" in w for w in group["warnings"])


def _ragged(seed=2):
    """6 simulated models x 200 items; m05 answered 120 items (60%), m06 60 (30%)."""
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=200, benchmarks=["squad"], seed=seed
    )
    ids = sorted(df["item_id"].unique())
    rng = np.random.default_rng(seed)
    keep5 = set(rng.choice(ids, 120, replace=False))
    keep6 = set(ids[:60])
    drop = ((df["model"] == "m05") & ~df["item_id"].isin(keep5)) | (
        (df["model"] == "m06") & ~df["item_id"].isin(keep6)
    )
    return df[~drop].reset_index(drop=True), keep5, keep6


def test_coverage_default_leaves_out_a_partial_run_and_reports_every_model():
    df, _, _ = _ragged()
    res = analyze_records(df, permutations=50, joint_permutations=50, seed=0)
    g = res.summary["results"]["squad"]["prospective"]
    assert res.summary["parameters"]["min_coverage"] == 0.5
    cov = g["coverage"]
    assert cov["m06"] == {"n_items": 60, "share": pytest.approx(0.3), "included": False,
                          "reason": "coverage 30.0% below min_coverage 0.5"}  # fmt: skip
    assert cov["m05"]["included"] and cov["m05"]["n_items"] == 120
    assert cov["m01"] == {"n_items": 200, "share": 1.0, "included": True, "reason": None}
    assert g["models"] == ["m01", "m02", "m03", "m04", "m05"] and "m06" in g["per_model"]
    # m05 costs the complete-case analyses its 80 gaps, the pairwise sections nothing else
    assert g["n_items"] == 120 and g["n_items_union"] == 200
    assert g["factor_alignment"]["basis"]["n_items"] == 120
    assert g["confidence"]["basis"]["n_models"] == 5
    assert g["confidence"]["basis"]["n_items_per_pair"] == {"min": 120, "median": 200.0,
                                                            "max": 200}  # fmt: skip
    table = res.tables["coverage"]
    assert list(table["model"]) == [f"m0{j}" for j in range(1, 7)]
    assert list(table["included"]) == [True] * 5 + [False]
    assert any("m06 30%" in w for w in g["warnings"])


def test_pairwise_complete_items_match_independent_computations():
    from scipy import stats

    from tests.refstats import twostep_ml_rho

    df, keep5, keep6 = _ragged()
    res = analyze_records(df, permutations=200, joint_permutations=100, seed=0, min_coverage=0)
    g = res.summary["results"]["squad"]["prospective"]
    both = len(keep5 & keep6)  # the complete-case items of all six
    assert g["n_models"] == 6 and g["n_items"] == both and g["n_items_union"] == 200
    assert g["factor_alignment"]["basis"]["n_items"] == both
    conf = df.pivot(index="item_id", columns="model", values="confidence")
    corr = df.pivot(index="item_id", columns="model", values="correct")
    # tetrachoric: thresholds from each model's own items (psych global=TRUE), tables from the
    # items both answered
    tet = g["confidence"]["tetrachoric"]
    rho = np.array(tet["rho"], dtype=float)
    raw = np.array(res.groups[("squad", "prospective", "verbal_binary")].confidence
                   .tetrachoric.raw_rho)  # fmt: skip
    models = g["models"]
    for a, b in (("m01", "m05"), ("m05", "m06"), ("m02", "m06"), ("m01", "m02")):
        x, y = conf[a], conf[b]
        ok = x.notna() & y.notna()
        counts = [((x[ok] == u) & (y[ok] == v)).sum() for u in (0, 1) for v in (0, 1)]
        counts = [0.5 if c == 0 else c for c in counts]
        tau = (stats.norm.ppf(1 - x.mean()), stats.norm.ppf(1 - y.mean()))
        i, j = models.index(a), models.index(b)
        assert raw[i, j] == pytest.approx(twostep_ml_rho(counts, tau), abs=1e-6)
        assert np.isfinite(rho[i, j])
    # pairwise: tau-b on the shared items, accuracy gap on them too
    pairs = res.tables["squad__prospective__pairs"].set_index(["model_a", "model_b"])
    for a, b, n in (("m01", "m05", 120), ("m05", "m06", len(keep5 & keep6)), ("m01", "m06", 60),
                    ("m02", "m03", 200)):  # fmt: skip
        ok = conf[a].notna() & conf[b].notna()
        dc, dp = conf[a][ok] - conf[b][ok], corr[a][ok] - corr[b][ok]
        row = pairs.loc[(a, b)]
        assert row["n_items"] == n == ok.sum()
        assert row["tau"] == pytest.approx(stats.kendalltau(dc, dp).statistic, abs=1e-12)
        assert row["accuracy_gap"] == pytest.approx(abs(dp.mean()), abs=1e-12)
        # the per-pair base-rate null is drawn on those items: its sd is the permutation sd of
        # tau-b over them (SciPy's permutation test, 1000 pairings)
        ref = stats.permutation_test(
            (dc.to_numpy(), dp.to_numpy()), lambda u, v: stats.kendalltau(u, v).statistic,
            permutation_type="pairings", n_resamples=1000, rng=1,
        )  # fmt: skip
        assert row["base_rate_null_sd"] == pytest.approx(ref.null_distribution.std(), rel=0.2)
    pw = g["pairwise"]
    assert pw["basis"]["n_models"] == 6 and pw["basis"]["n_pairs"] == 15
    assert pw["basis"]["n_items_per_pair"]["min"] == len(keep5 & keep6)


def test_numeric_confidence_keeps_every_model_with_variance():
    """Verbalised confidence mostly above 0.5 (as on real runs): binarised at 0.5 most models
    have no variance; over its levels (polychoric) every model that varies stays in."""
    rng = np.random.default_rng(3)
    n_items, n_models = 300, 8
    diff = rng.normal(size=(n_items, 1))
    correct = (rng.normal(size=(n_items, n_models)) - diff > -0.3).astype(float)
    latent = -diff + rng.normal(size=(n_items, n_models))
    conf = np.clip(np.round(0.8 + 0.06 * latent, 2), 0.55, 1.0)  # never below 0.55
    df = pd.DataFrame({
        "model": np.repeat([f"m{j}" for j in range(n_models)], n_items),
        "item_id": np.tile([f"q{i}" for i in range(n_items)], n_models),
        "confidence": conf.T.ravel(), "correct": correct.T.ravel(),
        "confidence_kind": "verbal_numeric",
    })  # fmt: skip
    res = analyze_records(df, permutations=0, joint_permutations=0, seed=0, n_boot=0)
    g = res.summary["results"]["all"]["unspecified"]
    sec = g["confidence"]
    assert sec["method"] == "polychoric" and len(sec["polychoric"]["models"]) == n_models
    assert sec["basis"]["n_models"] == n_models
    assert sec["eigen"]["first_share"] > 0.3 and "threshold_rule" in sec["polychoric"]
    assert set(sec["polychoric"]["n_levels"].values()) <= {2, 3, 4, 5}
    assert g["factor_alignment"]["all"]["n_models_confidence"] == n_models
    binarised = analyze_records(df, permutations=0, joint_permutations=0, seed=0, n_boot=0,
                                numeric_levels=0)  # fmt: skip
    b = binarised.summary["results"]["all"]["unspecified"]["confidence"]
    assert b["method"] == "tetrachoric" and b["binarized_at"] == 0.5
    assert b["tetrachoric"]["models"] == [] and b["eigen"]["first_share"] is None


def test_realruns_atlas_keeps_models_and_items(realruns_dir):
    """33 models x 1,500 MMLU items, verbalised 0-100 confidence; 12 partial runs (GLM-5 has
    598 items). Complete-case kept 129 items and, binarised at 0.5, 8 models."""
    from metacog_metrics.records import read_records

    df = read_records(realruns_dir / "cacioli_atlas_mmlu" / "tidy.csv", default_probe="unspecified")
    res = analyze_records(df, permutations=0, joint_permutations=9, seed=0, n_boot=0)
    g = res.summary["results"]["all"]["unspecified"]
    assert len(g["coverage"]) == 33 and g["coverage"]["zai/glm-5"]["included"] is False
    conf = g["confidence"]
    assert conf["method"] == "polychoric" and conf["basis"]["n_models"] >= 30
    assert g["pairwise"]["basis"]["n_items"] >= 1000
    assert g["pairwise"]["basis"]["n_items_per_pair"]["median"] >= 1000
    assert g["pairwise"]["n_pairs_valid"] == 496
    assert g["factor_alignment"]["basis"]["n_items"] > 129
    findings = {f.topic: f.text for f in res.findings.headline.findings}
    assert f"{conf['basis']['n_models']} models, each pair on the items both answered" in (
        findings["shared_difficulty"])  # fmt: skip
    assert "496 pairs" in findings["pairwise"] and "of 1500 items" in findings["pairwise"]
    assert f"x {g['n_items']} complete-case items" in findings["alignment"]
    assert "private_signal" not in findings  # numeric confidence: not run, and said so
    assert any("needs binary confidence" in c for c in res.findings.caveats)


def test_second_run_into_the_same_out_leaves_only_its_own_outputs(tmp_path):
    out = tmp_path / "o"
    four, one = tmp_path / "four.csv", tmp_path / "one.csv"
    _records(n_items=30, n_models=4).to_csv(four, index=False)
    _records(n_items=30, n_models=1, seed=1).to_csv(one, index=False)
    kw = dict(permutations=9, joint_permutations=9, progress=False)
    first = analyze_files(four, out_dir=out, report=True, **kw)
    (out / "notes.txt").write_text("the user's own file")
    first_tables = {p.name for p in (out / "tables").glob("*.csv")}
    assert first_tables == {f"{n}.csv" for n in first.tables}
    assert (out / "report.html").is_file()
    second = analyze_files(one, out_dir=out, report=False, **kw)
    on_disk = {p.name for p in (out / "tables").glob("*.csv")}
    assert on_disk == {f"{n}.csv" for n in second.tables}
    assert first_tables - on_disk  # the 4-model run's pair tables are gone
    assert not (out / "report.html").exists()
    assert json.loads((out / "summary.json").read_text())["models"] == ["model-0"]
    assert (out / "notes.txt").read_text() == "the user's own file"


def test_header_only_csv_is_an_error_naming_the_file(tmp_path, capsys):
    from metacog_tasks.cli import main

    path = tmp_path / "empty.csv"
    _records(n_items=10, n_models=3).iloc[:0].to_csv(path, index=False)
    with pytest.raises(RecordError, match=r"empty\.csv: no records"):
        analyze_files(path, out_dir=tmp_path / "o", progress=False)
    assert main(["analyze", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert "empty.csv: no records" in capsys.readouterr().err
    assert not (tmp_path / "o" / "summary.json").exists()


def test_analysis_options_are_checked_when_built():
    from metacog_metrics import AnalysisOptions

    opts = AnalysisOptions(permutations=99.0, deltas=[0, 0.5], contentious_bounds=[0.2, 0.8])
    assert opts.permutations == 99 and isinstance(opts.permutations, int)
    assert opts.deltas == (0.0, 0.5) and opts.contentious_bounds == (0.2, 0.8)
    for bad in ({"permutations": -1}, {"alternative": "both"}, {"fdr_alpha": 0.0},
                {"min_coverage": 1.5}, {"engine": "cuda"}, {"contentious_bounds": (0.9, 0.1)},
                {"n_boot": 2.5}, {"numeric_levels": 1}):  # fmt: skip
        with pytest.raises(ValueError, match=next(iter(bad))):
            AnalysisOptions(**bad)
    with pytest.raises(TypeError, match="permutation"):  # a misspelt option fails at once
        analyze_records(_records(n_items=20, n_models=3), permutation=9)
    with pytest.raises(AttributeError):
        opts.seed = 3  # frozen


def test_options_object_and_keywords_give_the_same_run():
    from metacog_metrics import AnalysisOptions

    df = _records(n_items=40, n_models=4)
    opts = AnalysisOptions(permutations=49, joint_permutations=19, seed=3, n_boot=50)
    a = analyze_records(df, opts).summary
    b = analyze_records(df, permutations=49, joint_permutations=19, seed=3, n_boot=50).summary
    c = analyze_records(df, opts, seed=4).summary  # keywords override the object
    assert a == b
    assert c["parameters"]["seed"] == 4 and a != c


@pytest.mark.parametrize("engine", ["numpy", "auto"])
def test_summary_records_the_engine(engine):
    from metacog_metrics.pairwise.pair import compiled_engine_available

    df = _records(n_items=40, n_models=4)
    s = analyze_records(df, permutations=19, joint_permutations=9, engine=engine).summary
    expect = "numba" if engine == "auto" and compiled_engine_available("auto") else "numpy"
    assert s["engine"]["per_pair"] == expect
    assert s["engine"]["joint"] == expect  # the joint draws follow the same choice
    assert s["engine"]["requested"] == s["parameters"]["engine"] == engine
    assert (s["engine"]["numba_version"] is not None) == (expect == "numba")


def test_summary_values_match_independent_computations():
    # The end-to-end summary checked value by value against SciPy / sklearn / pandas on the
    # same records (the key-presence checks above cannot see a wrong number).
    from scipy import stats
    from sklearn.metrics import roc_auc_score

    from tests.refstats import psych_raw_rho

    df = _records(seed=4)
    res = analyze_records(df, permutations=99, joint_permutations=49, seed=0, n_boot=0)
    g = res.summary["results"]["all"]["unspecified"]
    assert g["status"] == "ok"
    models = g["models"]
    conf = df.pivot(index="item_id", columns="model", values="confidence")[models]
    corr = df.pivot(index="item_id", columns="model", values="correct")[models]
    for m in models:
        row = g["per_model"][m]
        assert row["accuracy"] == pytest.approx(corr[m].mean())
        assert row["yes_rate"] == pytest.approx((conf[m] >= 0.5).mean())
        assert row["brier"] == pytest.approx(((conf[m] - corr[m]) ** 2).mean())
        assert row["auroc_internal"] == pytest.approx(roc_auc_score(corr[m], conf[m]))
    tet = g["confidence"]["tetrachoric"]
    assert tet["models"] == models and not tet["smoothed"]
    rho = np.array(tet["rho"], dtype=float)
    for i, j in ((0, 1), (1, 3), (2, 4)):
        expected = psych_raw_rho(conf.iloc[:, i], conf.iloc[:, j])
        assert rho[i, j] == pytest.approx(expected, abs=1e-6)
    np.testing.assert_allclose(tet["tau"], stats.norm.ppf(1 - conf.mean().to_numpy()), atol=1e-9)
    top = np.linalg.eigvalsh(rho)[-1]
    assert g["confidence"]["eigen"]["first_share"] == pytest.approx(top / len(models))
    taus = [
        stats.kendalltau(
            conf.iloc[:, a] - conf.iloc[:, b], corr.iloc[:, a] - corr.iloc[:, b]
        ).statistic
        for a in range(len(models))
        for b in range(a + 1, len(models))
    ]
    assert g["pairwise"]["n_pairs"] == len(taus) == 10
    assert g["pairwise"]["mean_tau"] == pytest.approx(float(np.mean(taus)), abs=1e-12)


def test_pooled_private_signal_test_exchanges_items_within_their_benchmark():
    from metacog_metrics.simulate import simulate_records
    from metacog_tasks.sim import preset_params

    df = simulate_records(
        preset_params("paper"), n_models=5, items_per_benchmark=60,
        benchmarks=["squad", "mmlu_pro"], seed=3,
    ).drop(columns=["question", "probe_text", "solve_text"], errors="ignore")  # fmt: skip
    res = analyze_records(df, permutations=0, joint_permutations=20, seed=0, n_boot=0, pool=True)
    pooled = res.summary["results"]["pooled"]["prospective"]["pairwise"]["nulls"]
    assert pooled["private_signal"]["n_groups"] == 2
    single = res.summary["results"]["squad"]["prospective"]["pairwise"]["nulls"]
    assert single["private_signal"]["n_groups"] == 1


def test_realruns_mmlu500_keeps_models_and_items(realruns_dir):
    """16 models x 500 MMLU items, verbalised confidence; complete-case kept 186 items."""
    from metacog_metrics.records import read_records

    df = read_records(
        realruns_dir / "cacioli_mmlu500_verbalized" / "tidy.csv", default_probe="unspecified"
    )
    res = analyze_records(df, permutations=0, joint_permutations=9, seed=0, n_boot=0)
    g = res.summary["results"]["all"]["unspecified"]
    assert [m for m, c in g["coverage"].items() if not c["included"]] == ["zai/glm-5"]  # 37%
    assert g["confidence"]["method"] == "polychoric"
    assert g["confidence"]["basis"]["n_models"] == 15
    per = g["pairwise"]["basis"]["n_items_per_pair"]
    assert g["pairwise"]["basis"]["n_items"] == 500 and per["median"] == 500 and per["min"] > 300
    assert g["n_items"] > 186  # the complete-case sections without the partial run


@pytest.mark.parametrize("stage", ["pairwise_calibration", "calibration_by_model"])
def test_an_error_in_a_background_stage_reaches_the_caller(monkeypatch, stage):
    """The per-model calibration runs on its own thread beside the other stages: what it
    raises is raised by the analysis, not lost with the thread (as the pairwise section's)."""
    import metacog_metrics.analyze.group as analyze_module

    def broken(*args, **kwargs):
        raise FloatingPointError(f"{stage} failed")

    monkeypatch.setattr(analyze_module, stage, broken)
    with pytest.raises(FloatingPointError, match=f"{stage} failed"):
        analyze_records(_records(), permutations=20, joint_permutations=20, seed=0)


def test_section_rate_of_a_model_without_items_is_nan_without_a_warning():
    """The yes-rate of each model over its own items (nanmean by hand), NaN without a
    RuntimeWarning for a model without items: no process-wide warnings filter is needed
    while the pairwise section runs on another thread."""
    import warnings

    from metacog_metrics.analyze.group import _section

    x = np.array([[1.0, 0.0, np.nan, 1.0], [0.0, 0.0, np.nan, 1.0], [1.0, np.nan, np.nan, 0.0],
                  [1.0, 1.0, np.nan, 0.0], [0.0, 1.0, np.nan, 1.0]])  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        section = _section(x, ["a", "b", "c", "d"])
    assert section.rate[:2].tolist() == [3 / 5, 2 / 4]
    assert math.isnan(section.rate[2]) and section.rate[3] == 3 / 5


def test_pairwise_note_comes_before_the_private_signal_note():
    """Notes keep the order of the sections in the summary (the pairwise note, known last,
    goes before the private-signal test's)."""
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset("paper"), n_models=5, items_per_benchmark=60, benchmarks=["squad"], seed=3,
        probes=("numeric",),
    )  # fmt: skip
    ids = sorted(df["item_id"].unique())
    drop = ((df["model"] == "m04") & df["item_id"].isin(ids[34:])) | (
        (df["model"] == "m05") & df["item_id"].isin(ids[:30])
    )  # m04 answered items 0-33 and m05 items 30-59: they share 4 items
    res = analyze_records(df[~drop], permutations=20, joint_permutations=20, seed=0,
                          min_coverage=0.0)  # fmt: skip
    (group,) = res.summary["results"]["squad"].values()
    notes = group["warnings"]
    short = [i for i, w in enumerate(notes) if w.startswith("pairwise: 1 pair(s) share fewer")]
    private = [i for i, w in enumerate(notes) if w.startswith("private-signal test: binary")]
    assert len(short) == 1 and len(private) == 1 and short[0] == private[0] - 1


def test_cli_interrupted_is_one_line_and_status_130(tmp_path, capsys, monkeypatch):
    """Ctrl-C during the pairwise section: the CLI says so in one line and exits 130 (no
    traceback)."""
    import metacog_metrics.analyze.group as analyze_module
    from metacog_tasks.cli import main

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(analyze_module, "pairwise_calibration", interrupted)
    path = tmp_path / "r.csv"
    _records(n_items=40, n_models=4).to_csv(path, index=False)
    assert main(["analyze", str(path), "--out", str(tmp_path / "o"), "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "metacog analyze: interrupted" and not (tmp_path / "o").exists()


def _zero_cells(frame: pd.DataFrame, models: list[str]) -> tuple[int, int]:
    """Pairs of ``models`` whose 2x2 table over their shared items has an empty cell, and the
    empty cells: a recount of what the tetrachoric's zero-cell correction replaced."""
    pairs = cells = 0
    for i, a in enumerate(models):
        for b in models[i + 1 :]:
            both = frame[[a, b]].dropna()
            empty = 4 - len(both.value_counts())
            pairs += empty > 0
            cells += empty
    return pairs, cells


def test_reported_counts_match_a_recount_from_the_tables_and_records(realruns_dir, tmp_path):
    """Every count summary.json reports for a group, recounted from the written tables (pairs,
    delta curve, coverage) and from the records themselves (the empty cells corrected)."""
    path = realruns_dir / "cacioli_battery_binary" / "tidy.csv"
    res = analyze_files(path, out_dir=tmp_path, permutations=19, joint_permutations=19, seed=0,
                        n_boot=0, progress=False, report=False)  # fmt: skip
    g = res.summary["results"]["all"]["unspecified"]
    tables = tmp_path / "tables"
    pairs = pd.read_csv(tables / "all__unspecified__pairs.csv")
    coverage = pd.read_csv(tables / "all__unspecified__coverage.csv")
    curve = pd.read_csv(tables / "all__unspecified__delta_curve.csv")
    pw = g["pairwise"]
    assert pw["n_pairs"] == len(pairs) and pw["n_pairs_valid"] == int(pairs["tau"].notna().sum())
    per = pw["basis"]["n_items_per_pair"]
    assert (per["min"], per["median"], per["max"]) == (
        pairs["n_items"].min(), pairs["n_items"].median(), pairs["n_items"].max())  # fmt: skip
    assert g["n_models"] == int(coverage["included"].sum()) == len(g["models"])
    gap = pw["small_gap_control"]
    near = pairs[(pairs["accuracy_gap"] <= gap["delta"] + 1e-12) & pairs["tau"].notna()]
    assert gap["n_pairs"] == len(near) > 0
    assert gap["mean_tau"] == pytest.approx(near["tau"].mean(), abs=1e-12)
    assert gap["n_pairs_all"] == pw["n_pairs_valid"]
    row = curve[np.isclose(curve["delta"], gap["delta"])]
    assert int(row["n_pairs"].iloc[0]) == gap["n_pairs"]
    fdr = pairs["base_rate_q"] <= pw["fdr_alpha"]
    assert pw["nulls"]["base_rate"]["fdr_significant_share"] == pytest.approx(fdr.mean())
    ps = pw["nulls"]["private_signal"]
    assert ps["n_pairs"] == int((pairs["n_items"] >= 10).sum())
    records = pd.read_csv(path)
    for section, column in (("confidence", "confidence"), ("correctness", "correct")):
        tet = g[section]["tetrachoric"]
        wide = records.pivot(index="item_id", columns="model", values=column)
        n_pairs, n_cells = _zero_cells(wide, tet["models"])
        assert (tet["n_corrected_pairs"], tet["n_corrected_cells"]) == (n_pairs, n_cells), section
    assert g["confidence"]["tetrachoric"]["n_corrected_cells"] > 0  # the recount has teeth
