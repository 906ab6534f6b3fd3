"""Result objects and their strict-JSON form (metacog_metrics._result)."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pandas as pd

from metacog_metrics._result import Result, to_jsonable


@dataclasses.dataclass(frozen=True)
class _Inner(Result):
    value: float
    flag: bool


@dataclasses.dataclass(frozen=True)
class _Outer(Result):
    name: str
    inner: _Inner
    pair: tuple[float, float]
    arr: np.ndarray
    table: dict


def test_to_dict_is_strict_json_with_nan_as_null():
    res = _Outer(
        name="m",
        inner=_Inner(value=math.nan, flag=True),
        pair=(0.25, math.inf),
        arr=np.array([[1.0, np.nan], [-np.inf, 2.0]]),
        table={1: np.float64(0.5), "k": np.int64(3), "n": None},
    )
    d = res.to_dict()
    assert d == {
        "name": "m",
        "inner": {"value": None, "flag": True},
        "pair": [0.25, None],
        "arr": [[1.0, None], [None, 2.0]],
        "table": {"1": 0.5, "k": 3, "n": None},
    }
    assert type(d["table"]["k"]) is int and type(d["table"]["1"]) is float
    assert type(d["inner"]["flag"]) is bool
    json.dumps(d, allow_nan=False)  # strict JSON: no NaN or Infinity literals


def test_numpy_scalars_become_python_values():
    assert to_jsonable(np.float32(0.5)) == 0.5 and type(to_jsonable(np.float32(0.5))) is float
    assert to_jsonable(np.float64("nan")) is None
    assert to_jsonable(np.bool_(True)) is True
    assert to_jsonable(np.int32(-4)) == -4 and type(to_jsonable(np.int32(-4))) is int
    assert to_jsonable("text") == "text" and to_jsonable(None) is None


def test_pandas_frames_are_records_and_series_are_mappings():
    df = pd.DataFrame({"a": [1.0, np.nan], "b": ["x", "y"]})
    assert to_jsonable(df) == [{"a": 1.0, "b": "x"}, {"a": None, "b": "y"}]
    s = pd.Series({"p": 0.5, "q": np.nan})
    assert to_jsonable(s) == {"p": 0.5, "q": None}
