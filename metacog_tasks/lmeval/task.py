"""The class-based lm-eval task: per benchmark item, a confidence probe and the solve request(s).

One task per benchmark and probe (``metacog_<bench>``: prospective, ``metacog_<bench>_cf``:
counterfactual). The YAML names the benchmark and the probe; everything else (data, confidence
methods) comes from lm-eval's task metadata, see :mod:`metacog_tasks.lmeval.options`.

Requests per document, in ``idx`` order (``process_results`` receives them in that order):

1. ``verbal``: the probe, greedy (generate_until);
2. the solve prompt(s) of the item (generate_until with the task's ``generation_kwargs``, which
   ``--gen_kwargs`` updates); MathBench circular evaluation asks four rotations;
3. ``logprob``: log-likelihoods of " Yes" and " No" after the probe and ``Answer:``;
4. ``sampled``: the probe again, at temperature > 0, ``k`` times (one Instance with
   ``repeats=k``);
5. ``numeric``: the 0-100 probe (prospective tasks only), greedy.

No lm-eval filter runs on these mixed requests (a filter sees every Instance and cannot tell
them apart); answer extraction and probe parsing happen in :meth:`MetacogTask.process_results`
through the benchmark layer.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.metrics import bypass_agg
from lm_eval.api.task import ConfigurableTask
from scipy.special import expit

from metacog_tasks.benchmarks import DataUnavailableError, get_benchmark
from metacog_tasks.benchmarks.base import Grade, Item
from metacog_tasks.lmeval import metrics as _m
from metacog_tasks.lmeval.options import KIND_NAMES, OptionsError, TaskOptions
from metacog_tasks.parsing import parse_confidence, parse_yes_no
from metacog_tasks.sandbox import SandboxUnavailableError

__all__ = ["LOGPROB_PREFIX", "PROBES", "MetacogTask", "TaskDataError"]

log = logging.getLogger(__name__)


def _package_version() -> str | None:
    """The installed metacog-eval version (None when running from a checkout only)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("metacog-eval")
    except PackageNotFoundError:
        return None


#: The probes a task YAML can name.
PROBES: tuple[str, ...] = ("prospective", "counterfactual")
#: Appended to the probe context before the " Yes" / " No" continuations are scored.
LOGPROB_PREFIX = "Answer:"
#: Doc key through which :meth:`MetacogTask.fewshot_context` renders prompts other than the
#: first solve prompt (never stored in the dataset).
_PROMPT_KEY = "__metacog_prompt__"


#: Metrics per confidence method, ``<name>_<method>``, in output order: name -> (aggregation,
#: whether higher is better).
_METHOD_METRICS: dict[str, tuple[Callable[[Sequence[Any]], Any], bool | None]] = {
    "yes_rate": (_m.rate, None),
    "unparseable": (_m.rate, False),
    "auroc": (_m.auroc, True),
    "brier": (_m.brier, False),
    "ece": (_m.ece, False),
    "tetrachoric": (_m.tetrachoric, True),
}


def _metrics_of(method: str) -> list[str]:
    """The metric names of one method (a log-probability always gives a verdict)."""
    return [n for n in _METHOD_METRICS if not (n == "unparseable" and method == "logprob")]


class TaskDataError(ValueError):
    """The task's items could not be loaded or are inconsistent (names the task and source)."""


def _target_text(target: Any) -> str:
    if isinstance(target, str):
        return target
    return json.dumps(target, ensure_ascii=False, default=str)


def _none_if_nan(x: float | None) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


