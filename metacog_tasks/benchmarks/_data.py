"""Reading benchmark data: Hugging Face datasets, local JSON/JSONL files, bundled packs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from importlib import resources
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = [
    "DataFormatError",
    "DataUnavailableError",
    "load_hf",
    "pack_dir",
    "read_records",
    "require_fields",
]


class DataUnavailableError(ValueError):
    """The benchmark data cannot be reached (offline without a cache, missing local files)."""


class DataFormatError(ValueError):
    """A data file or record is malformed (the message names the file and row)."""


def pack_dir(benchmark: str) -> Path:
    """The folder of a bundled mini pack inside the installed package."""
    path = Path(str(resources.files("metacog_tasks") / "packs" / benchmark))
    if not path.is_dir():
        raise DataUnavailableError(f"{benchmark}: bundled pack not found at {path}")
    return path


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataFormatError(f"{path}, line {lineno}: invalid JSON ({exc.msg})") from exc
            if not isinstance(row, dict):
                raise DataFormatError(f"{path}, line {lineno}: expected a JSON object")
            rows.append(row)
    return rows


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"{path}: invalid JSON ({exc.msg}, line {exc.lineno})") from exc


def read_records(path: str | PathLike[str], *, pattern: str = "*.json*") -> list[dict[str, Any]]:
    """Read records from a JSON file (a list of objects), a JSONL file, or a folder of them.

    Args:
        path: File or folder. A folder is read recursively in sorted path order; each record
            gets the key ``"__file__"`` with its path relative to the folder.
        pattern: File pattern inside a folder.

    Returns:
        The records, in file order.

    Raises:
        DataUnavailableError: The path does not exist.
        DataFormatError: A file is not valid JSON/JSONL.
    """
    p = Path(path)
    if not p.exists():
        raise DataUnavailableError(f"data path not found: {p}")
    if p.is_dir():
        rows: list[dict[str, Any]] = []
        files = sorted(f for f in p.rglob(pattern) if f.is_file())
        if not files:
            raise DataUnavailableError(f"no {pattern} files under {p}")
        for f in files:
            for row in read_records(f):
                row.setdefault("__file__", f.relative_to(p).as_posix())
                rows.append(row)
        return rows
    if p.suffix.lower() == ".jsonl":
        return _read_jsonl(p)
    data = _read_json(p)
    if isinstance(data, list):
        bad = [i for i, r in enumerate(data) if not isinstance(r, dict)]
        if bad:
            raise DataFormatError(f"{p}: item {bad[0]} is not a JSON object")
        return data
    if isinstance(data, dict):
        return [data]
    raise DataFormatError(f"{p}: expected a JSON list of objects or a JSONL file")


def require_fields(
    record: dict[str, Any], fields: Iterable[str], *, benchmark: str, where: str
) -> None:
    """Raise a :class:`DataFormatError` naming the row when a required field is missing."""
    missing = [f for f in fields if f not in record]
    if missing:
        raise DataFormatError(
            f"{benchmark}: {where} lacks field(s) {missing} (has {sorted(record)})"
        )


def load_hf(
    benchmark: str,
    path: str,
    *,
    name: str | None = None,
    split: str,
    fields: Sequence[str] = (),
    local_hint: str = "",
    **kwargs: Any,
) -> list[dict[str, Any]]:
    """Load a split of a Hugging Face dataset as a list of plain dicts.

    Args:
        benchmark: Benchmark name (for error messages).
        path: Dataset id on the Hub.
        name: Dataset config.
        split: Split name.
        fields: Fields every row must have (checked on the first row).
        local_hint: What local files to pass instead, for the error message.
        **kwargs: Passed to :func:`datasets.load_dataset`.

    Returns:
        The rows.

    Raises:
        DataUnavailableError: The dataset cannot be loaded (offline without a cache, unknown
            split or config); the message says how to point at local files.
    """
    try:
        import datasets
    except ImportError as exc:  # pragma: no cover - datasets is a core dependency
        raise DataUnavailableError(f"{benchmark}: the datasets package is not installed") from exc
    where = f"{path}" + (f" (config {name!r})" if name else "") + f", split {split!r}"
    try:
        ds = datasets.load_dataset(path, name, split=split, **kwargs)
    except Exception as exc:
        hint = local_hint or "a local JSON/JSONL file or folder in the dataset's field names"
        raise DataUnavailableError(
            f"{benchmark}: cannot load the Hugging Face dataset {where}: "
            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}\n"
            f"Offline? Pass local files instead: get_benchmark({benchmark!r}).load(PATH) with "
            f"PATH = {hint}; or load('bundled') for the mini pack; or pre-populate the Hugging "
            f"Face cache and set HF_DATASETS_OFFLINE=1."
        ) from exc
    rows = [dict(r) for r in ds]
    if rows and fields:
        require_fields(rows[0], fields, benchmark=benchmark, where=f"{where} row 0")
    return rows
