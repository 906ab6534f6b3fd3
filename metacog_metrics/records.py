"""The record table: one row per (model, benchmark, item, probe, confidence kind).

Every harness run becomes rows of this long table and every analysis consumes it. This module
reads it from Parquet or CSV, validates it with errors that name the file and the rows, writes it
atomically, reads the per-model traits file, and turns one group of rows into aligned
items x models matrices with the missing items reported, never dropped silently.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from pandas.api.types import union_categoricals

from metacog_metrics._io import atomic_write
from metacog_metrics._result import Result

__all__ = [
    "CATEGORICAL_COLUMNS",
    "CONFIDENCE_KINDS",
    "EXTRA_COLUMNS",
    "KEY_COLUMNS",
    "PROBE_STATUSES",
    "RECORD_COLUMNS",
    "REQUIRED_COLUMNS",
    "UNSPECIFIED_PROBE",
    "ItemMatrices",
    "RecordError",
    "RecordWarning",
    "apply_model_traits",
    "item_matrices",
    "load_models_file",
    "read_records",
    "record_format",
    "validate_records",
    "write_records",
]

#: The record columns, in order.
RECORD_COLUMNS: tuple[str, ...] = (
    "model",
    "benchmark",
    "item_id",
    "probe",
    "confidence",
    "confidence_kind",
    "correct",
    "question",
    "probe_text",
    "solve_text",
    "reasoning",
)
#: Optional columns the collectors emit besides :data:`RECORD_COLUMNS`.
EXTRA_COLUMNS: tuple[str, ...] = (
    "probe_status",
    "grade_status",
    "answer",
    "harness",
    "source",
    "epoch",
    "n_samples",
    "doc_hash",
    "prompt_hash",
    "task_version",
)
#: Columns every record table must have (the minimal tidy CSV).
REQUIRED_COLUMNS: tuple[str, ...] = ("model", "item_id", "confidence", "correct")
#: A row is unique on these columns.
KEY_COLUMNS: tuple[str, ...] = ("model", "benchmark", "item_id", "probe", "confidence_kind")
#: Known confidence kinds. Binary ones hold 0/1 only.
CONFIDENCE_KINDS: tuple[str, ...] = ("verbal_binary", "verbal_numeric", "sampled", "logprob")
#: Values of ``probe_status``.
PROBE_STATUSES: tuple[str, ...] = ("ok", "unparseable", "refusal", "empty")

#: Columns held as categoricals (sorted categories): names repeated over many rows.
CATEGORICAL_COLUMNS: tuple[str, ...] = ("model", "item_id")
#: Key columns of text kept as object columns, checked as integer codes.
_KEY_TEXT_COLUMNS = ("benchmark", "probe", "confidence_kind")

_TEXT_COLUMNS = ("question", "probe_text", "solve_text")
_STR_COLUMNS = ("model", "benchmark", "item_id", "probe", "confidence_kind", *_TEXT_COLUMNS)
_STR_COLUMNS += ("probe_status", "grade_status", "answer", "harness", "source")
# Provenance of an item's row: what the item was (doc), how it was asked (prompt) and which
# version of the task graded it; the gate matches baseline and candidate items on them.
_STR_COLUMNS += ("doc_hash", "prompt_hash", "task_version")
_DEFAULT_BENCHMARK = "all"
_DEFAULT_PROBE = "prospective"
#: The probe the analysis gives records that do not name one (``default_probe``): not known.
UNSPECIFIED_PROBE = "unspecified"
_MAX_EXAMPLES = 5
_TRUE = {"true", "1", "yes", "y", "t", "1.0"}
_FALSE = {"false", "0", "no", "n", "f", "0.0"}


class RecordError(ValueError):
    """A record table (or models file) is malformed; the message names the file and rows."""


class RecordWarning(UserWarning):
    """Something in the records was odd but usable (unknown model in the models file, ...)."""


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _rows(mask: np.ndarray | pd.Series, row_numbers: np.ndarray) -> str:
    """'rows 3, 8, 12 and 40 more' for the rows where ``mask`` is true (1-based data rows)."""
    hits = row_numbers[np.asarray(mask)]  # every mask here is boolean
    shown = ", ".join(str(int(r)) for r in hits[:_MAX_EXAMPLES])
    more = f" and {hits.size - _MAX_EXAMPLES} more" if hits.size > _MAX_EXAMPLES else ""
    word = "row" if hits.size == 1 else "rows"
    return f"{hits.size} {word} ({word} {shown}{more})"


def _nones(n: int) -> pd.Series:
    """A column of ``n`` None (``np.empty`` of objects holds None: no Python list; the dtype
    given, pandas does not scan the rows to infer one)."""
    return pd.Series(np.empty(n, dtype=object), dtype=object, copy=False)  # all None


def _constant(value: str, n: int) -> pd.Series:
    """A column of ``n`` times the same string (``np.full`` of objects is ten times slower)."""
    return pd.Series(np.array([value], dtype=object).repeat(n), dtype=object, copy=False)


def _as_str(col: pd.Series) -> pd.Series:
    """Text column as Python strings, NaN kept; integral floats (Parquet/NaN upcasts) lose '.0'."""
    return _text(col)[0]


def _text(col: pd.Series) -> tuple[pd.Series, NDArray[np.int64], pd.Index]:
    """:func:`_as_str` of a column, with each row's code among the distinct strings (-1: missing)
    and those strings."""
    return _coded(*_distinct(col), col.index)


def _categorical_text(col: pd.Series) -> tuple[pd.Series, NDArray[np.int64], pd.Index]:
    """:func:`_text` as a categorical column: the distinct strings it holds, sorted, are its
    categories (so sorting or grouping with ``sort=True`` orders the rows as the strings
    would); a missing value is missing. A record table repeats each model name and item id
    thousands of times: its rows hold a small integer each, not a pointer to a string."""
    text, codes = _distinct(col)
    merged, names = pd.factorize(text)  # None: -1
    rows = merged.astype(np.int64)[codes]
    used = np.zeros(len(names) + 1, dtype=bool)
    used[rows] = True  # a category no row holds (a subset's) is not one (-1: the spare slot)
    if not used[:-1].all():
        keep = np.flatnonzero(used[:-1])
        renumber = np.full(len(names) + 1, -1, dtype=np.int64)
        renumber[keep] = np.arange(keep.size)
        rows, names = renumber[rows], names[keep]
    order = np.argsort(np.asarray(names, dtype=object), kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    cat_codes = np.where(rows >= 0, rank[rows], -1)
    categories = pd.Index(np.asarray(names, dtype=object)[order])
    values = pd.Categorical.from_codes(cat_codes, categories=categories)
    return pd.Series(values, index=col.index, copy=False), rows, pd.Index(names)


def _distinct(col: pd.Series) -> tuple[NDArray[np.object_], NDArray[np.intp]]:
    """The distinct texts of a column (``str``, None for a missing value; two raw values may
    give the same text) and each row's index among them (-1: the last, None).

    Each distinct value is converted once (a record table repeats every model name and item
    id many times): millions of rows cost a hash pass, not a Python call per row.
    """
    if isinstance(col.dtype, pd.CategoricalDtype):  # each category converted once
        names = _text(pd.Series(col.cat.categories))[0]
        text = np.array([*names, None])  # object (str and None); code -1: missing
        return text, col.cat.codes.to_numpy()
    if pd.api.types.is_float_dtype(col):
        vals = col.to_numpy(dtype=float)
        integral = np.isfinite(vals) & (vals == np.round(vals))
        if integral[~np.isnan(vals)].all():
            uniq, inv = np.unique(vals, return_inverse=True)
            text = np.array([None if np.isnan(v) else str(int(v)) for v in uniq], dtype=object)
            return text, inv.ravel()
    if pd.api.types.is_bool_dtype(col):
        out = col.map(lambda v: None if pd.isna(v) else str(bool(v)).lower()).astype(object)
        return _factorized(out)
    if isinstance(col.dtype, pd.StringDtype):  # pandas strings (Arrow or Python)
        codes, uniq = pd.factorize(col)
        return np.array([*(str(u).strip() for u in uniq), None]), codes  # object: str, None
    obj = col.astype(object)
    if pd.api.types.infer_dtype(obj, skipna=True) == "string":  # only str (and missing)
        codes, uniq = pd.factorize(obj)
        return np.array([*(u.strip() for u in uniq), None]), codes  # object; -1: missing
    out = obj.where(col.notna(), None)
    out = out.map(lambda v: v if v is None else str(v).strip()).astype(object)
    return _factorized(out)


def _factorized(col: pd.Series) -> tuple[NDArray[np.object_], NDArray[np.intp]]:
    """:func:`_distinct` of a column of ``str`` and None."""
    codes, uniq = pd.factorize(col)
    return np.array([*uniq, None], dtype=object), codes


def _coded_text(col: pd.Series) -> tuple[NDArray[np.int64], pd.Index]:
    """:func:`_text`'s codes and distinct strings, without the column of strings."""
    text, codes = _distinct(col)
    merged, names = pd.factorize(text)  # None: -1
    return merged.astype(np.int64)[codes], pd.Index(names)