class MetacogTask(ConfigurableTask):
    """lm-eval task that asks a confidence probe and the solve prompt(s) of each item.

    The YAML sets ``benchmark:`` (a name from ``metacog_tasks.benchmarks.BENCHMARK_NAMES``),
    ``probe:`` (``prospective`` or ``counterfactual``) and optionally ``prompts:`` (template
    overrides, as ``get_benchmark(..., prompts=...)`` takes them) and ``benchmark_options:``;
    the usual lm-eval keys (``generation_kwargs``, ``metadata``) work as in any YAML task.

    Args:
        config: The task config lm-eval built from the YAML (with the ``class`` key).

    Raises:
        OptionsError: A bad ``metacog_*`` metadata value.
        TaskDataError: The benchmark's items could not be loaded.
    """

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        cfg = dict(config or {})
        cfg.pop("class", None)  # lm-eval passes the YAML's `class` key on to TaskConfig
        task = str(cfg.get("task") or "metacog")
        bench_name = cfg.pop("benchmark", None)
        probe = cfg.pop("probe", "prospective")
        yaml_options = dict(cfg.pop("benchmark_options", None) or {})
        prompts = cfg.pop("prompts", None)  # the YAML's templates (an include may replace them)
        if prompts:
            yaml_options["prompts"] = dict(prompts)
        if not bench_name:
            raise OptionsError(f"task {task}: the YAML must set `benchmark:`")
        if probe not in PROBES:
            raise OptionsError(f"task {task}: probe {probe!r} is not one of {', '.join(PROBES)}")
        self._task = task
        self._benchmark_name = str(bench_name)
        self._probe = str(probe)
        self._options = TaskOptions.from_metadata(
            cfg.get("metadata"),
            benchmark=self._benchmark_name,
            task=task,
            yaml_options=yaml_options,
        )
        methods = self._options.confidence
        if "numeric" in methods and self._probe != "prospective":
            log.warning(
                "%s: the numeric (0-100) probe is prospective; not asked in this %s task",
                task,
                self._probe,
            )
            methods = tuple(m for m in methods if m != "numeric")
        if not methods:
            raise OptionsError(f"task {task}: no confidence method left for this task")
        self._methods: tuple[str, ...] = methods
        self._bench = get_benchmark(self._benchmark_name, **dict(self._options.benchmark_options))
        self._items: dict[str, Item] = {}
        self._solve_cache: dict[str, list[str]] = {}
        self._system_instruction: str | None = None
        self._fewshot_as_multiturn = False
        meta = dict(cfg.get("metadata") or {})
        meta["metacog"] = {
            "benchmark": self._benchmark_name,
            "probe": self._probe,
            "confidence": list(self._methods),
            "confidence_kinds": [KIND_NAMES[m] for m in self._methods],
            "data": self._options.data or "hf",
            "split": self._options.split,
            "samples": self._options.samples if "sampled" in self._methods else None,
            "temperature": self._options.temperature if "sampled" in self._methods else None,
            "probe_max_tokens": self._options.probe_max_tokens,
            # which metacog-eval wrote the log: `metacog gate` warns when it differs
            "package_version": _package_version(),
        }
        cfg["metadata"] = meta
        cfg.setdefault("output_type", "generate_until")
        # the split read, under its own name (the YAML states the record's default)
        default_split = getattr(self._bench, "default_split", None) or cfg.get("test_split")
        cfg["test_split"] = self._options.split or default_split or "test"
        super().__init__(config=cfg)

    # ------------------------------------------------------------------ data

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """Load the items through the benchmark layer into a one-split ``DatasetDict``."""
        source = self._options.data
        where = source or "the Hugging Face dataset"
        try:
            items = self._bench.load(source, split=self._options.split)
        except DataUnavailableError as exc:
            raise TaskDataError(
                f"task {self._task}: {exc}\nWith lm-eval, point the task at local data with "
                f'--metadata \'{{"metacog_data": {{"{self._benchmark_name}": "PATH"}}}}\', '
                f'or use "bundled" for the mini pack shipped with metacog-eval.'
            ) from exc
        if not items:
            raise TaskDataError(f"task {self._task}: no items loaded from {where}")
        by_id: dict[str, Item] = {}
        for item in items:
            if item.item_id in by_id:
                raise TaskDataError(
                    f"task {self._task}: duplicate item_id {item.item_id!r} in {where}"
                )
            by_id[item.item_id] = item
        self._items = by_id
        docs = [
            {
                "item_id": item.item_id,
                "benchmark": item.benchmark,
                "kind": item.kind,
                "question": item.question,
                "target": _target_text(item.target),
            }
            for item in items
        ]
        split = str(self.config.test_split)
        self.dataset = datasets.DatasetDict({split: datasets.Dataset.from_list(docs)})

    def _item(self, doc: Mapping[str, Any]) -> Item:
        try:
            return self._items[doc["item_id"]]
        except KeyError:
            raise TaskDataError(
                f"task {self._task}: document {doc.get('item_id')!r} is not a loaded item"
            ) from None

    def _solve_prompts(self, item: Item) -> list[str]:
        prompts = self._solve_cache.get(item.item_id)
        if prompts is None:
            prompts = list(self._bench.solve_prompts(item))
            self._solve_cache[item.item_id] = prompts
        return prompts

    def doc_to_text(self, doc: Mapping[str, Any], doc_to_text: Any = None) -> str:
        """The first solve prompt of the item (or the prompt being rendered)."""
        if _PROMPT_KEY in doc:
            return doc[_PROMPT_KEY]
        return self._solve_prompts(self._item(doc))[0]

    def doc_to_target(self, doc: Mapping[str, Any], doc_to_target: Any = None) -> str:
        """The gold answer as text (logged as ``target``; grading uses the item itself)."""
        return doc["target"]

    # ------------------------------------------------------------------ requests

    def fewshot_context(self, doc: dict, num_fewshot: int, *args: Any, **kwargs: Any) -> Any:
        """Zero-shot context, built by lm-eval (system instruction, chat template).

        Raises:
            ValueError: ``num_fewshot > 0``; the probes are defined zero-shot.
        """
        if num_fewshot:
            raise ValueError(
                f"task {self._task}: metacog tasks are zero-shot; drop --num_fewshot {num_fewshot}"
            )
        return super().fewshot_context(doc, 0, *args, **kwargs)

    def build_all_requests(self, **kwargs: Any) -> None:
        """Build the Instances; remembers the system instruction for the probe contexts."""
        self._system_instruction = kwargs.get("system_instruction")
        self._fewshot_as_multiturn = bool(kwargs.get("fewshot_as_multiturn", False))
        if kwargs.get("cache_requests"):
            # lm-eval's request cache key holds the task name but not the metadata, so a
            # cached build would silently ignore a changed metacog_confidence or data source.
            log.warning("%s: --cache_requests is ignored by metacog tasks", self._task)
            kwargs["cache_requests"] = False
            kwargs["rewrite_requests_cache"] = False
        super().build_all_requests(**kwargs)

    def _layout(self, item: Item) -> list[tuple[str, int]]:
        """Slots of the item's requests in ``idx`` order: (role, index within role)."""
        slots: list[tuple[str, int]] = []
        if "verbal" in self._methods:
            slots.append(("verbal", 0))
        slots.extend(("solve", i) for i in range(len(self._solve_prompts(item))))
        if "logprob" in self._methods:
            slots.extend([("yes", 0), ("no", 0)])
        if "sampled" in self._methods:
            slots.append(("sampled", 0))
        if "numeric" in self._methods:
            slots.append(("numeric", 0))
        return slots

    def _probe_gen_kwargs(self, *, sample: bool) -> dict[str, Any]:
        return {
            "until": [],
            "max_gen_toks": self._options.probe_max_tokens,
            "do_sample": sample,
            "temperature": self._options.temperature if sample else 0.0,
        }

    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> list[Instance]:
        """The probe, solve and (optionally) log-likelihood / sampled / numeric requests."""
        apply_chat_template = bool(kwargs.pop("apply_chat_template", False))
        chat_template: Callable[..., str] | None = kwargs.pop("chat_template", None)
        task_name, doc_id, repeats = kwargs.pop("metadata")
        item = self._item(doc)

        def render(text: str, gen_prefix: str | None = None) -> str:
            return self.fewshot_context(
                {**doc, _PROMPT_KEY: text},
                0,
                system_instruction=self._system_instruction,
                apply_chat_template=apply_chat_template,
                fewshot_as_multiturn=self._fewshot_as_multiturn,
                chat_template=chat_template if apply_chat_template else None,
                gen_prefix=gen_prefix,
            )

        probe_ctx = render(self._bench.probe_prompt(item, self._probe))
        solve_prompts = self._solve_prompts(item)
        solve_prefix = self.doc_to_prefix(doc)
        instances: list[Instance] = []
        for idx, (role, i) in enumerate(self._layout(item)):
            meta = (task_name, doc_id, repeats)
            if role == "verbal":
                args: tuple = (probe_ctx, self._probe_gen_kwargs(sample=False))
                rtype = "generate_until"
            elif role == "solve":
                solve_ctx = ctx if i == 0 else render(solve_prompts[i], solve_prefix)
                args = (solve_ctx, deepcopy(self.config.generation_kwargs))
                rtype = "generate_until"
            elif role in ("yes", "no"):
                sep = "" if not probe_ctx or probe_ctx[-1].isspace() else "\n"
                args = (probe_ctx + sep + LOGPROB_PREFIX, " Yes" if role == "yes" else " No")
                rtype = "loglikelihood"
            elif role == "sampled":
                args = (probe_ctx, self._probe_gen_kwargs(sample=True))
                rtype = "generate_until"
                meta = (task_name, doc_id, self._options.samples)
            else:  # numeric
                numeric_ctx = render(self._bench.probe_prompt(item, "numeric"))
                args = (numeric_ctx, self._probe_gen_kwargs(sample=False))
                rtype = "generate_until"
            instances.append(
                Instance(request_type=rtype, doc=doc, arguments=args, idx=idx, metadata=meta)
            )
        # The evaluator runs request types in order of first appearance. Log-likelihoods go
        # first so that a backend without them (chat APIs) fails before any paid generation.
        instances.sort(key=lambda inst: inst.request_type != "loglikelihood")
        return instances

    def apply_filters(self) -> None:
        """Keep the first response of each request, and all ``k`` of a sampled probe.

        Replaces lm-eval's filter pipeline, which would see mixed request types. Responses
        beyond ``repeats`` (data-parallel padding appends duplicates to the last request) are
        dropped.
        """
        for inst in self._instances or []:
            n = max(1, int(inst.repeats or 1))
            resps = list(inst.resps[:n])
            inst.filtered_resps["none"] = resps if n > 1 else (resps[0] if resps else None)

    # ------------------------------------------------------------------ scoring

    def _predict_only(self) -> bool:
        metric_list = self.config.metric_list or []
        return len(metric_list) == 1 and metric_list[0].get("metric") == "bypass"

    def _grade(self, item: Item, solve_texts: list[str]) -> Grade:
        try:
            return self._bench.grade_responses(item, solve_texts)
        except SandboxUnavailableError:
            raise  # no boundary for model code: the run is refused, not graded NaN per item
        except Exception as exc:  # a grader bug must not lose a finished run
            log.exception("%s: grading item %s failed", self._task, item.item_id)
            return Grade(math.nan, status="grader_error", details={"error": repr(exc)})

    def _confidences(self, by_slot: dict[tuple[str, int], Any]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for method in self._methods:
            if method in ("verbal", "numeric"):  # one reply: Yes/No, or a 0-100 number
                text = _as_text(by_slot[(method, 0)])
                p = parse_yes_no(text) if method == "verbal" else parse_confidence(text)
                out[method] = {
                    "confidence": _none_if_nan(p.confidence),
                    "status": p.status,
                    "matched": p.matched,
                    "text": text,
                }
            elif method == "logprob":
                ll_yes = _loglik(by_slot[("yes", 0)])
                ll_no = _loglik(by_slot[("no", 0)])
                p_yes = float(expit(ll_yes - ll_no))
                ok = math.isfinite(ll_yes) or math.isfinite(ll_no)
                out[method] = {
                    "confidence": p_yes if ok and not math.isnan(p_yes) else None,
                    "status": "ok" if ok and not math.isnan(p_yes) else "unparseable",
                    "ll_yes": ll_yes if math.isfinite(ll_yes) else None,
                    "ll_no": ll_no if math.isfinite(ll_no) else None,
                }
            else:  # sampled
                raw = by_slot[("sampled", 0)]
                texts = [_as_text(t) for t in (raw if isinstance(raw, list) else [raw])]
                parses = [parse_yes_no(t) for t in texts]
                values = [p.confidence for p in parses if p.ok]
                if values:
                    status = "ok"
                elif parses and all(p.status == "empty" for p in parses):
                    status = "empty"
                elif any(p.status == "refusal" for p in parses):
                    status = "refusal"
                else:
                    status = "unparseable"
                out[method] = {
                    "confidence": sum(values) / len(values) if values else None,
                    "status": status,
                    "n_samples": len(values),
                    "n_requested": len(texts),
                    "texts": texts,
                }
        return out

    def process_results(self, doc: dict, results: Sequence[Any]) -> dict[str, Any]:
        """Grade the solve response(s), parse the probes, and emit the per-item values.

        Returns:
            ``record`` (the item's fields for the sample log and ``metacog collect``), ``acc``
            (an item that could not be graded counts wrong), ``acc_graded`` (NaN when
            ungraded), ``ungraded`` (1/0), and per confidence method ``yes_rate_<m>``,
            ``unparseable_<m>`` and ``(confidence, correct)`` pairs for ``auroc_<m>``,
            ``brier_<m>``, ``ece_<m>``, ``tetrachoric_<m>``. Under ``--predict_only`` only
            ``record`` (ungraded) and lm-eval's ``bypass``.
        """
        item = self._item(doc)
        layout = self._layout(item)
        if len(results) != len(layout):
            raise ValueError(
                f"task {self._task}, item {item.item_id}: expected {len(layout)} responses "
                f"({', '.join(r for r, _ in layout)}), got {len(results)}"
            )
        by_slot = dict(zip(layout, results))
        solve_texts = [_as_text(by_slot[s]) for s in layout if s[0] == "solve"]
        predict_only = self._predict_only()
        grade = None if predict_only else self._grade(item, solve_texts)
        correct = math.nan if grade is None else float(grade.correct)
        confidences = self._confidences(by_slot)
        record = {
            "item_id": item.item_id,
            "benchmark": item.benchmark,
            "probe": self._probe,
            "kind": item.kind,
            "question": item.question,
            "correct": _none_if_nan(correct),
            "grade_status": "not_graded" if grade is None else grade.status,
            "answer": None if grade is None else grade.extracted,
            "score": None if grade is None else _none_if_nan(grade.score),
            "solve_text": solve_texts[0] if len(solve_texts) == 1 else solve_texts,
            "confidence": {KIND_NAMES[m]: v for m, v in confidences.items()},
        }
        if predict_only:
            return {"bypass": None, "record": record}
        out: dict[str, Any] = {}
        if grade is not None:  # an item the grader could not grade counts wrong in "acc"
            out["acc"] = correct if grade.graded else 0.0
            out["acc_graded"] = correct  # NaN when ungraded: left out of its mean
            out["ungraded"] = 0.0 if grade.graded else 1.0
        for method, c in confidences.items():
            pair = [c["confidence"], _none_if_nan(correct)]
            own = {"yes_rate": c["confidence"], "unparseable": 0.0 if c["status"] == "ok" else 1.0}
            for name in _metrics_of(method):
                out[f"{name}_{method}"] = own.get(name, pair)
        out["record"] = record
        return out

    def aggregation(self) -> dict[str, Callable[[Sequence[Any]], Any]]:
        """Metric name -> aggregation function (module-level callables, no registry lookup)."""
        if self._predict_only():
            return {"bypass": bypass_agg, "record": _m.count_records}
        aggs: dict[str, Callable[[Sequence[Any]], Any]] = {"acc": _m.accuracy}
        aggs.update(acc_graded=_m.rate, ungraded=_m.count_ungraded)
        for method in self._methods:
            for name in _metrics_of(method):
                aggs[f"{name}_{method}"] = _METHOD_METRICS[name][0]
        aggs["record"] = _m.count_records
        return aggs

    def higher_is_better(self) -> dict[str, bool | None]:
        """Metric name -> whether higher is better (``None``: no direction)."""
        if self._predict_only():
            return {"bypass": True, "record": None}
        hib: dict[str, bool | None] = {"acc": True, "acc_graded": True, "ungraded": False}
        for method in self._methods:
            for name in _metrics_of(method):
                hib[f"{name}_{method}"] = _METHOD_METRICS[name][1]
        hib["record"] = None
        return hib

    # ------------------------------------------------------------------ info

    @property
    def benchmark_name(self) -> str:
        """The benchmark this task runs."""
        return self._benchmark_name

    @property
    def probe(self) -> str:
        """The probe this task asks (``prospective`` or ``counterfactual``)."""
        return self._probe

    @property
    def methods(self) -> tuple[str, ...]:
        """The confidence methods this task elicits."""
        return self._methods


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list | tuple):  # a single generation wrapped by a backend
        return _as_text(value[0]) if value else ""
    return str(value)


def _loglik(value: Any) -> float:
    """The log-likelihood of a ``(logprob, is_greedy)`` response (NaN when malformed)."""
    while isinstance(value, list | tuple) and value:  # (ll, is_greedy), or a list of them
        value = value[0]
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan
