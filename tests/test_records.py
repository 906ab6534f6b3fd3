"""Record table: reading, validation errors naming the rows, matrices, models file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.records import (
    KEY_COLUMNS,
    RECORD_COLUMNS,
    RecordError,
    RecordWarning,
    item_matrices,
    load_models_file,
    read_records,
    validate_records,
    write_records,
)


def _tiny(**overrides) -> pd.DataFrame:
    df = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "c", "c"],
            "item_id": ["1", "2", "1", "2", "1", "2"],
            "confidence": [1.0, 0.0, 1.0, 1.0, 0.0, 0.0],
            "correct": [1, 0, 1, 0, 0, 1],
        }
    )
    for k, v in overrides.items():
        df[k] = v
    return df


def test_minimal_tidy_gets_defaults():
    out = validate_records(_tiny())
    assert list(out.columns) == list(RECORD_COLUMNS)
    assert set(out["benchmark"]) == {"all"} and set(out["probe"]) == {"prospective"}
    assert set(out["confidence_kind"]) == {"verbal_binary"}
    numeric = validate_records(_tiny(confidence=[0.9, 0.1, 1, 1, 0, 0]))
    assert set(numeric["confidence_kind"]) == {"verbal_numeric"}


def test_kind_inferred_per_benchmark_and_probe():
    df = pd.concat(
        [
            _tiny(benchmark="squad"),
            _tiny(benchmark="mmlu", confidence=[0.9, 0.1, 0.8, 0.7, 0.2, 0.3]),
        ]
    )
    out = validate_records(df)
    kinds = out.groupby("benchmark")["confidence_kind"].unique().to_dict()
    assert list(kinds["squad"]) == ["verbal_binary"] and list(kinds["mmlu"]) == ["verbal_numeric"]


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        ({"confidence": [1, 0, 1.5, 1, 0, -0.2]}, r"outside \[0, 1\] in 2 rows \(rows 3, 6\)"),
        ({"correct": [1, 0, 1, 2, 0, 1]}, r"correct must be 0 or 1 .* \(row 4\)"),
        ({"confidence": [1, 0, "high", 1, 0, 0]}, r"confidence is not a number in 1 row \(row 3\)"),
        ({"item_id": ["1", "1", "1", "2", "1", "2"]}, r"repeat .* row 1, row 2"),
        ({"model": ["a", "", "b", "b", "c", "c"]}, r"model is empty in 1 row \(row 2\)"),
        ({"confidence_kind": ["verbal"] * 6}, r"unknown confidence_kind \['verbal'\] in 6 rows"),
        (
            {"confidence_kind": ["verbal_binary"] * 6, "confidence": [1, 0.5, 1, 1, 0, 0]},
            r"verbal_binary needs confidence 0 or 1, not in 1 row \(row 2\)",
        ),
        ({"probe_status": ["ok", "ok", "weird", "ok", "ok", "ok"]}, r"probe_status .* \(row 3\)"),
        ({"reasoning": ["yes", "yes", "maybe", "no", "no", "no"]}, r"reasoning .* \(row 3\)"),
        ({"epoch": [1, 1, 1, 1.5, 1, 1]}, r"epoch must be an integer >= 0 in 1 row \(row 4\)"),
        ({"confidence": [1, 0, np.inf, 1, 0, 0]}, r"infinite in 1 row \(row 3\)"),
    ],
)
def test_bad_input_names_the_rows(change, pattern):
    with pytest.raises(RecordError, match=pattern) as info:
        validate_records(_tiny(**change), source="runs.csv")
    assert str(info.value).startswith("runs.csv: ")


def test_many_bad_rows_are_summarised():
    df = pd.DataFrame(
        {
            "model": ["m"] * 20,
            "item_id": [str(i) for i in range(20)],
            "confidence": [2.0] * 20,
            "correct": [1] * 20,
        }
    )
    with pytest.raises(RecordError, match=r"20 rows \(rows 1, 2, 3, 4, 5 and 15 more\)"):
        validate_records(df)


def test_unknown_and_missing_columns():
    with pytest.raises(
        RecordError,
        match=r"unknown column\(s\) 'confidnce' \(did you mean "
        r"'confidence'\?\)",
    ):
        validate_records(_tiny().rename(columns={"confidence": "confidnce"}))
    with pytest.raises(RecordError, match=r"missing required column\(s\) correct"):
        validate_records(_tiny().drop(columns="correct"))


def test_nan_confidence_allowed_and_counted(tmp_path):
    path = tmp_path / "r.csv"
    _tiny(confidence=[1, np.nan, 1, 1, 0, np.nan]).to_csv(path, index=False)
    with pytest.warns(RecordWarning, match="2 record"):
        df = read_records(path)
    assert df["confidence"].isna().sum() == 2
    m = item_matrices(df)
    assert m.unparseable_by_model == {"a": 1, "b": 0, "c": 1}
    assert m.item_ids == ("1",) and m.n_items_dropped == 1
    assert m.dropped_by_model == {"a": 1, "b": 0, "c": 1}


def test_csv_and_parquet_agree_on_item_ids(tmp_path):
    df = _tiny(item_id=[0, 1, 0, 1, 0, 1])
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_parquet(tmp_path / "r.parquet", index=False)  # integer item ids in Parquet
    a = read_records(tmp_path / "r.csv")
    b = read_records(tmp_path / "r.parquet")
    assert list(a["item_id"]) == list(b["item_id"]) == ["0", "1"] * 3
    # the same rows in two files are a duplicate naming both files
    with pytest.raises(RecordError, match=r"r\.csv row 1.*r\.parquet row 1"):
        read_records([tmp_path / "r.csv", tmp_path / "r.parquet"])


def test_two_confidence_kinds_are_two_rows():
    verbal = validate_records(_tiny(confidence_kind="verbal_binary"))
    logprob = validate_records(
        _tiny(confidence=[0.9, 0.2, 0.7, 0.6, 0.1, 0.3], confidence_kind="logprob")
    )
    both = validate_records(pd.concat([verbal, logprob]))
    assert len(both) == 12
    assert not both.duplicated(list(KEY_COLUMNS)).any()


def test_write_is_atomic_and_roundtrips(tmp_path):
    df = validate_records(
        _tiny(benchmark="squad", reasoning=[True, True, False, False, None, None])
    )
    for name in ("out.parquet", "out.csv"):
        path = write_records(df, tmp_path / "sub" / name)
        back = read_records(path)
        pd.testing.assert_frame_equal(back, df, check_dtype=False)
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["out.csv", "out.parquet"]
    with pytest.raises(RecordError, match="unsupported"):
        write_records(df, tmp_path / "out.json")
    with pytest.raises(FileNotFoundError):
        read_records(tmp_path / "nope.csv")


def test_models_file_both_layouts(tmp_path):
    nested = tmp_path / "models.yaml"
    nested.write_text("models:\n  a: {reasoning: true}\n  b: {reasoning: false}\n  zz: {}\n")
    flat = tmp_path / "flat.yaml"
    flat.write_text("a:\n  reasoning: true\nb:\n  reasoning: false\n")
    assert load_models_file(flat) == {"a": {"reasoning": True}, "b": {"reasoning": False}}
    assert load_models_file(nested)["zz"] == {}
    path = tmp_path / "r.csv"
    _tiny().to_csv(path, index=False)
    with pytest.warns(RecordWarning) as caught:
        df = read_records(path, models_file=nested)
    messages = [str(w.message) for w in caught]
    assert any("not in the records: zz" in m for m in messages)
    assert any("no reasoning flag for 1 model(s): c" in m for m in messages)
    assert any("zz" in w for w in df.attrs["warnings"])
    m = item_matrices(df)
    assert m.reasoning == (True, False, None)
    bad = tmp_path / "bad.yaml"
    bad.write_text("models:\n  a: {reasoning: sometimes}\n")
    with pytest.raises(RecordError, match="model 'a': reasoning must be true or false"):
        load_models_file(bad)


def test_item_matrices_groups_and_order():
    df = validate_records(
        pd.concat(
            [
                _tiny(benchmark="squad"),
                _tiny(benchmark="mmlu", confidence=[0.9, 0.1, 0.8, 0.7, 0.2, 0.3]),
            ]
        )
    )
    with pytest.raises(RecordError, match=r"2 .* groups"):
        item_matrices(df)
    m = item_matrices(df, benchmark="mmlu")
    assert m.models == ("a", "b", "c") and m.item_ids == ("1", "2")
    assert m.confidence_kind == "verbal_numeric"
    np.testing.assert_array_equal(m.confidence, [[0.9, 0.8, 0.2], [0.1, 0.7, 0.3]])
    np.testing.assert_array_equal(m.binary_confidence(), [[1, 1, 0], [0, 1, 0]])
    sub = item_matrices(df, benchmark="squad", models=["c", "a"])
    assert sub.models == ("c", "a")
    with pytest.raises(RecordError, match="no records with benchmark 'x'"):
        item_matrices(df, benchmark="x")


def test_item_matrices_keep_and_partial_models():
    df = validate_records(
        pd.DataFrame(
            {
                "model": ["a", "a", "a", "b", "b", "c"],
                "item_id": ["1", "2", "3", "1", "2", "1"],
                "confidence": [1, 0, 1, 1, 0, np.nan],
                "correct": [1, 0, 1, 1, 1, 1],
            }
        )
    )
    complete = item_matrices(df)
    # c has no usable item: left out (reported) instead of emptying the complete-case matrix
    assert complete.models == ("a", "b") and "c" in complete.models_dropped
    assert complete.item_ids == ("1", "2") and complete.n_items_dropped == 1
    keep = item_matrices(df, missing="keep")
    assert keep.n_items == 3 and np.isnan(keep.confidence[2, 1])


def test_realruns_tidy_reads(realruns_dir):
    df = read_records(realruns_dir / "cacioli_mmlu500_verbalized" / "tidy.csv")
    assert len(df) == 7306 and set(df["confidence_kind"]) == {"verbal_numeric"}
    m = item_matrices(df)
    assert m.n_models == 16
    # partial coverage (GLM-5 186 items) shrinks the complete-case set, and it is reported
    assert m.dropped_by_model["zai/glm-5"] == m.n_items_total - 186
    raw = pd.read_csv(realruns_dir / "cacioli_mmlu500_verbalized" / "tidy.csv")
    usable = raw.dropna(subset=["confidence", "correct"])
    per_item = usable.groupby(usable["item_id"].astype(str))["model"].nunique()
    complete = per_item[per_item == raw["model"].nunique()].index
    assert m.n_items == len(complete) and set(m.item_ids) == set(complete)
    assert m.n_items_total == raw["item_id"].nunique()


# --- validation rules pinned one at a time ------------------------------------------------


@pytest.mark.parametrize("empty", ["", "   ", None])
def test_empty_item_id_is_rejected(empty):
    with pytest.raises(RecordError, match=r"runs.csv: item_id is empty in 1 row \(row 4\)"):
        validate_records(_tiny(item_id=["1", "2", "1", empty, "1", "2"]), source="runs.csv")


def test_n_samples_zero_is_rejected_one_accepted():
    with pytest.raises(RecordError, match=r"n_samples must be an integer >= 1 in 1 row \(row 2\)"):
        validate_records(_tiny(n_samples=[1, 0, 1, 1, 1, 1]))
    out = validate_records(_tiny(n_samples=[1, 1, 20, 1, 1, 1]))
    assert out["n_samples"].tolist() == [1, 1, 20, 1, 1, 1]


def test_epoch_zero_is_accepted_negative_rejected():
    out = validate_records(_tiny(epoch=[0, 0, 1, 1, 2, 2]))
    assert out["epoch"].tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(RecordError, match=r"epoch must be an integer >= 0 in 1 row \(row 5\)"):
        validate_records(_tiny(epoch=[0, 0, 1, 1, -1, 2]))


def test_binary_confidence_counts_the_threshold_as_yes():
    df = pd.DataFrame(
        {
            "model": ["a"] * 5,
            "item_id": list("12345"),
            "confidence": [0.5, 0.49, 0.51, np.nan, 0.7],
            "correct": [1, 0, 1, 1, 0],
        }
    )
    mat = item_matrices(validate_records(df), missing="keep")
    np.testing.assert_array_equal(mat.binary_confidence()[:, 0], [1, 0, 1, np.nan, 1])
    np.testing.assert_array_equal(mat.binary_confidence(0.7)[:, 0], [0, 0, 0, np.nan, 1])


@pytest.mark.parametrize("missing", ["complete", "keep"])
def test_item_matrices_equal_a_pandas_pivot(missing):
    # Random partial coverage, unparseable and ungraded rows, a model with no usable item and a
    # requested model order: the matrices from integer codes against pandas' own pivot.
    rng = np.random.default_rng(2)
    rows = []
    for m in ("m3", "m1", "m2", "dead"):
        for i in rng.permutation(40)[: rng.integers(25, 40)]:
            conf = np.nan if (m == "dead" or rng.random() < 0.05) else rng.integers(0, 11) / 10
            correct = np.nan if rng.random() < 0.05 else float(rng.random() < 0.6)
            rows.append((m, f"q{i}", conf, correct))
    df = validate_records(pd.DataFrame(rows, columns=["model", "item_id", "confidence", "correct"]))
    for models in (None, ["m2", "m3"]):
        mat = item_matrices(df, missing=missing, models=models)
        sub = df if models is None else df[df["model"].isin(models)]
        usable = sub.dropna(subset=["confidence", "correct"])
        names = list(pd.unique(sub["model"])) if models is None else models
        kept = [m for m in names if m in set(usable["model"])]
        items = list(pd.unique(sub["item_id"]))
        conf = usable.pivot(index="item_id", columns="model", values="confidence")
        conf = conf.reindex(index=items, columns=kept)
        corr = usable.pivot(index="item_id", columns="model", values="correct")
        corr = corr.reindex(index=items, columns=kept)
        if missing == "complete":
            full = conf.notna().all(axis=1)
            conf, corr = conf[full], corr[full]
        assert mat.models == tuple(kept)
        assert mat.item_ids == tuple(conf.index)
        np.testing.assert_array_equal(mat.confidence, conf.to_numpy())
        np.testing.assert_array_equal(mat.correct, corr.to_numpy())
        assert set(mat.models_dropped) == set(names) - set(kept)
        for m in names:
            rows_m = sub[sub["model"] == m]
            assert mat.unparseable_by_model[m] == rows_m["confidence"].isna().sum()
            assert (
                mat.ungraded_by_model[m]
                == (rows_m["confidence"].notna() & rows_m["correct"].isna()).sum()
            )