def _unset(row_codes: NDArray[np.int64], names: list[str | None]) -> NDArray[np.bool_]:
    """Rows of a coded text column that are missing or empty."""
    unset = row_codes < 0
    return unset | (row_codes == names.index("")) if "" in names else unset


def _filled(
    row_codes: NDArray[np.int64], names: list[str | None], where: NDArray[np.bool_], value: str
) -> tuple[NDArray[np.int64], list[str | None]]:
    """A coded text column with ``value`` in the rows ``where``."""
    if not where.any():
        return row_codes, names
    if value not in names:
        names = [*names, value]
    return np.where(where, names.index(value), row_codes), names


def _coded(
    text: NDArray[np.object_], codes: NDArray, index: pd.Index
) -> tuple[pd.Series, NDArray[np.int64], pd.Index]:
    """Rows ``text[codes]``, with codes merged where distinct raw values give the same text."""
    merged, names = pd.factorize(text)  # None: -1
    return (
        pd.Series(text[codes], index=index, dtype=object),
        merged.astype(np.int64)[codes],
        pd.Index(names),
    )


def _numeric(col: pd.Series, name: str, source: str, rows: np.ndarray) -> pd.Series:
    """Float column; non-numeric entries are a RecordError naming the rows.

    Text (a CSV's) is converted one distinct value at a time: a confidence column of millions
    of rows holds a handful of distinct strings.
    """
    if pd.api.types.is_numeric_dtype(col):  # bool and boolean included
        return col.astype(float)
    codes, uniq = pd.factorize(col)  # a missing value: -1
    as_obj = pd.Series(np.asarray(uniq, dtype=object), dtype=object)
    lowered = as_obj.map(lambda v: str(v).strip().lower() if isinstance(v, str) else v)
    lowered = lowered.map(lambda v: 1.0 if v in ("true",) else (0.0 if v in ("false",) else v))
    values = pd.to_numeric(lowered, errors="coerce").to_numpy(dtype=float)
    bad_value = np.isnan(values) & (as_obj.astype(str).str.strip() != "").to_numpy()
    out = np.append(values, np.nan)[codes]  # code -1: the NaN; "" (blank) is NaN, not bad
    bad = np.append(bad_value, False)[codes]
    if bad.any():
        examples = ", ".join(repr(v) for v in col[bad].head(3))
        raise RecordError(
            f"{source}: {name} is not a number in {_rows(bad, rows)}, e.g. {examples}"
        )
    return pd.Series(out, index=col.index, copy=False)


