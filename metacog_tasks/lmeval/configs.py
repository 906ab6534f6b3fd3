r"""The lm-eval task configs in ``task_configs/``, written from the benchmark records.

Every registered benchmark has two small YAMLs that ``include:`` the shared template
``_default_template_yaml`` (lm-eval resolves it next to the including file):
``metacog_<name>.yaml`` (the prospective probe) and ``metacog_<name>_cf.yaml`` (the
counterfactual one); they set the task name, the benchmark, the split the record reads by
default (``test_split``) where it is not the template's, ``generation_kwargs`` where the record's
solve budget or stop sequences differ from the template's, and the benchmark's prompt templates
(``prompts``), so that they can be read where lm-eval users look and overridden the lm-eval way:
a YAML of your own that ``include:``\ s the task and sets ``prompts:`` (or ``--metadata
'{"metacog_options": {"<benchmark>": {"prompts": "my_prompts.yaml"}}}'``). The group
``_metacog.yaml`` lists every task, and ``README.md`` describes them in lm-eval's task-README
form. These files are generated, never edited: ``python -m metacog_tasks.lmeval.configs``
rewrites them (``--check`` only compares), and a test holds the committed files to what the
records give.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from metacog_tasks._links import REPOSITORY, docs_url
from metacog_tasks.benchmarks import Benchmark, benchmark_classes
from metacog_tasks.lmeval.paths import tasks_dir

__all__ = ["GROUP_FILE", "README", "TEMPLATE", "main", "render_configs", "write_configs"]

#: The shared template every task YAML includes (no ``.yaml`` suffix: lm-eval does not index it).
TEMPLATE = "_default_template_yaml"
#: The group of all metacog tasks.
GROUP_FILE = "_metacog.yaml"
#: The folder's README, in lm-eval's task-README form.
README = "README.md"
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


class _BlockDumper(yaml.SafeDumper):
    """Writes a text of several lines as a literal block, as one reads it."""


_BlockDumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def _prompts(record: type[Benchmark]) -> dict[str, str]:
    """The record's prompt templates (str.format strings), or none for a record without."""
    prompts = getattr(record(), "prompts", None)
    return dict(prompts.as_dict()) if prompts is not None else {}


def _prompts_yaml(record: type[Benchmark]) -> list[str]:
    prompts = _prompts(record)
    if not prompts:
        return []
    head = [
        "# The prompt templates (str.format; {field} is filled per item). To change one, write",
        "# your own YAML that includes this file by its path, names a new task and sets prompts:",
        "# with the templates to replace:",
        f"# {docs_url('lmeval.md')}#prompts",
    ]
    text = yaml.dump({"prompts": prompts}, Dumper=_BlockDumper, sort_keys=False, width=1000)
    return [*head, *text.rstrip("\n").split("\n")]


def _task_yaml(record: type[Benchmark], probe: str, suffix: str, template: dict[str, Any]) -> str:
    lines = [
        f"# {record.title}: {probe} probe + solve, per item. Options via --metadata "
        f"({docs_url('lmeval.md')}).",
        f"# Generated from the benchmark record by {_COMMAND}.",
        f"include: {TEMPLATE}",
        f"task: metacog_{record.name}{suffix}",
        f"benchmark: {record.name}",
    ]
    if probe != template["probe"]:
        lines += ["tag:", "  - metacognition_probe", f"  - metacognition_{probe}"]
        lines.append(f"probe: {probe}")
    split = getattr(record, "default_split", template["test_split"])
    if split != template["test_split"]:
        lines.append(f"test_split: {split}")
    generation = _generation(record, template)
    if generation is not None:
        lines.append("generation_kwargs:")
        lines += [f"  {key}: {json.dumps(value)}" for key, value in generation.items()]
    lines += _prompts_yaml(record)
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
        >>> print("\\n".join(configs["metacog_omni_math_cf.yaml"].split("\\n")[2:9]))
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
    out[README] = _readme(records)
    return out


_PAPER = (
    '"LLMs Show No Signs Of Individuated Metacognition", M. Moran and M. Whiting, 2026, '
    "https://arxiv.org/abs/2605.24299"
)
_PAPER_BIB = """\
@article{moran2026individuated,
  title = {{LLMs} Show No Signs Of Individuated Metacognition},
  author = {Moran, M. and Whiting, Mark},
  journal = {arXiv preprint arXiv:2605.24299},
  year = {2026},
  eprint = {2605.24299},
  archivePrefix = {arXiv}
}"""


