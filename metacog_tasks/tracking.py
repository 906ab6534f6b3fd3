"""Experiment tracking: ``metacog analyze`` and ``metacog gate`` summaries to MLflow.

Optional (``pip install 'metacog-eval[mlflow]'``, the MLflow client only). One MLflow run per
call, in the experiment named (created when absent), on any tracking URI MLflow takes: a server
(``http://host:5000``), a database (``sqlite:///mlflow.db``) or a local folder
(``file:./mlruns``; MLflow 3 refuses a folder unless ``MLFLOW_ALLOW_FILE_STORE=true``).

What a run holds:

* analysis: the parameters (seed, draws, ...), one metric per headline number of every group,
  ``<benchmark>/<probe>/<number>`` (first-factor shares, mean tau and each null's mean and
  p-value, share of FDR-significant pairs, factor alignment), per-model accuracy, yes-rate and
  AUROC, ``summary.json`` and ``report.html`` as artifacts;
* gate: the status and exit code, per test ``<benchmark>/<probe>/<kind>/<metric>/change``,
  ``.../p_value`` and ``.../failed``, the verdict as ``gate.json``.

The harness runs themselves are tracked by the harnesses (lm-eval's ``--wandb_args``).
"""

from __future__ import annotations

import json
import math
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

__all__ = ["analysis_metrics", "gate_metrics", "log_analysis", "log_gate", "require_mlflow"]

#: Characters MLflow allows in a metric or parameter key.
_KEY_BAD = re.compile(r"[^A-Za-z0-9_\-. /]")
#: MLflow's batch limit of metrics per call.
_BATCH = 1000
#: The per-model numbers of an analysis that are logged.
_PER_MODEL = ("accuracy", "yes_rate", "auroc_internal", "auroc_pop", "brier", "ece")


def require_mlflow() -> Any:
    """The ``mlflow`` module.

    Raises:
        ModuleNotFoundError: Without the mlflow extra (``metacog`` names the extra).
    """
    import mlflow

    return mlflow