def _flag(col: pd.Series, name: str, source: str, rows: np.ndarray) -> pd.Series:
    """Nullable boolean column from bools, 0/1 or true/false/yes/no strings."""

    def conv(v: Any) -> Any:
        if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
            return pd.NA
        if isinstance(v, bool | np.bool_):
            return bool(v)
        s = str(v).strip().lower()
        if s == "":
            return pd.NA
        if s in _TRUE:
            return True
        if s in _FALSE:
            return False
        return "bad"

    out = col.astype(object).map(conv)
    bad = out.map(lambda v: isinstance(v, str))
    if bad.any():
        raise RecordError(f"{source}: {name} must be true/false in {_rows(bad, rows)}")
    return out.astype("boolean")


def _check_columns(df: pd.DataFrame, source: str) -> None:
    known = set(RECORD_COLUMNS) | set(EXTRA_COLUMNS)
    unknown = [c for c in df.columns if c not in known]
    if unknown:
        hints = []
        for c in unknown:
            close = difflib.get_close_matches(str(c), sorted(known))  # best first, cutoff 0.6
            hints.append(f"{c!r} (did you mean {close[0]!r}?)" if close else repr(c))
        raise RecordError(
            f"{source}: unknown column(s) {', '.join(hints)}. A record table has the columns "
            f"{', '.join(RECORD_COLUMNS)} and optionally {', '.join(EXTRA_COLUMNS)}; rename or "
            "drop the others"
        )
    missing = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if missing:
        raise RecordError(
            f"{source}: missing required column(s) {', '.join(missing)}; the minimal record "
            f"table is {','.join(REQUIRED_COLUMNS)}"
        )
    dup = df.columns[df.columns.duplicated()].tolist()
    if dup:
        raise RecordError(f"{source}: repeated column(s) {', '.join(map(str, dup))}")


def _has_repeats(key: NDArray[np.int64], span: int) -> bool:
    """Whether an integer key in ``[0, span)`` occurs twice: one count per value when the span
    is not much larger than the keys (a record table's dense model x item grid), else a sort."""
    if not key.size:
        return False
    if span <= 4 * key.size + 4096 and int(key.min()) >= 0:
        return int(np.bincount(key).max()) > 1
    ordered = np.sort(key)
    return bool((ordered[1:] == ordered[:-1]).any())


def _any_repeated_key(
    df: pd.DataFrame,
    constant: Iterable[str] = (),
    codes: Mapping[str, tuple[NDArray[np.int64], int]] | None = None,
) -> bool:
    """Whether rows repeat a :data:`KEY_COLUMNS` key: the columns' integer codes combined into
    one number per row, checked for repeats (a column with a single value, as ``constant`` ones,
    adds nothing); ``codes`` holds columns already coded (row codes, number of values)."""
    key = np.zeros(len(df), dtype=np.int64)
    span = 1
    for name in KEY_COLUMNS:
        if name in constant:
            continue
        if codes is not None and name in codes:
            col_codes, n_values = codes[name]
        else:
            col_codes, uniq = pd.factorize(df[name])
            n_values = len(uniq)
        if n_values <= 1 and (col_codes >= 0).all():
            continue
        if span * (n_values + 1) >= 2**62:  # too many combinations for one int64
            return bool(df.duplicated(list(KEY_COLUMNS)).any())
        key = key * (n_values + 1) + (col_codes + 1)
        span *= n_values + 1
    return _has_repeats(key, span)


def _duplicate_error(
    df: pd.DataFrame,
    where: Callable[[int], str],
    constant: Iterable[str] = (),
    codes: Mapping[str, tuple[NDArray[np.int64], int]] | None = None,
) -> str | None:
    """The error for rows repeating a key, or None; ``where(i)`` names row ``i`` (0-based)."""
    if not _any_repeated_key(df, constant, codes):
        return None
    dup = df.duplicated(list(KEY_COLUMNS), keep=False).to_numpy()
    if not dup.any():
        return None
    sub = df.loc[dup, list(KEY_COLUMNS)]
    groups = sub.groupby(list(KEY_COLUMNS), sort=False, observed=True).indices
    examples = []
    for key, idx in list(groups.items())[:3]:
        places = ", ".join(where(int(dup.nonzero()[0][i])) for i in idx[:4])
        examples.append(f"(model={key[0]!r}, item_id={key[2]!r}) at {places}")
    return (
        f"{int(dup.sum())} rows repeat a (model, benchmark, item_id, probe, confidence_kind) "
        f"key in {len(groups)} group(s): {'; '.join(examples)}"
    )


