"""``metacog gate`` and ``metacog gate bless``: read the runs, decide, write the reports.

A run is an lm-eval output folder (``--output_path`` with ``--log_samples``), an Inspect log
folder or file, a record table (``.parquet``/``.csv``) or a baseline saved by ``bless``. The
statistics live in :mod:`metacog_metrics.gate`, the renderers in
:mod:`metacog_metrics.gate_report`; this module reads the inputs, collects their software
versions and writes what was asked. Every problem with an input becomes a refusal (exit 2) that
names the file, written to every report like any other verdict.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from metacog_metrics import (
    GateBaseline,
    GateConfig,
    GateConfigError,
    GateInputError,
    GateVerdict,
    Result,
    atomic_write_text,
    gate_records,
    github_annotations,
    is_baseline_file,
    junit_xml,
    markdown_summary,
    read_baseline,
    read_records,
    template_versions,
    terminal_report,
    verdict_json,
    version_warnings,
    write_baseline,
)

__all__ = ["GateInput", "load_config", "load_gate_input", "run_bless", "run_gate"]

_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".csv.xz")


@dataclasses.dataclass(frozen=True, eq=False)
class GateInput(Result):
    """One side of the gate, read.

    Attributes:
        path: What was given.
        kind: ``baseline file``, ``record table`` or ``harness logs``.
        model: The model compared.
        records: Its records.
        versions: Software versions its logs (or baseline file) state.
        notes: What the reader found odd (bad log lines, skipped files), carried into the
            verdict's warnings.
        baseline: The baseline file's contents, when it was one.
    """

    path: str
    kind: str
    model: str
    records: pd.DataFrame
    versions: Mapping[str, str]
    notes: tuple[str, ...] = ()
    baseline: GateBaseline | None = None

    def describe(self) -> dict[str, Any]:
        """Plain-JSON description (for the JSON report)."""
        return {
            "path": self.path,
            "kind": self.kind,
            "model": self.model,
            "n_records": len(self.records),
            "versions": dict(self.versions),
            "templates": template_versions(self.records),
        }


def load_config(path: str | os.PathLike[str] | None) -> GateConfig:
    """The gate config from a YAML (or JSON) file; the defaults when ``path`` is None.

    Raises:
        GateConfigError: Unreadable file, not a mapping, unknown keys or bad values (names
            the file and the key).
    """
    if path is None:
        return GateConfig()
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise GateConfigError(
            f"{path}: cannot read the gate config ({exc.strerror or exc})"
        ) from None
    except yaml.YAMLError as exc:
        raise GateConfigError(f"{path}: not valid YAML ({exc})") from None
    if data is not None and not isinstance(data, Mapping):
        raise GateConfigError(f"{path}: a gate config is a mapping of keys to values")
    return GateConfig.from_mapping(data, source=str(path))


def _select_model(records: pd.DataFrame, model: str | None, path: str, side: str) -> str:
    models = sorted(records["model"].astype(str).unique())
    if model is not None:
        if model in models:
            return model
        close = difflib.get_close_matches(model, models, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise GateInputError(
            f"{side} {path}: no model {model!r}{hint}; it holds {', '.join(models[:10])}"
            + (f" and {len(models) - 10} more" if len(models) > 10 else "")
        )
    if len(models) != 1:
        shown = ", ".join(models[:10]) + (
            f" and {len(models) - 10} more" if len(models) > 10 else ""
        )
        raise GateInputError(
            f"{side} {path}: holds {len(models)} models ({shown}); choose one with --{side}-model"
        )
    return models[0]


def _versions_of(files: Sequence[Any]) -> dict[str, str]:
    found: dict[str, set[str]] = {}
    for f in files:
        if f.skipped is None and f.n_records:
            for name, version in f.versions:
                found.setdefault(str(name), set()).add(str(version))
    return {k: ", ".join(sorted(v)) for k, v in sorted(found.items())}


def load_gate_input(
    path: str | os.PathLike[str], *, model: str | None = None, side: str = "candidate"
) -> GateInput:
    """Read one side of the gate: a baseline file, a record table or harness logs.

    Args:
        path: File or folder.
        model: The model to take when the input holds several.
        side: ``baseline``, ``candidate`` or ``population`` (for messages).

    Returns:
        The side's records of one model (all models for ``population``), with versions and
        notes.

    Raises:
        FileNotFoundError: Nothing at ``path``.
        GateInputError: No records, several models without ``model``, an unknown ``model``.
        metacog_metrics.RecordError: Malformed records (names the file and rows).
        metacog_tasks.collect.CollectError: Logs that cannot form one table.
    """
    text = str(path)
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{side} {text}: no such file or folder")
    notes: list[str] = []
    baseline = None
    if is_baseline_file(p):
        baseline = read_baseline(p)
        records, versions, kind = baseline.records, dict(baseline.versions), "baseline file"
    elif p.is_file() and p.name.lower().endswith(_TABLE_SUFFIXES):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its notes are carried below
            records = read_records(p)
        notes += [f"{side} {text}: {n}" for n in records.attrs.get("warnings", [])]
        versions, kind = {}, "record table"
    else:
        from metacog_tasks.collect import collect

        result = collect([p])
        records, versions, kind = result.records, _versions_of(result.files), "harness logs"
        notes += [f"{side} {text}: {w}" for w in result.warnings]
        for f in result.files:
            if f.skipped is None and f.n_bad:
                first = f"; first: {f.errors[0]}" if f.errors else ""
                notes.append(
                    f"{side} {f.path}: {f.n_bad} of {f.n_lines} log line(s) unreadable{first}"
                )
    if records.empty:
        raise GateInputError(f"{side} {text}: no metacog records found")
    if side == "population":
        return GateInput(text, kind, "", records, versions, tuple(notes), baseline)
    chosen = _select_model(records, model, text, side)
    records = records[records["model"].astype(str) == chosen].reset_index(drop=True)
    return GateInput(text, kind, chosen, records, versions, tuple(notes), baseline)


def _write(path: str | os.PathLike[str], text: str) -> None:
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary and Path(path).resolve() == Path(summary).resolve():
        with open(path, "a", encoding="utf-8") as fh:  # the step's summary: append, never replace
            fh.write(text)
    else:
        atomic_write_text(path, text)


def _input_problem(exc: BaseException) -> str:
    return (
        str(exc.args[0]) if isinstance(exc, FileNotFoundError | KeyError) and exc.args else str(exc)
    )


def run_gate(
    baseline: str,
    candidate: str,
    *,
    config: str | None = None,
    junit: str | None = None,
    markdown: str | None = None,
    json_path: str | None = None,
    baseline_model: str | None = None,
    candidate_model: str | None = None,
    population: Sequence[str] = (),
    out: Any = None,
) -> GateVerdict:
    """Gate ``candidate`` against ``baseline``, print the verdict and write the reports.

    Args:
        baseline: The baseline run (any input :func:`load_gate_input` reads).
        candidate: The candidate run.
        config: ``gate.yaml`` (default settings when None).
        junit: Write the JUnit XML report here.
        markdown: Write the Markdown summary here (appended when it is
            ``$GITHUB_STEP_SUMMARY``; written there anyway under GitHub Actions).
        json_path: Write the JSON verdict here.
        baseline_model: The model to take from a baseline run holding several.
        candidate_model: The same for the candidate.
        population: Runs of reference models for the Internal - Pop gap.
        out: Stream for the report (default standard output).

    Returns:
        The verdict; ``metacog gate`` exits with its ``exit_code``.
    """
    out = out or sys.stdout
    inputs: dict[str, Any] = {}
    try:
        cfg = load_config(config)
    except GateConfigError as exc:
        verdict = GateVerdict.refused([str(exc)])
        _emit(verdict, out, junit, markdown, json_path, inputs)
        return verdict
    sides: dict[str, GateInput] = {}
    refusals = []
    for side, path, model in (
        ("baseline", baseline, baseline_model),
        ("candidate", candidate, candidate_model),
    ):
        try:
            sides[side] = load_gate_input(path, model=model, side=side)
            inputs[side] = sides[side].describe()
        except (OSError, ValueError, KeyError) as exc:
            refusals.append(_input_problem(exc))
    pop_frames = []
    for path in population:
        try:
            pop_frames.append(load_gate_input(path, side="population").records)
        except (OSError, ValueError, KeyError) as exc:
            refusals.append(_input_problem(exc))
    if refusals:
        verdict = GateVerdict.refused(
            refusals,
            cfg,
            baseline_model=sides["baseline"].model if "baseline" in sides else None,
            candidate_model=sides["candidate"].model if "candidate" in sides else None,
        )
        _emit(verdict, out, junit, markdown, json_path, inputs)
        return verdict
    b, c = sides["baseline"], sides["candidate"]
    notes = [*b.notes, *c.notes]
    notes += version_warnings(
        b.versions,
        c.versions,
        baseline_templates=template_versions(b.records),
        candidate_templates=template_versions(c.records),
    )
    if b.baseline is not None and b.baseline.config_fingerprint != cfg.fingerprint():
        notes.append(
            f"the baseline was blessed with other gate settings (fingerprint "
            f"{b.baseline.config_fingerprint[:12]}, now {cfg.fingerprint()[:12]}); "
            "the verdict uses the settings given now"
        )
    pop = pd.concat(pop_frames, ignore_index=True) if pop_frames else None
    if pop is None and "internal_pop_gap" in cfg.metrics and population:
        notes.append("no reference population read; the Internal - Pop gap is not tested")
    verdict = gate_records(b.records, c.records, cfg, population=pop, warnings=notes)
    _emit(verdict, out, junit, markdown, json_path, inputs)
    return verdict


def _emit(
    verdict: GateVerdict,
    out: Any,
    junit: str | None,
    markdown: str | None,
    json_path: str | None,
    inputs: Mapping[str, Any],
) -> None:
    if os.environ.get("GITHUB_ACTIONS") == "true":
        for line in github_annotations(verdict):
            print(line, file=out)
    print(terminal_report(verdict), file=out)
    if junit:
        _write(junit, junit_xml(verdict))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    md = markdown_summary(verdict) if (markdown or summary) else None
    if markdown:
        _write(markdown, md)
    same = bool(markdown and summary) and Path(markdown).resolve() == Path(summary).resolve()
    if summary and os.environ.get("GITHUB_ACTIONS") == "true" and not same:
        _write(summary, md)
    if json_path:
        _write(json_path, verdict_json(verdict, extra={"inputs": dict(inputs)}))
    out.flush()


def run_bless(
    run: str,
    *,
    output: str,
    model: str | None = None,
    config: str | None = None,
    out: Any = None,
) -> int:
    """Save ``run`` as a gate baseline file.

    Args:
        run: The run to bless (any input :func:`load_gate_input` reads).
        output: The baseline ``.json`` to write.
        model: The model to take from a run holding several.
        config: ``gate.yaml`` whose fingerprint the baseline records.
        out: Stream for messages (default standard output).

    Returns:
        The exit status: 0 written, 2 unusable input.
    """
    out = out or sys.stdout
    try:
        cfg = load_config(config)
        side = load_gate_input(run, model=model, side="baseline")
        if not str(output).lower().endswith(".json"):
            raise GateInputError(f"-o {output}: a baseline file is .json")
        written = write_baseline(
            side.records, output, config=cfg, versions=side.versions, sources=[run]
        )
    except (OSError, ValueError, KeyError) as exc:
        print(f"metacog gate bless: error: {_input_problem(exc)}", file=sys.stderr)
        return 2
    for note in side.notes:
        print(f"warning: {note}", file=out)
    recs = written.records
    groups = recs.groupby(["benchmark", "probe", "confidence_kind"]).size()
    print(
        f"blessed {written.model}: {len(recs)} records, {recs['item_id'].nunique()} items, "
        f"{len(groups)} benchmark/probe/kind group(s)",
        file=out,
    )
    for key, n in groups.items():
        print(f"  {'/'.join(map(str, key))}: {n}", file=out)
    stated = ", ".join(f"{k} {v}" for k, v in written.versions.items()) or "none stated"
    print(f"versions: {stated}; gate config {written.config_fingerprint[:12]}", file=out)
    if not any(c in recs.columns and recs[c].notna().any() for c in ("prompt_hash", "doc_hash")):
        print(
            "warning: the records carry no prompt or document hashes; the gate will match "
            "items by id only",
            file=out,
        )
    print(f"wrote {output}", file=out)
    return 0
