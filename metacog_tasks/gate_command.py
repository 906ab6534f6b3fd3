"""``metacog gate``, ``metacog gate bless`` and ``metacog gate plan``: read the runs, decide,
write the reports.

A run is an lm-eval output folder (``--output_path`` with ``--log_samples``), an Inspect log
folder or file, a record table (``.parquet``/``.csv``) or a baseline saved by ``bless``. Several
runs of one model (repeats) and the epochs of an Inspect ``--epochs`` run are pooled per item.
The statistics and the output formats live in :mod:`metacog_metrics.gate`; this module reads the
inputs, collects their software versions and writes what was asked. Every problem with an input
becomes a refusal (exit 2) that names the file, written to every report like any other verdict.

The command line is built here, its settings' flags from
:func:`metacog_metrics.gate.gate_settings_help` (one place for a setting's default and help).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from metacog_metrics import (
    GATE_RULES,
    UNSPECIFIED_PROBE,
    GateBaseline,
    GateConfig,
    GateConfigError,
    GateInputError,
    GatePlan,
    GateVerdict,
    Result,
    atomic_write_text,
    gate_records,
    gate_settings_help,
    github_annotations,
    is_baseline_file,
    junit_xml,
    markdown_summary,
    plan_from_items,
    plan_from_records,
    read_baseline,
    read_records,
    stack_repeats,
    template_versions,
    terminal_report,
    validate_records,
    verdict_json,
    version_warnings,
    write_baseline,
)
from metacog_tasks._links import docs_url

__all__ = [
    "COMMENT_LIMIT",
    "GateInput",
    "add_parser",
    "adopt_named_probe",
    "load_config",
    "load_gate_input",
    "run_bless",
    "run_demo",
    "run_gate",
    "run_plan",
]

#: Largest pull-request comment written (GitHub holds 65,536 characters in one).
COMMENT_LIMIT = 60_000
_TABLE_SUFFIXES = (".parquet", ".pq", ".csv", ".csv.gz", ".csv.bz2", ".csv.zst", ".csv.xz")
#: Choices of the settings that have them (the flags' types come from the defaults).
_CHOICES: Mapping[str, Sequence[str]] = {
    "rule": tuple(GATE_RULES),
    "inconclusive": ("pass", "fail"),
    "ungraded": ("wrong", "exclude"),
}


@dataclasses.dataclass(frozen=True, eq=False)
class GateInput(Result):
    """One side of the gate, read.

    Attributes:
        path: What was given (several runs joined by ``", "``).
        kind: ``baseline file``, ``record table`` or ``harness logs``.
        model: The model compared.
        records: Its records (a ``repeat`` column when an item has several).
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
            "repeats": int(self.records["repeat"].nunique()) if "repeat" in self.records else 1,
            "versions": dict(self.versions),
            "templates": template_versions(self.records),
        }


def load_config(path: str | os.PathLike[str] | None, **overrides: Any) -> GateConfig:
    """The gate config from a YAML (or JSON) file, then ``overrides`` (the command line).

    Raises:
        GateConfigError: Unreadable file, not a mapping, unknown keys or bad values (names
            the file and the key).
    """
    data: dict[str, Any] = {}
    source = "command line"
    if path is not None:
        import yaml

        source = str(path)
        try:
            loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        except OSError as exc:
            raise GateConfigError(
                f"{path}: cannot read the gate config ({exc.strerror or exc})"
            ) from None
        except yaml.YAMLError as exc:
            raise GateConfigError(f"{path}: not valid YAML ({exc})") from None
        if loaded is not None and not isinstance(loaded, Mapping):
            raise GateConfigError(f"{path}: a gate config is a mapping of keys to values")
        data = dict(loaded or {})
    data.update({k: v for k, v in overrides.items() if v is not None})
    return GateConfig.from_mapping(data, source=source)


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