def validate_records(
    df: pd.DataFrame, *, source: str = "<DataFrame>", default_probe: str = _DEFAULT_PROBE
) -> pd.DataFrame:
    """Check a record table and return a canonical copy.

    Canonical means: every :data:`RECORD_COLUMNS` present in order (optional text columns and
    ``reasoning`` filled with NA when absent), then any :data:`EXTRA_COLUMNS` given; ``benchmark``
    defaults to ``"all"``, ``probe`` to ``default_probe`` (``"prospective"``; the analysis passes
    :data:`UNSPECIFIED_PROBE`), ``confidence_kind`` is inferred when
    absent or empty (``"verbal_binary"`` when every confidence of the table is 0, 1 or NaN, else
    ``"verbal_numeric"``); ``item_id`` and the other text columns are strings (a CSV ``0`` and a
    Parquet ``0`` agree), ``model`` and ``item_id`` as categoricals (:data:`CATEGORICAL_COLUMNS`:
    sorted categories, so sorting and grouping order them as the strings); ``confidence`` and
    ``correct`` are floats.

    Args:
        df: The records.
        source: Name used in error messages (a file name).

    Returns:
        The validated table (a new DataFrame, default index).

    Raises:
        RecordError: On unknown or missing columns, an empty model or item id, a confidence that
            is not a number or lies outside [0, 1] (NaN is allowed: unparseable), a non-binary
            ``correct`` (NaN allowed: ungraded), a non-0/1 confidence in a ``verbal_binary`` row,
            an unknown ``confidence_kind`` or ``probe_status``, a bad flag or count, or rows that
            repeat a :data:`KEY_COLUMNS` key. Messages name ``source`` and the 1-based data rows.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item_id": ["q1", "q2", "q1", "q2"],
        ...                    "confidence": [1, 0, 1, 1], "correct": [1, 0, 0, 1]})
        >>> records = validate_records(df)
        >>> records[["benchmark", "probe", "confidence_kind"]].iloc[0].tolist()
        ['all', 'prospective', 'verbal_binary']
    """
    if not isinstance(df, pd.DataFrame):
        raise RecordError(f"{source}: expected a pandas DataFrame, got {type(df).__name__}")
    _check_columns(df, source)
    df = df.reset_index(drop=True)
    rows = np.arange(1, len(df) + 1)
    out: dict[str, pd.Series] = {}

    codes: dict[str, tuple[NDArray[np.int64], int]] = {}
    keyed: dict[str, tuple[NDArray[np.int64], list[str | None]]] = {}
    for name in _STR_COLUMNS:
        if name not in df.columns:
            continue
        if name in _KEY_TEXT_COLUMNS:  # checked and filled as codes; the column built below
            row_codes, names = _coded_text(df[name])
            keyed[name] = (row_codes, list(names))
            continue
        convert = _categorical_text if name in CATEGORICAL_COLUMNS else _text
        out[name], row_codes, names = convert(df[name])
        if name in ("model", "item_id"):
            codes[name] = (row_codes, len(names))
            empty = row_codes == -1
            if "" in names:
                empty |= row_codes == names.get_loc("")
            if empty.any():
                raise RecordError(f"{source}: {name} is empty in {_rows(empty, rows)}")
    constant = set()  # key columns known to hold one value (absent: the default)
    for name, default in (("benchmark", _DEFAULT_BENCHMARK), ("probe", default_probe)):
        if name not in keyed:
            out[name] = _constant(default, len(df))
            constant.add(name)
            continue
        row_codes, names = keyed[name]
        keyed[name] = _filled(row_codes, names, _unset(row_codes, names), default)

    conf = _numeric(df["confidence"], "confidence", source, rows)
    if np.isinf(conf).any():
        raise RecordError(f"{source}: confidence is infinite in {_rows(np.isinf(conf), rows)}")
    outside = (conf < 0) | (conf > 1)
    if outside.any():
        examples = ", ".join(f"{v:g}" for v in conf[outside].head(3))
        raise RecordError(
            f"{source}: confidence outside [0, 1] in {_rows(outside, rows)}, e.g. {examples}; "
            "rescale percentages to [0, 1] (NaN marks an unparseable reply)"
        )
    out["confidence"] = conf
    correct = _numeric(df["correct"], "correct", source, rows)
    nonbinary = correct.notna() & (correct != 0) & (correct != 1)
    if nonbinary.any():
        examples = ", ".join(f"{v:g}" for v in correct[nonbinary].head(3))
        raise RecordError(
            f"{source}: correct must be 0 or 1 (NaN when ungraded) in {_rows(nonbinary, rows)}, "
            f"e.g. {examples}"
        )
    out["correct"] = correct

    kind_codes, kinds = keyed.get("confidence_kind", (np.full(len(df), -1, np.int64), []))
    unset = _unset(kind_codes, kinds)
    not01_conf = (conf.notna() & ~conf.isin([0.0, 1.0])).to_numpy()
    if unset.any():
        # Inferred per (benchmark, probe) over the rows without a kind: binary when all their
        # confidences are 0, 1 or NaN.
        nonbinary = unset & not01_conf
        group = np.zeros(len(df), dtype=np.int64)
        for name in ("benchmark", "probe"):
            if name not in constant:
                name_codes, names = keyed[name]
                group = group * (len(names) + 1) + name_codes
        group = pd.factorize(group)[0]
        group_nonbinary = np.bincount(group, weights=nonbinary)[group] > 0
        kind_codes, kinds = _filled(kind_codes, kinds, unset & ~group_nonbinary, "verbal_binary")
        kind_codes, kinds = _filled(kind_codes, kinds, unset & group_nonbinary, "verbal_numeric")
        if unset.all() and (group_nonbinary.all() or not group_nonbinary.any()):
            constant.add("confidence_kind")
    keyed["confidence_kind"] = (kind_codes, kinds)
    known = np.isin(np.array(kinds, dtype=object), CONFIDENCE_KINDS)
    unknown = ~known[kind_codes]
    if unknown.any():
        listed = sorted({str(kinds[k]) for k in np.unique(kind_codes[unknown])})
        raise RecordError(
            f"{source}: unknown confidence_kind {listed} in "
            f"{_rows(unknown, rows)}; use one of {', '.join(CONFIDENCE_KINDS)}"
        )
    for name, (row_codes, names) in keyed.items():  # object columns of Python str
        out[name] = pd.Series(np.array(names, dtype=object)[row_codes], dtype=object, copy=False)
        codes[name] = (row_codes, len(names))
    not01 = (kind_codes == kinds.index("verbal_binary")) if "verbal_binary" in kinds else None
    if not01 is not None and (not01 := not01 & not01_conf).any():
        raise RecordError(
            f"{source}: confidence_kind verbal_binary needs confidence 0 or 1, not in "
            f"{_rows(not01, rows)}; use verbal_numeric for graded confidence"
        )

    if "probe_status" in out:
        status = out["probe_status"]
        bad = status.notna() & ~status.isin(PROBE_STATUSES)
        if bad.any():
            raise RecordError(
                f"{source}: probe_status must be one of {', '.join(PROBE_STATUSES)} in "
                f"{_rows(bad, rows)}"
            )
    out["reasoning"] = (
        _flag(df["reasoning"], "reasoning", source, rows)
        if "reasoning" in df.columns
        else pd.Series(pd.NA, index=df.index, dtype="boolean")
    )
    for name, low in (("epoch", 0), ("n_samples", 1)):
        if name in df.columns:
            vals = _numeric(df[name], name, source, rows)
            bad = vals.notna() & ((vals != np.round(vals)) | (vals < low))
            if bad.any():
                raise RecordError(
                    f"{source}: {name} must be an integer >= {low} in {_rows(bad, rows)}"
                )
            out[name] = vals.astype("Int64")
    for name in _TEXT_COLUMNS:
        out.setdefault(name, _nones(len(df)))

    columns = list(RECORD_COLUMNS) + [c for c in EXTRA_COLUMNS if c in out]
    result = pd.DataFrame({c: out[c] for c in columns}, copy=False)  # the columns are new
    message = _duplicate_error(result, lambda i: f"row {i + 1}", constant=constant, codes=codes)
    if message:
        raise RecordError(f"{source}: {message}")
    return result


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