def _readme(records: Sequence[type[Benchmark]]) -> str:
    """``README.md`` of the task folder in lm-eval's task-README form."""
    tasks = []
    for record in records:
        tasks.append(
            f"* `metacog_{record.name}`: {record.title}, {record.summary}; the prospective "
            "probe, then the solve prompt(s)."
        )
        tasks.append(
            f"* `metacog_{record.name}_cf`: the same items with the counterfactual probe (could "
            "you answer it unassisted?)."
        )
    sources = [
        f"* {record.title}: {record.paper}. Homepage: {record.homepage}. Data: "
        f"`{record.dataset}` ({record.data_license}). Report: "
        f"{docs_url(f'benchmarks/{record.name}.md')}"
        for record in records
    ]
    bib = "\n\n".join([_PAPER_BIB, *(r.citation.strip() for r in records if r.citation)])
    first = records[0].name
    splits = ", ".join(f"`{r.name}` {getattr(r, 'default_split', 'test')}" for r in records)
    text = f"""\
<!-- Generated from the benchmark records by {_COMMAND}; do not edit. -->
# metacog

### Paper

Title: {_PAPER}

Does a model know, before it answers, whether it will answer correctly? Each task asks, per item
of a benchmark, a confidence probe shown without the context, options or hints ("without solving
it, will you answer this correctly?"), then the benchmark's own solve prompt, and grades the
answer with the benchmark authors' rules. The per-task metrics are accuracy and the calibration
of the probe's answer (yes-rate, AUROC, Brier, ECE, tetrachoric correlation, unparseable rate),
for verbal confidence and, on backends with log-likelihoods, P(Yes). The cross-model analyses of
the paper (tetrachoric factors, pairwise calibration against permutation nulls) run on the
per-item samples with `metacog collect` and `metacog analyze`.

Homepage: {REPOSITORY}

The benchmarks:

{chr(10).join(sources)}

### Citation

```bibtex
{bib}
```

### Groups, Tags, and Tasks

#### Groups

* `metacog`: every task below, with an aggregated row (accuracy weighted by task size; the
  calibration metrics unweighted means of the tasks').

#### Tags

* `metacognition_probe`: every task.
* `metacognition_prospective`, `metacognition_counterfactual`: the tasks of one probe.

#### Tasks

{chr(10).join(tasks)}

Run them with `metacog lm-eval run --model ... --tasks 'metacog_*' --output_path runs/` (the
samples are logged), or the stock CLI with `--include_path "$(metacog include-path)"
--log_samples`. Options (data source, split, confidence methods) go through `--metadata`:
{docs_url("lmeval.md")}.

### Prompts

Each task YAML lists its prompt templates under `prompts:` (Python `str.format` strings; the
fields in braces are filled per item; a probe shows the bare question, never the context,
options or hints). To change one, write a YAML of your own that includes the task by its path
(lm-eval resolves `include:` next to the including file; `metacog include-path` prints the
folder of these configs), names a new task and replaces the templates you want:

```yaml
include: /path/printed/by/metacog-include-path/metacog_{first}.yaml
task: my_{first}
prompts:
  solve: "Answer in one short phrase.\\n\\nQuestion: {{question}}\\nAnswer:"
```

and run it with `--include_path` set to its folder (`metacog lm-eval run ... --include_path
my_tasks/ --tasks my_{first}`). Templates not named keep the record's text; an unknown template
name or field is refused before the run. `--metadata '{{"metacog_options": {{"{first}":
{{"prompts": "my_prompts.yaml"}}}}}}'` overrides them for one run without a new task.

### Checklist

For adding novel benchmarks/datasets to the library:

* [x] Is the task an existing benchmark in the literature?
  * [x] Have you referenced the original paper that introduced the task?
  * [x] If yes, does the original paper provide a reference implementation? If so, have you
    checked against the reference implementation and documented how to run such a test?
    (The graders reproduce the authors' scorers on their published data; the statistics match
    R's psych/polycor on reference values.)

If other tasks on this dataset are already supported:

* [x] Is the "Main" variant of this task clearly denoted? (`metacog_<benchmark>`, the
  prospective probe; `_cf` is the variant.)
* [x] Have you provided a short sentence in a README on what each new variant adds / evaluates?
* [x] Have you noted which, if any, published evaluation setups are matched by this variant?
  (The prospective and counterfactual probes of arXiv 2605.24299, at temperature 0.)

### Changelog

* 1.0: the tasks as released; `test_split` states the split each task reads (the record's
  default: {splits}).
"""
    return text


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