def _inspect_epochs(records: pd.DataFrame, side: str) -> tuple[list[pd.DataFrame], list[str]]:
    """The records of epochs 2, 3, ... of the Inspect logs among ``records`` (epoch 1)."""
    if "harness" not in records.columns or "source" not in records.columns:
        return [], []
    sources = sorted(set(records.loc[records["harness"] == "inspect", "source"].dropna()))
    if not sources:
        return [], []
    from inspect_ai.log import read_eval_log

    from metacog_tasks.collect.inspect_logs import read_inspect_logs

    epochs = max(int(read_eval_log(s, header_only=True).eval.config.epochs or 1) for s in sources)
    frames, notes = [], []
    for epoch in range(2, epochs + 1):
        got = read_inspect_logs(sources, epoch=epoch)
        if got.records.empty:
            break
        frames.append(validate_records(got.records, source=f"{side} epoch {epoch}"))
    if frames:
        notes.append(f"{side}: epochs 1-{len(frames) + 1} of the Inspect logs pooled per item")
    return frames, notes


@dataclasses.dataclass
class _Run:
    """One run as read: its records (one frame per repeat), versions, kind and notes."""

    frames: list[pd.DataFrame]
    versions: dict[str, str]
    kind: str
    notes: list[str]
    baseline: GateBaseline | None = None


def _read_one(raw: str | os.PathLike[str], side: str, probe: str | None = None) -> _Run:
    """One run: a baseline file, a record table or harness logs (``probe``: that of a table's
    records that name none, default ``unspecified``)."""
    text, p = str(raw), Path(raw)
    if not p.exists():
        raise FileNotFoundError(f"{side} {text}: no such file or folder")
    notes: list[str] = []
    if is_baseline_file(p):
        baseline = read_baseline(p)
        recs = baseline.records
        frames = (
            [sub.drop(columns="repeat") for _, sub in recs.groupby("repeat")]
            if ("repeat" in recs.columns)
            else [recs]
        )
        return _Run(frames, dict(baseline.versions), "baseline file", notes, baseline)
    if p.is_file() and p.name.lower().endswith(_TABLE_SUFFIXES):
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # its notes are carried below
            records = read_records(p, default_probe=probe or UNSPECIFIED_PROBE)
        notes += [f"{side} {text}: {n}" for n in records.attrs.get("warnings", [])]
        return _Run([records], {}, "record table", notes)
    from metacog_tasks.collect import collect

    result = collect([p])
    extra, epoch_notes = _inspect_epochs(result.records, side)
    warnings_ = [w for w in result.warnings if not (extra and "of other epochs not read" in w)]
    notes += [f"{side} {text}: {w}" for w in warnings_] + epoch_notes
    for f in result.files:
        if f.skipped is None and f.n_bad:
            first = f"; first: {f.errors[0]}" if f.errors else ""
            notes.append(f"{side} {f.path}: {f.n_bad} of {f.n_lines} log line(s) unreadable{first}")
    return _Run([result.records, *extra], _versions_of(result.files), "harness logs", notes)


def load_gate_input(
    path: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    *,
    model: str | None = None,
    side: str = "candidate",
    probe: str | None = None,
) -> GateInput:
    """Read one side of the gate: baseline files, record tables or harness logs.

    Several paths are repeated runs of one model; with the epochs of Inspect logs they become
    repeats, pooled per item by the gate.

    Args:
        path: A file or folder, or several.
        model: The model to take when the input holds several.
        side: ``baseline``, ``candidate`` or ``population`` (for messages).
        probe: The probe of a record table's records that name none (no probe column or
            empty cells); default ``unspecified``, as ``metacog analyze``.

    Returns:
        The side's records of one model (all models for ``population``), with versions and
        notes.

    Raises:
        FileNotFoundError: Nothing at a path.
        GateInputError: No records, several models without ``model``, an unknown ``model``.
        metacog_metrics.RecordError: Malformed records (names the file and rows).
        metacog_tasks.collect.CollectError: Logs that cannot form one table.
    """
    paths = [path] if isinstance(path, str | os.PathLike) else list(path)
    text = ", ".join(str(p) for p in paths)
    frames: list[pd.DataFrame] = []
    versions: dict[str, set[str]] = {}
    kinds, notes = set(), []
    baseline = None
    for p in paths:
        run = _read_one(p, side, probe)
        if run.baseline is not None and len(paths) == 1:
            baseline = run.baseline
        frames += [f for f in run.frames if not f.empty]
        for k, v in run.versions.items():
            versions.setdefault(k, set()).update(v.split(", "))
        kinds.add(run.kind)
        notes += run.notes
    if not frames:
        raise GateInputError(f"{side} {text}: no metacog records found")
    merged = {k: ", ".join(sorted(v)) for k, v in sorted(versions.items())}
    kind = ", ".join(sorted(kinds))
    if side == "population":
        return GateInput(text, kind, "", pd.concat(frames, ignore_index=True), merged, tuple(notes))
    chosen = _select_model(pd.concat([f[["model"]] for f in frames]), model, text, side)
    frames = [f[f["model"].astype(str) == chosen].reset_index(drop=True) for f in frames]
    frames = [f for f in frames if not f.empty]
    if len(frames) > 1:
        notes.append(f"{side}: {len(frames)} runs of {chosen} pooled per item (repeats)")
    return GateInput(text, kind, chosen, stack_repeats(frames), merged, tuple(notes), baseline)


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