_CSV_COMPRESSION = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zst": "zstd"}


def record_format(path: str | os.PathLike[str]) -> str:
    """``"parquet"`` or ``"csv"``: the format a record file's name asks for.

    Raises:
        RecordError: Any other extension (checked before a command reads its inputs).
    """
    return _format(Path(path))


def _format(path: Path) -> str:
    name = path.name.lower()
    if name.endswith((".parquet", ".pq")):
        return "parquet"
    if name.endswith((".csv", ".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zst")):
        return "csv"
    raise RecordError(f"{path}: unsupported file type; use .parquet or .csv")


def _read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet file with its text columns as categoricals: a model name or item id repeated
    over millions of rows is decoded once, not once a row (five times faster to read)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pq.read_schema(path)
    text = [
        f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
    ]
    return pq.read_table(path, read_dictionary=text).to_pandas()


def _read_one(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise FileNotFoundError(f"record file not found: {path}")
    try:
        if _format(path) == "parquet":
            return _read_parquet(path)
        # Everything as text first, so "0" item ids stay "0" and bad numbers can be named.
        return pd.read_csv(path, dtype=str)  # "", "NA", "NaN" ... are missing (the default)
    except RecordError:
        raise
    except Exception as exc:  # pandas/pyarrow parse errors: name the file
        raise RecordError(f"{path}: cannot be read as a record table: {exc}") from exc


def load_models_file(path: str | os.PathLike[str]) -> dict[str, dict[str, Any]]:
    """Read per-model traits from YAML.

    Accepts ``{models: {name: {reasoning: true, ...}}}`` and the flat ``{name: {reasoning: true}}``.

    Args:
        path: The YAML file.

    Returns:
        ``{model: {trait: value}}``; ``reasoning`` (when given) is a bool.

    Raises:
        FileNotFoundError: If the file does not exist.
        RecordError: If the YAML is malformed or a trait has the wrong type (names the model).
    """
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"models file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise RecordError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise RecordError(f"{path}: expected a mapping of model names to traits")
    if "models" in data and isinstance(data["models"], Mapping | None):
        data = data["models"] or {}
    out: dict[str, dict[str, Any]] = {}
    for name, traits in data.items():
        if traits is None:
            traits = {}
        if not isinstance(traits, Mapping):
            raise RecordError(
                f"{path}: model {name!r}: expected a mapping of traits (e.g. reasoning: true), "
                f"got {traits!r}"
            )
        traits = dict(traits)
        if "reasoning" in traits and not isinstance(traits["reasoning"], bool):
            raise RecordError(
                f"{path}: model {name!r}: reasoning must be true or false, got "
                f"{traits['reasoning']!r}"
            )
        out[str(name)] = traits
    return out


def apply_model_traits(
    df: pd.DataFrame, traits: Mapping[str, Mapping[str, Any]], *, source: str = "models"
) -> list[str]:
    """Fill the ``reasoning`` column of validated records from per-model traits, in place.

    The traits' flags win over flags already in the records.

    Args:
        df: Validated records (modified in place).
        traits: ``{model: {"reasoning": bool, ...}}`` (see :func:`load_models_file`).
        source: Name used in the notes (the models file).

    Returns:
        Notes: models in the traits but not in the records, models without a flag.
    """
    notes = []
    present = set(pd.unique(df["model"]))
    unknown = sorted(set(traits) - present)
    if unknown:
        notes.append(
            f"{source}: {len(unknown)} model(s) not in the records: {', '.join(unknown[:10])}"
            + (" ..." if len(unknown) > 10 else "")
        )
    flags = {m: t["reasoning"] for m, t in traits.items() if "reasoning" in t}
    if flags:  # each model's flag looked up once, then spread over its rows by its code
        codes, names = pd.factorize(df["model"])  # a missing name: -1, the last entry
        per_model = pd.array([*(flags.get(m) for m in names), None], dtype="boolean")
        mapped = pd.Series(per_model[codes], index=df.index)
        df["reasoning"] = mapped.where(mapped.notna(), df["reasoning"]).astype("boolean")
    missing = sorted(present - set(flags)) if flags else []
    if missing:
        notes.append(
            f"{source}: no reasoning flag for {len(missing)} model(s): {', '.join(missing[:10])}"
            + (" ..." if len(missing) > 10 else "")
        )
    return notes


def read_records(
    paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
    *,
    models_file: str | os.PathLike[str] | None = None,
    default_probe: str = _DEFAULT_PROBE,
) -> pd.DataFrame:
    """Read, validate and concatenate record tables (Parquet or CSV).

    Args:
        paths: One path or several; ``.parquet``/``.pq`` or ``.csv`` (optionally compressed).
        models_file: YAML of per-model traits (see :func:`load_models_file`); its ``reasoning``
            flags fill the ``reasoning`` column (and override it where both give one).
        default_probe: The probe of records that do not name one (see
            :func:`validate_records`).

    Returns:
        The validated table. ``df.attrs["inputs"]`` lists the files and ``df.attrs["warnings"]``
        the non-fatal problems (also issued as :class:`RecordWarning`).

    Raises:
        FileNotFoundError: If a file does not exist.
        RecordError: On any invalid content (see :func:`validate_records`), including a key
            repeated across files (both files and rows are named), and on a file without
            records (a header-only CSV).

    Example:
        >>> import pathlib, tempfile
        >>> import pandas as pd
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
        >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item_id": ["q1", "q2", "q1", "q2"],
        ...                    "confidence": [1, 0, 1, 1], "correct": [1, 0, 0, 1]})
        >>> df.to_csv(path, index=False)
        >>> records = read_records(path)
        >>> len(records), records.attrs["inputs"] == [str(path)]
        (4, True)
    """
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    paths = [Path(p) for p in paths]
    if not paths:
        raise RecordError("no record files given")
    frames = []
    for path in paths:
        raw = _read_one(path)
        if raw.empty:  # a header-only (or empty) file would give an empty summary and exit 0
            raise RecordError(f"{path}: no records (the file holds no data rows)")
        frame = validate_records(raw, source=str(path), default_probe=default_probe)
        frames.append(frame)
    if len(frames) > 1:
        # one set of categories for every file's names, so that they stay categoricals
        for name in CATEGORICAL_COLUMNS:
            union = union_categoricals([f[name] for f in frames], sort_categories=True)
            for f in frames:
                f[name] = f[name].cat.set_categories(union.categories)
    df = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if len(frames) > 1:
        # optional columns present in some files only: restore dtypes lost to NaN padding
        df["reasoning"] = df["reasoning"].astype("boolean")
        ends = np.cumsum([len(f) for f in frames])

        def where(i: int) -> str:
            k = int(np.searchsorted(ends, i, side="right"))
            return f"{paths[k]} row {i - (ends[k - 1] if k else 0) + 1}"

        message = _duplicate_error(df, where)
        if message:
            raise RecordError(message)
    notes = (
        apply_model_traits(df, load_models_file(models_file), source=str(models_file))
        if models_file is not None
        else []
    )
    n_unparseable = int(df["confidence"].isna().sum())
    if n_unparseable:
        notes.append(f"{n_unparseable} record(s) with an unparseable (NaN) confidence")
    for note in notes:
        warnings.warn(note, RecordWarning, stacklevel=2)
    df.attrs["inputs"] = [str(p) for p in paths]
    df.attrs["warnings"] = notes
    return df


def write_records(df: pd.DataFrame, path: str | os.PathLike[str]) -> Path:
    """Validate and write a record table atomically (temporary file, then ``os.replace``).

    Args:
        df: The records.
        path: Target; ``.parquet``/``.pq`` writes Parquet, ``.csv`` writes CSV.

    Returns:
        The path written.

    Raises:
        RecordError: If the table is invalid or the suffix unknown.
    """
    path = Path(path)
    fmt = _format(path)
    table = validate_records(df, source=str(path))
    if fmt == "parquet":
        return atomic_write(path, lambda tmp: table.to_parquet(tmp, index=False))
    # The temporary file's name hides the suffix pandas would infer the compression from.
    compression = _CSV_COMPRESSION.get(path.suffix.lower())
    return atomic_write(path, lambda tmp: table.to_csv(tmp, index=False, compression=compression))


# --------------------------------------------------------------------------------------------
# Items x models matrices
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class ItemMatrices(Result):
    """Aligned items x models matrices of one (benchmark, probe, confidence kind) group.

    Attributes:
        models: Model names (columns), in order of first appearance.
        item_ids: Item ids (rows).
        confidence: ``(items, models)`` confidence; NaN only with ``missing="keep"``.
        correct: ``(items, models)`` 0/1 correctness; NaN only with ``missing="keep"``.
        reasoning: Per model, its reasoning flag or None when unknown.
        benchmark: The benchmark.
        probe: The probe.
        confidence_kind: The confidence kind.
        missing: The missing-item policy (``"complete"`` or ``"keep"``).
        n_items_total: Items of the group (any model, any state).
        n_items_dropped: Items dropped because some model lacked them (complete-case).
        dropped_by_model: ``{model: items of the group it lacks}``; "lacks" means no row, a NaN
            confidence (unparseable) or a NaN grade.
        unparseable_by_model: ``{model: rows with a NaN confidence}``.
        ungraded_by_model: ``{model: rows with a confidence but a NaN grade}``.
        models_dropped: ``{model: reason}`` for models left out entirely (no usable item).
    """

    models: tuple[str, ...]
    item_ids: tuple[str, ...]
    confidence: np.ndarray
    correct: np.ndarray
    reasoning: tuple[bool | None, ...]
    benchmark: str
    probe: str
    confidence_kind: str
    missing: str
    n_items_total: int
    n_items_dropped: int
    dropped_by_model: dict[str, int]
    unparseable_by_model: dict[str, int]
    ungraded_by_model: dict[str, int]
    models_dropped: dict[str, str]

    @property
    def n_items(self) -> int:
        """Number of items (rows)."""
        return len(self.item_ids)

    @property
    def n_models(self) -> int:
        """Number of models (columns)."""
        return len(self.models)

    def complete_cases(self) -> ItemMatrices:
        """The items every model answered and graded, as ``item_matrices(missing="complete")``
        would build them from the same records (without reading the records again)."""
        full = (
            ~np.isnan(self.confidence).any(axis=1)
            if self.models
            else np.zeros(self.n_items, dtype=bool)
        )
        return dataclasses.replace(
            self,
            item_ids=tuple(np.asarray(self.item_ids, dtype=object)[full]),
            confidence=self.confidence[full],
            correct=self.correct[full],
            missing="complete",
            n_items_dropped=self.n_items_total - int(full.sum()),
        )

    def binary_confidence(self, threshold: float = 0.5) -> np.ndarray:
        """Confidence as 0/1: 1 where ``confidence >= threshold`` (NaN kept)."""
        c = self.confidence
        return np.where(np.isnan(c), np.nan, c >= threshold)  # float64: NaN, 0.0 or 1.0


def _select(df: pd.DataFrame, column: str, value: str | None) -> pd.DataFrame:
    if value is None:
        return df
    out = df[df[column] == value]
    if out.empty:
        raise RecordError(
            f"no records with {column} {value!r}; present: {sorted(map(str, set(df[column])))}"
        )
    return out


def _single_valued(col: pd.Series) -> bool:
    """Whether a non-empty column holds one value throughout (missing values count as one
    value), as ``col.nunique(dropna=False) == 1`` but without hashing millions of strings."""
    if len(col) == 0:
        return False
    if isinstance(col.dtype, pd.CategoricalDtype):  # one code throughout (-1: missing)
        codes = col.cat.codes.to_numpy()
        return bool((codes == codes[0]).all())
    values = col.to_numpy()
    if pd.isna(values[0]):
        return bool(pd.isna(values).all())
    return bool((values == values[0]).all())


def _text_or_missing(col: pd.Series) -> pd.Series:
    """Names as strings (``str`` of anything else, as ``astype(str)``); a missing value stays
    missing (pandas 2's ``astype(str)`` makes None the name "None", pandas 3's keeps NaN)."""
    if pd.api.types.infer_dtype(col, skipna=False) == "string":
        return col
    return col.astype(str).where(col.notna())


def _text_codes(
    col: pd.Series, text: Callable[[pd.Series], pd.Series]
) -> tuple[NDArray[np.int64], list[Any]]:
    """Integer codes of a column's values after ``text`` (order of first appearance; -1: none).

    The values are hashed once and ``text`` converts the distinct ones only: a record table
    repeats every model name and item id many times.
    """
    codes, uniq = pd.factorize(col, use_na_sentinel=False)  # a missing value is a value too
    converted = text(pd.Series(uniq))  # the uniques keep the column's dtype
    merged, names = pd.factorize(converted)  # values that convert to the same text: one code
    return merged.astype(np.int64)[codes], list(names)


def item_matrices(
    df: pd.DataFrame,
    *,
    benchmark: str | None = None,
    probe: str | None = None,
    confidence_kind: str | None = None,
    missing: Literal["complete", "keep"] = "complete",
    models: Sequence[str] | None = None,
) -> ItemMatrices:
    """Build aligned items x models matrices for one (benchmark, probe, confidence kind).

    Args:
        df: Records (validated or with at least the required columns).
        benchmark: Benchmark to take; may be None when the records hold one.
        probe: Probe to take; may be None when the records hold one.
        confidence_kind: Confidence kind to take; may be None when the records hold one.
        missing: ``"complete"`` keeps only items every model answered and graded (the count
            dropped is reported); ``"keep"`` keeps every item with NaN holes.
        models: Models to take, in this order (default: all, in order of appearance).

    Returns:
        An :class:`ItemMatrices`.

    Raises:
        RecordError: If the selection is empty or still holds several groups, a model appears
            with conflicting reasoning flags, or a requested model is absent.
        ValueError: On an unknown ``missing`` policy.

    Example:
        >>> import pandas as pd
        >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item_id": ["q1", "q2", "q1", "q2"],
        ...                    "confidence": [1, 0, 1, 1], "correct": [1, 0, 0, 1]})
        >>> m = item_matrices(validate_records(df))
        >>> m.models, m.item_ids, m.confidence.tolist()
        (('a', 'b'), ('q1', 'q2'), [[1.0, 1.0], [0.0, 1.0]])
    """
    if missing not in ("complete", "keep"):
        raise ValueError(f"missing must be 'complete' or 'keep', got {missing!r}")
    absent = [c for c in REQUIRED_COLUMNS if c not in df.columns]
    if absent:
        raise RecordError(f"records lack column(s) {', '.join(absent)}")
    df = df.copy(deep=False)  # columns are replaced, never written in place
    for name, default in (("benchmark", _DEFAULT_BENCHMARK), ("probe", _DEFAULT_PROBE)):
        if name not in df.columns:
            df[name] = default
    if "confidence_kind" not in df.columns:
        df["confidence_kind"] = validate_records(df[list(REQUIRED_COLUMNS)], source="records")[
            "confidence_kind"
        ].to_numpy()
    key_cols = ["benchmark", "probe", "confidence_kind"]
    for name, value in zip(key_cols, (benchmark, probe, confidence_kind)):
        # a column holding only the value asked for needs no filtering (the usual case: the
        # rows of one group)
        if value is not None and not (_single_valued(df[name]) and df[name].iloc[0] == value):
            df = _select(df, name, value)
    if all(_single_valued(df[c]) for c in key_cols):
        groups = df[key_cols].iloc[:1]
    else:
        groups = df[key_cols].drop_duplicates()
    if len(groups) != 1:
        listed = "; ".join("/".join(map(str, g)) for g in groups.itertuples(index=False))
        raise RecordError(
            f"the records hold {len(groups)} (benchmark, probe, confidence_kind) groups "
            f"({listed}); choose one with benchmark=, probe= and confidence_kind="
        )
    bench, prb, kind = (str(v) for v in groups.iloc[0])

    # Every row's model and item as integer codes (order of first appearance): the checks and
    # the matrices are array operations on them, not a pivot of millions of rows.
    m_codes, all_models = _text_codes(df["model"], _text_or_missing)
    i_codes, items = _text_codes(df["item_id"], _as_str)
    for name, row_codes in (("model", m_codes), ("item_id", i_codes)):
        if (row_codes < 0).any():  # (raw records: validated ones never lack a name)
            raise RecordError(
                f"{bench}/{prb}/{kind}: {name} is missing in {int((row_codes < 0).sum())} row(s)"
            )
    conf = df["confidence"].to_numpy(dtype=float)
    corr = df["correct"].to_numpy(dtype=float)
    flag = df["reasoning"] if "reasoning" in df.columns else None
    if models is not None:
        wanted = [str(m) for m in models]
        if len(set(wanted)) != len(wanted):
            raise ValueError(f"models repeats a name: {wanted}")
        where = {name: k for k, name in enumerate(all_models)}
        lacking = [m for m in wanted if m not in where]
        if lacking:
            raise RecordError(f"{bench}/{prb}/{kind}: no records for model(s) {lacking}")
        remap = np.full(len(all_models), -1)  # int64
        remap[[where[m] for m in wanted]] = np.arange(len(wanted))
        m_codes = remap[m_codes]
        rows = m_codes >= 0
        m_codes, conf, corr = m_codes[rows], conf[rows], corr[rows]
        i_codes, first = pd.factorize(i_codes[rows])  # the items of these models' rows
        items = [items[k] for k in first]
        flag = None if flag is None else flag[rows]
        all_models = wanted
    n_models, n_items = len(all_models), len(items)
    if _has_repeats(m_codes * max(n_items, 1) + i_codes, n_models * max(n_items, 1)):
        raise RecordError(f"{bench}/{prb}/{kind}: a model repeats an item_id")
    unparseable = np.bincount(m_codes, weights=np.isnan(conf), minlength=n_models)
    ungraded = np.bincount(m_codes, weights=~np.isnan(conf) & np.isnan(corr), minlength=n_models)
    usable = ~np.isnan(conf) & ~np.isnan(corr)
    n_usable = np.bincount(m_codes[usable], minlength=n_models)
    models_dropped = {
        m: "no item with both a confidence and a grade"
        for j, m in enumerate(all_models)
        if n_usable[j] == 0
    }
    kept_idx = np.flatnonzero(n_usable > 0)
    kept = [all_models[j] for j in kept_idx]
    column = np.full(n_models, -1)  # int64
    column[kept_idx] = np.arange(kept_idx.size)
    conf_m = np.full((n_items, kept_idx.size), np.nan)
    corr_m = np.full((n_items, kept_idx.size), np.nan)
    conf_m[i_codes[usable], column[m_codes[usable]]] = conf[usable]
    corr_m[i_codes[usable], column[m_codes[usable]]] = corr[usable]
    have = ~np.isnan(conf_m)
    dropped_by_model = {m: int((~have[:, j]).sum()) for j, m in enumerate(kept)}
    item_ids = np.asarray(items, dtype=object)
    if missing == "complete":
        full = have.all(axis=1) if kept else np.zeros(n_items, dtype=bool)
        conf_m, corr_m, item_ids = conf_m[full], corr_m[full], item_ids[full]
    n_dropped = n_items - conf_m.shape[0]

    reasoning: list[bool | None]  # set in both branches below
    if flag is not None:
        known = flag.notna().to_numpy()
        pairs = np.sort(m_codes[known] * 2 + flag[known].astype(bool).to_numpy(dtype=np.int64))
        pairs = pairs[np.r_[True, pairs[1:] != pairs[:-1]]] if pairs.size else pairs
        codes_seen, counts = np.unique(pairs // 2, return_counts=True)
        clash = [all_models[c] for c in codes_seen[counts > 1]]
        if clash:
            raise RecordError(
                f"{bench}/{prb}/{kind}: conflicting reasoning flags for model(s) {clash}"
            )
        by_model = {all_models[c // 2]: bool(c % 2) for c in pairs}
        reasoning = [by_model.get(m) for m in kept]
    else:
        reasoning = [None] * len(kept)
    return ItemMatrices(
        models=tuple(kept),
        item_ids=tuple(item_ids),
        confidence=conf_m,
        correct=corr_m,
        reasoning=tuple(reasoning),
        benchmark=bench,
        probe=prb,
        confidence_kind=kind,
        missing=missing,
        n_items_total=len(items),
        n_items_dropped=int(n_dropped),
        dropped_by_model=dropped_by_model,
        unparseable_by_model={m: int(unparseable[j]) for j, m in enumerate(all_models)},
        ungraded_by_model={m: int(ungraded[j]) for j, m in enumerate(all_models)},
        models_dropped=models_dropped,
    )
