"""Record table: reading, validation errors naming the rows, matrices, models file."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metacog_metrics.records import (
    CATEGORICAL_COLUMNS,
    KEY_COLUMNS,
    RECORD_COLUMNS,
    RecordError,
    RecordWarning,
    _has_repeats,
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
    # the columns follow the order asked for, not the names' sorted order
    mm = item_matrices(df, benchmark="mmlu", models=["c", "a"])
    np.testing.assert_array_equal(mm.confidence, [[0.2, 0.9], [0.3, 0.1]])
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
    assert mat.binary_confidence().dtype == np.float64


# --- found by mutation testing (tools/mutation.py): messages, defaults, dtypes, matrices ------


def _exact(message: str) -> str:
    """A regex matching exactly ``message``."""
    import re

    return "^" + re.escape(message) + "$"


def test_validation_messages_are_exact():
    cases = [
        (
            _tiny().rename(columns={"confidence": "confidnce", "correct": "zzz"}),
            "runs.csv: unknown column(s) 'confidnce' (did you mean 'confidence'?), 'zzz'. A "
            f"record table has the columns {', '.join(RECORD_COLUMNS)} and optionally "
            "probe_status, grade_status, answer, harness, source, epoch, n_samples, doc_hash, "
            "prompt_hash, task_version; rename or drop the others",
        ),
        (
            _tiny().drop(columns=["correct", "item_id"]),
            "runs.csv: missing required column(s) item_id, correct; the minimal record table "
            "is model,item_id,confidence,correct",
        ),
        (
            _tiny(confidence=[1.5, 0, -0.25, 1, 2, 3]),
            "runs.csv: confidence outside [0, 1] in 4 rows (rows 1, 3, 5, 6), e.g. 1.5, -0.25, "
            "2; rescale percentages to [0, 1] (NaN marks an unparseable reply)",
        ),
        (
            _tiny(correct=[2, 0, 1, 3, -1, 4]),
            "runs.csv: correct must be 0 or 1 (NaN when ungraded) in 4 rows (rows 1, 4, 5, 6), "
            "e.g. 2, 3, -1",
        ),
        (
            _tiny(correct=["x", "0", "1", "y", "z", "w"]),
            "runs.csv: correct is not a number in 4 rows (rows 1, 4, 5, 6), e.g. 'x', 'y', 'z'",
        ),
        (
            _tiny(confidence_kind=["verbal", "verbal", "logits", "logits", "logits", "logits"]),
            "runs.csv: unknown confidence_kind ['logits', 'verbal'] in 6 rows (rows 1, 2, 3, 4, "
            "5 and 1 more); use one of verbal_binary, verbal_numeric, sampled, logprob",
        ),
        (
            _tiny(probe_status=["ok", "ok", "weird", "ok", "ok", "ok"]),
            "runs.csv: probe_status must be one of ok, unparseable, refusal, empty in 1 row "
            "(row 3)",
        ),
        (
            _tiny(epoch=["0", "x", "1", "1", "2", "2"]),
            "runs.csv: epoch is not a number in 1 row (row 2), e.g. 'x'",
        ),
        (
            _tiny(model=["a", "a", "b", "b", "a", "a"], item_id=["1", "2", "1", "2", "1", "2"]),
            "runs.csv: 4 rows repeat a (model, benchmark, item_id, probe, confidence_kind) key "
            "in 2 group(s): (model='a', item_id='1') at row 1, row 5; (model='a', "
            "item_id='2') at row 2, row 6",
        ),
    ]
    for df, message in cases:
        with pytest.raises(RecordError, match=_exact(message)):
            validate_records(df, source="runs.csv")


def test_validation_message_defaults_to_the_dataframe_as_source():
    with pytest.raises(RecordError, match=_exact("<DataFrame>: model is empty in 1 row (row 2)")):
        validate_records(_tiny(model=["a", "", "b", "b", "c", "c"]))
    with pytest.raises(
        RecordError, match=_exact("<DataFrame>: expected a pandas DataFrame, got list")
    ):
        validate_records([{"model": "a"}])


def test_five_bad_rows_are_listed_without_more():
    with pytest.raises(RecordError, match=r"in 5 rows \(rows 1, 2, 3, 4, 5\), e\.g\."):
        validate_records(_tiny(confidence=[2, 2, 2, 2, 2, 1]))


def test_repeated_columns_are_named():
    df = _tiny()
    df.insert(4, "confidence", 0.5, allow_duplicates=True)
    with pytest.raises(RecordError, match=_exact("t.csv: repeated column(s) confidence")):
        validate_records(df, source="t.csv")
    df.insert(5, "correct", 1, allow_duplicates=True)
    with pytest.raises(RecordError, match=_exact("t.csv: repeated column(s) confidence, correct")):
        validate_records(df, source="t.csv")


def test_duplicate_message_keeps_file_order_and_caps_examples():
    # five groups in order b, a, c, d, e; the first group repeated six times
    rows = [("b", "9")] * 6 + [(m, "1") for m in "acde" for _ in range(2)]
    df = pd.DataFrame(rows, columns=["model", "item_id"]).assign(confidence=1.0, correct=1.0)
    with pytest.raises(RecordError) as info:
        validate_records(df, source="s")
    message = str(info.value)
    assert message.startswith("s: 14 rows repeat a (model, benchmark, item_id, probe, ")
    assert "in 5 group(s): (model='b', item_id='9') at row 1, row 2, row 3, row 4; " in message
    assert message.endswith("(model='c', item_id='1') at row 9, row 10")  # three groups shown
    assert "'d'" not in message


def test_text_columns_and_flags_are_normalised():
    out = validate_records(
        _tiny(
            item_id=[1.0, 2.0, 1.0, 2.0, 1.0, 2.0],  # float ids (a NaN upcast) lose ".0"
            benchmark=["squad", "", None, "squad", "squad", " squad "],
            confidence_kind=["", None, "", "verbal_binary", "", ""],
            answer=pd.array([True, False, True, None, False, True], dtype="boolean"),
            reasoning=[True, False, "", "yes", None, "0"],
        )
    )
    assert out["item_id"].tolist() == ["1", "2", "1", "2", "1", "2"]
    assert out["benchmark"].tolist() == ["squad", "all", "all", "squad", "squad", "squad"]
    assert out["confidence_kind"].tolist() == ["verbal_binary"] * 6
    answer = out["answer"].tolist()
    assert answer[:3] + answer[4:] == ["true", "false", "true", "false", "true"]
    assert pd.isna(answer[3])
    assert str(out["reasoning"].dtype) == "boolean"
    assert out["reasoning"].tolist() == [True, False, pd.NA, True, pd.NA, False]
    assert str(validate_records(_tiny())["reasoning"].dtype) == "boolean"
    # non-integral floats keep their decimals
    assert validate_records(_tiny(item_id=[0.5, 1.5, 0.5, 1.5, 0.5, 1.5]))["item_id"][0] == "0.5"
    with pytest.raises(RecordError, match="item_id is empty"):
        validate_records(_tiny(item_id=[1.0, np.nan, 1.0, 2.0, 1.0, 2.0]))


def test_numbers_from_text_bools_and_blanks():
    out = validate_records(
        _tiny(
            confidence=[" 1 ", "0", "", "1.0", "0", None],
            correct=["TRUE", "false", " True ", "0", "1", "False"],
            epoch=[0, 1, np.nan, 2, 3, 4],
            n_samples=[True, True, True, True, True, True],
        )
    )
    assert out["confidence"].tolist()[:2] == [1.0, 0.0] and np.isnan(out["confidence"][2])
    assert out["correct"].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]
    assert str(out["epoch"].dtype) == "Int64" and out["epoch"].isna().tolist()[2]
    assert out["n_samples"].tolist() == [1] * 6
    bools = validate_records(_tiny(correct=[True, False, True, False, True, False]))
    assert bools["correct"].tolist() == [1.0, 0.0, 1.0, 0.0, 1.0, 0.0]


def test_read_records_file_types_and_messages(tmp_path):
    from metacog_metrics.records import _format

    for name in ["a.parquet", "a.PQ"]:
        assert _format(tmp_path / name) == "parquet"
    for name in ["a.csv", "a.CSV.GZ", "a.csv.bz2", "a.csv.xz", "a.csv.zst"]:
        assert _format(tmp_path / name) == "csv"
    df = validate_records(_tiny(item_id=["007", "1e3", "007", "1e3", "007", "1e3"]))
    # Parquet holds the record columns only (no index column for other readers to trip on)
    import pyarrow.parquet as pq

    assert pq.read_schema(write_records(df, tmp_path / "s.parquet")).names == list(df.columns)
    for name in ("r.pq", "r.csv.gz", "r.csv.bz2", "r.csv.xz"):
        back = read_records(write_records(df, tmp_path / name))
        assert back["item_id"].tolist() == df["item_id"].tolist()  # "007" stays "007"
        assert back.attrs["inputs"] == [str(tmp_path / name)]
    # compressed as the suffix says (the temporary file's name does not carry it)
    assert (tmp_path / "r.csv.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert (tmp_path / "r.csv.bz2").read_bytes()[:3] == b"BZh"
    with pytest.raises(FileNotFoundError, match=_exact(f"record file not found: {tmp_path}/x")):
        read_records(tmp_path / "x.csv".replace(".csv", ""))
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(b"not parquet")
    with pytest.raises(RecordError, match=f"^{broken}: cannot be read as a record table: "):
        read_records(broken)
    with pytest.raises(RecordError, match=_exact("no record files given")):
        read_records([])
    header = tmp_path / "h.csv"
    header.write_text("model,item_id,confidence,correct\n")
    with pytest.raises(
        RecordError, match=_exact(f"{header}: no records (the file holds no data rows)")
    ):
        read_records(header)
    bad = tmp_path / "bad.csv"
    _tiny(confidence=[1, 0, 7, 1, 0, 0]).to_csv(bad, index=False)
    with pytest.raises(RecordError, match=f"^{bad}: confidence outside"):
        read_records(bad)
    with pytest.raises(RecordError, match=f"^{tmp_path / 'w.csv'}: confidence outside"):
        write_records(_tiny(confidence=[1, 0, 7, 1, 0, 0]), tmp_path / "w.csv")


def test_read_records_concatenates_files(tmp_path):
    one, two = tmp_path / "one.csv", tmp_path / "two.csv"
    _tiny(reasoning=[True, True, False, False, None, None]).to_csv(one, index=False)
    _tiny(benchmark="mmlu").to_csv(two, index=False)
    df = read_records([one, two])
    assert list(df.columns) == list(RECORD_COLUMNS)
    assert df.index.tolist() == list(range(12))
    assert str(df["reasoning"].dtype) == "boolean"
    assert df["reasoning"].tolist()[:4] == [True, True, False, False]
    assert df.attrs["inputs"] == [str(one), str(two)]
    # rows are numbered per file: the repeat names row 2 of each file
    _tiny().iloc[[1]].to_csv(two, index=False)
    with pytest.raises(RecordError, match=_exact(
        "2 rows repeat a (model, benchmark, item_id, probe, confidence_kind) key in 1 "
        f"group(s): (model='a', item_id='2') at {one} row 2, {two} row 1"
    )):  # fmt: skip
        read_records([one, two])


def test_read_records_warns_at_the_callers_line(tmp_path):
    import warnings

    path = tmp_path / "r.csv"
    _tiny(confidence=[1, np.nan, 1, 1, 0, 0]).to_csv(path, index=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = read_records(path)
    assert [str(w.message) for w in caught] == ["1 record(s) with an unparseable (NaN) confidence"]
    # the warning points at the caller, not into the package (stacklevel 2; an exact
    # filename check would fail under mutmut, whose trampoline is the caller there)
    assert "metacog_metrics" not in caught[0].filename
    assert df.attrs["warnings"] == ["1 record(s) with an unparseable (NaN) confidence"]


def test_models_file_messages_and_traits(tmp_path):
    from metacog_metrics.records import apply_model_traits

    path = tmp_path / "m.yaml"
    with pytest.raises(FileNotFoundError, match=_exact(f"models file not found: {path}")):
        load_models_file(path)
    path.write_text("a: [unclosed\n")
    with pytest.raises(RecordError, match=f"^{path}: not valid YAML: "):
        load_models_file(path)
    path.write_text("- a\n- b\n")
    with pytest.raises(
        RecordError, match=_exact(f"{path}: expected a mapping of model names to traits")
    ):
        load_models_file(path)
    path.write_text("a: reasoning\n")
    with pytest.raises(RecordError, match=_exact(
        f"{path}: model 'a': expected a mapping of traits (e.g. reasoning: true), got 'reasoning'"
    )):  # fmt: skip
        load_models_file(path)
    path.write_text("models:\n  a:\n  b: {reasoning: true}\n")
    assert load_models_file(path) == {"a": {}, "b": {"reasoning": True}}
    path.write_text("")
    assert load_models_file(path) == {}

    df = validate_records(_tiny(reasoning=[None, None, None, None, True, True]))
    notes = apply_model_traits(df, {"a": {"reasoning": True}, "x": {}})
    assert notes == [
        "models: 1 model(s) not in the records: x",
        "models: no reasoning flag for 2 model(s): b, c",
    ]
    # a model without a trait keeps the flag its records carry
    assert df["reasoning"].tolist() == [True, True, pd.NA, pd.NA, True, True]
    # no reasoning flag in the traits at all: nothing to report about missing flags
    assert apply_model_traits(validate_records(_tiny()), {"a": {}}, source="f") == []
    many = {f"m{i:02d}": {"reasoning": False} for i in range(11)}
    notes = apply_model_traits(validate_records(_tiny()), many, source="f")
    listed = ", ".join(f"m{i:02d}" for i in range(10))
    assert notes[0] == f"f: 11 model(s) not in the records: {listed} ..."
    assert notes[1] == "f: no reasoning flag for 3 model(s): a, b, c"
    ten = dict(list(many.items())[:10])
    assert apply_model_traits(validate_records(_tiny()), ten, source="f")[0] == (
        f"f: 10 model(s) not in the records: {listed}"
    )
    # the same caps for models without a flag: 11 listed as 10 and "...", 10 in full
    for n_models, tail in ((12, " ..."), (11, "")):
        names = [f"r{i:02d}" for i in range(n_models)]
        records = validate_records(
            pd.DataFrame({"model": names, "item_id": "1", "confidence": 1.0, "correct": 1.0})
        )
        notes = apply_model_traits(records, {"r00": {"reasoning": True}}, source="f")
        shown = ", ".join(names[1:11])
        assert notes == [f"f: no reasoning flag for {n_models - 1} model(s): {shown}{tail}"]


def test_read_records_notes_name_the_models_file(tmp_path):
    path, models = tmp_path / "r.csv", tmp_path / "models.yaml"
    _tiny().to_csv(path, index=False)
    models.write_text("a: {reasoning: true}\nzz: {reasoning: false}\n")
    with pytest.warns(RecordWarning):
        df = read_records(path, models_file=models)
    assert df.attrs["warnings"] == [
        f"{models}: 1 model(s) not in the records: zz",
        f"{models}: no reasoning flag for 2 model(s): b, c",
    ]


def test_item_matrices_of_raw_records_and_their_messages():
    raw = pd.DataFrame(
        {
            "model": [2, 1, 2, 1, 2, 1, 3],
            "item_id": [10, 10, 7, 7, 1, 1, 10],
            "confidence": [0.9, 0.2, 0.6, np.nan, 0.1, 0.8, np.nan],
            "correct": [1, 0, 0, 1, np.nan, 1, 1],
        }
    )
    m = item_matrices(raw, missing="keep")
    assert (m.benchmark, m.probe, m.confidence_kind, m.missing) == (
        "all", "prospective", "verbal_numeric", "keep",
    )  # fmt: skip
    assert m.models == ("2", "1") and m.item_ids == ("10", "7", "1")
    assert m.models_dropped == {"3": "no item with both a confidence and a grade"}
    np.testing.assert_array_equal(m.confidence, [[0.9, 0.2], [0.6, np.nan], [np.nan, 0.8]])
    np.testing.assert_array_equal(m.correct, [[1, 0], [0, np.nan], [np.nan, 1]])
    assert m.unparseable_by_model == {"2": 0, "1": 1, "3": 1}
    assert m.ungraded_by_model == {"2": 1, "1": 0, "3": 0}
    assert m.dropped_by_model == {"2": 1, "1": 1}
    assert m.reasoning == (None, None)
    complete = item_matrices(raw)
    assert complete.item_ids == ("10",) and complete.n_items_dropped == 2
    # any index and float ids (a NaN upcast) give the same matrices
    shuffled = raw.assign(item_id=raw["item_id"].astype(float)).set_axis(range(70, 77))
    again = item_matrices(shuffled.iloc[::-1], missing="keep")
    assert again.item_ids == ("10", "1", "7") and again.models == ("1", "2")
    np.testing.assert_array_equal(again.correct, [[0, 1], [1, np.nan], [np.nan, 0]])
    np.testing.assert_array_equal(complete.correct, [[1, 0]])
    only_dropped = item_matrices(raw, models=["3"])
    assert only_dropped.models == () and only_dropped.n_items == 0
    assert only_dropped.n_items_total == 1 and only_dropped.n_items_dropped == 1

    with pytest.raises(ValueError, match=_exact("missing must be 'complete' or 'keep', got 'all'")):
        item_matrices(raw, missing="all")
    with pytest.raises(RecordError, match=_exact("records lack column(s) item_id, correct")):
        item_matrices(raw.drop(columns=["item_id", "correct"]))
    with pytest.raises(RecordError, match=_exact(
        "all/prospective/verbal_numeric: no records for model(s) ['9']"
    )):  # fmt: skip
        item_matrices(raw, models=[9])
    twice = pd.concat([raw, raw.iloc[[0]].assign(confidence=0.3)])
    with pytest.raises(RecordError, match=r"^records: 2 rows repeat a "):  # kind inference
        item_matrices(twice)
    with pytest.raises(RecordError, match=_exact(
        "all/prospective/verbal_numeric: a model repeats an item_id"
    )):  # fmt: skip
        item_matrices(twice.assign(confidence_kind="verbal_numeric"))
    flags = raw.assign(reasoning=[True, False, False, False, True, False, None])
    with pytest.raises(RecordError, match=_exact(
        "all/prospective/verbal_numeric: conflicting reasoning flags for model(s) ['2']"
    )):  # fmt: skip
        item_matrices(flags)


def test_item_matrices_select_probe_and_kind():
    base = _tiny(benchmark="squad")
    df = validate_records(
        pd.concat(
            [
                base.assign(probe="prospective"),
                base.assign(probe="counterfactual", correct=[0, 0, 0, 0, 1, 1]),
                base.assign(confidence_kind="logprob", confidence=[0.9, 0.1, 0.8, 0.7, 0.2, 0.3]),
            ]
        )
    )
    with pytest.raises(RecordError, match=_exact(
        "the records hold 3 (benchmark, probe, confidence_kind) groups "
        "(squad/prospective/verbal_binary; squad/counterfactual/verbal_binary; "
        "squad/prospective/logprob); choose one with benchmark=, probe= and confidence_kind="
    )):  # fmt: skip
        item_matrices(df)
    cf = item_matrices(df, probe="counterfactual")
    assert cf.probe == "counterfactual"
    np.testing.assert_array_equal(cf.correct, [[0, 0, 1], [0, 0, 1]])
    lp = item_matrices(df, probe="prospective", confidence_kind="logprob")
    assert lp.confidence_kind == "logprob"
    np.testing.assert_array_equal(lp.confidence, [[0.9, 0.8, 0.2], [0.1, 0.7, 0.3]])
    with pytest.raises(RecordError, match="no records with probe 'retro'"):
        item_matrices(df, probe="retro")
    with pytest.raises(RecordError, match="no records with confidence_kind 'sampled'"):
        item_matrices(df, confidence_kind="sampled")


@pytest.mark.parametrize("missing", ["complete", "keep", "keep, then complete_cases()"])
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
        if missing.startswith("keep,"):
            mat = item_matrices(df, missing="keep", models=models).complete_cases()
            assert mat.missing == "complete"
        else:
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
        if missing != "keep":
            full = conf.notna().all(axis=1)
            conf, corr = conf[full], corr[full]
        assert mat.n_items_total == len(items)
        assert mat.n_items_dropped == len(items) - len(conf)
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


def test_item_matrices_refuse_a_repeat_anywhere_in_the_table():
    # the repeated (model, item) is model c's item 2, the last cell in sorted order
    df = _tiny(confidence_kind="verbal_binary")
    df = pd.concat([df, df.iloc[[5]]], ignore_index=True)
    with pytest.raises(
        RecordError, match=r"^all/prospective/verbal_binary: a model repeats an item_id$"
    ):
        item_matrices(df)


def test_confidence_kind_is_inferred_per_benchmark_and_probe():
    # one non-binary confidence makes its (benchmark, probe) numeric, and only that one: with
    # two benchmarks x two probes, (A, q) numeric must not make (B, p) numeric too
    rows = []
    for bench, probe, confs in (
        ("A", "p", [1.0, 0.0]),
        ("A", "q", [1.0, 0.7]),
        ("B", "p", [0.0, 1.0]),
        ("B", "q", [0.0, 0.0]),
    ):
        for i, c in enumerate(confs):
            rows.append({"model": "m", "item_id": str(i), "benchmark": bench, "probe": probe,
                         "confidence": c, "correct": 1})  # fmt: skip
    out = validate_records(pd.DataFrame(rows))
    kinds = out.groupby(["benchmark", "probe"])["confidence_kind"].agg(set).to_dict()
    assert kinds == {
        ("A", "p"): {"verbal_binary"},
        ("A", "q"): {"verbal_numeric"},
        ("B", "p"): {"verbal_binary"},
        ("B", "q"): {"verbal_binary"},
    }


def test_kind_groups_of_many_benchmarks_stay_apart():
    # four benchmarks x two probes: every (benchmark, probe) pair is its own group, however the
    # pairs are numbered; only (A, q) has a non-binary confidence
    rows = []
    for bench in "ABCD":
        for probe in "pq":
            confs = [1.0, 0.7] if (bench, probe) == ("A", "q") else [0.0, 1.0]
            for i, c in enumerate(confs):
                rows.append({"model": "m", "item_id": str(i), "benchmark": bench, "probe": probe,
                             "confidence": c, "correct": 1})  # fmt: skip
    out = validate_records(pd.DataFrame(rows))
    kinds = out.groupby(["benchmark", "probe"])["confidence_kind"].agg(set).to_dict()
    expected = {(b, p): {"verbal_binary"} for b in "ABCD" for p in "pq"}
    expected["A", "q"] = {"verbal_numeric"}
    assert kinds == expected


def test_a_models_file_adds_its_notes_to_the_records_notes(tmp_path):
    models = tmp_path / "models.yaml"
    models.write_text("models:\n  a: {reasoning: true}\n  b: {reasoning: false}\n  c: {}\n")
    path = tmp_path / "r.csv"
    _tiny(confidence=[1, np.nan, 1, 1, 0, 0]).to_csv(path, index=False)
    with pytest.warns(RecordWarning):
        df = read_records(path, models_file=models)
    assert df.attrs["warnings"] == [
        f"{models}: no reasoning flag for 1 model(s): c",
        "1 record(s) with an unparseable (NaN) confidence",
    ]


@pytest.mark.parametrize(
    "values",
    [["x", "x", "x"], ["x", "y", "x"], ["x", None], [None, np.nan], [None, "x"], [1, 1.0],
     [1, "1"], ["x"], []],
)  # fmt: skip
def test_single_valued_counts_every_missing_value_as_one(values):
    from metacog_metrics.records import _single_valued

    col = pd.Series(values, dtype=object)
    expected = len({None if pd.isna(v) else v for v in values}) == 1
    assert _single_valued(col) == expected
    assert _single_valued(col.astype("category")) == expected


@pytest.mark.parametrize(
    ("key", "span", "repeats"),
    [
        ([0, 5, 3], 6, False),  # dense: counted
        ([0, 5, 5], 6, True),
        ([10**11, 5, 7], 10**12, False),  # sparse: sorted
        ([10**11, 5, 10**11], 10**12, True),
        ([-1, 4, -1], 6, True),  # a missing code (-1) is sorted, not counted
        ([], 6, False),
        ([3], 6, False),
    ],
)
def test_repeat_check_counts_dense_keys_and_sorts_sparse_ones(key, span, repeats):
    assert _has_repeats(np.array(key, dtype=np.int64), span) is repeats


def test_parquet_text_read_as_categories_validates_as_plain_strings(tmp_path):
    # Parquet text columns are read dictionary-encoded (categoricals); the validated table must
    # be the one the plain strings give: stripped ids, numbers as text, repeats still refused.
    raw = pd.DataFrame(
        {
            "model": ["a", "a", "b", "b", "b"],
            "item_id": [" 1", "2", "1 ", "2", "x"],
            "confidence": [1.0, 0.0, 1.0, 0.0, 1.0],
            "correct": [1.0, 0.0, 1.0, 0.0, 0.0],
            "question": ["q1", None, "q1", "q2", "q3"],
        }
    )
    path = tmp_path / "runs.parquet"
    raw.to_parquet(path)
    read = read_records([path])
    pd.testing.assert_frame_equal(read, validate_records(raw, source=str(path)))
    assert read["item_id"].tolist() == ["1", "2", "1", "2", "x"]
    assert read["question"].tolist() == ["q1", None, "q1", "q2", "q3"]
    as_categories = raw.assign(item_id=pd.Categorical([1, 2, 1, 2, np.nan]))
    with pytest.raises(RecordError, match=r"item_id is empty in 1 row \(row 5\)"):
        validate_records(as_categories)
    repeated = raw.assign(item_id=pd.Categorical(["1", "1 ", "1", "2", "x"]))
    with pytest.raises(RecordError, match="repeat a"):
        validate_records(repeated)


def test_item_matrices_of_raw_records_refuse_a_missing_model_or_item():
    # raw (unvalidated) records: a row without a model or item id is refused, never put in a
    # column or row of its own (or wrapped around to the last one); numbers become names
    for missing in (None, np.nan):
        raw = _tiny(model=["a", "a", missing, missing, "c", "c"], confidence_kind="verbal_binary")
        with pytest.raises(RecordError, match=r"model is missing in 2 row\(s\)"):
            item_matrices(raw)
    raw = _tiny(item_id=["1", "2", "1", None, "1", "2"], confidence_kind="verbal_binary")
    with pytest.raises(RecordError, match=r"item_id is missing in 1 row\(s\)"):
        item_matrices(raw)
    mat = item_matrices(_tiny(model=[7, 7, 8.0, 8.0, "c", "c"], confidence_kind="verbal_binary"))
    assert mat.models == ("7", "8.0", "c")


def test_complete_cases_without_any_usable_model_has_no_items():
    raw = _tiny(confidence=[np.nan] * 6, confidence_kind="verbal_binary")
    keep = item_matrices(raw, missing="keep")
    assert keep.models == () and keep.n_items == 2
    full = keep.complete_cases()
    assert full.item_ids == () and full.confidence.shape == (0, 0)
    assert full.n_items_dropped == 2 and full.missing == "complete"
    direct = item_matrices(raw, missing="complete")
    assert (direct.item_ids, direct.n_items_dropped) == (full.item_ids, full.n_items_dropped)


def test_item_matrices_keep_reasoning_flags_of_the_models_asked_for():
    df = validate_records(_tiny(reasoning=[True, True, False, False, None, None]))
    assert item_matrices(df, models=["b", "a"]).reasoning == (False, True)
    assert item_matrices(df, models=["c", "b"]).reasoning == (None, False)
    with pytest.raises(ValueError, match=r"models repeats a name: \['a', 'a'\]"):
        item_matrices(df, models=["a", "a"])


def test_missing_and_blank_item_ids_are_both_counted_empty():
    with pytest.raises(RecordError, match=r"item_id is empty in 2 rows \(rows 2, 5\)"):
        validate_records(_tiny(item_id=["1", None, "1", "2", " ", "2"]))


def _key_table(rng: np.random.Generator, n_rows: int, sizes: dict[str, int]) -> pd.DataFrame:
    """Random key columns: column ``c`` draws from ``sizes[c]`` names (one of them None when
    the size is negative, a missing value)."""
    cols = {}
    for name in KEY_COLUMNS:
        size = sizes[name]
        names = [f"{name[0]}{j}" for j in range(abs(size))] + ([None] if size < 0 else [])
        cols[name] = pd.Series(
            [names[j] for j in rng.integers(len(names), size=n_rows)], dtype=object
        )
    return pd.DataFrame(cols)


def test_repeated_key_precheck_agrees_with_pandas_duplicated_on_every_path():
    # The fast pre-check of _duplicate_error must say exactly whether rows repeat a key (a
    # false positive sends every clean table through the slow pandas check): compared with
    # DataFrame.duplicated on random tables, with and without the codes and the known
    # single-valued columns validate_records passes, unique and with one row repeated; small
    # alphabets take the counting path, large ones the sorting path.
    from metacog_metrics.records import _any_repeated_key

    rng = np.random.default_rng(20)
    seen = {True: 0, False: 0}
    for trial in range(400):
        sizes = {name: int(rng.choice([1, 1, 2, 3, -2, 7, 12])) for name in KEY_COLUMNS}
        df = _key_table(rng, int(rng.integers(1, 40)), sizes)
        unique = df.drop_duplicates(ignore_index=True)
        repeated = pd.concat([unique, unique.iloc[[rng.integers(len(unique))]]], ignore_index=True)
        for table in (unique, repeated):
            truth = bool(table.duplicated(list(KEY_COLUMNS)).any())
            seen[truth] += 1
            constant = {c for c in KEY_COLUMNS if table[c].nunique(dropna=False) == 1}
            codes = {}
            for c in ("model", "item_id"):
                row_codes, names = pd.factorize(table[c])
                codes[c] = (row_codes.astype(np.int64), len(names))
            assert _any_repeated_key(table) is truth, (trial, sizes)
            assert _any_repeated_key(table, constant) is truth, (trial, sizes)
            assert _any_repeated_key(table, constant, codes) is truth, (trial, sizes)
            assert _any_repeated_key(table, (), codes) is truth, (trial, sizes)
    assert min(seen.values()) >= 400


def test_repeated_key_precheck_beyond_one_int64_falls_back_to_pandas():
    # five columns of 6000 distinct names: 6001**5 combinations do not fit in an int64
    from metacog_metrics.records import _any_repeated_key

    n = 6000
    df = pd.DataFrame({c: [f"{c[0]}{i}" for i in range(n)] for c in KEY_COLUMNS})
    df["confidence"] = np.arange(n) / n  # not part of the key
    assert _any_repeated_key(df) is False
    df.loc[n] = df.loc[17]
    df.loc[n, "confidence"] = 0.99  # the same key with another confidence: still a repeat
    assert _any_repeated_key(df) is True
    # the last row repeats row 18, named by the full check
    message = _duplicate_error_text(df)
    assert "2 rows repeat" in message and "row 18" in message and f"row {n + 1}" in message


def _duplicate_error_text(df: pd.DataFrame) -> str:
    from metacog_metrics.records import _duplicate_error

    message = _duplicate_error(df, lambda i: f"row {i + 1}")
    assert message is not None
    return message


def _text_inputs() -> dict[str, pd.Series]:
    """One text column (6 rows) in each form readers hand over, all meaning the same text."""
    plain = ["1", "x", "1", None, "y", "2"]
    return {
        "object": pd.Series([" 1", "x", "1 ", None, "y", "2"], dtype=object),
        "string": pd.Series(plain, dtype="string"),
        "category": pd.Series(plain, dtype="category"),
        "mixed objects": pd.Series([1, "x", "1", None, "y", 2], dtype=object),
    }


@pytest.mark.parametrize("form", list(_text_inputs()))
def test_validated_text_columns_are_python_strings_in_object_columns(form):
    # the canonical table: text columns of dtype object holding Python str (or None), model
    # and item_id categoricals of Python str, floats for confidence and correct, a fresh
    # 0..n-1 index, whatever form the input had (pandas 3 would infer its "str" dtype for a
    # column of strings built without dtype=object)
    col = _text_inputs()[form]
    df = pd.DataFrame(
        {
            "model": [f"m{i}" for i in range(6)],
            "benchmark": ["b", "b", "c", "c", "b", "b"],
            "item_id": [str(i) for i in range(6)],
            "probe": ["p"] * 6,
            "confidence": [0.0, 1.0, 1.0, 0.0, 1.0, 1.0],
            "correct": [1, 0, 1, 0, 1, 1],
        },
        index=[10, 3, 7, 2, 9, 1],
    )
    df["question"] = col.set_axis(df.index)
    df["answer"] = col.set_axis(df.index)
    out = validate_records(df)
    pd.testing.assert_index_equal(out.index, pd.RangeIndex(6))
    for name in out.columns:
        if name in ("confidence", "correct"):
            assert out[name].dtype == np.float64, name
        elif name == "reasoning":
            assert str(out[name].dtype) == "boolean"
        elif name in CATEGORICAL_COLUMNS:
            assert isinstance(out[name].dtype, pd.CategoricalDtype), name
            assert all(type(v) is str for v in out[name]), (form, name)
        else:
            assert out[name].dtype == object, (form, name, out[name].dtype)
            assert all(pd.isna(v) or type(v) is str for v in out[name]), (form, name)
    expected = ["1", "x", "1", "?", "y", "2"]
    assert out["question"].fillna("?").tolist() == expected
    assert out["answer"].fillna("?").tolist() == expected
    assert out["benchmark"].tolist() == ["b", "b", "c", "c", "b", "b"]
    assert out["confidence_kind"].tolist() == ["verbal_binary"] * 6
    assert out["solve_text"].tolist() == [None] * 6


def test_defaulted_columns_are_object_columns_of_python_strings():
    # benchmark, probe and confidence_kind absent: filled with their defaults (and the
    # inferred kind), still object columns of Python str
    out = validate_records(_tiny())
    for name, value in (
        ("benchmark", "all"),
        ("probe", "prospective"),
        ("confidence_kind", "verbal_binary"),
    ):
        assert out[name].dtype == object, name
        assert [type(v) for v in out[name]] == [str] * 6 and set(out[name]) == {value}
    for name in ("question", "probe_text", "solve_text"):
        assert out[name].dtype == object and out[name].tolist() == [None] * 6


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (pd.Series([True, False, True, True]), ["true", "false", "true", "true"]),
        (pd.Series([True, None, False, True], dtype="boolean"), ["true", "?", "false", "true"]),
        (pd.Series([1.0, np.nan, 20.0, 1.0]), ["1", "?", "20", "1"]),  # Parquet/NaN upcasts
        (pd.Series([1.5, np.nan, 2.0, 1.5]), ["1.5", "?", "2.0", "1.5"]),
        (pd.Series([3, 1, 3, 2]), ["3", "1", "3", "2"]),
    ],
)
def test_text_columns_of_other_dtypes_become_object_columns_of_text(values, expected):
    df = pd.DataFrame(
        {
            "model": ["a", "b", "c", "d"],
            "item_id": ["1", "1", "1", "1"],
            "confidence": [1.0, 0.0, 1.0, 1.0],
            "correct": [1, 0, 1, 1],
            "answer": values,
        }
    )
    out = validate_records(df)["answer"]
    assert out.dtype == object
    assert all(pd.isna(v) or type(v) is str for v in out)
    assert out.fillna("?").tolist() == expected
    # the same values as item ids of one model: rows of equal text repeat an item
    ids = df.assign(model="a", item_id=values).dropna(subset=["item_id"])
    n_repeated = sum(expected.count(v) > 1 for v in expected if v != "?")
    with pytest.raises(RecordError, match=rf"^<DataFrame>: {n_repeated} rows repeat a "):
        validate_records(ids)


def test_blank_numbers_are_missing_and_words_true_false_are_one_and_zero():
    # CSV text: "" and whitespace are missing (not "not a number"), true/false in any case
    # and spacing are 1 and 0
    df = pd.DataFrame(
        {
            "model": list("abcd"),
            "item_id": list("1111"),
            "confidence": ["", " ", "0.5", " TRUE "],
            "correct": ["1", "0", "", " false"],
        }
    )
    out = validate_records(df)
    np.testing.assert_array_equal(out["confidence"], [np.nan, np.nan, 0.5, 1.0])
    np.testing.assert_array_equal(out["correct"], [1.0, 0.0, np.nan, 0.0])


@pytest.mark.parametrize("form", ["raw", "validated", "categorical"])
def test_item_matrices_names_are_python_strings(form):
    # models and item ids come out as plain str (not NumPy's str_), whatever the input held
    raw = pd.DataFrame(
        {
            "model": ["a", "b", "a", "b"],
            "item_id": ["1", "1", "2", "2"],
            "confidence": [0.5, 1.0, 0.0, 1.0],
            "correct": [1, 0, 1, 1],
        }
    )
    df = {
        "raw": raw,
        "validated": validate_records(raw),
        "categorical": raw.astype({"model": "category", "item_id": "category"}),
    }[form]
    m = item_matrices(df)
    assert m.models == ("a", "b") and m.item_ids == ("1", "2")
    assert [type(v) for v in (*m.models, *m.item_ids)] == [str] * 4
    # and after complete_cases, from ragged matrices (item 1 lacks model b's confidence)
    ragged = df.copy()
    ragged["confidence"] = [0.5, np.nan, 0.0, 1.0]
    full = item_matrices(ragged, missing="keep").complete_cases()
    assert full.item_ids == ("2",) and type(full.item_ids[0]) is str
    assert full.n_items_dropped == 1 and full.missing == "complete"
    # complete matrices are their own complete cases (equal, not only the same items)
    again = m.complete_cases()
    assert again.item_ids == m.item_ids and again.n_items_dropped == m.n_items_dropped == 0
    np.testing.assert_array_equal(again.confidence, m.confidence)


def test_item_matrices_selection_on_a_column_of_one_value():
    # a column holding one value: asking for that value keeps every row (a one-row table too),
    # asking for another is refused, naming what is present
    one = pd.DataFrame(
        {"model": ["a"], "item_id": ["1"], "confidence": [1.0], "correct": [1.0]}
    ).assign(benchmark="mmlu")
    m = item_matrices(one, benchmark="mmlu")
    assert m.benchmark == "mmlu" and m.models == ("a",) and m.item_ids == ("1",)
    np.testing.assert_array_equal(m.confidence, [[1.0]])
    with pytest.raises(
        RecordError, match=_exact("no records with benchmark 'squad'; present: ['mmlu']")
    ):
        item_matrices(one, benchmark="squad")
    with pytest.raises(
        RecordError, match=_exact("no records with probe 'retro'; present: ['prospective']")
    ):
        item_matrices(one, probe="retro")


def test_item_matrices_read_numbers_held_as_objects():
    # raw records whose numbers sit in object columns (None for missing): float matrices
    raw = pd.DataFrame(
        {
            "model": ["a", "b", "a", "b"],
            "item_id": ["1", "1", "2", "2"],
            "confidence": pd.Series([0.5, None, 0.25, 1], dtype=object),
            "correct": pd.Series([1, 0, None, 1], dtype=object),
            "confidence_kind": "verbal_numeric",
        }
    )
    m = item_matrices(raw, missing="keep")
    assert m.confidence.dtype == np.float64 and m.correct.dtype == np.float64
    np.testing.assert_array_equal(m.confidence, [[0.5, np.nan], [np.nan, 1.0]])
    np.testing.assert_array_equal(m.correct, [[1.0, np.nan], [np.nan, 1.0]])
    assert m.unparseable_by_model == {"a": 0, "b": 1}
    assert m.ungraded_by_model == {"a": 1, "b": 0}


def test_the_default_probe_is_the_callers():
    """Records without a probe column (or with empty cells) take ``default_probe``: the
    analysis passes 'unspecified', since nothing says which probe produced them."""
    from metacog_metrics.records import UNSPECIFIED_PROBE

    out = validate_records(_tiny(), default_probe=UNSPECIFIED_PROBE)
    assert set(out["probe"]) == {"unspecified"}
    named = validate_records(_tiny().assign(probe=["retrospective"] * 3 + [""] * 3),
                             default_probe=UNSPECIFIED_PROBE)  # fmt: skip
    assert named["probe"].tolist() == ["retrospective"] * 3 + ["unspecified"] * 3


@pytest.mark.parametrize("form", ["object", "string", "category", "float"])
def test_model_and_item_columns_are_categoricals_of_their_sorted_texts(form):
    # whatever form the reader hands over, model and item_id become categoricals whose
    # categories are the distinct texts, sorted: sorting and grouping order them as strings
    items = [" 10", "9", "10 ", "2", "9", "2"] if form == "object" else ["10", "9", "10", "2",
                                                                        "9", "2"]  # fmt: skip
    models = ["zeta", "zeta", "alpha", "alpha", "Mu", "Mu"]
    make = {
        "object": lambda v: pd.Series(v, dtype=object),
        "string": lambda v: pd.Series(v, dtype="string"),
        "category": lambda v: pd.Series(v, dtype="category"),
        "float": lambda v: pd.Series([float(x) for x in v]),  # item ids upcast by Parquet
    }[form]
    df = pd.DataFrame({"model": models if form == "float" else make(models),
                       "item_id": make(items), "confidence": [1.0, 0, 1, 0, 1, 0],
                       "correct": [1.0, 0, 0, 1, 1, 0]})  # fmt: skip
    out = validate_records(df)
    assert list(out["model"].cat.categories) == ["Mu", "alpha", "zeta"]
    assert list(out["item_id"].cat.categories) == ["10", "2", "9"]  # as strings sort
    assert out["item_id"].tolist() == ["10", "9", "10", "2", "9", "2"]
    assert out["model"].tolist() == models
    # ... and the matrices keep the order of first appearance
    m = item_matrices(out, missing="keep")
    assert m.models == ("zeta", "alpha", "Mu") and m.item_ids == ("10", "9", "2")
    ordered = out.sort_values(["model", "item_id"], kind="stable")
    assert ordered["model"].tolist() == sorted(models)
    grouped = out.groupby("model", sort=False, observed=True).size()
    assert list(grouped.index) == ["zeta", "alpha", "Mu"]
    # a subset validated again holds only its own names as categories
    again = validate_records(out[out["model"] != "alpha"])
    assert list(again["model"].cat.categories) == ["Mu", "zeta"]
    assert list(again["item_id"].cat.categories) == ["10", "2", "9"]
    again = validate_records(out.iloc[:2])
    assert list(again["item_id"].cat.categories) == ["10", "9"]


def test_records_of_several_files_share_their_categories(tmp_path):
    a = _tiny()
    b = _tiny(model=["d", "d", "e", "e", "a2", "a2"], item_id=["3", "1", "3", "1", "3", "1"])
    a.to_parquet(tmp_path / "a.parquet", index=False)
    b.to_csv(tmp_path / "b.csv", index=False)
    out = read_records([tmp_path / "a.parquet", tmp_path / "b.csv"])
    for name in CATEGORICAL_COLUMNS:
        assert isinstance(out[name].dtype, pd.CategoricalDtype), name
    assert list(out["model"].cat.categories) == ["a", "a2", "b", "c", "d", "e"]
    assert list(out["item_id"].cat.categories) == ["1", "2", "3"]
    assert out["model"].tolist() == [*a["model"], *b["model"]]
    assert out["item_id"].tolist() == [*a["item_id"], *b["item_id"]]


def test_numbers_in_text_are_converted_once_each_with_the_same_rules():
    # a CSV's confidence column: text, converted per distinct value; blanks are missing,
    # true/false are 1/0, padded numbers are numbers, and a word is an error naming its row
    conf = pd.Series([" 1", "0", "TRUE", "false", "", None, "0.25", "1e-1"], dtype=object)
    df = pd.DataFrame({"model": [f"m{i}" for i in range(8)], "item_id": ["q"] * 8,
                       "confidence": conf, "correct": ["1"] * 8})  # fmt: skip
    df["confidence_kind"] = "verbal_numeric"
    out = validate_records(df)
    np.testing.assert_array_equal(
        out["confidence"].to_numpy(), [1.0, 0.0, 1.0, 0.0, np.nan, np.nan, 0.25, 0.1]
    )
    df.loc[6, "confidence"] = "high"
    with pytest.raises(RecordError, match=r"confidence is not a number in 1 row \(row 7\)"):
        validate_records(df)