def _first_run(path: str) -> str:
    return (
        f"baseline {path}: no such file. A first run? Bless a run of the checkpoint you trust "
        f"and commit the file: `metacog gate bless RUN -o {path}` (in the example workflow: run "
        "it once with bless ticked and commit the baseline from its artifact); then gate "
        "candidates against it"
    )


def adopt_named_probe(
    records: pd.DataFrame, reference: pd.DataFrame, side: str, other: str
) -> tuple[pd.DataFrame, list[str]]:
    """``records`` with their ``unspecified`` probe read as the one probe ``reference`` names.

    Per benchmark and confidence kind: where ``records`` name no probe (``unspecified``: a
    table without a probe column) and ``reference`` holds no ``unspecified`` records but
    exactly one named probe there, the records take that probe and a note says so. A baseline
    blessed from such a table before it was read as ``unspecified`` holds ``prospective``;
    its gates go on comparing the same records, and the note asks for ``--probe``.

    >>> import pandas as pd
    >>> mine = pd.DataFrame({"benchmark": ["mmlu"], "probe": ["unspecified"],
    ...                      "confidence_kind": ["verbal_binary"]})
    >>> theirs = mine.assign(probe="prospective")
    >>> out, notes = adopt_named_probe(mine, theirs, "candidate", "baseline")
    >>> out["probe"].tolist(), notes[0].split(";")[0]
    (['prospective'], 'candidate: the records of mmlu (verbal_binary) name no probe')
    """
    notes: list[str] = []
    unnamed = records["probe"].astype(str) == UNSPECIFIED_PROBE
    if not unnamed.any():
        return records, notes
    out = records.copy()
    for (bench, kind), _ in out[unnamed].groupby(["benchmark", "confidence_kind"], sort=True):
        there = reference[
            (reference["benchmark"] == bench) & (reference["confidence_kind"] == kind)
        ]["probe"].astype(str)
        named = sorted(set(there))
        if len(named) != 1 or named[0] == UNSPECIFIED_PROBE:
            continue
        rows = unnamed & (out["benchmark"] == bench) & (out["confidence_kind"] == kind)
        out.loc[rows, "probe"] = named[0]
        notes.append(
            f"{side}: the records of {bench} ({kind}) name no probe; compared as the {other}'s "
            f"'{named[0]}' (declare it with --probe {named[0]})"
        )
    return out, notes