def _key(*parts: Any) -> str:
    return _KEY_BAD.sub("_", "/".join(str(p) for p in parts))[:250]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def _get(node: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def _group_metrics(prefix: tuple[str, str], g: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for path in (
        ("n_models",),
        ("n_items",),
        ("confidence", "eigen", "first_share"),
        ("confidence", "eigen", "quadratic_r2"),
        ("correctness", "eigen", "first_share"),
        ("pairwise", "mean_tau"),
        ("pairwise", "fdr_significant_share"),
        ("factor_alignment", "all", "r"),
        ("factor_alignment", "contentious", "r"),
    ):
        yield _key(*prefix, ".".join(path)), _get(g, *path)
    for null, res in (_get(g, "pairwise", "nulls") or {}).items():
        for stat in ("mean", "p_value"):
            yield _key(*prefix, f"pairwise.{null}.{stat}"), _get(res, stat)
    for model, row in (g.get("per_model") or {}).items():
        for stat in _PER_MODEL:
            yield _key(*prefix, "per_model", model, stat), _get(row, stat)


def analysis_metrics(summary: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of an analysis summary that :func:`log_analysis` logs, by metric key.

    Args:
        summary: ``summary.json`` of ``metacog analyze``.

    Returns:
        Metric key -> finite value (undefined numbers are left out).
    """
    out = {"n_records": summary.get("n_records"), "n_models": len(summary.get("models") or ())}
    for bench, by_label in (summary.get("results") or {}).items():
        for label, group in (by_label or {}).items():
            if isinstance(group, Mapping) and group.get("status") == "ok":
                out.update(_group_metrics((bench, label), group))
    return {k: float(v) for k, v in out.items() if _number(v) is not None}


def gate_metrics(verdict: Mapping[str, Any]) -> dict[str, float]:
    """The numbers of a gate verdict (``GateVerdict.to_dict()``) that :func:`log_gate` logs."""
    out: dict[str, Any] = {"exit_code": verdict.get("exit_code")}
    for t in verdict.get("tests") or ():
        head = (t.get("benchmark"), t.get("probe"), t.get("confidence_kind") or "all",
                t.get("metric"))  # fmt: skip
        for stat in ("baseline", "candidate", "change", "p_value", "p_holm"):
            out[_key(*head, stat)] = t.get(stat)
        out[_key(*head, "failed")] = 1.0 if t.get("verdict") == "fail" else 0.0
    return {k: float(v) for k, v in out.items() if _number(v) is not None}


def _params(summary: Mapping[str, Any]) -> dict[str, str]:
    params = {_key(k): str(v)[:6000] for k, v in (summary.get("parameters") or {}).items()}
    params["inputs"] = ", ".join(str(p) for p in summary.get("inputs") or ())[:6000]
    return params


def _log(
    tracking_uri: str,
    experiment: str,
    run_name: str | None,
    *,
    params: Mapping[str, str],
    metrics: Mapping[str, float],
    tags: Mapping[str, str],
    document: tuple[str, Mapping[str, Any]],
    files: tuple[Path, ...] = (),
) -> str:
    require_mlflow()
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    found = client.get_experiment_by_name(experiment)
    experiment_id = found.experiment_id if found else client.create_experiment(experiment)
    run = client.create_run(experiment_id, run_name=run_name, tags=dict(tags))
    run_id = run.info.run_id
    status = "FAILED"
    try:
        from mlflow.entities import Metric, Param

        when = int(run.info.start_time)
        ps = [Param(k, v) for k, v in params.items()]
        ms = [Metric(k, v, when, 0) for k, v in metrics.items()]
        for i in range(0, max(len(ps), len(ms)), _BATCH):
            client.log_batch(run_id, metrics=ms[i : i + _BATCH], params=ps[i : i + _BATCH])
        with tempfile.TemporaryDirectory() as tmp:
            name, data = document
            path = Path(tmp) / name
            path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
            client.log_artifact(run_id, str(path))
        for file in files:
            if file.is_file():
                client.log_artifact(run_id, str(file))
        status = "FINISHED"
    finally:
        client.set_terminated(run_id, status=status)
    return run_id


def log_analysis(
    summary: Mapping[str, Any],
    tracking_uri: str,
    *,
    experiment: str = "metacog",
    run_name: str | None = None,
    out_dir: str | Path | None = None,
) -> str:
    """Log an analysis (its ``summary.json``) as one MLflow run.

    Args:
        summary: The summary of ``metacog analyze``.
        tracking_uri: MLflow tracking URI.
        experiment: Experiment name (created when absent).
        run_name: Run name (MLflow picks one by default).
        out_dir: The analysis folder: its ``report.html`` is logged too.

    Returns:
        The MLflow run id.

    Raises:
        ModuleNotFoundError: Without the mlflow extra.
    """
    files = (Path(out_dir) / "report.html",) if out_dir is not None else ()
    return _log(
        tracking_uri,
        experiment,
        run_name,
        params=_params(summary),
        metrics=analysis_metrics(summary),
        tags={"metacog.kind": "analysis", "metacog.schema": str(summary.get("schema_version"))},
        document=("summary.json", summary),
        files=files,
    )


def log_gate(
    verdict: Mapping[str, Any],
    tracking_uri: str,
    *,
    experiment: str = "metacog-gate",
    run_name: str | None = None,
) -> str:
    """Log a gate verdict as one MLflow run (the hook ``metacog gate`` calls).

    Args:
        verdict: ``GateVerdict.to_dict()``.
        tracking_uri: MLflow tracking URI.
        experiment: Experiment name (created when absent).
        run_name: Run name (default: the candidate model).

    Returns:
        The MLflow run id.

    Raises:
        ModuleNotFoundError: Without the mlflow extra.
    """
    config = verdict.get("config") or {}
    params = (
        {_key(k): str(v)[:6000] for k, v in config.items()} if isinstance(config, Mapping) else {}
    )
    for side in ("baseline_model", "candidate_model"):
        params[side] = str(verdict.get(side))
    return _log(
        tracking_uri,
        experiment,
        run_name
        or (str(verdict.get("candidate_model")) if verdict.get("candidate_model") else None),
        params=params,
        metrics=gate_metrics(verdict),
        tags={"metacog.kind": "gate", "metacog.gate.status": str(verdict.get("status"))},
        document=("gate.json", verdict),
    )
