"""The lm-eval task configs in ``task_configs/``, written from the benchmark records.

Every registered benchmark has two small YAMLs that ``include:`` the shared template
``_default_template_yaml`` (lm-eval resolves it next to the including file):
``metacog_<name>.yaml`` (the prospective probe) and ``metacog_<name>_cf.yaml`` (the
counterfactual one); they set the task name, the benchmark and, where the record's solve budget
or stop sequences differ from the template's, ``generation_kwargs``. The group
``_metacog.yaml`` lists every task. These files are generated, never edited:
``python -m metacog_tasks.lmeval.configs`` rewrites them (``--check`` only compares), and a test
holds the committed files to what the records give.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from metacog_tasks.benchmarks import Benchmark, benchmark_classes
from metacog_tasks.lmeval.paths import tasks_dir

__all__ = ["GROUP_FILE", "TEMPLATE", "main", "render_configs", "write_configs"]

#: The shared template every task YAML includes (no ``.yaml`` suffix: lm-eval does not index it).
TEMPLATE = "_default_template_yaml"
#: The group of all metacog tasks.
GROUP_FILE = "_metacog.yaml"
#: The probe of each task YAML, and the suffix of its task name.
_PROBES = (("prospective", ""), ("counterfactual", "_cf"))
#: What writes the configs (named in each file's header).
_COMMAND = "`python -m metacog_tasks.lmeval.configs`"

#: Metrics of the group's aggregated row: (metric, weighted by task size). lm-eval 0.4.13
#: computes every group metric as a mean of the tasks' values (``Group.aggregate`` calls
#: ``aggregate_subtask_metrics``, size-weighted or plain, and never a custom ``aggregation``),
#: so a count cannot be summed there: ``ungraded`` (a count) and ``acc_graded`` (whose weights
#: would be the graded items, not the task sizes) stay in the task rows. The size-weighted
#: ``acc`` is the accuracy over every item of the group, an ungraded item counted wrong.
_GROUP_METRICS = (
    ("acc", True),
    *(
        (f"{name}_{method}", False)
        for name in ("yes_rate", "auroc", "brier", "ece", "tetrachoric")
        for method in ("verbal", "logprob")
    ),
    ("unparseable_verbal", False),
)


class _TemplateLoader(yaml.SafeLoader):
    """A safe loader that reads lm-eval's ``!function`` tags as plain strings."""


_TemplateLoader.add_constructor(
    "!function",
    lambda loader, node: loader.construct_scalar(node),  # type: ignore[arg-type]
)


def _template(folder: Path) -> dict[str, Any]:
    with (folder / TEMPLATE).open(encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_TemplateLoader)


def _generation(record: type[Benchmark], template: dict[str, Any]) -> dict[str, Any] | None:
    """The record's ``generation_kwargs``, or None where the template's are the same."""
    kwargs = dict(template["generation_kwargs"])
    kwargs["until"] = list(record.solve_stop)
    kwargs["max_gen_toks"] = int(record.solve_max_tokens)
    return None if kwargs == template["generation_kwargs"] else kwargs


def _task_yaml(record: type[Benchmark], probe: str, suffix: str, template: dict[str, Any]) -> str:
    lines = [
        f"# {record.title}: {probe} probe + solve, per item. Options via --metadata "
        "(docs/lmeval.md).",
        f"# Generated from the benchmark record by {_COMMAND}.",
        f"include: {TEMPLATE}",
        f"task: metacog_{record.name}{suffix}",
        f"benchmark: {record.name}",
    ]
    if probe != template["probe"]:
        lines += ["tag:", "  - metacognition_probe", f"  - metacognition_{probe}"]
        lines.append(f"probe: {probe}")
    generation = _generation(record, template)
    if generation is not None:
        lines.append("generation_kwargs:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in generation.items()]
    return "\n".join(lines) + "\n"


def _group_yaml(records: Sequence[type[Benchmark]]) -> str:
    lines = [
        "# The group `metacog`: every metacog task. No underscore in the name, so that",
        "# --tasks 'metacog_*' (all leaf tasks) does not also match the group.",
        "# lm-eval averages every group metric (by task size or not; it never calls a custom",
        "# aggregation): `acc` is here (all items, an ungraded one counted wrong); the count",
        "# `ungraded` and `acc_graded` (weighted by graded items) stay in the task rows.",
        f"# Generated from the benchmark records by {_COMMAND}.",
        "group: metacog",
        "task:",
        *(f"  - metacog_{record.name}{suffix}" for record in records for _, suffix in _PROBES),
        "aggregate_metric_list:",
    ]
    for metric, weighted in _GROUP_METRICS:
        lines += [
            f"  - metric: {metric}",
            "    aggregation: mean",
            f"    weight_by_size: {json.dumps(weighted)}",
        ]
    lines += ["metadata:", "  version: 1.0"]
    return "\n".join(lines) + "\n"


def render_configs(folder: str | Path | None = None) -> dict[str, str]:
    """File name -> text of every generated config, for the registered benchmarks.

    Args:
        folder: The task-config folder holding the template (default: the installed one).

    Example:
        >>> configs = render_configs()
        >>> print(configs["metacog_omni_math_cf.yaml"].split("\\n", 2)[2], end="")
        include: _default_template_yaml
        task: metacog_omni_math_cf
        benchmark: omni_math
        tag:
          - metacognition_probe
          - metacognition_counterfactual
        probe: counterfactual
    """
    template = _template(Path(folder) if folder is not None else tasks_dir())
    records = benchmark_classes()
    out = {
        f"metacog_{record.name}{suffix}.yaml": _task_yaml(record, probe, suffix, template)
        for record in records
        for probe, suffix in _PROBES
    }
    out[GROUP_FILE] = _group_yaml(records)
    return out


def _stale(folder: Path, configs: dict[str, str]) -> list[Path]:
    """Task YAMLs in the folder that no registered benchmark generates."""
    return sorted(p for p in folder.glob("metacog_*.yaml") if p.name not in configs)


def write_configs(folder: str | Path | None = None) -> list[Path]:
    """Write the generated configs into ``folder`` and remove stale task YAMLs.

    Returns:
        The files written or removed whose content changed.
    """
    root = Path(folder) if folder is not None else tasks_dir()
    configs = render_configs(root)
    changed = []
    for name, text in configs.items():
        path = root / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    for path in _stale(root, configs):
        path.unlink()
        changed.append(path)
    return changed


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m metacog_tasks.lmeval.configs [--check] [FOLDER]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("folder", nargs="?", default=None, help="task_configs folder")
    parser.add_argument("--check", action="store_true", help="only report differences")
    args = parser.parse_args(argv)
    root = Path(args.folder) if args.folder else tasks_dir()
    if not args.check:
        for path in write_configs(root):
            print(f"updated {path}")
        return 0
    configs = render_configs(root)
    differ = [
        name
        for name, text in configs.items()
        if not (root / name).is_file() or (root / name).read_text(encoding="utf-8") != text
    ]
    differ += [p.name for p in _stale(root, configs)]
    for name in differ:
        print(f"out of date: {root / name}", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