def run_gate(
    baseline: str | Sequence[str],
    candidate: str | Sequence[str],
    *,
    config: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    junit: str | None = None,
    markdown: str | None = None,
    json_path: str | None = None,
    comment: str | None = None,
    baseline_model: str | None = None,
    candidate_model: str | None = None,
    population: Sequence[str] = (),
    out: Any = None,
    probe: str | None = None,
) -> GateVerdict:
    """Gate ``candidate`` against ``baseline``, print the verdict and write the reports.

    Args:
        baseline: The baseline run(s) (any input :func:`load_gate_input` reads).
        candidate: The candidate run(s).
        config: ``gate.yaml`` (default settings when None).
        overrides: Settings given on the command line (they win over the file).
        junit: Write the JUnit XML report here.
        markdown: Write the Markdown summary here (appended when it is
            ``$GITHUB_STEP_SUMMARY``; written there anyway under GitHub Actions).
        json_path: Write the JSON verdict here.
        comment: Write the Markdown summary for a pull-request comment here (at most
            :data:`COMMENT_LIMIT` bytes).
        baseline_model: The model to take from a baseline run holding several.
        candidate_model: The same for the candidate.
        population: Runs of reference models for the Internal - Pop gap.
        out: Stream for the report (default standard output).
        probe: The probe of record-table records that name none (default ``unspecified``;
            where only one side names its probe, the other takes it with a note:
            :func:`adopt_named_probe`).

    Returns:
        The verdict; ``metacog gate`` exits with its ``exit_code``.
    """
    out = out or sys.stdout
    inputs: dict[str, Any] = {}
    try:
        cfg = load_config(config, **dict(overrides or {}))
    except GateConfigError as exc:
        verdict = GateVerdict.refused([str(exc)])
        _emit(verdict, out, junit, markdown, json_path, comment, inputs)
        return verdict
    sides: dict[str, GateInput] = {}
    refusals = []
    for side, path, model in (
        ("baseline", baseline, baseline_model),
        ("candidate", candidate, candidate_model),
    ):
        paths = [path] if isinstance(path, str) else list(path)
        if side == "baseline" and len(paths) == 1 and not Path(paths[0]).exists():
            refusals.append(_first_run(paths[0]))
            continue
        try:
            sides[side] = load_gate_input(paths, model=model, side=side, probe=probe)
            inputs[side] = sides[side].describe()
        except (OSError, ValueError, KeyError) as exc:
            refusals.append(_input_problem(exc))
    pop_frames = []
    for path in population:
        try:
            pop_frames.append(load_gate_input(path, side="population", probe=probe).records)
        except (OSError, ValueError, KeyError) as exc:
            refusals.append(_input_problem(exc))
    if refusals:
        verdict = GateVerdict.refused(
            refusals,
            cfg,
            baseline_model=sides["baseline"].model if "baseline" in sides else None,
            candidate_model=sides["candidate"].model if "candidate" in sides else None,
        )
        _emit(verdict, out, junit, markdown, json_path, comment, inputs)
        return verdict
    b, c = sides["baseline"], sides["candidate"]
    notes = [*b.notes, *c.notes]
    c_records, adopted = adopt_named_probe(c.records, b.records, "candidate", "baseline")
    b_records, adopted_b = adopt_named_probe(b.records, c_records, "baseline", "candidate")
    notes += adopted + adopted_b
    pop_frames = [adopt_named_probe(f, c_records, "population", "candidate")[0] for f in pop_frames]
    notes += version_warnings(
        b.versions,
        c.versions,
        baseline_templates=template_versions(b_records),
        candidate_templates=template_versions(c_records),
    )
    if b.baseline is not None and b.baseline.config_fingerprint != cfg.fingerprint():
        notes.append(
            f"the baseline was blessed with other gate settings (fingerprint "
            f"{b.baseline.config_fingerprint[:12]}, now {cfg.fingerprint()[:12]}); "
            "the verdict uses the settings given now"
        )
    pop = pd.concat(pop_frames, ignore_index=True) if pop_frames else None
    verdict = gate_records(b_records, c_records, cfg, population=pop, warnings=notes)
    _emit(verdict, out, junit, markdown, json_path, comment, inputs)
    return verdict


