"""analyze_records / analyze_files: every required summary key, tables, real data, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.analyze import SCHEMA_VERSION, analyze_files, analyze_records
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
    "confidence.tetrachoric.rho",
    "confidence.tetrachoric.tau",
    "confidence.eigen.first_share",
    "confidence.eigen.loadings",
    "confidence.eigen.quadratic_r2",
    "correctness.tetrachoric.rho",
    "correctness.tetrachoric.tau",
    "correctness.eigen.first_share",
    "correctness.eigen.loadings",
    "correctness.eigen.quadratic_r2",
    "factor_alignment.all.r",
    "factor_alignment.contentious.r",
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
    assert set(groups) == {"prospective", "counterfactual"}
    for group in groups.values():
        assert group["status"] == "ok", group["reason"]
        for key in REQUIRED:
            _get(group, key)
        rho = np.array(_get(group, "confidence.tetrachoric.rho"), dtype=float)
        assert rho.shape == (5, 5) and group["models"] == summary["models"]
        assert len(_get(group, "confidence.eigen.loadings")) == 5
        for model in summary["models"]:
            for key in PER_MODEL:
                assert key in group["per_model"][model]
        curve = _get(group, "pairwise.delta_curve")
        assert len(curve["delta"]) == len(curve["mean_tau"]) == len(curve["n_pairs"])
        assert set(_get(group, "pairwise.pair_types")) == {"R-R", "R-NR", "NR-NR"}
    # continuous confidence: binarised for the factor part, real values elsewhere
    assert groups["counterfactual"]["confidence"]["binarized_at"] == 0.5
    assert groups["counterfactual"]["pairwise"]["continuous"] is True
    assert groups["prospective"]["confidence"]["binarized_at"] is None
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
    ):
        assert f"all__prospective__{stem}.csv" in names, stem
    assert "per_model.csv" in names
    pairs = pd.read_csv(out / "tables" / "all__prospective__pairs.csv")
    assert len(pairs) == 10
    for col in (
        "tau",
        "base_rate_p",
        "base_rate_q",
        "calibration_preserving_p",
        "calibration_preserving_q",
        "pair_type",
        "accuracy_gap",
    ):
        assert col in pairs.columns
    assert not any(p.name.endswith(".tmp") for p in out.rglob("*"))
    # the result object keeps what the report plots
    g = res.groups[("all", "prospective", "verbal_binary")]
    assert g.pairwise.nulls["base_rate"].draws.shape == (99,)
    assert g.confidence.eigen is not None and g.confidence.tetrachoric.rho.shape == (5, 5)
    text = res.summary_text()
    assert "all / prospective" in text and "mean tau-b" in text


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
        "prospective:verbal_binary",
        "prospective:logprob",
    }
    assert set(res.summary["results"]["mmlu_pro"]) == {"prospective"}


def test_small_groups_reported_not_crashing():
    df = pd.concat(
        [
            _records(n_items=40, n_models=2, benchmark="tiny_models"),
            _records(n_items=6, n_models=4, benchmark="tiny_items"),
        ]
    )
    res = analyze_records(df, permutations=9, joint_permutations=9)
    tm = res.summary["results"]["tiny_models"]["prospective"]
    ti = res.summary["results"]["tiny_items"]["prospective"]
    assert tm["status"] == "skipped" and "need at least 3" in tm["reason"]
    assert ti["status"] == "skipped" and "need at least 10" in ti["reason"]
    # per-model calibration is still reported for a skipped group
    assert tm["per_model"]["model-0"]["n_items"] == 40
    assert any("skipped" in w for w in res.summary["warnings"])
    assert "skipped" in res.summary_text()


def test_dropped_items_and_unparseable_reported():
    df = _records(n_items=50, n_models=4, seed=7)
    df.loc[(df["model"] == "model-1") & (df["item_id"].isin(["q1", "q2"])), "confidence"] = np.nan
    df = df[~((df["model"] == "model-2") & (df["item_id"] == "q3"))]
    res = analyze_records(df, permutations=19, joint_permutations=9)
    g = res.summary["results"]["all"]["prospective"]
    assert g["n_items"] == 47 and g["n_items_dropped"] == 3
    assert g["dropped_by_model"]["model-1"] == 2 and g["dropped_by_model"]["model-2"] == 1
    assert g["unparseable_by_model"]["model-1"] == 2
    assert g["per_model"]["model-1"]["n_unparseable"] == 2
    assert g["per_model"]["model-1"]["n_items"] == 48  # its own graded items, not 47
    joined = " ".join(res.summary["warnings"])
    assert "3 of 50 items dropped" in joined and "unparseable" in joined


def test_bad_records_raise():
    df = _records()
    df.loc[3, "confidence"] = 4.0
    with pytest.raises(RecordError, match=r"row 4"):
        analyze_records(df)


def test_report_hook_optional(tmp_path, monkeypatch):
    import importlib.util

    calls = []

    class FakeReport:
        @staticmethod
        def write_report(result, out_dir):
            calls.append(Path(out_dir))

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "metacog_metrics.report" else real(name, *a),
    )
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
    g = res.summary["results"]["all"]["prospective"]
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
def test_stratified_null_separates_private_signal_from_shared_difficulty(preset, detects):
    from metacog_metrics.report import headline_findings
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset(preset), n_models=12, items_per_benchmark=400, benchmarks=["squad"], seed=4
    )
    res = analyze_records(df, permutations=200, joint_permutations=300, seed=0)
    group = res.summary["results"]["squad"]["prospective"]
    st = group["pairwise"]["nulls"]["stratified"]
    assert st["alternative"] == "greater" and st["n_draws"] == 300 and st["n_strata"] > 5
    assert st["ci"][0] < st["mean"] < st["ci"][1]
    assert (st["p_value"] < 0.05) is detects
    g = res.groups[("squad", "prospective", "verbal_binary")]
    assert g.stratified.observed == pytest.approx(group["pairwise"]["mean_tau"])
    finding = headline_findings(res.summary)[1]
    assert ("not above the difficulty-stratified null" in finding) is not detects
    assert "no test of private signal" in finding and "evidence of" not in finding


def test_stratified_null_is_reported_as_not_run_for_continuous_confidence():
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=60, benchmarks=["squad"], seed=1,
        probes=("numeric",),
    )  # fmt: skip
    res = analyze_records(df, permutations=50, joint_permutations=50, seed=0)
    (group,) = res.summary["results"]["squad"].values()
    assert "stratified" not in group["pairwise"]["nulls"]
    assert any("difficulty-stratified null: binary confidence only" in w for w in group["warnings"])


def test_min_coverage_leaves_out_partial_models_instead_of_their_missing_items():
    from metacog_metrics.simulate import get_preset, simulate_records

    df = simulate_records(
        get_preset("paper"), n_models=6, items_per_benchmark=200, benchmarks=["squad"], seed=2
    )
    ids = sorted(df["item_id"].unique())
    partial = df[(df["model"] == "m06") & ~df["item_id"].isin(ids[:60])].index
    df = df.drop(partial)  # m06 answered only 60 of 200 items
    plain = analyze_records(df, permutations=50, joint_permutations=50, seed=0)
    g = plain.summary["results"]["squad"]["prospective"]
    assert g["n_items"] == 60 and g["n_items_dropped"] == 140 and g["n_models"] == 6
    assert g["coverage_excluded"] == {}

    res = analyze_records(df, permutations=50, joint_permutations=50, seed=0, min_coverage=0.9)
    g = res.summary["results"]["squad"]["prospective"]
    assert g["n_items"] == 200 and g["n_items_dropped"] == 0 and g["n_models"] == 5
    assert g["coverage_excluded"] == {"m06": pytest.approx(0.3)}
    assert "m06" not in g["models"] and "m06" in g["per_model"]  # own calibration still there
    assert any("below min_coverage 0.9" in w for w in g["warnings"])
    assert res.summary["parameters"]["min_coverage"] == 0.9
    with pytest.raises(ValueError, match="min_coverage must be in"):
        analyze_records(df, permutations=10, joint_permutations=10, min_coverage=1.5)


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
                {"n_boot": 2.5}):  # fmt: skip
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


def test_cli_options_are_analysis_options():
    # Every `metacog analyze` option other than the file arguments is an AnalysisOptions field,
    # and the values the CLI parses are what the options object holds.
    import dataclasses

    from metacog_metrics import AnalysisOptions
    from metacog_tasks.cli import _ANALYZE_FILE_OPTIONS, _analysis_options, build_parser

    args = build_parser().parse_args(
        ["analyze", "r.csv", "--out", "o", "--permutations", "7", "--joint-permutations", "5",
         "--seed", "3", "--alternative", "greater", "--fdr-alpha", "0.1", "--binarize-at",
         "0.7", "--min-coverage", "0.9", "--engine", "numpy", "--pool", "--quiet"]
    )  # fmt: skip
    fields = {f.name for f in dataclasses.fields(AnalysisOptions)}
    assert set(vars(args)) - {"command", "func", *_ANALYZE_FILE_OPTIONS} <= fields
    files, opts = _analysis_options(args)
    assert files == {"paths": ["r.csv"], "out_dir": "o", "models_file": None, "report": True}
    assert opts == AnalysisOptions(
        permutations=7, joint_permutations=5, seed=3, alternative="greater", fdr_alpha=0.1,
        binarize_at=0.7, min_coverage=0.9, engine="numpy", pool=True, progress=False,
    )  # fmt: skip


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
    g = res.summary["results"]["all"]["prospective"]
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
