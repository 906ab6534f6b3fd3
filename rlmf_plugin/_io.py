"""Reading and writing the RLMF datasets: a ``datasets`` folder plus the same rows as JSONL."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from metacog_metrics import atomic_write_text

__all__ = ["jsonable", "load_rows", "write_json", "write_rows"]


def jsonable(value: Any) -> Any:
    """``value`` with NaN/inf as ``None`` and numpy scalars as Python numbers (for JSON)."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            value = value.item()
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json(path: str | PathLike[str], data: Any) -> Path:
    """Write ``data`` as indented JSON, atomically (NaN written as ``null``)."""
    return atomic_write_text(path, json.dumps(jsonable(data), indent=2) + "\n")


def write_rows(out_dir: str | PathLike[str], rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write ``rows`` as ``out_dir/dataset`` (``datasets.load_from_disk``) and ``train.jsonl``.

    The dataset folder is written beside its target and then swapped in, so a reader never
    sees half a dataset.
    """
    from datasets import Dataset

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    rows = [jsonable(dict(r)) for r in rows]
    tmp = Path(tempfile.mkdtemp(prefix=".dataset.", dir=out))
    try:
        Dataset.from_list(rows).save_to_disk(str(tmp / "dataset"))
        target = out / "dataset"
        old = None
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=".dataset-old.", dir=out)) / "dataset"
            target.rename(old)
        (tmp / "dataset").rename(target)
        if old is not None:
            shutil.rmtree(old.parent, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    atomic_write_text(out / "train.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    return out


def load_rows(path: str | PathLike[str]) -> list[dict[str, Any]]:
    """The rows of a dataset ``build``/``select`` wrote: its folder, ``dataset/`` or a JSONL.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        ValueError: ``path`` is not such a dataset, or a JSONL line is not an object (the
            message names the file and line).
    """
    from datasets import load_from_disk

    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"no such dataset: {p}")
    if p.is_dir() and (p / "dataset").is_dir():
        p = p / "dataset"
    if p.is_dir():
        try:
            return list(load_from_disk(str(p)))
        except Exception as exc:  # not a datasets folder
            raise ValueError(f"{p}: not a dataset folder written by `metacog rlmf`: {exc}") from exc
    if p.suffix == ".jsonl":
        rows = []
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}, line {n}: not JSON ({exc.msg})") from None
            if not isinstance(row, dict):
                raise ValueError(f"{p}, line {n}: not a JSON object")
            rows.append(row)
        return rows
    raise ValueError(f"{p}: not a dataset folder or a .jsonl file written by `metacog rlmf`")