def _emit(
    verdict: GateVerdict,
    out: Any,
    junit: str | None,
    markdown: str | None,
    json_path: str | None,
    comment: str | None,
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
    if comment:
        _write(comment, markdown_summary(verdict, limit=COMMENT_LIMIT))
    out.flush()


def run_bless(
    run: str | Sequence[str],
    *,
    output: str,
    model: str | None = None,
    config: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    out: Any = None,
    probe: str | None = None,
) -> int:
    """Save ``run`` as a gate baseline file.

    Args:
        run: The run(s) to bless (any input :func:`load_gate_input` reads; several: repeats).
        output: The baseline ``.json`` to write.
        model: The model to take from a run holding several.
        config: ``gate.yaml`` whose fingerprint the baseline records.
        overrides: Settings given on the command line.
        out: Stream for messages (default standard output).
        probe: The probe of record-table records that name none (default ``unspecified``).

    Returns:
        The exit status: 0 written, 2 unusable input.
    """
    out = out or sys.stdout
    runs = [run] if isinstance(run, str) else list(run)
    try:
        cfg = load_config(config, **dict(overrides or {}))
        side = load_gate_input(runs, model=model, side="baseline", probe=probe)
        if not str(output).lower().endswith(".json"):
            raise GateInputError(f"-o {output}: a baseline file is .json")
        written = write_baseline(
            side.records, output, config=cfg, versions=side.versions, sources=runs
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
    print(f"wrote {output} (content sha256 {written.content_sha256[:12]}; commit it)", file=out)
    return 0


def _targets(items: Sequence[str]) -> dict[str, float]:
    out = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ValueError(f"--target {item!r}: write METRIC=CHANGE, e.g. auroc=0.06") from None
        if not sep:
            raise ValueError(f"--target {item!r}: write METRIC=CHANGE, e.g. auroc=0.06")
    return out


def run_plan(
    *,
    baseline: Sequence[str] = (),
    candidate: Sequence[str] = (),
    items: int | None = None,
    tests: int | None = None,
    config: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    correlation: float = 0.0,
    targets: Sequence[str] = (),
    json_path: str | None = None,
    baseline_model: str | None = None,
    candidate_model: str | None = None,
    out: Any = None,
    probe: str | None = None,
) -> int:
    """Print (and optionally write as JSON) the gate's plan.

    Args:
        baseline: A baseline run or file (its items and metric values).
        candidate: An earlier candidate run on the same items (paired standard errors).
        items: An item count instead of a baseline.
        tests: Gated tests of the whole gate (with ``items``; default the group's metrics).
        config: ``gate.yaml``.
        overrides: Settings given on the command line.
        correlation: Per-item correlation of two runs assumed without a candidate.
        targets: ``METRIC=CHANGE`` items to plan the items for.
        json_path: Write the plan as JSON here.
        baseline_model: The model to take from a baseline run holding several.
        candidate_model: The same for the candidate.
        out: Stream (default standard output).
        probe: The probe of record-table records that name none (default ``unspecified``).

    Returns:
        0, or 2 on unusable input.
    """
    out = out or sys.stdout
    try:
        cfg = load_config(config, **dict(overrides or {}))
        wanted = _targets(targets)
        plan: GatePlan
        if baseline:
            b = load_gate_input(list(baseline), model=baseline_model, side="baseline", probe=probe)
            c = None
            if candidate:
                c = load_gate_input(
                    list(candidate), model=candidate_model, side="candidate", probe=probe
                )
            c_records = None
            if c is not None:
                c_records, _ = adopt_named_probe(c.records, b.records, "candidate", "baseline")
            plan = plan_from_records(
                b.records,
                cfg,
                candidate=c_records,
                correlation=correlation,
                targets=wanted,
                source=f"baseline {b.path}" + (f" and candidate {c.path}" if c else ""),
            )
        elif items is not None:
            plan = plan_from_items(
                items, cfg, n_tests=tests, correlation=correlation, targets=wanted
            )
        else:
            raise ValueError(
                "give --baseline RUN (a baseline file, run or record table) or --items N"
            )
    except (OSError, ValueError, KeyError) as exc:
        print(f"metacog gate plan: error: {_input_problem(exc)}", file=sys.stderr)
        return 2
    print(plan.text(), file=out)
    if json_path:
        import json

        atomic_write_text(json_path, json.dumps(plan.to_dict(), indent=2, allow_nan=False) + "\n")
    return 0


#: The demo's simulated checkpoints (lm-eval ``metacog-sim`` model args): a model, the same
#: model again, and the same model whose confidence no longer reads the items (preset null).
DEMO_CHECKPOINTS: Mapping[str, str] = {
    "baseline": "model=m04,preset=paper,seed=0",
    "rerun": "model=m04,preset=paper,seed=0",
    "degraded": "model=m04,preset=null,seed=0",
}


def run_demo(out: str | os.PathLike[str] = "metacog-gate-demo", *, stream: Any = None) -> int:
    """``metacog gate demo``: a pass and a fail, offline, on the bundled packs.

    Three lm-eval runs of simulated checkpoints (:data:`DEMO_CHECKPOINTS`) on every benchmark's
    bundled pack, both probes; the first is blessed (pooled: the packs hold 8-20 items a
    benchmark), then the rerun is gated against it (PASS) and the degraded one (FAIL).

    Args:
        out: Folder for the runs, the baseline and the reports.
        stream: Where to print (default standard output).

    Returns:
        0 when the rerun passes and the degraded checkpoint fails, else 1.
    """
    import io

    from metacog_metrics import OutputFolder, OutputFolderError
    from metacog_tasks.benchmarks import BENCHMARK_NAMES
    from metacog_tasks.demo import quiet_harness
    from metacog_tasks.lmeval.runner import run_lmeval

    stream = stream or sys.stdout
    root = Path(out)
    # A rerun replaces the demo's own earlier outputs, never a user's: a folder it did not
    # write is refused (OutputFolderError), as by `metacog demo` and `metacog analyze`.
    folder = OutputFolder(root, "gate-demo")
    own = ["metacog-baseline.json", "harness.log"] + [
        f"{name}{ext}" for name in ("rerun", "degraded") for ext in ("-junit.xml", ".md")
    ]
    folder.claim(own)
    folder.commit([])  # the demo's earlier runs and reports go; nothing else
    folder.claim(own)
    for name in DEMO_CHECKPOINTS:
        runs = root / "runs" / name
        if runs.exists() and any(p.is_file() for p in runs.rglob("*")):
            raise OutputFolderError(
                f"{runs} holds files the gate demo did not write; move them or name another --out"
            )
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    tasks = [f"metacog_{b}{s}" for b in BENCHMARK_NAMES for s in ("", "_cf")]
    metadata = {"metacog_data": "bundled", "metacog_confidence": "verbal,logprob"}
    for name, args in DEMO_CHECKPOINTS.items():
        print(
            f"lm-eval: {name} checkpoint, metacog-sim {args}, {len(tasks)} tasks ...", file=stream
        )
        run_dir = root / "runs" / name
        run_dir.mkdir(parents=True, exist_ok=True)
        with quiet_harness(root / "harness.log"):
            run_lmeval(
                [{"model": "metacog-sim", "model_args": args}],
                tasks,
                output_path=run_dir,
                metadata=metadata,
                bootstrap_iters=0,
                verbosity="ERROR",
            )
        folder.adopt(p for p in run_dir.rglob("*") if p.is_file())
    baseline = str(root / "metacog-baseline.json")
    overrides = {"pool": True}
    code = run_bless(
        str(root / "runs" / "baseline"), output=baseline, overrides=overrides, out=io.StringIO()
    )
    if code:
        return code
    print(
        f"blessed the baseline checkpoint: {baseline} (harness output: {root / 'harness.log'})",
        file=stream,
    )
    verdicts = {}
    for name in ("rerun", "degraded"):
        print(
            f"\n$ metacog gate --baseline {baseline} --candidate {root / 'runs' / name} --pool",
            file=stream,
        )
        verdicts[name] = run_gate(
            baseline,
            str(root / "runs" / name),
            overrides=overrides,
            junit=str(root / f"{name}-junit.xml"),
            markdown=str(root / f"{name}.md"),
            out=stream,
        )
    folder.commit(
        [*(root / f for f in own), *(p for p in (root / "runs").rglob("*") if p.is_file())]
    )
    ok = verdicts["rerun"].exit_code == 0 and verdicts["degraded"].exit_code == 1
    print(
        f"\nthe unchanged checkpoint: {verdicts['rerun'].status.upper()} (exit "
        f"{verdicts['rerun'].exit_code}); the degraded one: "
        f"{verdicts['degraded'].status.upper()} (exit {verdicts['degraded'].exit_code})",
        file=stream,
    )
    return 0 if ok else 1


# ------------------------------------------------------------------------------ command line


def _flag_type(default: Any) -> Any:
    if isinstance(default, bool):
        return None
    if isinstance(default, int):
        return int
    if isinstance(default, float):
        return float
    return str


def _add_settings(p: argparse.ArgumentParser) -> None:
    """The settings that are also flags, each with its config default and help."""
    group = p.add_argument_group(
        "settings", f"override the config file; defaults as in {docs_url('gate.md')}"
    )
    for key, (default, text, is_flag) in gate_settings_help().items():
        if not is_flag:
            continue
        flag = "--" + key.replace("_", "-")
        shown = (
            f"{text} (default: {str(default).lower() if isinstance(default, bool) else default})"
        )
        if isinstance(default, bool):
            group.add_argument(
                flag, dest=key, action="store_true", default=argparse.SUPPRESS, help=shown
            )
            continue
        group.add_argument(
            flag,
            dest=key,
            type=_flag_type(default) if key != "primary" else str,
            choices=_CHOICES.get(key),
            default=argparse.SUPPRESS,
            help=shown,
        )


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    return {
        k: getattr(args, k)
        for k, (*_, flag) in gate_settings_help().items()
        if flag and hasattr(args, k)
    }


def _add_probe(p: argparse.ArgumentParser, dest: str) -> None:
    p.add_argument(
        "--probe",
        dest=dest,
        metavar="PROBE",
        help="the probe of a record table's records that name none (no probe column): "
        "prospective, retrospective, ... Without it they are 'unspecified', as in `metacog "
        "analyze`; where only the other side names its probe they take it, with a note",
    )


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``gate`` (with ``bless`` and ``plan``) to the ``metacog`` command line."""
    p = sub.add_parser(
        "gate",
        help="CI regression check: a candidate checkpoint's run against a baseline's",
        description="Compare a candidate run with a baseline run on the same items (lm-eval "
        "output folders, Inspect log folders, record tables or a baseline saved by `metacog "
        "gate bless`): a paired item bootstrap of every metric; by default a test fails when "
        "its change is worse than its margin and the worsening is significant (Holm over all "
        "tests). Exit 0 pass, 1 regression, 2 unusable input, 3 inconclusive with "
        f"inconclusive: fail. See {docs_url('gate.md')}.",
    )
    p.add_argument("--baseline", nargs="+", metavar="RUN", help="baseline run(s) or baseline .json")
    p.add_argument(
        "--candidate", nargs="+", metavar="RUN", help="candidate run(s) (several: repeats)"
    )
    p.add_argument("--config", help="gate.yaml (rule, margins, alpha, ...; default settings)")
    p.add_argument("--junit", help="write a JUnit XML report (one case per benchmark x metric)")
    p.add_argument("--markdown", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    p.add_argument("--json", dest="json_path", help="write the verdict as JSON")
    p.add_argument("--comment", help="write the Markdown summary sized for a pull-request comment")
    p.add_argument("--baseline-model", help="model to take from a baseline run with several")
    p.add_argument("--candidate-model", help="model to take from a candidate run with several")
    p.add_argument(
        "--population",
        nargs="+",
        default=[],
        metavar="RUN",
        help="runs of reference models: adds the Internal - Pop AUROC gap",
    )
    p.add_argument(
        "--mlflow",
        dest="mlflow_uri",
        metavar="URI",
        help="also log the verdict to this MLflow tracking URI (needs the mlflow extra)",
    )
    p.add_argument(
        "--mlflow-experiment",
        default="metacog-gate",
        metavar="NAME",
        help="MLflow experiment of --mlflow (default metacog-gate)",
    )
    _add_probe(p, "probe")
    _add_settings(p)
    gate_sub = p.add_subparsers(dest="gate_command", metavar="[bless|plan|demo]")
    b = gate_sub.add_parser(
        "bless",
        help="save a run as a baseline file to commit",
        description="Save one model's per-item records, the gate config's fingerprint, the "
        "software versions its logs state and a content hash as a baseline .json for `metacog "
        "gate --baseline`. Several runs are kept as repeats.",
    )
    b.add_argument("run", nargs="+", help="the run(s) to bless (lm-eval/Inspect logs or a table)")
    b.add_argument(
        "-o", "--out", dest="output", required=True, help="baseline file to write (.json)"
    )
    b.add_argument("--model", help="model to take from a run with several")
    b.add_argument("--config", dest="bless_config", metavar="CONFIG", help="gate.yaml to record")
    _add_probe(b, "bless_probe")
    _add_settings(b)
    pl = gate_sub.add_parser(
        "plan",
        help="the smallest change each test catches, and the items a target change needs",
        description="From a baseline (or an item count), the smallest change in the bad "
        "direction each test of the configured gate catches with the configured power (80%), "
        f"and, for --target, the items a group needs. See {docs_url('gate.md')} (power).",
    )
    pl.add_argument(
        "--baseline",
        dest="plan_baseline",
        nargs="+",
        metavar="RUN",
        default=[],
        help="baseline file, run or record table",
    )
    pl.add_argument(
        "--candidate",
        dest="plan_candidate",
        nargs="+",
        metavar="RUN",
        default=[],
        help="an earlier candidate run on the same items: paired standard errors",
    )
    pl.add_argument("--items", type=int, help="items per group, instead of a baseline")
    pl.add_argument("--tests", type=int, help="with --items: gated tests of the whole gate")
    pl.add_argument(
        "--correlation",
        type=float,
        default=0.0,
        help="per-item correlation of two runs assumed without --candidate "
        "(default 0: independent runs, the conservative bound)",
    )
    pl.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="METRIC=CHANGE",
        help="plan the items for this change in the bad direction (repeatable)",
    )
    pl.add_argument("--config", dest="plan_config", metavar="CONFIG", help="gate.yaml")
    pl.add_argument("--json", dest="plan_json", help="write the plan as JSON")
    pl.add_argument("--baseline-model", dest="plan_baseline_model", help="model to take")
    _add_probe(pl, "plan_probe")
    _add_settings(pl)
    d = gate_sub.add_parser(
        "demo",
        help="offline: a simulated checkpoint blessed, its rerun passes, a degraded one fails",
        description="Run three simulated checkpoints through lm-eval on the bundled packs "
        "(offline), bless the first and gate the other two against it: the unchanged rerun "
        "passes, the checkpoint whose confidence no longer reads the items fails.",
    )
    d.add_argument("--out", dest="demo_out", default="metacog-gate-demo", help="output folder")
    p.set_defaults(func=run_command, parser=p)
    return p


def run_command(args: argparse.Namespace) -> int:
    """Run ``metacog gate`` (or its ``bless`` / ``plan``) from parsed arguments."""
    overrides = _overrides(args)
    if args.gate_command == "bless":
        return run_bless(
            args.run,
            output=args.output,
            model=args.model,
            config=args.bless_config or args.config,
            overrides=overrides,
            probe=args.bless_probe or args.probe,
        )
    if args.gate_command == "demo":
        return run_demo(args.demo_out)
    if args.gate_command == "plan":
        return run_plan(
            baseline=args.plan_baseline,
            candidate=args.plan_candidate,
            items=args.items,
            tests=args.tests,
            config=args.plan_config or args.config,
            overrides=overrides,
            correlation=args.correlation,
            targets=args.target,
            json_path=args.plan_json,
            baseline_model=args.plan_baseline_model,
            probe=args.plan_probe or args.probe,
        )
    missing = [f"--{k}" for k in ("baseline", "candidate") if not getattr(args, k)]
    if missing:
        args.parser.error(f"the following arguments are required: {', '.join(missing)}")
    if args.mlflow_uri:
        from metacog_tasks.tracking import require_mlflow

        require_mlflow()  # before the gate, so a missing extra is not found after the run
    try:
        verdict = run_gate(
            args.baseline,
            args.candidate,
            config=args.config,
            overrides=overrides,
            junit=args.junit,
            markdown=args.markdown,
            json_path=args.json_path,
            comment=args.comment,
            baseline_model=args.baseline_model,
            candidate_model=args.candidate_model,
            population=args.population,
            probe=args.probe,
        )
    except Exception:  # a crash must not read as a regression (exit 1) in CI
        import traceback

        traceback.print_exc()
        print("metacog gate: internal error (exit 2); the traceback is above", file=sys.stderr)
        return 2
    if args.mlflow_uri:
        from metacog_metrics import to_jsonable
        from metacog_tasks.tracking import log_gate

        run = log_gate(
            to_jsonable(verdict.to_dict()), args.mlflow_uri, experiment=args.mlflow_experiment
        )
        print(f"logged to MLflow {args.mlflow_uri} (run {run})")
    return verdict.exit_code
